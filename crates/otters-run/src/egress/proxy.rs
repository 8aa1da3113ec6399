//! The allow-list HTTP proxy of a confined run: `CONNECT host:port` (HTTPS and any TCP) and
//! absolute-form plain HTTP (`GET http://host:port/…`), each let through only to a declared
//! destination.
//!
//! Takes: a bound listener and a [`Config`] (the allow-list, bounds). Returns: a running
//! [`Proxy`], stopped when dropped, and an [`Event`] per refusal through the caller's callback.
//! Must never: print (the caller says what a refusal means), hold more than
//! [`Config::max_connections`] connections or more than [`Config::max_head`] bytes of a request
//! head, wait longer than [`Config::head_timeout`] for one, reach a name that resolves to a
//! loopback, private or link-local address (declare the address itself to allow it), or forward a
//! request whose `Host` differs from its target.

use otters_agentfile::ir::egress::Dest;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The proxy's allow-list and bounds.
#[derive(Clone, Debug)]
pub struct Config {
    pub allow: Vec<Dest>,
    /// Connections open at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// The most bytes of a request line and headers.
    pub max_head: usize,
    /// How long a client may take to send its request head.
    pub head_timeout: Duration,
    /// How long a tunnel may be silent in one direction before it is closed.
    pub idle_timeout: Duration,
    /// How long connecting to the destination may take.
    pub connect_timeout: Duration,
}

impl Config {
    pub fn new(allow: Vec<Dest>) -> Config {
        Config {
            allow,
            max_connections: 256,
            max_head: 16 * 1024,
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(15 * 60),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// Something the proxy refused, for the caller to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A destination no EGRESS declares (host as the client sent it, escaped by the caller).
    NotDeclared { host: String, port: u16 },
    /// A declared name that resolved to an address only a declared IP literal may reach.
    PrivateAddress { host: String, addr: IpAddr },
    /// A request the proxy does not take (malformed, origin-form, Host ≠ target, too large,
    /// too slow, over the connection cap).
    BadRequest(&'static str),
}

/// The callback a refusal is reported through.
pub type Report = Arc<dyn Fn(Event) + Send + Sync>;

/// A running proxy; dropping it stops accepting and waits for the accept loop to end.
pub struct Proxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // The accept loop polls the flag: no connection to itself is needed to wake it (the
        // address may already be gone with the network).
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How often a stopped proxy's accept loop notices.
const POLL: Duration = Duration::from_millis(25);

/// Small stacks: a connection's threads only copy bytes.
const STACK: usize = 128 * 1024;

/// Starts serving `listener` (already bound) with `config`.
pub fn start(listener: TcpListener, config: Config, report: Report) -> io::Result<Proxy> {
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let open = Arc::new(AtomicUsize::new(0));
    let config = Arc::new(config);
    let flag = stop.clone();
    let thread = thread::Builder::new()
        .name("otters-egress-proxy".into())
        .stack_size(STACK)
        .spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                let mut conn = match listener.accept() {
                    Ok((c, _)) => c,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        thread::sleep(POLL);
                        continue;
                    }
                    Err(_) => {
                        thread::sleep(POLL);
                        continue;
                    }
                };
                let _ = conn.set_nonblocking(false);
                if open.fetch_add(1, Ordering::SeqCst) >= config.max_connections {
                    open.fetch_sub(1, Ordering::SeqCst);
                    report(Event::BadRequest("too many connections at once"));
                    let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
                    let _ = respond(&mut conn, 503, "too many connections through the proxy");
                    continue;
                }
                let (config, report, held) = (config.clone(), report.clone(), open.clone());
                let spawned = thread::Builder::new().stack_size(STACK).spawn(move || {
                    serve(conn, &config, &report);
                    held.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    // No thread, no connection: give its slot back.
                    open.fetch_sub(1, Ordering::SeqCst);
                }
            }
        })?;
    Ok(Proxy {
        addr,
        stop,
        thread: Some(thread),
    })
}

/// One client connection: read its head, check it, connect, relay.
fn serve(mut client: TcpStream, config: &Config, report: &Report) {
    let _ = client.set_read_timeout(Some(config.head_timeout));
    let _ = client.set_write_timeout(Some(config.head_timeout));
    let (head, rest) = match read_head(&mut client, config.max_head) {
        Ok(h) => h,
        Err(HeadError::TooLarge) => {
            report(Event::BadRequest("request head over the size limit"));
            let _ = respond(&mut client, 431, "request head too large");
            return;
        }
        Err(HeadError::Closed) => return,
        Err(HeadError::Slow) => {
            report(Event::BadRequest("no request head in time"));
            let _ = respond(&mut client, 408, "no request in time");
            return;
        }
    };
    let req = match parse(&head) {
        Ok(r) => r,
        Err(why) => {
            report(Event::BadRequest(why));
            let _ = respond(&mut client, 400, why);
            return;
        }
    };
    if !config.allow.iter().any(|d| d.matches(&req.host, req.port)) {
        report(Event::NotDeclared {
            host: req.host.clone(),
            port: req.port,
        });
        let _ = respond(
            &mut client,
            403,
            "destination not declared by the agent's EGRESS",
        );
        return;
    }
    let upstream = match connect(&req.host, req.port, config, report) {
        Ok(s) => s,
        Err(status) => {
            let _ = respond(&mut client, status, "cannot reach the destination");
            return;
        }
    };
    let mut upstream = upstream;
    let sent = if req.connect {
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
    } else {
        upstream.write_all(&req.forward)
    };
    if sent.is_err() || (!rest.is_empty() && upstream.write_all(&rest).is_err()) {
        return;
    }
    relay(client, upstream, config.idle_timeout);
}

enum HeadError {
    TooLarge,
    Closed,
    Slow,
}

/// The request head (up to and including the blank line) and any bytes read past it.
fn read_head(s: &mut TcpStream, max: usize) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = match s.read(&mut chunk) {
            Ok(0) => return Err(HeadError::Closed),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(HeadError::Slow)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(HeadError::Closed),
        };
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find(&buf[from..], b"\r\n\r\n").map(|i| from + i + 4) {
            if end > max {
                return Err(HeadError::TooLarge);
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > max {
            return Err(HeadError::TooLarge);
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A request the proxy takes.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    connect: bool,
    /// As the client named it (a name, an IPv4 address, or an IPv6 address without brackets).
    host: String,
    port: u16,
    /// Plain HTTP: the head to send upstream (origin-form, `Connection: close`, no `Proxy-*`).
    forward: Vec<u8>,
}

/// Parses a request head: `CONNECT authority` or `METHOD http://authority/path`, HTTP/1.x, and a
/// `Host` header, when given, naming the same host and port.
fn parse(head: &[u8]) -> Result<Request, &'static str> {
    let text = std::str::from_utf8(head).map_err(|_| "request head is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed request line");
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0")
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err("malformed request line");
    }
    let headers: Vec<(&str, &str)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or("malformed header line")
        })
        .collect::<Result<_, _>>()?;
    let connect = method == "CONNECT";
    let (authority, path, default_port) = if connect {
        (target, "", None)
    } else {
        let rest = target
            .strip_prefix("http://")
            .ok_or("only absolute-form http:// requests and CONNECT go through the proxy")?;
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        (auth, path, Some(80))
    };
    if authority.contains('@') {
        return Err("user information in the target");
    }
    let (host, port) = authority_parts(authority, default_port).ok_or("malformed target")?;
    let hosts: Vec<&str> = headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map(|(_, v)| *v)
        .collect();
    if hosts.len() > 1 {
        return Err("several Host headers");
    }
    if let Some(h) = hosts.first() {
        let same = authority_parts(h, Some(default_port.unwrap_or(port)))
            .is_some_and(|(hh, hp)| hp == port && same_host(&hh, &host));
        if !same {
            return Err("the Host header names another destination than the request target");
        }
    }
    let mut forward = Vec::new();
    if !connect {
        forward.extend_from_slice(format!("{method} {path} {version}\r\n").as_bytes());
        if hosts.is_empty() {
            forward.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
        }
        for (k, v) in &headers {
            let lower = k.to_ascii_lowercase();
            if lower.starts_with("proxy-") || lower == "connection" || lower == "keep-alive" {
                continue;
            }
            forward.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        // One request per connection: a second one could name another Host on the same server.
        forward.extend_from_slice(b"Connection: close\r\n\r\n");
    }
    Ok(Request {
        connect,
        host,
        port,
        forward,
    })
}

/// `host:port`, `[v6]:port`, or (with a default) `host` / `[v6]`; the host without brackets.
fn authority_parts(a: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        h.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (h, port)
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => return None,
            None => (a, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u16>().ok().filter(|p| *p > 0)?
        }
        Some(_) => return None,
        None => default_port?,
    };
    if host.is_empty() || host.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return None;
    }
    Some((host.to_owned(), port))
}

fn same_host(a: &str, b: &str) -> bool {
    match (a.parse::<IpAddr>(), b.parse::<IpAddr>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a
            .trim_end_matches('.')
            .eq_ignore_ascii_case(b.trim_end_matches('.')),
    }
}

/// Whether an address is one a name must not lead to: loopback, private, link-local, unique
/// local, unspecified, multicast, or such an address mapped into IPv6.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v) => {
            v.is_loopback()
                || v.is_private()
                || v.is_link_local()
                || v.is_unspecified()
                || v.is_multicast()
                || v.is_broadcast()
                || v.octets()[0] == 0
                || (v.octets()[0] == 100 && (v.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(v) => match v.to_ipv4_mapped() {
            Some(v4) => is_internal(IpAddr::V4(v4)),
            None => {
                v.is_loopback()
                    || v.is_unspecified()
                    || v.is_multicast()
                    || (v.segments()[0] & 0xfe00) == 0xfc00
                    || (v.segments()[0] & 0xffc0) == 0xfe80
            }
        },
    }
}

/// Connects to the destination: an IP literal as it is; a name through DNS, refusing internal
/// addresses. Returns the HTTP status to answer with on failure.
fn connect(host: &str, port: u16, config: &Config, report: &Report) -> Result<TcpStream, u16> {
    let literal = host.parse::<IpAddr>().ok();
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => (host, port)
            .to_socket_addrs()
            .map_err(|_| 502u16)?
            .collect(),
    };
    let mut last = 502;
    for a in addrs {
        if literal.is_none() && is_internal(a.ip()) {
            report(Event::PrivateAddress {
                host: host.to_owned(),
                addr: a.ip(),
            });
            last = 403;
            continue;
        }
        if let Ok(s) = TcpStream::connect_timeout(&a, config.connect_timeout) {
            return Ok(s);
        }
    }
    Err(last)
}

/// Copies both ways until either side closes or is idle too long.
fn relay(client: TcpStream, upstream: TcpStream, idle: Duration) {
    for s in [&client, &upstream] {
        let _ = s.set_read_timeout(Some(idle));
        let _ = s.set_write_timeout(Some(idle));
    }
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let back = thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || pump(u2, c2));
    pump(client, upstream);
    if let Ok(t) = back {
        let _ = t.join();
    }
}

/// One direction; at its end the writer's side is shut so the other direction ends too.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    if !spliced(&from, &to) {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// One direction moved by `splice(2)` through a pipe, so the bytes never enter the proxy's memory
/// (a third of the CPU of a read/write copy; `docs/performance.md`). The sockets' timeouts hold
/// as for a read. False, having moved nothing, where the system cannot splice these sockets: the
/// caller copies instead.
fn spliced(from: &TcpStream, to: &TcpStream) -> bool {
    use rustix::pipe::{fcntl_setpipe_size, pipe_with, splice, PipeFlags, SpliceFlags};
    let Ok((pipe_out, pipe_in)) = pipe_with(PipeFlags::CLOEXEC) else {
        return false;
    };
    // A larger pipe moves more per call where the system allows it (page references, not bytes).
    let chunk = fcntl_setpipe_size(&pipe_in, 256 * 1024).unwrap_or(64 * 1024);
    let mut moved_any = false;
    loop {
        let n = match splice(from, None, &pipe_in, None, chunk, SpliceFlags::MOVE) {
            Ok(0) => return true,
            Ok(n) => n,
            Err(e) if !moved_any && e == rustix::io::Errno::INVAL => return false,
            Err(_) => return true,
        };
        moved_any = true;
        let mut left = n;
        while left > 0 {
            match splice(&pipe_out, None, to, None, left, SpliceFlags::MOVE) {
                Ok(0) | Err(_) => return true,
                Ok(m) => left -= m,
            }
        }
    }
}

fn respond(s: &mut TcpStream, status: u16, why: &str) -> io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Bad Gateway",
    };
    let body = format!("otters egress proxy: {why}\n");
    let text = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(text.as_bytes())
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
