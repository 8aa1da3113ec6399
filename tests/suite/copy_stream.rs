//! `otters copy` registry to registry streams every blob from the source into the destination
//! without the local store, through the binary against two real `docker-registry` instances;
//! a source that lies about a blob (the fake registry of `support/hostile_registry.rs`: a real
//! registry never serves wrong bytes) leaves nothing tagged at the destination and the error names
//! the blob; `--progress plain|tty|quiet` as push and pull have them. The blobs of a manifest are
//! relayed several at once (seen in the destination's access log), reported in manifest order, and
//! a blob that fails stops the relays still running: the copy ends without waiting for them.

use crate::registry::build_agent;
use crate::security_registry::hostile_registry::{digest, Body, Content, Hostile, Length, Reply};
use crate::support::cli::{flat, json, Env};
use crate::support::noise;
use crate::support::registry::{http_status, Registry};
use std::sync::Arc;
use std::time::Duration;

/// The digests of every blob (config and layers) the manifest at `reference` lists.
fn blobs_of(reference: &str) -> Vec<String> {
    let out = std::process::Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo");
    assert!(out.status.success(), "{reference} is not there");
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    std::iter::once(&m["config"])
        .chain(m["layers"].as_array().unwrap())
        .map(|d| d["digest"].as_str().unwrap().to_owned())
        .collect()
}

/// The stderr lines that report a blob (`VERB sha256:…`).
fn blob_lines<'a>(err: &'a str, verb: &str) -> Vec<&'a str> {
    err.lines()
        .filter(|l| l.starts_with(&format!("{verb} sha256:")))
        .collect()
}

#[test]
fn a_copy_between_registries_streams_every_blob_past_the_store() {
    let (reg1, reg2) = (Registry::start(), Registry::start());
    let env = Env::new();
    let src = format!("{}/team/agent:1", reg1.addr);
    let digest = build_agent(&env, &src, 300_000);
    env.ok(&["push", "-q", &src]);
    let blobs = blobs_of(&src);
    assert!(blobs.len() >= 4, "{blobs:?}");

    // A machine that never saw the image: nothing of it reaches its store.
    let other = Env::new();
    let dst = format!("{}/prod/agent:1", reg2.addr);
    let (ok, out, err) = other.run(&["copy", "--progress", "plain", &src, &dst]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("{dst} {digest}"));
    assert!(!err.contains('\x1b') && !err.contains('\r'), "{err:?}");
    let pushed = blob_lines(&err, "pushed");
    assert_eq!(pushed.len(), blobs.len(), "{err}");
    assert!(
        pushed.iter().any(|l| l.contains(" 293.0 KiB in ")),
        "the layer's line has its size: {err}"
    );
    assert_eq!(blobs_of(&dst), blobs);
    let at_dst = reg2.blobs();
    for b in &blobs {
        assert!(at_dst.contains(b), "{b} missing at the destination");
        assert!(
            !other.store_blob(b).exists(),
            "{b} was staged in the local store"
        );
    }

    // Again: every blob is there; the report says so and nothing moves.
    let (ok, _, err) = other.run(&["copy", "--progress", "plain", &src, &dst]);
    assert!(ok, "{err}");
    assert_eq!(blob_lines(&err, "exists").len(), blobs.len(), "{err}");
    assert!(blob_lines(&err, "pushed").is_empty(), "{err}");
    let again = json(&other.ok(&["copy", "-q", "--format", "json", &src, &dst]));
    assert_eq!(again["uploaded"], 0, "{again}");
    assert_eq!(again["bytes"], 0, "{again}");
}

#[test]
fn copy_progress_tty_draws_bars_off_a_terminal_and_quiet_draws_nothing() {
    let (reg1, reg2) = (Registry::start(), Registry::start());
    let env = Env::new();
    let src = format!("{}/team/bars:1", reg1.addr);
    build_agent(&env, &src, 200_000);
    env.ok(&["push", "-q", &src]);
    let blob = blobs_of(&src).remove(0);

    let (ok, _, err) = env.run(&[
        "copy",
        "--progress",
        "tty",
        &src,
        &format!("{}/a/bars:1", reg2.addr),
    ]);
    assert!(ok, "{err}");
    // Bars (cursor movement, the bar's digest prefix and byte counts), though stderr is a pipe.
    assert!(err.contains("\x1b["), "no bars: {err:?}");
    assert!(err.contains(&blob["sha256:".len()..][..12]), "{err:?}");
    assert!(err.contains("B/"), "{err:?}");

    // `auto` off a terminal: the status lines only; `quiet`: nothing at all.
    let (ok, _, err) = env.run(&["copy", &src, &format!("{}/b/bars:1", reg2.addr)]);
    assert!(ok, "{err}");
    assert!(err.contains("[1/1] ") && !err.contains('\x1b'), "{err:?}");
    for quiet in [&["--progress", "quiet"][..], &["-q"][..]] {
        let mut args = vec!["copy"];
        args.extend_from_slice(quiet);
        let dst = format!("{}/c/bars:1", reg2.addr);
        args.extend([src.as_str(), dst.as_str()]);
        let (ok, out, err) = env.run(&args);
        assert!(ok, "{err}");
        assert!(out.contains("sha256:"), "{out}");
        assert_eq!(err, "", "{quiet:?}");
    }
}

/// How the fake source lies about the second layer of its image.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// Other bytes of the same size.
    Digest,
    /// The right bytes and more, with no `Content-Length`.
    Longer,
    /// A `Content-Length` other than the descriptor's size.
    Declared,
}

/// A source serving `agents/liar:1`, whose second layer is answered as `lie` says; returns the
/// server and that layer's digest.
fn lying_source(lie: Lie) -> (Hostile, String) {
    let content = Arc::new(Content::new());
    let good = vec![7u8; 70_000];
    let bad: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    content.image(
        "agents/liar",
        "1",
        br#"{"architecture":"amd64","os":"linux"}"#,
        &[
            ("application/vnd.oci.image.layer.v1.tar", &good),
            ("application/vnd.oci.image.layer.v1.tar", &bad),
        ],
    );
    let bad_digest = digest(&bad);
    let (honest, target) = (content.clone(), bad_digest.clone());
    let server = Hostile::start(move |req| {
        if req.method != "GET" || !req.path().ends_with(&format!("/blobs/{target}")) {
            return honest.serve(req);
        }
        let right: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        match lie {
            Lie::Digest => {
                let mut other = right;
                other[150_000] ^= 0xff;
                Reply::bytes(200, other)
            }
            Lie::Longer => {
                let mut more = right;
                more.extend_from_slice(&[0u8; 4096]);
                Reply::bytes(200, more).length(Length::Omit)
            }
            Lie::Declared => Reply::new(200)
                .body(Body::Bytes(right))
                .length(Length::Claim(100)),
        }
    });
    (server, bad_digest)
}

#[test]
fn a_source_that_lies_about_a_blob_leaves_nothing_tagged_and_names_the_blob() {
    let real = Registry::start();
    for (lie, says) in [
        (Lie::Digest, "digest mismatch"),
        (Lie::Longer, "sent more than the 200000 bytes"),
        (Lie::Declared, "declares 100 bytes"),
    ] {
        let (source, bad) = lying_source(lie);
        let env = Env::new();
        let repo = format!("{lie:?}").to_lowercase();
        let dst = format!("{}/{repo}/liar:1", real.addr);
        let err = env.fails(&["copy", &format!("{}/agents/liar:1", source.addr), &dst]);
        assert!(err.contains(says), "{lie:?}: {err}");
        assert!(err.contains(&bad), "{lie:?}: the blob is not named: {err}");
        // No tag, no manifest, and not the blob: the destination never completed its upload.
        assert_eq!(
            http_status(&real.addr, &format!("/v2/{repo}/liar/manifests/1")),
            Some(404),
            "{lie:?}: the destination was tagged"
        );
        assert!(!real.blobs().contains(&bad), "{lie:?}");
        // A lie is final: the source was asked for that blob once.
        let asked = source
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path().ends_with(&bad))
            .count();
        assert_eq!(asked, 1, "{lie:?}");
    }
}

/// What a destination receives of a lying blob, seen from a fake destination that logs every
/// request: never the whole body (its last chunk is held back until the digest is checked), and
/// never the `PUT` that would complete the upload. Whether the good layer and the config arrive
/// before the lying blob's failure stops their relays depends on timing (they are relayed at
/// once), so the test asserts nothing about them beyond "no tag".
#[test]
fn a_lying_blob_never_reaches_the_destination_whole() {
    let (source, bad) = lying_source(Lie::Digest);
    let content = Arc::new(Content::new());
    let stored = content.clone();
    let dest = Hostile::start(move |req| stored.serve(req));
    let env = Env::new();
    let err = env.fails(&[
        "copy",
        &format!("{}/agents/liar:1", source.addr),
        &format!("{}/agents/liar:1", dest.addr),
    ]);
    assert!(
        err.contains("digest mismatch") && err.contains(&bad),
        "{err}"
    );
    let requests = dest.requests();
    let patches: Vec<usize> = requests
        .iter()
        .filter(|r| r.method == "PATCH")
        .map(|r| r.body.len())
        .collect();
    // No upload body carried the lying blob whole (a body cut short is logged with the bytes that
    // came, or not at all).
    assert!(
        patches.iter().all(|n| *n < 200_000),
        "the lying blob was sent whole: {patches:?}"
    );
    assert!(
        !requests
            .iter()
            .any(|r| r.method == "PUT" && r.query("digest").as_deref() == Some(bad.as_str())),
        "the upload of the lying blob was completed"
    );
    assert!(content.blob(&bad).is_none());
    assert!(content.manifest("agents/liar", "1").is_none(), "tagged");
}

#[test]
fn a_copy_relays_the_blobs_of_a_manifest_at_once() {
    let (reg1, reg2) = (Registry::start(), Registry::start());
    let env = Env::new();
    // Two layers of 4 MiB that do not compress: the relay of each lasts while the other starts.
    let ctx = env.dir.path().join("ctx");
    crate::support::write(&ctx.join("one.bin"), noise(4 << 20, 1));
    crate::support::write(&ctx.join("two.bin"), noise(4 << 20, 2));
    crate::support::write(&ctx.join("notes.txt"), "notes\n");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nADD notes.txt\nADD one.bin\nADD two.bin\n",
    );
    let src = format!("{}/team/many:1", reg1.addr);
    let digest = env.ok(&["build", "-q", "-t", &src, ctx.to_str().expect("utf8")]);
    env.ok(&["push", "-q", &src]);
    let blobs = blobs_of(&src);
    assert!(blobs.len() >= 4, "{blobs:?}");

    let other = Env::new();
    let dst = format!("{}/prod/many:1", reg2.addr);
    let (ok, out, err) = other.run(&["copy", "--progress", "plain", &src, &dst]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("{dst} {}", digest.trim()));
    // Reported in manifest order, whichever relay finished first.
    let pushed: Vec<&str> = blob_lines(&err, "pushed")
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap_or_default())
        .collect();
    assert_eq!(pushed, blobs, "{err}");

    let (sessions, log) = (reg2.upload_sessions(), reg2.log());
    assert_eq!(sessions.matches('S').count(), blobs.len(), "{log}");
    assert!(
        sessions.contains("SS"),
        "relays one after the other: {sessions}\n{log}"
    );
    assert_eq!(blobs_of(&dst), blobs);
    let fresh = Env::new();
    assert_eq!(fresh.ok(&["pull", "-q", &dst]).trim(), digest.trim());
}

/// A source whose first layer stalls a third of the way through (its connection stays open,
/// nothing more comes) while its second layer is answered with other bytes of the right size: the
/// second blob's relay fails, and that must end the copy at once, not after the stalled relay
/// gives up. The destination is a real registry.
#[test]
fn a_failing_blob_stops_the_other_relays_and_tags_nothing() {
    let content = Arc::new(Content::new());
    let stalled = noise(300_000, 3);
    let lying = noise(200_000, 4);
    content.image(
        "agents/half",
        "1",
        br#"{"architecture":"amd64","os":"linux"}"#,
        &[
            ("application/vnd.oci.image.layer.v1.tar", &stalled),
            ("application/vnd.oci.image.layer.v1.tar", &lying),
        ],
    );
    let (stalled_digest, bad) = (digest(&stalled), digest(&lying));
    let (honest, stall_at, lie_at) = (content.clone(), stalled_digest.clone(), bad.clone());
    let source = Hostile::start(move |req| {
        let blob = |d: &str| req.method == "GET" && req.path().ends_with(&format!("/blobs/{d}"));
        if blob(&stall_at) {
            let bytes = honest.blob(&stall_at).expect("stored");
            return Reply::new(200).body(Body::Stall(bytes, 100_000));
        }
        if blob(&lie_at) {
            let mut other = honest.blob(&lie_at).expect("stored");
            other[150_000] ^= 0xff;
            return Reply::bytes(200, other);
        }
        honest.serve(req)
    });
    let real = Registry::start();
    let env = Env::new();
    let dst = format!("{}/prod/half:1", real.addr);
    // A transfer timeout far beyond the wait: only stopping the stalled relay ends the copy in time.
    let (ok, _, err) = env
        .run_within(
            &["copy", &format!("{}/agents/half:1", source.addr), &dst],
            &[("OTTERS_REGISTRY_TIMEOUT", "600")],
            Duration::from_secs(120),
        )
        .expect("the copy kept waiting on the stalled blob after another blob failed");
    let err = flat(&err);
    assert!(!ok, "{err}");
    assert!(
        err.contains("digest mismatch") && err.contains(&bad),
        "the failing blob is not named: {err}"
    );
    // Both layers were on their way at once: the source was asked for the stalled one too.
    assert!(
        source
            .requests()
            .iter()
            .any(|r| r.method == "GET" && r.path().ends_with(&stalled_digest)),
        "the stalled layer was never asked for"
    );
    // No tag, no manifest, neither layer.
    assert_eq!(
        http_status(&real.addr, "/v2/prod/half/manifests/1"),
        Some(404),
        "the destination was tagged"
    );
    let at_dst = real.blobs();
    assert!(
        !at_dst.contains(&bad) && !at_dst.contains(&stalled_digest),
        "{at_dst:?}"
    );
}
