//! A fake, scriptable OCI registry for security tests: a `std::net` server on a free port (loopback,
//! or another local address) whose answers a test scripts — lying `Content-Length`, endless
//! bodies, foreign `Location`s, token realms, hanging, connections dropped mid-blob, wrong media
//! types — and which records every request with its headers, so a test can assert who got an
//! `Authorization` header.
//!
//! [`Content`] is a well-behaved registry (manifests, blobs, uploads, optional Basic auth and
//! `Range` support) that a script falls back to for everything it does not override. Every
//! connection gets one answer and is closed. TLS probes (otters tries HTTPS first) are closed at
//! once. Dropping the server stops its hanging answers.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Most request-body bytes kept in the log (the rest is counted).
const KEEP_BODY: usize = 64 << 20;

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn authorization(&self) -> Option<&str> {
        self.header("authorization")
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or(&self.target)
    }

    pub fn query(&self, key: &str) -> Option<String> {
        let q = self.target.split_once('?')?.1;
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == key).then(|| crate::support::percent_decode(v))
        })
    }
}

/// What the answer's body does.
#[derive(Clone, Debug)]
pub enum Body {
    Bytes(Vec<u8>),
    /// `b` repeated forever, until the client closes the connection.
    Endless(u8),
    /// The first `n` bytes, then the connection is closed.
    Cut(Vec<u8>, usize),
    /// The first `n` bytes, then nothing until the server is dropped.
    Stall(Vec<u8>, usize),
}

/// How the `Content-Length` header is written.
#[derive(Clone, Copy, Debug)]
pub enum Length {
    /// The body's real length (for `Cut` and `Stall`, the full length: the body falls short).
    Actual,
    /// No header: the body ends when the connection closes.
    Omit,
    /// This number, whatever the body is.
    Claim(u64),
}

/// A scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    pub length: Length,
    /// Send nothing at all (not even a status line) until the server is dropped.
    pub hang: bool,
}

impl Reply {
    pub fn new(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Body::Bytes(Vec::new()),
            length: Length::Actual,
            hang: false,
        }
    }

    pub fn bytes(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            body: Body::Bytes(body.into()),
            ..Reply::new(status)
        }
    }

    pub fn hang() -> Reply {
        Reply {
            hang: true,
            ..Reply::new(200)
        }
    }

    #[must_use]
    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.to_owned(), v.to_owned()));
        self
    }

    #[must_use]
    pub fn body(mut self, body: Body) -> Reply {
        self.body = body;
        self
    }

    #[must_use]
    pub fn length(mut self, length: Length) -> Reply {
        self.length = length;
        self
    }
}

pub type Handler = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;
/// Decides, from the request line and headers alone, to hang without reading the body.
pub type Unread = Arc<dyn Fn(&Req) -> bool + Send + Sync>;

/// A running fake registry.
pub struct Hostile {
    /// `IP:PORT`.
    pub addr: String,
    log: Arc<Mutex<Vec<Req>>>,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    /// Serves `handler` on a free loopback port.
    pub fn start(handler: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Hostile {
        Self::start_on("127.0.0.1".parse().expect("ip"), Arc::new(handler), None)
    }

    /// Serves `handler` on a free port of `ip`; requests `unread` picks hang before their body is
    /// read (a registry that stops reading an upload).
    pub fn start_on(ip: IpAddr, handler: Handler, unread: Option<Unread>) -> Hostile {
        let listener = TcpListener::bind((ip, 0)).expect("bind fake registry");
        let local = listener.local_addr().expect("addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log2, stop2) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (handler, unread, log, stop) =
                    (handler.clone(), unread.clone(), log2.clone(), stop2.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &handler, unread.as_ref(), &log, &stop);
                });
            }
        });
        Hostile {
            addr: local.to_string(),
            log,
            stop,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Req> {
        self.log.lock().expect("log").clone()
    }

    /// Forgets the requests so far.
    pub fn clear(&self) {
        self.log.lock().expect("log").clear();
    }

    /// Requests that carried an `Authorization` header.
    pub fn authorized(&self) -> Vec<Req> {
        self.requests()
            .into_iter()
            .filter(|r| r.authorization().is_some())
            .collect()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(
            &self.addr.parse().expect("addr"),
            Duration::from_millis(200),
        );
    }
}

fn wait_for_stop(stop: &AtomicBool) {
    let until = Instant::now() + Duration::from_secs(120);
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn serve(
    stream: TcpStream,
    handler: &Handler,
    unread: Option<&Unread>,
    log: &Mutex<Vec<Req>>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    // A TLS ClientHello (otters tries HTTPS first): close.
    if reader.fill_buf()?.first() == Some(&0x16) {
        return Ok(());
    }
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let mut req = Req {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if unread.is_some_and(|u| u(&req)) {
        log.lock().expect("log").push(req);
        wait_for_stop(stop);
        return Ok(());
    }
    req.body = read_body(&mut reader, &req)?;
    log.lock().expect("log").push(req.clone());
    let reply = handler(&req);
    if reply.hang {
        wait_for_stop(stop);
        return Ok(());
    }
    let mut out = stream;
    write_reply(&mut out, &req, &reply, stop)
}

fn read_body(reader: &mut BufReader<TcpStream>, req: &Req) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let keep = |chunk: &[u8], body: &mut Vec<u8>| {
        let room = KEEP_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    };
    if req
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                reader.read_line(&mut end)?;
                break;
            }
            let mut buf = vec![0u8; n];
            reader.read_exact(&mut buf)?;
            keep(&buf, &mut body);
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else if let Some(n) = req
        .header("content-length")
        .and_then(|v| v.parse::<u64>().ok())
    {
        let mut left = n;
        let mut buf = vec![0u8; 1 << 16];
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let got = reader.read(&mut buf[..want])?;
            if got == 0 {
                break;
            }
            keep(&buf[..got], &mut body);
            left -= got as u64;
        }
    }
    Ok(body)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        206 => "Partial Content",
        307 => "Temporary Redirect",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Whatever",
    }
}

fn write_reply(
    out: &mut TcpStream,
    req: &Req,
    reply: &Reply,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (k, v) in &reply.headers {
        let _ = write!(head, "{k}: {v}\r\n");
    }
    let full_len = match &reply.body {
        Body::Bytes(b) | Body::Cut(b, _) | Body::Stall(b, _) => Some(b.len() as u64),
        Body::Endless(_) => None,
    };
    match reply.length {
        Length::Actual => {
            if let Some(n) = full_len {
                let _ = write!(head, "Content-Length: {n}\r\n");
            }
        }
        Length::Omit => {}
        Length::Claim(n) => {
            let _ = write!(head, "Content-Length: {n}\r\n");
        }
    }
    head.push_str("Connection: close\r\n\r\n");
    out.write_all(head.as_bytes())?;
    if req.method == "HEAD" {
        return out.flush();
    }
    match &reply.body {
        Body::Bytes(b) => out.write_all(b)?,
        Body::Cut(b, n) => {
            out.write_all(&b[..(*n).min(b.len())])?;
            out.flush()?;
            let _ = out.shutdown(std::net::Shutdown::Both);
        }
        Body::Stall(b, n) => {
            out.write_all(&b[..(*n).min(b.len())])?;
            out.flush()?;
            wait_for_stop(stop);
        }
        Body::Endless(c) => {
            let chunk = vec![*c; 1 << 16];
            while !stop.load(Ordering::Relaxed) {
                out.write_all(&chunk)?;
            }
        }
    }
    out.flush()
}

/// `sha256:<hex>`.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// One repository's manifests: reference (tag or digest) → (media type, bytes).
type Repo = HashMap<String, (String, Vec<u8>)>;

/// A well-behaved registry's contents and answers, for scripts to fall back to.
#[derive(Default)]
pub struct Content {
    /// `repo` → reference (tag or digest) → (media type, bytes).
    manifests: Mutex<HashMap<String, Repo>>,
    /// digest → bytes (one namespace for every repository).
    blobs: Mutex<HashMap<String, Vec<u8>>>,
    /// Upload sessions: id → bytes so far.
    uploads: Mutex<HashMap<String, Vec<u8>>>,
    /// When set, every request must carry `Authorization: Basic base64(user:pass)`.
    pub basic: Option<(String, String)>,
    /// Honour `Range: bytes=N-` on blob GETs.
    pub ranges: bool,
}

impl Content {
    pub fn new() -> Content {
        Content::default()
    }

    pub fn with_basic(user: &str, pass: &str) -> Content {
        Content {
            basic: Some((user.to_owned(), pass.to_owned())),
            ..Content::default()
        }
    }

    pub fn put_blob(&self, bytes: &[u8]) -> String {
        let d = digest(bytes);
        self.blobs
            .lock()
            .expect("blobs")
            .insert(d.clone(), bytes.to_vec());
        d
    }

    pub fn blob(&self, digest: &str) -> Option<Vec<u8>> {
        self.blobs.lock().expect("blobs").get(digest).cloned()
    }

    /// Stores a manifest under `reference` and its digest; returns the digest.
    pub fn put_manifest(
        &self,
        repo: &str,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> String {
        let d = digest(bytes);
        let mut m = self.manifests.lock().expect("manifests");
        let r = m.entry(repo.to_owned()).or_default();
        r.insert(
            reference.to_owned(),
            (media_type.to_owned(), bytes.to_vec()),
        );
        r.insert(d.clone(), (media_type.to_owned(), bytes.to_vec()));
        d
    }

    pub fn manifest(&self, repo: &str, reference: &str) -> Option<(String, Vec<u8>)> {
        self.manifests
            .lock()
            .expect("manifests")
            .get(repo)
            .and_then(|r| r.get(reference).cloned())
    }

    /// An OCI image under `repo:tag`: a config blob and layers `(media type, bytes)`. Returns the
    /// manifest's bytes (already stored).
    pub fn image(&self, repo: &str, tag: &str, config: &[u8], layers: &[(&str, &[u8])]) -> Vec<u8> {
        let desc = |mt: &str, b: &[u8], d: String| serde_json::json!({"mediaType": mt, "digest": d, "size": b.len()});
        let cd = self.put_blob(config);
        let ls: Vec<serde_json::Value> = layers
            .iter()
            .map(|(mt, b)| desc(mt, b, self.put_blob(b)))
            .collect();
        let m = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": desc("application/vnd.oci.image.config.v1+json", config, cd),
            "layers": ls,
        });
        let bytes = serde_json::to_vec(&m).expect("json");
        self.put_manifest(
            repo,
            tag,
            "application/vnd.oci.image.manifest.v1+json",
            &bytes,
        );
        bytes
    }

    fn authorized(&self, req: &Req) -> bool {
        use base64::Engine as _;
        let Some((u, p)) = &self.basic else {
            return true;
        };
        let want = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
        );
        req.authorization() == Some(want.as_str())
    }

    /// The answer a plain registry gives (`/v2/…` API, uploads at `/upload/<id>` on this server).
    pub fn serve(&self, req: &Req) -> Reply {
        if !self.authorized(req) {
            return Reply::bytes(
                401,
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"login"}]}"#,
            )
            .header("WWW-Authenticate", r#"Basic realm="hostile""#);
        }
        let path = req.path().to_owned();
        if path == "/v2/" || path == "/v2" {
            return Reply::bytes(200, "{}");
        }
        if let Some(id) = path.strip_prefix("/upload/") {
            return self.upload(req, id);
        }
        let Some(rest) = path.strip_prefix("/v2/") else {
            return Reply::new(404);
        };
        if let Some(repo) = rest.strip_suffix("/blobs/uploads/") {
            let _ = repo;
            // Under one lock: uploads run at once, and each needs its own id.
            let mut ups = self.uploads.lock().expect("u");
            let id = format!("u{}", ups.len());
            ups.insert(id.clone(), Vec::new());
            drop(ups);
            return Reply::new(202).header("Location", &format!("/upload/{id}"));
        }
        if let Some((repo, reference)) = rest.rsplit_once("/manifests/") {
            if req.method == "PUT" {
                let mt = req.header("content-type").unwrap_or_default().to_owned();
                let d = self.put_manifest(repo, reference, &mt, &req.body);
                return Reply::new(201).header("Docker-Content-Digest", &d);
            }
            return match self.manifest(repo, reference) {
                Some((mt, b)) => Reply::bytes(200, b)
                    .header("Content-Type", &mt)
                    .header("Docker-Content-Digest", &digest_of_ref(reference)),
                None => Reply::bytes(404, r#"{"errors":[{"code":"MANIFEST_UNKNOWN"}]}"#),
            };
        }
        if let Some((_, d)) = rest.rsplit_once("/blobs/") {
            return self.serve_blob(req, d);
        }
        Reply::new(404)
    }

    /// A blob `GET`/`HEAD`, with `Range` when enabled.
    pub fn serve_blob(&self, req: &Req, d: &str) -> Reply {
        let Some(b) = self.blob(d) else {
            return Reply::new(404);
        };
        let from = req
            .header("range")
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|r| r.parse::<usize>().ok());
        match from {
            Some(n) if self.ranges && n < b.len() => Reply::bytes(206, b[n..].to_vec()).header(
                "Content-Range",
                &format!("bytes {n}-{}/{}", b.len() - 1, b.len()),
            ),
            _ => Reply::bytes(200, b).header("Content-Type", "application/octet-stream"),
        }
    }

    fn upload(&self, req: &Req, id: &str) -> Reply {
        let mut ups = self.uploads.lock().expect("u");
        let buf = ups.entry(id.to_owned()).or_default();
        buf.extend_from_slice(&req.body);
        match req.method.as_str() {
            "PATCH" => Reply::new(202).header("Location", &format!("/upload/{id}")),
            "PUT" => {
                let bytes = std::mem::take(buf);
                drop(ups);
                let want = req.query("digest").unwrap_or_default();
                if digest(&bytes) != want {
                    return Reply::bytes(400, r#"{"errors":[{"code":"DIGEST_INVALID"}]}"#);
                }
                self.put_blob(&bytes);
                Reply::new(201)
            }
            _ => Reply::new(405),
        }
    }
}

fn digest_of_ref(reference: &str) -> String {
    if reference.starts_with("sha256:") {
        reference.to_owned()
    } else {
        String::new()
    }
}
