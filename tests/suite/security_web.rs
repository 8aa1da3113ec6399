//! The answer caps of `otters_oci::web` (issue 24 review), through `otters sign --keyless`: each of
//! the calls keyless signing makes (the CI's OIDC token endpoint, Fulcio, Rekor, the timestamp
//! authority) is pointed at a hostile endpoint on 127.0.0.1 that answers with a huge body (a
//! `Content-Length` of 1 GiB, then as many bytes as the client takes) or an endless one (chunked,
//! never ending). The signature must fail with an error naming the endpoint and the cap, before
//! the call's timeout, with bounded memory (the binary's peak RSS under `/usr/bin/time`).
//!
//! The services before the hostile one are the mock Fulcio of `tests/harness/supply/keyless/` (npm
//! `@sigstore/mock`: the real ones are on the internet); the hostile endpoints are a few lines of
//! std TCP below, since no real server misbehaves on purpose.

use crate::keyless::Mock;
use crate::support::cli::{flat, Env};
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;

/// How the hostile endpoint answers.
#[derive(Clone, Copy, Debug)]
enum Body {
    /// `Content-Length: 1 GiB`, then zeros for as long as the client reads.
    Huge,
    /// `Transfer-Encoding: chunked`, 64 KiB chunks for as long as the client reads.
    Endless,
    /// `Transfer-Encoding: chunked`, one byte every 100 ms, never ending: no cap is reached.
    Trickle,
}

/// A server on 127.0.0.1 answering every request with `body`; stops when dropped (the accept
/// loop ends at the next connection, which `drop` makes).
struct Hostile {
    addr: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Hostile {
    fn start(body: Body) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    std::thread::spawn(move || answer(conn, body));
                }
            }
        });
        Hostile { addr, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = TcpStream::connect(&self.addr);
    }
}

/// Reads the request head (and whatever body came with it), then writes until the client goes.
fn answer(mut conn: TcpStream, body: Body) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 1 << 20 {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let zeros = vec![b'0'; 64 << 10];
    let start = match body {
        Body::Huge => format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            1u64 << 30
        ),
        Body::Endless | Body::Trickle => "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_owned(),
    };
    if conn.write_all(start.as_bytes()).is_err() {
        return;
    }
    loop {
        let sent = match body {
            Body::Huge => conn.write_all(&zeros),
            Body::Endless => conn
                .write_all(format!("{:x}\r\n", zeros.len()).as_bytes())
                .and_then(|()| conn.write_all(&zeros))
                .and_then(|()| conn.write_all(b"\r\n")),
            Body::Trickle => {
                std::thread::sleep(std::time::Duration::from_millis(100));
                conn.write_all(b"1\r\n0\r\n")
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Runs `otters ARGS` in `env` under `/usr/bin/time`: (success, stderr, peak RSS in KiB).
fn measured(env: &Env, vars: &[(&str, &str)], args: &[&str]) -> (bool, String, u64) {
    let rss_file = env.dir.path().join("rss");
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss_file)
        .arg(assert_cmd::cargo::cargo_bin("otters"))
        .args(args)
        .env("OTTERS_HOME", env.home())
        .env("NO_COLOR", "1")
        .env_remove("SIGSTORE_ID_TOKEN")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_URL")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_TOKEN");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("/usr/bin/time otters");
    let rss = std::fs::read_to_string(&rss_file)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(u64::MAX);
    (
        out.status.success(),
        flat(&String::from_utf8_lossy(&out.stderr)),
        rss,
    )
}

/// One call sent to the hostile server: which service, the URL it calls there, and the flags and
/// variables that send it there.
type Case<'a> = (&'a str, String, Vec<String>, Vec<(&'a str, &'a str)>);

/// Peak RSS allowed: the answer cap is 4 MiB; reading a 1 GiB or endless answer would go far past.
const MAX_RSS_KIB: u64 = 160 << 10;

/// A machine with `demo:1` built, to sign; `None` after a skip when `/usr/bin/time` (the RSS
/// measure) is missing.
fn machine_with_an_image(test: &str) -> Option<Env> {
    if !Path::new("/usr/bin/time").exists() {
        crate::support::tools::skip(
            test,
            "/usr/bin/time is not installed (apt-get install time)",
        );
        return None;
    }
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\n",
    );
    env.ok(&["build", "-q", "-t", "demo:1", ctx.to_str().expect("utf8")]);
    Some(env)
}

#[test]
fn keyless_signing_refuses_huge_and_endless_answers_from_every_service() {
    let test = "keyless_signing_refuses_huge_and_endless_answers_from_every_service";
    let Some(env) = machine_with_an_image(test) else {
        return;
    };
    let Some(mock) = Mock::start(test) else {
        return;
    };
    let token = Mock::token(&["--github", "acme/agents"]);
    let fulcio = mock.var("FULCIO_URL").to_owned();
    // The flags of a signature with the test's token, Fulcio at `fulcio`, and `rest`.
    let signing = |fulcio: &str, rest: &[&str]| -> Vec<String> {
        ["--identity-token", &token, "--fulcio-url", fulcio]
            .iter()
            .chain(rest)
            .map(|s| (*s).to_owned())
            .collect()
    };

    for body in [Body::Huge, Body::Endless] {
        let hostile = Hostile::start(body);
        let oidc = hostile.url("/token");
        let cases: Vec<Case<'_>> = vec![
            (
                "the CI's OIDC token endpoint",
                format!("{oidc}?audience=sigstore"),
                vec![
                    "--fulcio-url".into(),
                    fulcio.clone(),
                    "--rekor-url".into(),
                    mock.var("REKOR_URL").into(),
                ],
                vec![
                    ("ACTIONS_ID_TOKEN_REQUEST_URL", oidc.as_str()),
                    ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-token"),
                ],
            ),
            (
                "Fulcio",
                hostile.url("/api/v2/signingCert"),
                signing(&hostile.url(""), &["--rekor-url", mock.var("REKOR_URL")]),
                vec![],
            ),
            (
                "Rekor",
                hostile.url("/api/v1/log/entries"),
                signing(&fulcio, &["--rekor-url", &hostile.url("")]),
                vec![],
            ),
            (
                "the timestamp authority",
                hostile.url("/api/v1/timestamp"),
                signing(
                    &fulcio,
                    &[
                        "--rekor-url",
                        "none",
                        "--tsa-url",
                        &hostile.url("/api/v1/timestamp"),
                    ],
                ),
                vec![],
            ),
        ];
        for (service, url, flags, vars) in cases {
            let mut args = vec!["sign", "demo:1", "--keyless"];
            args.extend(flags.iter().map(String::as_str));
            let (ok, err, rss) = measured(&env, &vars, &args);
            let what = format!("{service}, {body:?} body");
            assert!(!ok, "{what}: signing succeeded");
            // The cap, not the 30 s timeout, ended the call ("cannot reach … timed out" otherwise).
            assert!(
                err.contains(&format!("{url} answered more than 4194304 bytes")),
                "{what}: {err}"
            );
            assert!(rss < MAX_RSS_KIB, "{what}: peak RSS {rss} KiB");
            eprintln!("{what}: refused, peak RSS {rss} KiB");
        }
    }
}

/// An endless answer that never reaches the cap (a byte every 100 ms) ends at the call's 30 s
/// timeout, with an error naming the endpoint, instead of holding the signature forever.
#[test]
fn a_trickling_endless_answer_ends_at_the_call_timeout() {
    let Some(env) = machine_with_an_image("a_trickling_endless_answer_ends_at_the_call_timeout")
    else {
        return;
    };
    let hostile = Hostile::start(Body::Trickle);
    let started = std::time::Instant::now();
    let (ok, err, rss) = measured(
        &env,
        &[],
        &[
            "sign",
            "demo:1",
            "--keyless",
            "--identity-token",
            "e30.eyJpc3MiOiJpIiwic3ViIjoicyJ9.c2ln",
            "--fulcio-url",
            &hostile.url(""),
            "--rekor-url",
            "http://127.0.0.1:1",
        ],
    );
    let took = started.elapsed();
    assert!(!ok, "signing succeeded");
    assert!(
        err.contains(&format!(
            "cannot reach {}",
            hostile.url("/api/v2/signingCert")
        )) && err.contains("timed out"),
        "{err}"
    );
    assert!(rss < MAX_RSS_KIB, "peak RSS {rss} KiB");
    // Generous: the bound is the 30 s timeout; a missing timeout would never end.
    assert!(took.as_secs() < 300, "took {took:?}");
    eprintln!("trickle: refused after {took:?}, peak RSS {rss} KiB: {err}");
}
