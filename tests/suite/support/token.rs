//! A tiny token server for registry token auth (the Docker/distribution bearer scheme), run as a
//! thread in the test process.
//!
//! It checks Basic credentials, grants the requested `repository:NAME:ACTIONS` scopes to known
//! users and only `pull` to anonymous clients, answers 401 to wrong passwords, and signs RS256 JWTs
//! with a self-signed certificate made by the `openssl` CLI (the certificate goes in `x5c`).

use base64::Engine as _;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

pub const SERVICE: &str = "otters-registry";
pub const ISSUER: &str = "otters-test-issuer";

/// A running token server; the accept thread lives as long as the test process.
/// Every request the token server saw: `(user or "-", scopes)`.
pub type RequestLog = Arc<Mutex<Vec<(String, Vec<String>)>>>;

pub struct TokenServer {
    pub addr: String,
    dir: PathBuf,
    /// Every request seen: `(user or "-", scopes)`.
    pub requests: RequestLog,
}

struct Shared {
    dir: PathBuf,
    users: Vec<(String, String)>,
    cert_b64: String,
    requests: RequestLog,
}

impl TokenServer {
    /// Generates a key and certificate in `dir` and starts serving on a free port.
    pub fn start(dir: &Path, users: Vec<(String, String)>) -> TokenServer {
        std::fs::create_dir_all(dir).expect("token dir");
        super::run_ok(Command::new("openssl").current_dir(dir).args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-days",
            "2",
            "-subj",
            "/CN=otters-test-token",
        ]));
        let der = Command::new("openssl")
            .current_dir(dir)
            .args(["x509", "-in", "cert.pem", "-outform", "DER"])
            .output()
            .expect("openssl x509");
        let cert_b64 = base64::engine::general_purpose::STANDARD.encode(der.stdout);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind token server");
        let addr = listener.local_addr().expect("addr").to_string();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            users,
            cert_b64,
            requests: requests.clone(),
        });
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        TokenServer {
            addr,
            dir: dir.to_path_buf(),
            requests,
        }
    }

    pub fn realm(&self) -> String {
        format!("http://{}/token", self.addr)
    }

    pub fn cert_path(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut auth = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("authorization") {
                auth = Some(v.trim().to_owned());
            }
        }
    }
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let scopes: Vec<String> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| *k == "scope")
        .map(|(_, v)| super::percent_decode(&v.replace('+', " ")))
        .collect();
    let user = match auth.as_deref().and_then(|a| a.strip_prefix("Basic ")) {
        None => None,
        Some(b64) => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&decoded).into_owned();
            let (u, p) = text.split_once(':').unwrap_or((&text, ""));
            if !shared.users.iter().any(|(ku, kp)| ku == u && kp == p) {
                shared
                    .requests
                    .lock()
                    .expect("lock")
                    .push((format!("DENIED {u}"), scopes));
                return respond(
                    stream,
                    401,
                    "{\"details\":\"incorrect username or password\"}",
                );
            }
            Some(u.to_owned())
        }
    };
    shared
        .requests
        .lock()
        .expect("lock")
        .push((user.clone().unwrap_or_else(|| "-".into()), scopes.clone()));
    let mut access = Vec::new();
    for scope in &scopes {
        let parts: Vec<&str> = scope.splitn(3, ':').collect();
        if parts.len() != 3 {
            continue;
        }
        // A repository name may not contain `:`, but a registry-scoped name could; keep it simple.
        let actions: Vec<&str> = parts[2]
            .split(',')
            .filter(|a| user.is_some() || *a == "pull")
            .collect();
        access.push(serde_json::json!({"type": parts[0], "name": parts[1], "actions": actions}));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = serde_json::json!({
        "iss": ISSUER, "sub": user.clone().unwrap_or_default(), "aud": SERVICE,
        "exp": now + 300, "nbf": now - 10, "iat": now - 10,
        "jti": format!("{now}-{}", access.len()), "access": access,
    });
    let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "x5c": [shared.cert_b64]});
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let signing_input = format!("{}.{}", b64(&header), b64(&claims));
    let sig = sign(&shared.dir, signing_input.as_bytes());
    let jwt = format!(
        "{signing_input}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig)
    );
    let body =
        serde_json::json!({"token": jwt, "access_token": jwt, "expires_in": 300}).to_string();
    respond(stream, 200, &body)
}

fn sign(dir: &Path, input: &[u8]) -> Vec<u8> {
    let mut child = Command::new("openssl")
        .current_dir(dir)
        .args(["dgst", "-sha256", "-sign", "key.pem"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("openssl dgst");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    child.wait_with_output().expect("openssl output").stdout
}

fn respond(mut stream: TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    let reason = if status == 200 { "OK" } else { "Unauthorized" };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
