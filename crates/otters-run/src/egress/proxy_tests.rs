//! The proxy against hostile clients: undeclared destinations, a Host header that differs from
//! the target, absolute and origin form, IPv6 literals, a name that resolves to loopback, a client
//! that never sends a request, an oversized head, more connections than the cap.

use super::*;
use otters_agentfile::ir::egress::parse as dest;
use std::sync::Mutex;

/// An upstream that answers each connection with what it read first, prefixed `echo:`.
fn upstream() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let srv = l.try_clone().unwrap();
    thread::spawn(move || {
        for c in srv.incoming() {
            let Ok(mut c) = c else { break };
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                if let Ok(n) = c.read(&mut buf) {
                    let _ = c.write_all(b"echo:");
                    let _ = c.write_all(&buf[..n]);
                }
            });
        }
    });
    (l, port)
}

type Events = Arc<Mutex<Vec<Event>>>;

fn proxy(allow: &[String], tune: impl FnOnce(&mut Config)) -> (Proxy, Events) {
    let mut config = Config::new(allow.iter().map(|a| dest(a).unwrap()).collect());
    config.head_timeout = Duration::from_millis(300);
    tune(&mut config);
    let events: Events = Arc::default();
    let seen = events.clone();
    let report: Report = Arc::new(move |e| seen.lock().unwrap().push(e));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    (start(l, config, report).unwrap(), events)
}

/// Sends `head` (and `then` after the answer's first line) and returns everything read.
fn ask(p: &Proxy, head: &str, then: &[u8]) -> String {
    let mut s = TcpStream::connect(p.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let mut sent = then.is_empty();
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if !sent && out.windows(4).any(|w| w == b"\r\n\r\n") {
                    s.write_all(then).unwrap();
                    sent = true;
                }
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn connect_reaches_a_declared_destination_and_nothing_else() {
    let (_u, port) = upstream();
    let (p, events) = proxy(&[format!("127.0.0.1:{port}")], |_| {});
    let ok = ask(
        &p,
        &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
        b"hello",
    );
    assert!(
        ok.starts_with("HTTP/1.1 200 ") && ok.ends_with("echo:hello"),
        "{ok}"
    );
    // Another port of the same host.
    let other = port.wrapping_add(1).max(1);
    let no = ask(
        &p,
        &format!("CONNECT 127.0.0.1:{other} HTTP/1.1\r\n\r\n"),
        b"",
    );
    assert!(no.starts_with("HTTP/1.1 403 "), "{no}");
    // Another host.
    let no = ask(&p, "CONNECT example.com:443 HTTP/1.1\r\n\r\n", b"");
    assert!(no.starts_with("HTTP/1.1 403 "), "{no}");
    let e = events.lock().unwrap().clone();
    assert_eq!(
        e,
        [
            Event::NotDeclared {
                host: "127.0.0.1".into(),
                port: other
            },
            Event::NotDeclared {
                host: "example.com".into(),
                port: 443
            },
        ]
    );
}

#[test]
fn a_host_header_that_differs_from_the_target_is_refused() {
    let (_u, port) = upstream();
    let (p, events) = proxy(&[format!("127.0.0.1:{port}")], |_| {});
    for head in [
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: example.com:{port}\r\n\r\n"),
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n"),
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"),
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nhost: 127.0.0.1:{port}\r\n\r\n"),
    ] {
        let a = ask(&p, &head, b"");
        assert!(a.starts_with("HTTP/1.1 400 "), "{head:?}: {a}");
    }
    assert!(events
        .lock()
        .unwrap()
        .iter()
        .all(|e| matches!(e, Event::BadRequest(_))));
}

#[test]
fn absolute_form_is_forwarded_in_origin_form_and_origin_form_is_refused() {
    let (_u, port) = upstream();
    let (p, _) = proxy(&[format!("127.0.0.1:{port}")], |_| {});
    let a = ask(
        &p,
        &format!("GET http://127.0.0.1:{port}/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Authorization: secret\r\nConnection: keep-alive\r\n\r\n"),
        b"",
    );
    assert_eq!(
        a,
        format!("echo:GET /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
    );
    let a = ask(
        &p,
        &format!("GET http://127.0.0.1:{port} HTTP/1.0\r\n\r\n"),
        b"",
    );
    assert_eq!(
        a,
        format!("echo:GET / HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
    );
    for head in [
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_owned(),
        format!("GET https://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
        format!("GET http://user@127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
        "GET http://127.0.0.1:99999/ HTTP/1.1\r\n\r\n".to_owned(),
        "get http://127.0.0.1/ HTTP/1.1\r\n\r\n".to_owned(),
        "CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n".to_owned(),
        "GARBAGE\r\n\r\n".to_owned(),
    ] {
        let a = ask(&p, &head, b"");
        assert!(a.starts_with("HTTP/1.1 400 "), "{head:?}: {a}");
    }
    // Plain HTTP to an undeclared port: refused, not forwarded.
    let a = ask(&p, "GET http://127.0.0.1:1/ HTTP/1.1\r\n\r\n", b"");
    assert!(a.starts_with("HTTP/1.1 403 "), "{a}");
}

#[test]
fn ipv6_literals_are_matched_by_value() {
    // A host without IPv6 loopback cannot run this one (the parser's IPv6 cases still run).
    let Ok(l) = TcpListener::bind("[::1]:0") else {
        return;
    };
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { break };
            let _ = c.write_all(b"v6");
        }
    });
    let (p, events) = proxy(&[format!("[0:0::1]:{port}")], |_| {});
    let a = ask(
        &p,
        &format!("CONNECT [::1]:{port} HTTP/1.1\r\nHost: [::1]:{port}\r\n\r\n"),
        b"",
    );
    assert!(a.starts_with("HTTP/1.1 200 ") && a.ends_with("v6"), "{a}");
    let a = ask(&p, &format!("CONNECT [::2]:{port} HTTP/1.1\r\n\r\n"), b"");
    assert!(a.starts_with("HTTP/1.1 403 "), "{a}");
    let a = ask(&p, &format!("CONNECT ::1:{port} HTTP/1.1\r\n\r\n"), b"");
    assert!(a.starts_with("HTTP/1.1 400 "), "{a}");
    assert_eq!(events.lock().unwrap().len(), 2);
}

#[test]
fn a_declared_name_that_resolves_to_loopback_is_refused() {
    let (_u, port) = upstream();
    let (p, events) = proxy(&[format!("localhost:{port}")], |_| {});
    let a = ask(
        &p,
        &format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n"),
        b"x",
    );
    assert!(
        a.starts_with("HTTP/1.1 403 ") || a.starts_with("HTTP/1.1 502 "),
        "{a}"
    );
    assert!(!a.contains("echo:"), "{a}");
    let e = events.lock().unwrap().clone();
    assert!(
        e.iter()
            .any(|e| matches!(e, Event::PrivateAddress { addr, .. } if addr.is_loopback())),
        "{e:?}"
    );
}

#[test]
fn a_client_that_never_sends_a_request_is_timed_out() {
    let (p, events) = proxy(&["example.com".to_owned()], |c| {
        c.head_timeout = Duration::from_millis(200);
    });
    let start = std::time::Instant::now();
    let a = ask(&p, "", b"");
    assert!(a.starts_with("HTTP/1.1 408 "), "{a}");
    assert!(start.elapsed() < Duration::from_secs(3));
    // Half a request line, then silence: the same.
    let a = ask(&p, "CONNECT exam", b"");
    assert!(a.starts_with("HTTP/1.1 408 "), "{a}");
    assert_eq!(events.lock().unwrap().len(), 2);
}

#[test]
fn an_oversized_head_is_refused_without_reading_it_all() {
    let (p, _) = proxy(&["example.com".to_owned()], |c| c.max_head = 1024);
    let mut s = TcpStream::connect(p.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let junk = format!(
        "CONNECT example.com:443 HTTP/1.1\r\nX: {}\r\n",
        "a".repeat(4096)
    );
    let _ = s.write_all(junk.as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
}

#[test]
fn connections_over_the_cap_are_turned_away_and_slots_come_back() {
    let (p, events) = proxy(&["example.com".to_owned()], |c| {
        c.max_connections = 4;
        c.head_timeout = Duration::from_secs(5);
    });
    // Four clients that say nothing hold every slot.
    let held: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(p.addr()).unwrap())
        .collect();
    thread::sleep(Duration::from_millis(200));
    let mut many = Vec::new();
    for _ in 0..50 {
        many.push(ask(&p, "", b""));
    }
    assert!(
        many.iter().all(|a| a.starts_with("HTTP/1.1 503 ")),
        "{many:?}"
    );
    drop(held);
    thread::sleep(Duration::from_millis(300));
    let a = ask(&p, "CONNECT example.org:443 HTTP/1.1\r\n\r\n", b"");
    assert!(
        a.starts_with("HTTP/1.1 403 "),
        "a slot was not given back: {a}"
    );
    assert!(events.lock().unwrap().len() >= 51);
}

#[test]
fn internal_addresses_are_named_as_such() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::",
    ] {
        assert!(is_internal(ip.parse().unwrap()), "{ip}");
    }
    for ip in ["1.1.1.1", "192.0.2.2", "2001:db8::1", "2606:4700::1111"] {
        assert!(!is_internal(ip.parse().unwrap()), "{ip}");
    }
}
