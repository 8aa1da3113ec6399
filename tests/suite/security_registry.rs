//! Security tests of the registry client (issue 8, items 3, 5, 13 and 14): the real `otters`
//! binary against a fake misbehaving registry on loopback (`support/hostile_registry.rs`).
//!
//! Each test is one attack and asserts what a user would check: no credential at the other host,
//! bounded memory and disk (nothing left in `$OTTERS_HOME/store/.tmp`), a deadline on a hung
//! registry, and a clear error naming what failed.

#[path = "support/hostile_registry.rs"]
pub(crate) mod hostile_registry;

use crate::support::cli::{flat, Env};
use hostile_registry::{Body, Content, Hostile, Length, Reply, Req};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";
const LAYER: &str = "application/vnd.oci.image.layer.v1.tar";

/// A machine whose docker config holds `user:pass` for `addr`.
fn env_with_login(addr: &str, user: &str, pass: &str) -> Env {
    use base64::Engine as _;
    let env = Env::new();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    crate::support::write(
        &env.docker().join("config.json"),
        serde_json::json!({"auths": {addr: {"auth": auth}}}).to_string(),
    );
    env
}

/// Builds a small agent tagged `tag` with one ADD of `data_len` bytes.
fn build_agent(env: &Env, tag: &str, data_len: usize) {
    let ctx = env.dir.path().join("ctx");
    let data: Vec<u8> = (0..data_len).map(|i| (i * 7 % 251) as u8).collect();
    crate::support::write(&ctx.join("data.bin"), data);
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nADD data.bin\n",
    );
    env.ok(&["build", "-q", "-t", tag, ctx.to_str().expect("utf8")]);
}

/// Files under `$OTTERS_HOME/store/.tmp` (must be none after any failure).
fn leftovers(env: &Env) -> Vec<String> {
    std::fs::read_dir(env.store().join(".tmp"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Blobs in the store.
fn stored_blobs(env: &Env) -> usize {
    std::fs::read_dir(env.store().join("blobs/sha256")).map_or(0, Iterator::count)
}

/// Runs `otters args` under `ulimit -v kib` (address space), returning (success, stderr flat).
fn run_limited(env: &Env, kib: u64, args: &[&str]) -> (bool, String) {
    let bin = assert_cmd::cargo::cargo_bin("otters");
    let mut script = format!("ulimit -v {kib}; exec \"$0\"");
    for i in 1..=args.len() {
        let _ = write!(script, " \"${i}\"");
    }
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(bin)
        .args(args)
        .env("OTTERS_HOME", env.home())
        .env("DOCKER_CONFIG", env.docker())
        .env("NO_COLOR", "1")
        .env("OTTERS_REGISTRY_TIMEOUT", "5")
        .output()
        .expect("run otters");
    (
        out.status.success(),
        flat(&String::from_utf8_lossy(&out.stderr)),
    )
}

/// One OCI image with a `size`-byte layer in `content` under `repo:tag`; returns the layer.
fn image_with_layer(content: &Content, repo: &str, tag: &str, size: usize) -> Vec<u8> {
    let layer: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
    content.image(repo, tag, b"{}", &[(LAYER, &layer)]);
    layer
}

// ---- item 3: credentials only to the registry's origin -------------------------------------

#[test]
fn upload_location_on_another_origin_is_followed_without_credentials() {
    // B is another origin (same host, other port): it takes the upload.
    let b_content = Arc::new(Content::new());
    let bc = b_content.clone();
    let b = Hostile::start(move |r| bc.serve(r));
    // A wants Basic credentials and sends uploads to B (absolute Location), and for the second
    // push a relative `@host:port/…` Location that naive concatenation would turn into B.
    let a_content = Arc::new(Content::with_basic("alice", "s3cret"));
    let ac = a_content.clone();
    let b_addr = b.addr.clone();
    // One upload session per POST (a push sends several blobs at once).
    let sessions = std::sync::atomic::AtomicUsize::new(0);
    let a = Hostile::start(move |r: &Req| {
        let reply = ac.serve(r);
        if r.method == "POST" && reply.status == 202 {
            let n = sessions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let loc = if r.path().contains("/relative/") {
                format!("@{b_addr}/upload/x{n}")
            } else {
                format!("http://{b_addr}/upload/u{n}")
            };
            return Reply::new(202).header("Location", &loc);
        }
        reply
    });
    let env = env_with_login(&a.addr, "alice", "s3cret");
    build_agent(&env, "demo:1", 2048);
    env.ok(&["push", "-q", "demo:1", &format!("{}/team/agent:1", a.addr)]);

    let at_b = b.requests();
    assert!(
        at_b.iter().any(|r| r.method == "PATCH") && at_b.iter().any(|r| r.method == "PUT"),
        "the upload went to B: {at_b:?}"
    );
    assert!(
        b.authorized().is_empty(),
        "B (another origin) saw an Authorization header: {:?}",
        b.authorized()
    );
    assert!(
        !a.authorized().is_empty(),
        "A itself got the credentials (the test is live)"
    );
    assert!(a_content.manifest("team/agent", "1").is_some());

    // `@B/upload/x` is a path on A, never a userinfo trick that reaches B.
    b.clear();
    let (ok, _, err) = env.run(&[
        "push",
        "-q",
        "demo:1",
        &format!("{}/relative/agent:1", a.addr),
    ]);
    assert!(
        b.requests().is_empty(),
        "B was contacted: {:?}",
        b.requests()
    );
    assert!(
        a.requests()
            .iter()
            .any(|r| r.method == "PATCH" && r.path().contains(&format!("@{}", b.addr))),
        "the PATCH stayed on A ({ok}, {err})"
    );
}

#[test]
fn upload_location_over_plain_http_to_a_remote_host_is_refused() {
    // C stands for another machine. Tests send traffic only to loopback, so C is a name under the
    // reserved `.invalid` domain, which never resolves: had otters tried C, the push would fail on
    // name resolution, not with the transport rule's refusal asserted below.
    let target = "otters-test.invalid:80".to_owned();
    let a_content = Arc::new(Content::with_basic("alice", "s3cret"));
    let ac = a_content.clone();
    let t = target.clone();
    let a = Hostile::start(move |r: &Req| {
        let reply = ac.serve(r);
        if r.method == "POST" && reply.status == 202 {
            return Reply::new(202).header("Location", &format!("http://{t}/upload/u0"));
        }
        reply
    });
    let env = env_with_login(&a.addr, "alice", "s3cret");
    build_agent(&env, "demo:1", 100);
    let err = env.fails(&["push", "-q", "demo:1", &format!("{}/team/agent:1", a.addr)]);
    assert!(
        err.contains("plain HTTP to")
            && err.contains("refused")
            && err.contains("help: or pass --insecure to allow plain HTTP to it"),
        "{err}"
    );
    assert!(
        !err.contains("dns error") && !err.contains("resolve"),
        "C was tried: {err}"
    );
}

#[test]
fn blob_redirect_to_another_origin_carries_no_credentials_and_redirects_are_bounded() {
    // B serves the blob (like S3 behind a registry).
    let b_content = Arc::new(Content::new());
    let bc = b_content.clone();
    let b = Hostile::start(move |r: &Req| match r.path().strip_prefix("/blob/") {
        Some(d) => bc.serve_blob(r, d),
        None => Reply::new(404),
    });
    let a_content = Arc::new(Content::with_basic("alice", "s3cret"));
    let layer = image_with_layer(&a_content, "lib/tool", "1", 3000);
    b_content.put_blob(&layer);
    let layer_digest = hostile_registry::digest(&layer);
    let looping = image_with_layer(&a_content, "lib/loop", "1", 10);
    let loop_digest = hostile_registry::digest(&looping);
    let ac = a_content.clone();
    let (b_addr, ld, lp) = (b.addr.clone(), layer_digest.clone(), loop_digest.clone());
    let hops = std::sync::atomic::AtomicUsize::new(0);
    let a = Hostile::start(move |r: &Req| {
        let reply = ac.serve(r);
        if reply.status == 401 {
            return reply;
        }
        if r.path().ends_with(&format!("/blobs/{ld}")) {
            return Reply::new(307).header("Location", &format!("http://{b_addr}/blob/{ld}"));
        }
        if r.path().ends_with(&format!("/blobs/{lp}")) || r.path().starts_with("/loop/") {
            let n = hops.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Reply::new(307).header("Location", &format!("/loop/{n}"));
        }
        reply
    });
    let env = env_with_login(&a.addr, "alice", "s3cret");
    env.ok(&["pull", "-q", &format!("{}/lib/tool:1", a.addr)]);
    assert!(env.store_blob(&layer_digest).is_file());
    let at_b = b.requests();
    assert_eq!(at_b.len(), 1, "{at_b:?}");
    assert!(
        at_b[0].authorization().is_none(),
        "the redirect carried Authorization to another origin: {:?}",
        at_b[0]
    );
    assert!(a
        .requests()
        .iter()
        .any(|r| r.path().ends_with(&layer_digest) && r.authorization().is_some()));

    a.clear();
    let err = env.fails(&["pull", "-q", &format!("{}/lib/loop:1", a.addr)]);
    assert!(err.contains("more than 5 redirects"), "{err}");
    let loops = a
        .requests()
        .iter()
        .filter(|r| r.path().starts_with("/loop/"))
        .count();
    assert_eq!(loops, 5, "redirects followed");
    assert!(leftovers(&env).is_empty());
}

#[test]
fn bearer_realm_must_pass_the_transport_rule_before_it_sees_credentials() {
    // A token service on another machine over plain HTTP: a `.invalid` name, which never
    // resolves (tests send traffic only to loopback), so only the transport rule's refusal can
    // produce the message asserted below.
    let realm = "http://otters-test.invalid/token".to_owned();
    // A token service on loopback, another port: it passes the rule, so it gets the credentials
    // (as docker sends them to the realm the registry names).
    let local = Hostile::start(|r: &Req| {
        if r.authorization().is_some() {
            Reply::bytes(
                200,
                r#"{"token":"good-token","expires_in":9223372036854775807}"#,
            )
        } else {
            Reply::new(401)
        }
    });
    let content = Arc::new(Content::new());
    image_with_layer(&content, "lib/tool", "1", 100);
    // A registry on loopback that names `realm` and accepts the token `good-token`.
    let registry = |realm: String| {
        let c = content.clone();
        Hostile::start(move |r: &Req| {
            if r.authorization() != Some("Bearer good-token") {
                return Reply::new(401).header(
                    "WWW-Authenticate",
                    &format!(r#"Bearer realm="{realm}",service="hostile""#),
                );
            }
            c.serve(r)
        })
    };
    let far = registry(realm);
    let env = env_with_login(&far.addr, "alice", "s3cret");
    let err = env.fails(&["pull", "-q", &format!("{}/lib/tool:1", far.addr)]);
    assert!(
        err.contains("token realm")
            && err.contains("plain HTTP")
            && err.contains("no credentials were sent")
            && err.contains("help: or pass --insecure to allow plain HTTP to it"),
        "{err}"
    );
    assert!(
        !err.contains("dns error"),
        "the remote realm was tried: {err}"
    );
    let near = registry(format!("http://{}/token", local.addr));
    let env = env_with_login(&near.addr, "alice", "s3cret");
    env.ok(&["pull", "-q", &format!("{}/lib/tool:1", near.addr)]);
    let seen = local.authorized();
    assert!(!seen.is_empty(), "the loopback realm got the credentials");
    assert!(seen
        .iter()
        .all(|r| r.authorization().is_some_and(|h| h.starts_with("Basic "))));
    // The token (with its absurd expiry) went only to the registry.
    assert!(near
        .requests()
        .iter()
        .any(|r| r.authorization() == Some("Bearer good-token")));
}

// ---- item 5: bounded downloads -------------------------------------------------------------

#[test]
fn blob_longer_than_its_descriptor_stops_at_the_declared_size() {
    let content = Arc::new(Content::new());
    let layer = image_with_layer(&content, "lib/endless", "1", 1000);
    image_with_layer(&content, "lib/claims", "1", 1000);
    let d = hostile_registry::digest(&layer);
    let c = content.clone();
    let dd = d.clone();
    let a = Hostile::start(move |r: &Req| {
        if r.path() == format!("/v2/lib/endless/blobs/{dd}") {
            // The declared 1000 bytes, then more forever, no Content-Length.
            return Reply::new(200)
                .body(Body::Endless(b'x'))
                .length(Length::Omit);
        }
        if r.path() == format!("/v2/lib/claims/blobs/{dd}") {
            return Reply::new(200)
                .body(Body::Endless(b'y'))
                .length(Length::Claim(5 << 30));
        }
        c.serve(r)
    });
    let env = Env::new();
    let (ok, err) = run_limited(
        &env,
        512 << 10,
        &["pull", "-q", &format!("{}/lib/endless:1", a.addr)],
    );
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "sent more than the 1000 bytes the descriptor of blob {d} declares"
        )),
        "{err}"
    );
    assert!(err.contains("nothing was stored"), "{err}");
    assert!(leftovers(&env).is_empty(), "{:?}", leftovers(&env));
    assert!(!env.store_blob(&d).exists());

    let err = env.fails(&["pull", "-q", &format!("{}/lib/claims:1", a.addr)]);
    assert!(
        err.contains(&format!("declares {} bytes for blob {d}", 5u64 << 30)),
        "{err}"
    );
    assert!(leftovers(&env).is_empty());
}

#[test]
fn endless_manifest_token_and_error_bodies_are_capped_in_bounded_memory() {
    let a = Hostile::start(|r: &Req| {
        let p = r.path();
        if p.ends_with("/manifests/forever") {
            return Reply::new(200)
                .header("Content-Type", MANIFEST)
                .body(Body::Endless(b' '))
                .length(Length::Omit);
        }
        if p.ends_with("/manifests/error") {
            // An endless error body full of terminal escapes.
            return Reply::new(400)
                .body(Body::Endless(0x1b))
                .length(Length::Omit);
        }
        if p.starts_with("/v2/tok/") {
            if r.authorization().is_some() {
                return Reply::new(404);
            }
            return Reply::new(401).header(
                "WWW-Authenticate",
                &format!(
                    r#"Bearer realm="http://{}/token",service="x""#,
                    r.header("host").unwrap_or_default()
                ),
            );
        }
        if p == "/token" {
            return Reply::new(200)
                .body(Body::Endless(b'"'))
                .length(Length::Omit);
        }
        Reply::bytes(200, "{}")
    });
    let env = Env::new();
    // 512 MiB of address space: the old client grew past it within a second.
    let limit = 512 << 10;
    let (ok, err) = run_limited(
        &env,
        limit,
        &["pull", "-q", &format!("{}/lib/x:forever", a.addr)],
    );
    assert!(!ok);
    assert!(
        err.contains("the manifest is larger than 4194304 bytes; nothing was stored"),
        "{err}"
    );

    let (ok, err) = run_limited(
        &env,
        limit,
        &["pull", "-q", &format!("{}/lib/x:error", a.addr)],
    );
    assert!(!ok);
    assert!(err.contains("answered 400"), "{err}");
    assert!(!err.contains('\u{1b}'), "raw escape in the error");
    assert!(err.contains("\\u{1b}"), "{err}");
    assert!(err.len() < 1024, "error is {} bytes", err.len());

    let (ok, err) = run_limited(&env, limit, &["pull", "-q", &format!("{}/tok/x:1", a.addr)]);
    assert!(!ok);
    assert!(
        err.contains("sent an answer larger than 1048576 bytes"),
        "{err}"
    );
    assert_eq!(stored_blobs(&env), 0);
    assert!(leftovers(&env).is_empty());
}

// ---- item 13: deadlines, resumed downloads, lying manifests --------------------------------

#[test]
fn hung_registry_fails_within_the_timeout() {
    let content = Arc::new(Content::new());
    let layer = image_with_layer(&content, "lib/stall", "1", 4000);
    let d = hostile_registry::digest(&layer);
    let c = content.clone();
    let dd = d.clone();
    let a = Hostile::start(move |r: &Req| {
        if r.path().ends_with("/manifests/hang") {
            return Reply::hang();
        }
        if r.path().ends_with(&format!("/blobs/{dd}")) {
            // Half the blob, then silence.
            let b = c.blob(&dd).unwrap_or_default();
            return Reply::new(200).body(Body::Stall(b, 2000));
        }
        c.serve(r)
    });
    let env = Env::new();
    let started = Instant::now();
    let (ok, _, err) = env
        .otters()
        .env("OTTERS_REGISTRY_TIMEOUT", "1")
        .args(["pull", "-q", &format!("{}/lib/x:hang", a.addr)])
        .output()
        .map(|o| {
            (
                o.status.success(),
                String::new(),
                flat(&String::from_utf8_lossy(&o.stderr)),
            )
        })
        .expect("run");
    let took = started.elapsed();
    assert!(!ok);
    assert!(
        err.contains(&format!("cannot reach registry {}", a.addr)),
        "{err}"
    );
    assert!(err.contains("timed out"), "{err}");
    // 4 attempts of 1 s plus 1.75 s of backoff; far from the old 8 minutes.
    assert!(took < Duration::from_secs(20), "took {took:?}");

    let started = Instant::now();
    let out = env
        .otters()
        .env("OTTERS_REGISTRY_TIMEOUT", "1")
        .args(["pull", "-q", &format!("{}/lib/stall:1", a.addr)])
        .output()
        .expect("run");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(
        err.contains(&format!(
            "connection to {} lost while transferring blob {d}",
            a.addr
        )),
        "{err}"
    );
    assert!(err.contains("after 3 retries"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(leftovers(&env).is_empty(), "{:?}", leftovers(&env));
    let gets = a
        .requests()
        .iter()
        .filter(|r| r.path().ends_with(&d))
        .count();
    assert_eq!(gets, 4, "one try and 3 retries");

    // A bad value is refused with the variable named.
    let out = env
        .otters()
        .env("OTTERS_REGISTRY_TIMEOUT", "soon")
        .args(["pull", "-q", &format!("{}/lib/stall:1", a.addr)])
        .output()
        .expect("run");
    assert!(flat(&String::from_utf8_lossy(&out.stderr))
        .contains("OTTERS_REGISTRY_TIMEOUT=soon is not a number of seconds"));
}

#[test]
fn dropped_connection_mid_blob_is_resumed_and_verified() {
    for ranges in [true, false] {
        let mut content = Content::new();
        content.ranges = ranges;
        let content = Arc::new(content);
        let layer = image_with_layer(&content, "lib/tool", "1", 300_000);
        let d = hostile_registry::digest(&layer);
        let c = content.clone();
        let dd = d.clone();
        let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let a = Hostile::start(move |r: &Req| {
            if r.path().ends_with(&format!("/blobs/{dd}"))
                && first.swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                // Full Content-Length, a third of the bytes, then the connection drops.
                return Reply::new(200).body(Body::Cut(c.blob(&dd).unwrap_or_default(), 100_000));
            }
            c.serve(r)
        });
        let env = Env::new();
        env.ok(&["pull", "-q", &format!("{}/lib/tool:1", a.addr)]);
        let stored = std::fs::read(env.store_blob(&d)).expect("blob stored");
        assert_eq!(stored, layer);
        let gets: Vec<Req> = a
            .requests()
            .into_iter()
            .filter(|r| r.path().ends_with(&d))
            .collect();
        assert_eq!(gets.len(), 2, "{gets:?}");
        assert_eq!(gets[1].header("range"), Some("bytes=100000-"));
        assert!(leftovers(&env).is_empty());
    }
}

#[test]
fn lying_manifests_are_refused_and_nothing_is_stored() {
    let content = Arc::new(Content::new());
    let layer = b"layer".to_vec();
    let ld = content.put_blob(&layer);
    let cd = content.put_blob(b"{}");
    let desc =
        |d: &str, size: &str| format!(r#"{{"mediaType":"{LAYER}","digest":"{d}","size":{size}}}"#);
    let manifest = |mt: &str, layers: &str| {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"{mt}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{cd}","size":2}},"layers":[{layers}]}}"#
        )
    };
    let ok_manifest = manifest(MANIFEST, &desc(&ld, "5"));
    let many = vec![desc(&ld, "5"); 5000].join(",");
    let cases: Vec<(&str, String, &str, &str)> = vec![
        // (tag, body, Content-Type, expected error)
        (
            "ct-index",
            ok_manifest.clone(),
            INDEX,
            "its Content-Type says an image index but the document is an image manifest",
        ),
        (
            "mt-index",
            manifest(INDEX, &desc(&ld, "5")),
            INDEX,
            "like a manifest",
        ),
        (
            "text",
            manifest("text/html", ""),
            "text/html",
            "which is not an image manifest or index",
        ),
        (
            "negative",
            manifest(MANIFEST, &desc(&ld, "-5")),
            MANIFEST,
            "layer 0 has size -5, which is not a non-negative whole number",
        ),
        (
            "huge",
            manifest(MANIFEST, &desc(&ld, "18446744073709551615")),
            MANIFEST,
            "layer 0 declares 18446744073709551615 bytes, more than the 1099511627776-byte limit",
        ),
        (
            "path",
            manifest(MANIFEST, &desc("sha256:../../../../etc/passwd", "5")),
            MANIFEST,
            "layer 0 has digest \"sha256:../../../../etc/passwd\", which is not a sha256 digest",
        ),
        (
            "many",
            manifest(MANIFEST, &many),
            MANIFEST,
            "it has 5000 layers, more than the limit of 4096",
        ),
        ("notjson", "<html>".into(), MANIFEST, "it is not valid JSON"),
    ];
    for (tag, body, ct, _) in &cases {
        content.put_manifest("lib/lie", tag, ct, body.as_bytes());
    }
    // An index whose entry claims a manifest but points at an index.
    let inner = format!(r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[]}}"#);
    let inner_d = content.put_manifest("lib/lie", "inner", INDEX, inner.as_bytes());
    let outer = format!(
        r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[{{"mediaType":"{MANIFEST}","digest":"{inner_d}","size":{},"platform":{{"os":"linux","architecture":"amd64"}}}}]}}"#,
        inner.len()
    );
    content.put_manifest("lib/lie", "nested", INDEX, outer.as_bytes());
    let c = content.clone();
    let a = Hostile::start(move |r: &Req| c.serve(r));
    let env = Env::new();
    for (tag, _, _, want) in &cases {
        let err = env.fails(&["pull", "-q", &format!("{}/lib/lie:{tag}", a.addr)]);
        assert!(err.contains(want), "{tag}: {err}");
        assert!(
            err.contains("sent a manifest otters cannot use"),
            "{tag}: {err}"
        );
    }
    let err = env.fails(&["pull", "-q", &format!("{}/lib/lie:nested", a.addr)]);
    assert!(
        err.contains("the index entry says an image manifest but the document is an image index"),
        "{err}"
    );
    assert_eq!(stored_blobs(&env), 0, "nothing may be stored");
    assert!(leftovers(&env).is_empty());
    assert!(!env.ok(&["images"]).contains("lib/lie"));

    // The same at build time: RUNTIME from a lying registry is an error on its line.
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nRUNTIME {}/lib/lie:ct-index\n",
            a.addr
        ),
    );
    let err = env.fails(&["build", "-q", ctx.to_str().expect("utf8")]);
    assert!(err.contains("AF412"), "{err}");
    assert!(
        err.contains("its Content-Type says an image index"),
        "{err}"
    );
}

#[test]
fn index_fan_out_is_bounded() {
    let content = Arc::new(Content::new());
    let m = content.image("lib/fan", "one", b"{}", &[(LAYER, b"x")]);
    let md = hostile_registry::digest(&m);
    let entry = format!(
        r#"{{"mediaType":"{MANIFEST}","digest":"{md}","size":{},"platform":{{"os":"linux","architecture":"amd64"}}}}"#,
        m.len()
    );
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[{}]}}"#,
        vec![entry; 1100].join(",")
    );
    content.put_manifest("lib/fan", "1", INDEX, index.as_bytes());
    let c = content.clone();
    let a = Hostile::start(move |r: &Req| c.serve(r));
    let env = Env::new();
    let err = env.fails(&["pull", "-q", &format!("{}/lib/fan:1", a.addr)]);
    assert!(
        err.contains("it needs more than 1024 manifests; nothing more was fetched"),
        "{err}"
    );
    let fetched = a
        .requests()
        .iter()
        .filter(|r| r.path().ends_with(&format!("/manifests/{md}")))
        .count();
    assert_eq!(fetched, 1024);
    assert!(!env.ok(&["images"]).contains("lib/fan"));
}

// ---- item 14: a malformed pin is an error -------------------------------------------------

#[test]
fn malformed_pinned_digest_is_an_error_not_a_tag_lookup() {
    let content = Arc::new(Content::new());
    image_with_layer(&content, "lib/rt", "1", 64);
    // A RUNTIME is a bin image (AF403 otherwise): give the manifest its bin name.
    let (media_type, bytes) = content.manifest("lib/rt", "1").expect("rt");
    let mut rt: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    rt["annotations"] = serde_json::json!({"io.openotters.bin.name": "runtime"});
    content.put_manifest(
        "lib/rt",
        "1",
        &media_type,
        &serde_json::to_vec(&rt).expect("json"),
    );
    let c = content.clone();
    let a = Hostile::start(move |r: &Req| c.serve(r));
    // Build an agent pinned to the runtime, then forge its agent.yaml pin.
    let builder = Env::new();
    let ctx = builder.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nRUNTIME {}/lib/rt:1\n",
            a.addr
        ),
    );
    builder.ok(&["build", "-q", "-t", "demo:1", ctx.to_str().expect("utf8")]);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(builder.store().join("index.json")).expect("index"))
            .expect("json");
    let top = index["manifests"][0]["digest"]
        .as_str()
        .expect("digest")
        .to_owned();
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(builder.store_blob(&top)).expect("manifest"))
            .expect("json");
    let rt_digest = content
        .manifest("lib/rt", "1")
        .map(|(_, b)| hostile_registry::digest(&b))
        .expect("rt");
    let config_digest = manifest["config"]["digest"]
        .as_str()
        .expect("config")
        .to_owned();
    content.put_blob(&std::fs::read(builder.store_blob(&config_digest)).expect("config"));
    for d in manifest["layers"].as_array_mut().expect("layers") {
        let digest = d["digest"].as_str().expect("digest").to_owned();
        let mut bytes = std::fs::read(builder.store_blob(&digest)).expect("blob");
        if d["mediaType"] == "application/vnd.openotters.agent.resolved.v1+yaml" {
            let text = String::from_utf8(bytes).expect("yaml");
            assert!(text.contains(&rt_digest));
            bytes = text.replace(&rt_digest, "sha256:NOT-A-DIGEST").into_bytes();
            d["size"] = bytes.len().into();
            d["digest"] = content.put_blob(&bytes).into();
        } else {
            content.put_blob(&bytes);
        }
    }
    let bytes = serde_json::to_vec(&manifest).expect("json");
    content.put_manifest("team/agent", "bad", MANIFEST, &bytes);

    let env = Env::new();
    a.clear();
    let err = env.fails(&["run", &format!("{}/team/agent:bad", a.addr)]);
    assert!(
        err.contains(&format!(
            "{}/team/agent:bad: invalid artifact: agent.yaml pins {}/lib/rt:1 to \"sha256:NOT-A-DIGEST\", which is not a sha256 digest",
            a.addr, a.addr
        )),
        "{err}"
    );
    assert!(err.contains("does not fall back to the tag"), "{err}");
    assert!(
        !a.requests()
            .iter()
            .any(|r| r.path().starts_with("/v2/lib/rt/")),
        "the runtime's tag was looked up: {:?}",
        a.requests()
    );
    assert!(!env.home().join("agents/demo").exists());

    // The same pin in Agentfile.lock is refused by an --offline build.
    let lock = std::fs::read_to_string(ctx.join("Agentfile.lock")).expect("lock");
    crate::support::write(
        &ctx.join("Agentfile.lock"),
        lock.replace(&rt_digest, "sha256:NOT-A-DIGEST"),
    );
    let err = builder.fails(&["build", "-q", "--offline", ctx.to_str().expect("utf8")]);
    assert!(err.contains("is not a valid lock file"), "{err}");
    assert!(
        err.contains("\"sha256:NOT-A-DIGEST\", not a sha256 digest"),
        "{err}"
    );
}

// ---- more: a stalled upload, hostile challenges --------------------------------------------

#[test]
fn stalled_upload_fails_within_the_timeout() {
    let content = Arc::new(Content::new());
    let c = content.clone();
    let a = Hostile::start_on(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(move |r: &Req| c.serve(r)),
        // The registry stops reading the big layer's upload.
        Some(Arc::new(|r: &Req| {
            r.method == "PATCH"
                && r.header("content-length")
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| n > 1 << 20)
        })),
    );
    let env = Env::new();
    build_agent(&env, "big:1", 24 << 20);
    let started = Instant::now();
    let out = env
        .otters()
        .env("OTTERS_REGISTRY_TIMEOUT", "1")
        .args(["push", "-q", "big:1", &format!("{}/team/big:1", a.addr)])
        .output()
        .expect("run");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(err.contains("lost while transferring blob"), "{err}");
    assert!(err.contains("no progress for 1 s"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let patches = a
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.header("content-length") == Some("25165824"))
        .count();
    assert_eq!(patches, 3, "one upload and two new sessions");
}

#[test]
fn hostile_challenges_give_clear_errors_and_no_credentials() {
    let challenges = [
        "Bearer".to_owned(),
        "Bearer realm=".to_owned(),
        r#"Bearer realm="""#.to_owned(),
        r#"Bearer ,,,,====""""\\"#.to_owned(),
        r#"Bearer realm="ftp://127.0.0.1/token""#.to_owned(),
        r#"Bearer realm="file:///etc/passwd""#.to_owned(),
        format!(r#"Bearer realm="http://127.0.0.1/{}""#, "a".repeat(20_000)),
        "Negotiate abc".to_owned(),
    ];
    for ch in challenges {
        let h = ch.clone();
        let a = Hostile::start(move |_: &Req| Reply::new(401).header("WWW-Authenticate", &h));
        let env = env_with_login(&a.addr, "alice", "s3cret");
        let out = env
            .otters()
            .args(["pull", "-q", &format!("{}/lib/x:1", a.addr)])
            .output()
            .expect("run");
        let err = flat(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{ch}");
        assert!(!err.contains("panicked"), "{ch}: {err}");
        assert!(err.contains(&a.addr), "{ch}: {err}");
        assert!(err.len() < 2048, "{ch}: error is {} bytes", err.len());
        assert!(
            a.authorized()
                .iter()
                .all(|r| !r.authorization().unwrap_or_default().contains("s3cret")),
            "{ch}"
        );
    }
}
