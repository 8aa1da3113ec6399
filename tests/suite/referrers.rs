//! OCI 1.1 referrers through the `otters` binary: `attach`, `sign`, `discover`, `verify`, `push`
//! and `pull --referrers`, `save`/`load`, `run --verify-key`; against a real `docker-registry`
//! (no referrers API: the `sha256-<hex>` tag schema) and against an in-test registry that
//! implements `GET /v2/<name>/referrers/<digest>`. Bundles are checked by npm `@sigstore/verify`.

use crate::support::cli::{json, Env};

use crate::security_registry::hostile_registry::{self, Content, Hostile, Reply, Req};
use crate::support::registry::Registry;
use crate::support::tools::{skip, works};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const REPORT: &str = "application/vnd.example.report+json";

/// Builds a small agent tagged `tag` (its bytes depend on `salt`).
fn build(env: &Env, tag: &str, salt: &str) -> String {
    let ctx = env.dir.path().join(format!("ctx-{salt}"));
    crate::support::write(&ctx.join("notes.txt"), format!("notes {salt}\n"));
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nCONTEXT SOUL <<EOF\nBe brief.\nEOF\nADD notes.txt\n",
    );
    env.ok(&["build", "-q", "-t", tag, ctx.to_str().expect("utf8")])
        .trim()
        .to_owned()
}

/// `otters key generate` into `env`'s directory; returns (private, public) paths.
fn keys(env: &Env, name: &str) -> (String, String) {
    env.key_pair(name)
}

/// The artifact types of the first level of `discover --format json`, sorted.
fn discovered(env: &Env, args: &[&str]) -> Vec<String> {
    let mut all = vec!["discover", "--format", "json"];
    all.extend_from_slice(args);
    let v = json(&env.ok(&all));
    let mut types: Vec<String> = v["referrers"]
        .as_array()
        .expect("referrers")
        .iter()
        .map(|r| r["artifactType"].as_str().unwrap_or_default().to_owned())
        .collect();
    types.sort();
    types
}

/// The bundle bytes of the signature referrer `sig` in `env`'s store.
fn bundle_of(env: &Env, sig: &str) -> Vec<u8> {
    let m = json(&std::fs::read_to_string(env.store_blob(sig)).expect("referrer manifest"));
    assert_eq!(
        m["subject"]["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(m["artifactType"], BUNDLE);
    let layer = m["layers"][0]["digest"].as_str().expect("layer").to_owned();
    std::fs::read(env.store_blob(&layer)).expect("bundle blob")
}

fn node_verify(test: &str, bundle: &Path, key: &str, digest: &str) -> Option<(bool, String)> {
    if !works("node", &["--version"]) {
        skip(
            test,
            "node is not installed (apt-get install nodejs npm; then tests/harness/supply/install.sh)",
        );
        return None;
    }
    let script = crate::support::harness::supply().join("verify_bundle.mjs");
    let out = std::process::Command::new("node")
        .arg(script)
        .arg(bundle)
        .arg(key)
        .arg(digest)
        .output()
        .expect("node");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.code() != Some(3),
        "run {}\n{said}",
        crate::support::harness::INSTALL
    );
    Some((out.status.success(), said))
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: each step reads the registry and store state the step before left"
)]
fn docker_registry_tag_schema_carries_referrers_through_push_pull_save_load() {
    const TEST: &str = "docker_registry_tag_schema_carries_referrers_through_push_pull_save_load";
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/agents/demo:1", reg.addr);
    let digest = build(&env, &tag, "a");
    let (key, public) = keys(&env, "ci");
    let report = env.dir.path().join("report.json");
    crate::support::write(&report, br#"{"ok":true}"#);
    let attached = env.ok(&[
        "attach",
        &tag,
        "--artifact-type",
        REPORT,
        &report.to_string_lossy(),
    ]);
    let sig = env.ok(&["sign", &tag, "--key", &key]).trim().to_owned();
    assert!(sig.starts_with("sha256:"), "{sig}");
    assert_eq!(discovered(&env, &[&tag]), [BUNDLE, REPORT]);
    assert!(env
        .ok(&["verify", &tag, "--key", &public])
        .contains("Verified OK"));
    // The report is signed too: a referrer of a referrer.
    let report_digest = attached.trim().to_owned();
    env.ok(&["sign", &report_digest, "--key", &key]);
    assert!(env
        .ok(&["verify", &report_digest, "--key", &public])
        .contains("Verified OK"));

    // The bundle verifies independently with @sigstore/verify.
    let bundle_path = env.dir.path().join("sig.json");
    std::fs::write(&bundle_path, bundle_of(&env, &sig)).expect("write");
    if let Some((ok, text)) = node_verify(TEST, &bundle_path, &public, &digest) {
        assert!(ok, "{text}");
    }

    // inspect shows the referrer's subject.
    let shown = env.ok(&["inspect", &sig]);
    assert!(
        shown.contains(&format!("Subject:        {digest}")),
        "{shown}"
    );

    // push: the registry has no referrers API, so the tag schema index carries them.
    let pushed = env.ok(&["push", &tag]);
    assert!(pushed.contains(&digest), "{pushed}");
    let hex = digest.trim_start_matches("sha256:");
    let raw = std::process::Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{}/agents/demo:sha256-{hex}", reg.addr))
        .output()
        .expect("skopeo");
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    let index = json(&String::from_utf8_lossy(&raw.stdout));
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    assert_eq!(
        index["manifests"].as_array().map(Vec::len),
        Some(2),
        "{index}"
    );
    assert_eq!(discovered(&env, &["--remote", &tag]).len(), 2);
    assert_eq!(
        discovered(&env, &["--remote", &tag, "--artifact-type", BUNDLE]),
        [BUNDLE]
    );
    assert!(env
        .ok(&["verify", "--remote", &tag, "--key", &public])
        .contains("Verified OK"));

    // A second attach from elsewhere merges into the tag-schema index, keeping both entries.
    let other = Env::new();
    crate::support::write(&other.dir.path().join("r2.json"), b"{}");
    other.ok(&[
        "attach",
        "--remote",
        &tag,
        "--artifact-type",
        "application/vnd.example.other",
        &other.dir.path().join("r2.json").to_string_lossy(),
    ]);
    assert_eq!(discovered(&env, &["--remote", &tag]).len(), 3);

    // pull --referrers into a fresh store; verify there, offline.
    let puller = Env::new();
    puller.ok(&["pull", "-q", "--referrers", &tag]);
    assert_eq!(discovered(&puller, &[&tag]).len(), 3);
    let tree = json(&puller.ok(&["discover", "--format", "json", &tag]));
    let nested: usize = tree["referrers"]
        .as_array()
        .expect("referrers")
        .iter()
        .map(|r| r["referrers"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(nested, 1, "the report's signature came along: {tree}");
    assert!(puller
        .ok(&["verify", &report_digest, "--key", &public])
        .contains("Verified OK"));
    assert!(puller
        .ok(&["verify", &tag, "--key", &public])
        .contains("Verified OK"));
    // Without --referrers, a pull brings the image only.
    let plain = Env::new();
    plain.ok(&["pull", "-q", &tag]);
    assert!(discovered(&plain, &[&tag]).is_empty());

    // save / load keep them.
    let archive = puller.dir.path().join("demo.tar");
    puller.ok(&["save", "-o", &archive.to_string_lossy(), &tag]);
    let loader = Env::new();
    loader.ok(&["load", "-i", &archive.to_string_lossy()]);
    assert_eq!(discovered(&loader, &[&tag]).len(), 3);
    assert!(loader
        .ok(&["verify", &tag, "--key", &public])
        .contains("Verified OK"));
    // The same archive unpacked as an OCI layout directory (`load -i DIR`).
    let dir = puller.dir.path().join("layout");
    std::fs::create_dir(&dir).expect("mkdir");
    let untar = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&archive)
        .arg("-C")
        .arg(&dir)
        .status()
        .expect("tar");
    assert!(untar.success());
    let from_dir = Env::new();
    from_dir.ok(&["load", "-i", &dir.to_string_lossy()]);
    assert_eq!(discovered(&from_dir, &[&tag]).len(), 3);
    assert_eq!(from_dir.ok(&["images", "-q"]).lines().count(), 1);
    let images = loader.ok(&["images", "-q"]);
    assert_eq!(
        images.lines().count(),
        1,
        "referrers are not listed as images: {images}"
    );
    assert!(attached.trim().starts_with("sha256:"));

    // skopeo still copies the image that has referrers.
    let out = tempfile::tempdir().expect("tmp");
    let copy = std::process::Command::new("skopeo")
        .args(["copy", "--src-tls-verify=false"])
        .arg(format!("docker://{tag}"))
        .arg(format!("oci:{}:x", out.path().display()))
        .output()
        .expect("skopeo");
    assert!(
        copy.status.success(),
        "{}",
        String::from_utf8_lossy(&copy.stderr)
    );
}

#[test]
fn verify_and_run_refuse_unsigned_retagged_wrong_key_and_tampered_images() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/agents/sec:1", reg.addr);
    build(&env, &tag, "signed");
    let (key, public) = keys(&env, "good");
    let (_, other_pub) = keys(&env, "other");
    let sig = env.ok(&["sign", &tag, "--key", &key]).trim().to_owned();
    env.ok(&["push", "-q", &tag]);
    assert!(env
        .ok(&["verify", &tag, "--key", &public])
        .contains("Verified OK"));

    // The right key lets the run through to planning (this agent has no RUNTIME to run); from a
    // fresh store, the signature is found in the registry the image is pulled from.
    let err = env.fails(&["run", "--dry-run", &tag, "--verify-key", &public]);
    assert!(
        err.contains("no RUNTIME") && !err.contains("unverified"),
        "{err}"
    );
    let elsewhere = Env::new();
    let err = elsewhere.fails(&["run", "--dry-run", &tag, "--verify-key", &public]);
    assert!(
        err.contains("no RUNTIME") && !err.contains("unverified"),
        "{err}"
    );

    // Wrong key.
    let err = env.fails(&["verify", &tag, "--key", &other_pub]);
    assert!(
        err.contains("none verifies") && err.contains("another key"),
        "{err}"
    );
    let err = env.fails(&["run", "--dry-run", &tag, "--verify-key", &other_pub]);
    assert!(err.contains("refusing to run an unverified image"), "{err}");

    // Tampered: the bundle with one byte of its signature changed, attached as a bundle.
    let mut bundle = json(&String::from_utf8(bundle_of(&env, &sig)).expect("utf8"));
    let s = bundle["dsseEnvelope"]["signatures"][0]["sig"]
        .as_str()
        .expect("sig")
        .to_owned();
    let flipped = format!("{}{}", if s.starts_with('M') { "N" } else { "M" }, &s[1..]);
    bundle["dsseEnvelope"]["signatures"][0]["sig"] = flipped.into();
    let tampered = env.dir.path().join("tampered.json");
    std::fs::write(&tampered, serde_json::to_vec(&bundle).expect("json")).expect("write");
    let unsigned = format!("{}/agents/sec:unsigned", reg.addr);
    build(&env, &unsigned, "unsigned");
    let err = env.fails(&["verify", &unsigned, "--key", &public]);
    assert!(err.contains("is not signed"), "{err}");
    env.ok(&[
        "attach",
        &unsigned,
        "--artifact-type",
        BUNDLE,
        "--layer-media-type",
        BUNDLE,
        &tampered.to_string_lossy(),
    ]);
    let err = env.fails(&["verify", &unsigned, "--key", &public]);
    assert!(err.contains("none verifies"), "{err}");

    // Re-tagged: the tag now names another image, pushed without a signature.
    build(&env, &tag, "retagged");
    let err = env.fails(&["verify", &tag, "--key", &public]);
    assert!(err.contains("is not signed"), "{err}");
    env.ok(&["push", "-q", &tag]);
    let fresh = Env::new();
    let err = fresh.fails(&["verify", "--remote", &tag, "--key", &public]);
    assert!(err.contains("is not signed"), "{err}");
    // run pulls the re-tagged image and refuses it before anything is materialised.
    let err = fresh.fails(&["run", &tag, "--verify-key", &public]);
    assert!(err.contains("refusing to run an unverified image"), "{err}");
    assert!(
        !fresh.home().join("agents").exists(),
        "nothing materialised"
    );

    // The config default applies when no flag is given.
    std::fs::write(
        fresh.home().join("config.toml"),
        format!("[verify]\nkey = \"{other_pub}\"\n"),
    )
    .expect("config");
    let err = fresh.fails(&["run", "--dry-run", &tag]);
    assert!(err.contains("refusing to run an unverified image"), "{err}");
}

/// An in-test registry with the OCI 1.1 referrers API: manifests with a `subject` are indexed
/// (and acknowledged with `OCI-Subject`), `GET /v2/<name>/referrers/<digest>` lists them.
pub(crate) fn referrers_registry() -> (Hostile, Arc<Mutex<Vec<String>>>) {
    let content = Arc::new(Content::new());
    let index: Arc<Mutex<HashMap<String, Vec<serde_json::Value>>>> = Arc::default();
    let tags = Arc::new(Mutex::new(Vec::new()));
    let tags2 = tags.clone();
    let server = Hostile::start(move |req: &Req| {
        let path = req.path().to_owned();
        if let Some((_, subject)) = path.split_once("/referrers/") {
            let list = index
                .lock()
                .expect("index")
                .get(subject)
                .cloned()
                .unwrap_or_default();
            let wanted = req.query("artifactType");
            let list: Vec<_> = list
                .into_iter()
                .filter(|d| wanted.as_deref().is_none_or(|w| d["artifactType"] == w))
                .collect();
            let body = serde_json::json!({
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "manifests": list,
            });
            return Reply::bytes(200, serde_json::to_vec(&body).expect("json"))
                .header("Content-Type", "application/vnd.oci.image.index.v1+json");
        }
        let reply = content.serve(req);
        if req.method == "PUT" && path.contains("/manifests/") {
            tags2
                .lock()
                .expect("tags")
                .push(path.rsplit('/').next().unwrap_or_default().to_owned());
            let m: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
            if let Some(subject) = m["subject"]["digest"].as_str() {
                let d = serde_json::json!({
                    "mediaType": m["mediaType"],
                    "digest": hostile_registry::digest(&req.body),
                    "size": req.body.len(),
                    "artifactType": m["artifactType"],
                });
                index
                    .lock()
                    .expect("index")
                    .entry(subject.to_owned())
                    .or_default()
                    .push(d);
                return reply.header("OCI-Subject", subject);
            }
        }
        reply
    });
    (server, tags)
}

#[test]
fn referrers_api_registry_lists_filters_and_serves_referrers() {
    let (server, tags) = referrers_registry();
    let env = Env::new();
    let tag = format!("{}/agents/api:1", server.addr);
    let digest = build(&env, &tag, "api");
    let (key, public) = keys(&env, "ci");
    let report = env.dir.path().join("r.json");
    crate::support::write(&report, b"{}");
    env.ok(&[
        "attach",
        &tag,
        "--artifact-type",
        REPORT,
        &report.to_string_lossy(),
    ]);
    env.ok(&["sign", &tag, "--key", &key]);
    env.ok(&["push", "-q", "--no-referrers", &tag]);
    assert!(discovered(&env, &["--remote", &tag]).is_empty());
    env.ok(&["push", "-q", &tag]);
    let put = tags.lock().expect("tags").clone();
    assert!(
        !put.iter().any(|t| t.starts_with("sha256-")),
        "a registry with the referrers API needs no tag-schema index: {put:?}"
    );
    assert_eq!(discovered(&env, &["--remote", &tag]).len(), 2);
    assert_eq!(
        discovered(&env, &["--remote", &tag, "--artifact-type", REPORT]),
        [REPORT]
    );
    let asked: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.path().contains("/referrers/"))
        .map(|r| r.path().to_owned())
        .collect();
    assert!(asked.iter().any(|p| p.ends_with(&digest)), "{asked:?}");

    let puller = Env::new();
    puller.ok(&["pull", "-q", "--referrers", &tag]);
    assert_eq!(discovered(&puller, &[&tag]).len(), 2);
    assert!(puller
        .ok(&["verify", &tag, "--key", &public])
        .contains("Verified OK"));
    let text = puller.ok(&["discover", &tag]);
    assert!(
        text.contains(&format!("@{digest}")) && text.contains(BUNDLE),
        "{text}"
    );
}

#[test]
fn hostile_referrers_lists_are_refused() {
    let env = Env::new();
    let content = Arc::new(Content::new());
    let manifest = content.image("x/y", "1", b"{}", &[("application/octet-stream", b"l")]);
    let subject = hostile_registry::digest(&manifest);
    let entry = |at: &str| serde_json::json!({"mediaType":"application/vnd.oci.image.manifest.v1+json","digest": subject, "size": 1, "artifactType": at});
    for (what, body) in [
        (
            "limit",
            serde_json::json!({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests": vec![entry("a/b"); 1025]}),
        ),
        (
            "not a media type",
            serde_json::json!({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests": [entry("a/\u{1b}[31m")]}),
        ),
        (
            "no `manifests` list",
            serde_json::json!({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json"}),
        ),
    ] {
        let c = content.clone();
        let bytes = serde_json::to_vec(&body).expect("json");
        let server = Hostile::start(move |req: &Req| {
            if req.path().contains("/referrers/") {
                return Reply::bytes(200, bytes.clone())
                    .header("Content-Type", "application/vnd.oci.image.index.v1+json");
            }
            c.serve(req)
        });
        let err = env.fails(&["discover", "--remote", &format!("{}/x/y:1", server.addr)]);
        assert!(err.contains(what), "{what}: {err}");
        assert!(!err.contains('\u{1b}'), "escaped: {err}");
    }
}

#[test]
fn a_concurrent_tag_schema_update_is_merged_not_lost() {
    // A registry without the referrers API where another writer's update lands right after
    // otters' first write of the `sha256-<hex>` index, replacing it with their own entry only.
    let content = Arc::new(Content::new());
    let foreign = serde_json::json!({
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": hostile_registry::digest(b"someone else's referrer"),
        "size": 23,
        "artifactType": "application/vnd.example.foreign",
    });
    let raced = Arc::new(Mutex::new(false));
    let c = content.clone();
    let server = Hostile::start(move |req: &Req| {
        let path = req.path().to_owned();
        if path.contains("/referrers/") {
            return Reply::new(404);
        }
        if req.method == "PUT" && path.contains("/manifests/sha256-") {
            let mut done = raced.lock().expect("raced");
            if !*done {
                *done = true;
                let (repo, tag) = path
                    .trim_start_matches("/v2/")
                    .rsplit_once("/manifests/")
                    .expect("path");
                let theirs = serde_json::json!({
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": [foreign.clone()],
                });
                c.put_manifest(
                    repo,
                    tag,
                    "application/vnd.oci.image.index.v1+json",
                    &serde_json::to_vec(&theirs).expect("json"),
                );
                return Reply::new(201);
            }
        }
        c.serve(req)
    });
    let env = Env::new();
    let tag = format!("{}/agents/race:1", server.addr);
    build(&env, &tag, "race");
    let (key, _) = keys(&env, "ci");
    env.ok(&["sign", &tag, "--key", &key]);
    env.ok(&["push", "-q", &tag]);
    let types = discovered(&env, &["--remote", &tag]);
    assert_eq!(
        types,
        [BUNDLE, "application/vnd.example.foreign"],
        "both entries kept"
    );
    let puts = server
        .requests()
        .iter()
        .filter(|r| r.method == "PUT" && r.path().contains("/manifests/sha256-"))
        .count();
    assert_eq!(puts, 2, "written, found replaced, merged and written again");
}

/// Writes the same build context (files, a directory ADD, a `file://` CONTEXT) under `dir`.
fn attested_context(dir: &Path) {
    crate::support::write(&dir.join("notes.txt"), b"same notes\n");
    crate::support::write(&dir.join("data/a.csv"), b"a,b\n1,2\n");
    crate::support::write(&dir.join("data/sub/b.txt"), b"bee\n");
    crate::support::write(&dir.join("style.md"), b"# Style\nShort.\n");
    crate::support::write(
        &dir.join("Agentfile"),
        "FROM scratch\nARG REGION=eu\nNAME ledger\nMODEL anthropic/claude-sonnet-4-5\nCONTEXT STYLE file://style.md\nADD notes.txt\nADD data /data\n",
    );
}

/// `discover --format json` of `reference` in `env`: artifactType → referrer digest.
fn referrer_digests(env: &Env, reference: &str) -> HashMap<String, String> {
    let v = json(&env.ok(&["discover", "--format", "json", reference]));
    v["referrers"]
        .as_array()
        .expect("referrers")
        .iter()
        .map(|r| {
            (
                r["artifactType"].as_str().unwrap_or_default().to_owned(),
                r["digest"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The single layer of referrer manifest `digest` in `env`'s store.
fn only_layer(env: &Env, digest: &str) -> Vec<u8> {
    let m = json(&std::fs::read_to_string(env.store_blob(digest)).expect("manifest"));
    let layer = m["layers"][0]["digest"].as_str().expect("layer").to_owned();
    std::fs::read(env.store_blob(&layer)).expect("layer blob")
}

/// Issue 31: `--provenance` records only the build arguments an ARG declares, and of one read
/// from the environment (a bare `--build-arg KEY`) only its name, unless `--provenance-env-args`;
/// a bare `--build-arg GH_TOKEN` that no ARG uses (a token passed by habit) was recorded with its
/// value, and `--push` published it.
#[test]
fn provenance_records_declared_build_args_and_no_environment_values() {
    let external = |extra: &[&str]| {
        let env = Env::new();
        let ctx = env.dir.path().join("ctx");
        crate::support::write(
            &ctx.join("Agentfile"),
            "FROM scratch\nARG REGION=eu\nARG TIER=silver\nNAME ledger\nMODEL anthropic/claude-sonnet-4-5\nCONTEXT SOUL <<EOF\n${REGION} ${TIER}\nEOF\n",
        );
        let out = env
            .otters()
            .env("GH_TOKEN", "ghp_secret_token_value")
            .env("TIER", "gold-from-env")
            .args(["build", "--provenance", "-t", "ledger:1"])
            .args(["--build-arg", "REGION=us", "--build-arg", "GH_TOKEN"])
            .args(["--build-arg", "TIER"])
            .args(extra)
            .arg(&ctx)
            .output()
            .expect("run otters");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("GH_TOKEN"),
            "the unused argument is still reported: {err}"
        );
        let prov = referrer_digests(&env, "ledger:1")["application/vnd.in-toto+json"].clone();
        let text = String::from_utf8(only_layer(&env, &prov)).expect("utf8");
        assert!(
            !text.contains("GH_TOKEN") && !text.contains("ghp_secret_token_value"),
            "{text}"
        );
        json(&text)["predicate"]["buildDefinition"]["externalParameters"].clone()
    };
    let platform = format!("linux/{}", crate::support::host_arch());
    assert_eq!(
        external(&[]),
        serde_json::json!({
            "agentfile": "Agentfile",
            "buildArgs": {"REGION": "us"},
            "buildArgsFromEnvironment": ["TIER"],
            "platform": platform,
        })
    );
    assert_eq!(
        external(&["--provenance-env-args"]),
        serde_json::json!({
            "agentfile": "Agentfile",
            "buildArgs": {"REGION": "us", "TIER": "gold-from-env"},
            "platform": platform,
        })
    );
}

#[test]
fn build_attestations_are_reproducible_across_directories_and_valid() {
    const TEST: &str = "build_attestations_are_reproducible_across_directories_and_valid";
    let mut seen = Vec::new();
    for place in ["first/ctx", "elsewhere/deeper/ctx"] {
        let env = Env::new();
        let ctx = env.dir.path().join(place);
        attested_context(&ctx);
        let out = env.run(&[
            "build",
            "--sbom",
            "--provenance",
            "--build-arg",
            "REGION=us",
            "-t",
            "ledger:1",
            ctx.to_str().expect("utf8"),
        ]);
        assert!(out.0, "{}", out.2);
        assert!(out.2.contains("attached sbom sha256:"), "{}", out.2);
        let digests = referrer_digests(&env, "ledger:1");
        let sbom = digests["application/vnd.cyclonedx+json"].clone();
        let prov = digests["application/vnd.in-toto+json"].clone();
        let image = out.1.trim().to_owned();
        let statement = json(&String::from_utf8(only_layer(&env, &prov)).expect("utf8"));
        assert_eq!(
            statement["subject"][0]["digest"]["sha256"],
            image.trim_start_matches("sha256:")
        );
        let deps = statement["predicate"]["buildDefinition"]["resolvedDependencies"].to_string();
        for f in [
            "file:notes.txt",
            "file:data/a.csv",
            "file:data/sub/b.txt",
            "file:style.md",
            "file:Agentfile",
        ] {
            assert!(deps.contains(f), "{f} in {deps}");
        }
        assert_eq!(
            statement["predicate"]["buildDefinition"]["externalParameters"]["buildArgs"]["REGION"],
            "us"
        );
        let bom = only_layer(&env, &sbom);
        let bom_path = env.dir.path().join("sbom.cdx.json");
        std::fs::write(&bom_path, &bom).expect("write");
        if works("python3", &["--version"]) {
            let script = crate::support::harness::supply().join("validate_sbom.py");
            let v = std::process::Command::new("python3")
                .arg(script)
                .arg(&bom_path)
                .output()
                .expect("python3");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&v.stdout),
                String::from_utf8_lossy(&v.stderr)
            );
            assert!(
                v.status.code() != Some(3),
                "run {}\n{text}",
                crate::support::harness::INSTALL
            );
            assert!(v.status.success(), "{text}");
        } else {
            skip(TEST, "python3 is not installed");
        }
        seen.push((image, sbom, prov));
    }
    assert_eq!(
        seen[0], seen[1],
        "same inputs, same image, SBOM and provenance digests"
    );
}

#[test]
fn signed_build_pushes_verifiable_attestations() {
    const TEST: &str = "signed_build_pushes_verifiable_attestations";
    let reg = Registry::start();
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    attested_context(&ctx);
    let (key, public) = keys(&env, "ci");
    let archive = env.dir.path().join("ledger.tar");
    let tag = format!("{}/agents/ledger:1", reg.addr);
    let image = env
        .ok(&[
            "build",
            "-q",
            "--sbom",
            "--provenance",
            "--sign-key",
            &key,
            "--push",
            "-o",
            &format!("type=oci,dest={}", archive.display()),
            "-t",
            &tag,
            ctx.to_str().expect("utf8"),
        ])
        .trim()
        .to_owned();
    // The archive written with the build holds the attestations too.
    let loaded = Env::new();
    loaded.ok(&["load", "-i", &archive.to_string_lossy()]);
    assert_eq!(discovered(&loaded, &[&tag]).len(), 3);
    let fresh = Env::new();
    let v = json(&fresh.ok(&["discover", "--remote", "--format", "json", &tag]));
    let entries = v["referrers"].as_array().expect("referrers");
    assert_eq!(entries.len(), 3, "{v}");
    assert!(entries.iter().all(|e| e["artifactType"] == BUNDLE), "{v}");
    let predicates: std::collections::BTreeSet<String> = entries
        .iter()
        .map(|e| {
            e["annotations"]["dev.sigstore.bundle.predicateType"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        predicates.into_iter().collect::<Vec<_>>(),
        [
            "https://cyclonedx.org/bom",
            "https://sigstore.dev/cosign/sign/v1",
            "https://slsa.dev/provenance/v1"
        ]
    );
    assert!(fresh
        .ok(&["verify", "--remote", &tag, "--key", &public])
        .contains("Verified OK"));
    // Each bundle verifies independently against the image digest.
    for e in entries {
        let sig = e["digest"].as_str().expect("digest");
        let bundle_path = env.dir.path().join(format!("{}.json", &sig[7..19]));
        std::fs::write(&bundle_path, only_layer(&env, sig)).expect("write");
        if let Some((ok, text)) = node_verify(TEST, &bundle_path, &public, &image) {
            assert!(ok, "{text}");
        }
    }
}

/// Issue 17.7: a signed attestation (here a failed vulnerability scan) about the image is not a
/// signature. `verify` and `run --verify-key` refuse it and say what it is; `verify --type`
/// accepts exactly that predicate type.
#[test]
fn a_signed_attestation_does_not_pass_as_a_signature() {
    const SCAN: &str = "https://example.com/scan/v1";
    let env = Env::new();
    let tag = "local/agents/attested:1";
    let digest = build(&env, tag, "attested");
    let (key, public) = keys(&env, "ci");
    let predicate = env.dir.path().join("scan.json");
    crate::support::write(&predicate, br#"{"result":"FAILED","critical":3}"#);
    let bundle = env.dir.path().join("scan.sigstore.json");
    env.ok(&[
        "sign-blob",
        "--key",
        &key,
        "--digest",
        &digest,
        "--predicate-type",
        SCAN,
        "--predicate",
        &predicate.to_string_lossy(),
        "-o",
        &bundle.to_string_lossy(),
    ]);
    env.ok(&[
        "attach",
        tag,
        "--artifact-type",
        BUNDLE,
        "--layer-media-type",
        BUNDLE,
        &bundle.to_string_lossy(),
    ]);
    let err = env.fails(&["verify", tag, "--key", &public]);
    assert!(
        err.contains("none verifies") && err.contains("not a signature") && err.contains(SCAN),
        "{err}"
    );
    let err = env.fails(&["run", "--dry-run", tag, "--verify-key", &public]);
    assert!(err.contains("refusing to run an unverified image"), "{err}");
    let out = env.ok(&["verify", tag, "--key", &public, "--type", SCAN]);
    assert!(out.contains("Verified OK") && out.contains(SCAN), "{out}");
    let err = env.fails(&["verify", tag, "--key", &public, "--type", "slsaprovenance1"]);
    assert!(err.contains("https://slsa.dev/provenance/v1"), "{err}");
    // A real signature beside it verifies as one.
    env.ok(&["sign", tag, "--key", &key]);
    let out = env.ok(&["verify", tag, "--key", &public]);
    assert!(
        out.contains("Verified OK") && out.contains("https://sigstore.dev/cosign/sign/v1"),
        "{out}"
    );
}

/// A referrers-API registry whose every `GET …/referrers/<digest>` lists `list` (whatever the
/// digest), serving the rest from `content`. Returns the server.
fn listing_registry(content: Arc<Content>, list: Vec<serde_json::Value>) -> Hostile {
    let body = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": list,
    }))
    .expect("json");
    Hostile::start(move |req: &Req| {
        if req.path().contains("/referrers/") {
            return Reply::bytes(200, body.clone())
                .header("Content-Type", "application/vnd.oci.image.index.v1+json");
        }
        content.serve(req)
    })
}

/// Issue 17.13: `discover --remote` has a total request budget. A registry that lists 20
/// referrers for every digest would take 1 + 20 + 400 listings; discover stops at its budget
/// (default 256, `--max-requests`), breadth first, and says the output was cut.
#[test]
fn discover_remote_stops_at_its_request_budget_and_says_so() {
    let content = Arc::new(Content::new());
    let manifest = content.image("x/y", "1", b"{}", &[("application/octet-stream", b"l")]);
    let subject = hostile_registry::digest(&manifest);
    let list: Vec<serde_json::Value> = (0..20)
        .map(|i| {
            serde_json::json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": hostile_registry::digest(format!("referrer {i}").as_bytes()),
                "size": 100,
                "artifactType": REPORT,
            })
        })
        .collect();
    let server = listing_registry(content, list);
    let env = Env::new();
    let reference = format!("{}/x/y:1", server.addr);
    let listings = |server: &Hostile| {
        server
            .requests()
            .iter()
            .filter(|r| r.path().contains("/referrers/"))
            .count()
    };
    let (ok, out, err) = env.run(&["discover", "--remote", &reference]);
    assert!(ok, "{err}");
    assert!(listings(&server) <= 256, "{} listings", listings(&server));
    assert!(
        err.contains("cut after") && err.contains("--max-requests"),
        "{err}"
    );
    // The first two levels are whole.
    assert!(out.contains(&subject), "{out}");
    assert!(
        out.lines().filter(|l| l.contains(REPORT)).count() >= 20 + 20 * 20,
        "{out}"
    );

    server.clear();
    let (ok, out, err) = env.run(&[
        "discover",
        "--remote",
        "--format",
        "json",
        "--max-requests",
        "5",
        &reference,
    ]);
    assert!(ok, "{err}");
    assert_eq!(listings(&server), 5);
    let v = json(&out);
    assert_eq!(v["truncated"], true, "{v}");
    assert_eq!(v["referrers"].as_array().map(Vec::len), Some(20));
    assert!(err.contains("cut after 5 registry requests"), "{err}");
}

/// Issue 17.14: `verify --remote` reads only bundle referrers, best first, stops at the first that
/// verifies, and reads at most 32 referrers (64 MiB) in all: a registry listing 50 reports and 100
/// bundles signed by another key costs at most 32 manifest and 32 bundle reads, and the error
/// says where it stopped.
#[test]
fn verify_remote_reads_a_bounded_number_of_bundles() {
    let env = Env::new();
    let (_, public) = keys(&env, "right");
    let (wrong, _) = keys(&env, "wrong");
    let content = Arc::new(Content::new());
    let manifest = content.image("x/y", "1", b"{}", &[("application/octet-stream", b"l")]);
    let subject = hostile_registry::digest(&manifest);
    let bundle = env.dir.path().join("wrong.json");
    env.ok(&[
        "sign-blob",
        "--key",
        &wrong,
        "--digest",
        &subject,
        "-o",
        &bundle.to_string_lossy(),
    ]);
    let bundle = std::fs::read(&bundle).expect("bundle");
    let layer = content.put_blob(&bundle);
    let empty = content.put_blob(b"{}");
    let mut list = Vec::new();
    for i in 0..50 {
        list.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": hostile_registry::digest(format!("report {i}").as_bytes()),
            "size": 100,
            "artifactType": REPORT,
        }));
    }
    for i in 0..100 {
        let m = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": BUNDLE,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2},
            "layers": [{"mediaType": BUNDLE, "digest": layer, "size": bundle.len()}],
            "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": subject, "size": manifest.len()},
            "annotations": {"n": i.to_string()},
        }))
        .expect("json");
        let d = content.put_manifest(
            "x/y",
            &format!("r{i}"),
            "application/vnd.oci.image.manifest.v1+json",
            &m,
        );
        list.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": d,
            "size": m.len(),
            "artifactType": BUNDLE,
        }));
    }
    let server = listing_registry(content, list);
    let reference = format!("{}/x/y:1", server.addr);
    let err = env.fails(&["verify", "--remote", &reference, "--key", &public]);
    assert!(err.contains("stopped after 32"), "{err}");
    let reqs = server.requests();
    let manifests = reqs
        .iter()
        .filter(|r| r.method == "GET" && r.path().contains("/manifests/sha256:"))
        .count();
    let bundles = reqs
        .iter()
        .filter(|r| r.method == "GET" && r.path().ends_with(&layer))
        .count();
    assert!(
        manifests <= 32 && bundles <= 32,
        "{manifests} manifests, {bundles} bundles"
    );
    assert!(
        !reqs
            .iter()
            .any(|r| r.path().contains(&hostile_registry::digest(b"report 0"))),
        "a report was read"
    );
}

/// Issue 18.9 and 18.12: after `skopeo copy --all` of the `sha256-<hex>` tag (skopeo drops the
/// entries' `artifactType`), `discover --remote` classifies each referrer by its manifest and says
/// what it is, and `verify --remote` finds the signature. Real skopeo and docker-registry.
#[test]
fn referrers_copied_by_skopeo_are_classified_by_their_manifests() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/agents/src:1", reg.addr);
    let digest = build(&env, &tag, "skopeo");
    let (key, public) = keys(&env, "ci");
    env.ok(&["sign", &tag, "--key", &key]);
    env.ok(&["push", "-q", &tag]);
    let hex = digest.trim_start_matches("sha256:");
    let copy = |from: &str, to: &str| {
        let out = std::process::Command::new("skopeo")
            .args([
                "copy",
                "--quiet",
                "--all",
                "--src-tls-verify=false",
                "--dest-tls-verify=false",
            ])
            .arg(format!("docker://{from}"))
            .arg(format!("docker://{to}"))
            .output()
            .expect("skopeo");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let dest = format!("{}/agents/copied:1", reg.addr);
    copy(&tag, &dest);
    copy(
        &format!("{}/agents/src:sha256-{hex}", reg.addr),
        &format!("{}/agents/copied:sha256-{hex}", reg.addr),
    );
    let raw = std::process::Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{}/agents/copied:sha256-{hex}", reg.addr))
        .output()
        .expect("skopeo");
    let index = json(&String::from_utf8_lossy(&raw.stdout));
    // The premise: skopeo's copy of the index lost the entry's artifactType.
    assert!(index["manifests"][0]["artifactType"].is_null(), "{index}");
    let fresh = Env::new();
    let text = fresh.ok(&["discover", "--remote", &dest]);
    assert!(
        !text.contains("no artifact type") && text.contains(BUNDLE) && text.contains("(signature)"),
        "{text}"
    );
    assert_eq!(
        discovered(&fresh, &["--remote", &dest, "--artifact-type", BUNDLE]),
        [BUNDLE]
    );
    let v = json(&fresh.ok(&["discover", "--remote", "--format", "json", &dest]));
    assert_eq!(v["referrers"][0]["kind"], "signature", "{v}");
    assert!(fresh
        .ok(&["verify", "--remote", &dest, "--key", &public])
        .contains("Verified OK"));
}

/// Issue 18.12: `push --format json` counts each blob once (the empty config every referrer
/// shares is not both uploaded and "already present"), and referrer layers carry titles, so
/// oras-py saves `signature.sigstore.json`, `sbom.cdx.json` and `provenance.intoto.json`.
#[test]
fn push_counts_each_blob_once_and_oras_saves_referrers_by_title() {
    const TEST: &str = "push_counts_each_blob_once_and_oras_saves_referrers_by_title";
    let reg = Registry::start();
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    attested_context(&ctx);
    let (key, _) = keys(&env, "ci");
    let tag = format!("{}/agents/titled:1", reg.addr);
    env.ok(&[
        "build",
        "-q",
        "--sbom",
        "--provenance",
        "-t",
        &tag,
        ctx.to_str().expect("utf8"),
    ]);
    env.ok(&["sign", &tag, "--key", &key]);
    let once = |report: &serde_json::Value| {
        let mut all = Vec::new();
        for k in ["uploaded", "skipped", "mounted", "downloaded"] {
            for d in report[k].as_array().into_iter().flatten() {
                all.push(d.as_str().unwrap_or_default().to_owned());
            }
        }
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(all.len(), unique.len(), "a blob counted twice: {report}");
    };
    let first = json(&env.ok(&["push", "--format", "json", &tag]));
    once(&first);
    assert_eq!(
        first["referrers"].as_array().map(Vec::len),
        Some(3),
        "{first}"
    );
    // Another repository of the same registry: blobs are mounted, each counted once.
    let other = format!("{}/agents/other:1", reg.addr);
    let second = json(&env.ok(&["push", "--format", "json", &tag, &other]));
    once(&second);

    if !works("python3", &crate::support::oras::PROBE) {
        skip(
            TEST,
            "oras-py is not installed (python3 -m pip install oras)",
        );
        return;
    }
    let mut names = Vec::new();
    for (at, d) in referrer_digests(&env, &tag) {
        let out = env.dir.path().join(format!("oras-{}", &d[7..19]));
        let files =
            crate::support::oras::pull(&reg.addr, &format!("{}/agents/titled@{d}", reg.addr), &out);
        for f in files {
            let name = Path::new(&f)
                .strip_prefix(&out)
                .unwrap_or_else(|_| panic!("oras-py wrote {f} outside {}", out.display()))
                .to_string_lossy()
                .into_owned();
            assert!(!name.starts_with("sha256"), "{at}: {name}");
            names.push(name);
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "provenance.intoto.json",
            "sbom.cdx.json",
            "signature.sigstore.json"
        ]
    );
}

/// Issue 18.4: `inspect` of a registry reference the local store does not hold reads it from its
/// registry, with a note on stderr (as `run`, `verify` and `discover` do), and writes nothing to
/// the store; `--local` refuses; a local tag (no registry host) is never looked up on Docker Hub;
/// `--remote` reads the registry although the store holds the image.
#[test]
fn inspect_of_a_reference_the_store_lacks_reads_its_registry() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/agents/inspected:1", reg.addr);
    let digest = build(&env, &tag, "inspected");
    env.ok(&["push", "-q", &tag]);

    let fresh = Env::new();
    let (ok, out, err) = fresh.run(&["inspect", "--format", "json", &tag]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("inspect --format json");
    assert_eq!(v["digest"], digest.as_str(), "{out}");
    assert!(
        err.contains("not in the local store")
            && err.contains(&reg.addr)
            && err.contains("--local"),
        "{err}"
    );
    assert_eq!(
        fresh.ok(&["images", "-q"]).trim(),
        "",
        "inspect stored an image"
    );

    let err = fresh.fails(&["inspect", "--local", &tag]);
    assert!(err.contains("not in the local store"), "{err}");
    let err = fresh.fails(&["inspect", "agents/inspected:1"]);
    assert!(
        err.contains("not in the local store") && !err.contains("reading it from"),
        "{err}"
    );

    let (ok, out, err) = env.run(&["inspect", "--remote", &tag]);
    assert!(ok && out.contains(&digest), "{out}{err}");
    assert!(!err.contains("note:"), "{err}");
    let (ok, out, err) = env.run(&["inspect", &tag]);
    assert!(ok && out.contains(&digest), "{out}{err}");
    assert!(!err.contains("note:"), "{err}");
}

/// Issue 18.4: after a plain `pull` (no referrers in the store), `verify` looks in the registry
/// the image came from, with a note; `--local` refuses and says how to fetch the referrers; and
/// `verify` and `discover` of a registry reference the store does not hold use the registry.
#[test]
fn verify_after_a_plain_pull_looks_at_the_registry() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/agents/pulled:1", reg.addr);
    build(&env, &tag, "pulled");
    let (key, public) = keys(&env, "ci");
    env.ok(&["sign", &tag, "--key", &key]);
    env.ok(&["push", "-q", &tag]);

    let puller = Env::new();
    puller.ok(&["pull", "-q", &tag]);
    let (ok, out, err) = puller.run(&["verify", &tag, "--key", &public]);
    assert!(ok, "{err}");
    assert!(out.contains("Verified OK"), "{out}");
    assert!(
        err.contains("no signature") && err.contains("local store") && err.contains(&reg.addr),
        "{err}"
    );
    let err = puller.fails(&["verify", "--local", &tag, "--key", &public]);
    assert!(
        err.contains("has no signature in the local store")
            && err.contains("otters pull --referrers")
            && err.contains("help: or check its registry with --remote"),
        "{err}"
    );
    // A predicate type that is no URI and no known name: the value, then the flag that takes it.
    let err = puller.fails(&["verify", &tag, "--key", &public, "--type", "nonsense"]);
    assert!(
        err.contains("predicate type nonsense is neither a URI")
            && err.contains("help: pass --type with a predicate type URI"),
        "{err}"
    );

    let fresh = Env::new();
    let (ok, out, err) = fresh.run(&["discover", &tag]);
    assert!(ok, "{err}");
    assert!(out.contains(BUNDLE), "{out}");
    assert!(err.contains("not in the local store"), "{err}");
    let (ok, out, err) = fresh.run(&["verify", &tag, "--key", &public]);
    assert!(ok && out.contains("Verified OK"), "{out}{err}");
    let err = fresh.fails(&["discover", "--local", &tag]);
    assert!(err.contains("no image"), "{err}");
}

/// The `index.json` entries of `env`'s store, raw.
fn store_index_entries(env: &Env) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(env.store().join("index.json")).expect("index.json");
    json(&text)["manifests"]
        .as_array()
        .expect("manifests")
        .clone()
}

/// Issue 18.8: every blob the store needs is reachable from `index.json` (referrers as untagged
/// entries annotated with their subject), so `umoci gc`, which the layout spec lets delete
/// whatever `index.json` does not reach, keeps the signature, SBOM and provenance; `images` and
/// `save` show no such entry; a store that keeps referrers only in `referrers/` still verifies;
/// `rm` then `prune` takes the entries with their subject.
#[test]
fn umoci_gc_of_the_store_keeps_signatures_sboms_and_provenance() {
    const TEST: &str = "umoci_gc_of_the_store_keeps_signatures_sboms_and_provenance";
    const ANN: &str = "io.openotters.referrer.subject";
    if !crate::support::tools::require(
        TEST,
        "umoci",
        &["--version"],
        "install it with `apt-get install umoci` (.ci/install does)",
    ) {
        return;
    }
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    attested_context(&ctx);
    let (key, public) = keys(&env, "ci");
    let tag = "local/agents/ledger:1";
    let image = env
        .ok(&[
            "build",
            "-q",
            "--sbom",
            "--provenance",
            "--sign-key",
            &key,
            "-t",
            tag,
            ctx.to_str().expect("utf8"),
        ])
        .trim()
        .to_owned();
    crate::support::run_ok(
        std::process::Command::new("umoci")
            .args(["gc", "--layout"])
            .arg(env.store()),
    );
    let out = env.ok(&["verify", tag, "--key", &public]);
    assert!(out.contains("Verified OK"), "{out}");
    for t in ["slsaprovenance1", "https://cyclonedx.org/bom"] {
        let out = env.ok(&["verify", tag, "--key", &public, "--type", t]);
        assert!(out.contains("Verified OK"), "{t}: {out}");
    }
    assert_eq!(discovered(&env, &[tag]).len(), 3);
    let entries = store_index_entries(&env);
    let referrer_entries: Vec<_> = entries
        .iter()
        .filter(|e| e["annotations"][ANN] == image.as_str())
        .collect();
    assert_eq!(referrer_entries.len(), 3, "{entries:?}");
    assert!(referrer_entries
        .iter()
        .all(|e| e["annotations"]["org.opencontainers.image.ref.name"].is_null()));

    // `images` lists the image only; a saved archive holds its referrers as before, unannotated.
    let listed = json(&env.ok(&["images", "--format", "json"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let archive = env.dir.path().join("ledger.tar");
    env.ok(&["save", tag, "-o", &archive.to_string_lossy()]);
    let loaded = Env::new();
    loaded.ok(&["load", "-i", &archive.to_string_lossy()]);
    assert!(loaded
        .ok(&["verify", tag, "--key", &public])
        .contains("Verified OK"));
    let raw = std::fs::read(&archive).expect("archive");
    assert!(
        !String::from_utf8_lossy(&raw).contains(ANN),
        "the archive carries the store's own annotation"
    );

    // A store of an older otters (referrers only in `referrers/`) reads the same.
    let old: Vec<_> = entries
        .iter()
        .filter(|e| e["annotations"][ANN].is_null())
        .cloned()
        .collect();
    let mut index = json(&std::fs::read_to_string(env.store().join("index.json")).expect("index"));
    index["manifests"] = serde_json::Value::Array(old);
    std::fs::write(env.store().join("index.json"), index.to_string()).expect("write index");
    assert!(env
        .ok(&["verify", tag, "--key", &public])
        .contains("Verified OK"));
    assert_eq!(discovered(&env, &[tag]).len(), 3);

    // Signing again fills the missing entry in; rm then prune takes the entries with the image.
    env.ok(&["sign", tag, "--key", &key]);
    assert!(store_index_entries(&env)
        .iter()
        .any(|e| e["annotations"][ANN] == image.as_str()));
    env.ok(&["rm", tag]);
    env.ok(&["prune", "--min-age", "0s"]);
    let left = store_index_entries(&env);
    assert!(left.is_empty(), "{left:?}");
}
