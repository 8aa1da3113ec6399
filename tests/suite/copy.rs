//! `otters copy [-r]` and `otters save --with-deps` through the binary, against two real
//! `docker-registry` instances (no referrers API: referrers travel by the `sha256-<hex>` tag
//! schema), checked with skopeo: an agent with a FROM parent, a RUNTIME and a BIN whose images are
//! amd64 + arm64 indexes, built with `--sbom --sign-key`; the air-gapped path (save, registry
//! gone, fresh home, load, verify, run `--pull never`, offline rebuild); a copy killed midway and
//! rerun; a pin that no longer exists at its source (its refusals pinned whole in
//! `snapshots/copy_cli/`).

use crate::support::cli::{flat, json, Env};
use crate::support::images::{self, BinPrefix, Layout};
use crate::support::registry::Registry;
use crate::support::snap::Transcript;
use serde_json::{json as j, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The runtime: runs its BIN (found on `PATH`, the BIN directory) and says it ran.
pub(crate) const RUNTIME: &str = "#!/bin/sh\ntool > tool.txt\necho \"RUNTIME $*\" > report.txt\n";
pub(crate) const TOOL: &str = "#!/bin/sh\necho tool-ran\n";

/// The architecture that is not this machine's, of amd64 and arm64.
pub(crate) fn other_arch() -> &'static str {
    if crate::support::host_arch() == "arm64" {
        "amd64"
    } else {
        "arm64"
    }
}

/// A bin image as an index of this machine's platform and the other of amd64/arm64, pushed with
/// skopeo to `dest`. Returns the index digest and the platform manifests' digests.
pub(crate) fn push_two_arch(
    dir: &Path,
    name: &str,
    content: &str,
    dest: &str,
) -> (String, Vec<String>) {
    let mut l = Layout::new(dir);
    let host = images::bin_manifest(
        &l,
        name,
        content.as_bytes(),
        BinPrefix::Io,
        Some("test"),
        crate::support::host_arch(),
    );
    let other = images::bin_manifest(
        &l,
        name,
        b"#!/bin/sh\necho other arch\n",
        BinPrefix::Io,
        Some("test"),
        other_arch(),
    );
    let index = j!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [host.clone(), other.clone()],
    });
    let d = l.blob(
        "application/vnd.oci.image.index.v1+json",
        index.to_string().as_bytes(),
    );
    l.tag(&d, "1");
    images::skopeo_push(dir, "1", dest, None);
    let s = |v: &Value| v["digest"].as_str().unwrap_or_default().to_owned();
    (s(&d), vec![s(&host), s(&other)])
}

/// Two registries and a user's machine holding a signed child agent built against the first.
pub(crate) struct CopyWorld {
    pub(crate) env: Env,
    pub(crate) reg1: Registry,
    pub(crate) reg2: Registry,
    pub(crate) runtime: (String, Vec<String>),
    pub(crate) tool: (String, Vec<String>),
    child_ctx: PathBuf,
    public: String,
}

impl CopyWorld {
    pub(crate) fn new(big_layer: Option<usize>) -> CopyWorld {
        let env = Env::new();
        let (reg1, reg2) = (Registry::start(), Registry::start());
        let a = reg1.addr.clone();
        let dir = env.dir.path().to_path_buf();
        let runtime = push_two_arch(
            &dir.join("l/runtime"),
            "runtime",
            RUNTIME,
            &format!("{a}/tools/runtime:1"),
        );
        let tool = push_two_arch(
            &dir.join("l/tool"),
            "tool",
            TOOL,
            &format!("{a}/tools/tool:1"),
        );
        let parent_ctx = dir.join("parent");
        crate::support::write(
            &parent_ctx.join("Agentfile"),
            format!("FROM scratch\nNAME parent\nRUNTIME {a}/tools/runtime:1\nMODEL anthropic/claude-test\nADD notes.txt\n"),
        );
        crate::support::write(&parent_ctx.join("notes.txt"), "parent notes\n");
        env.ok(&[
            "build",
            "-q",
            "--push",
            "-t",
            &format!("{a}/lib/parent:1"),
            parent_ctx.to_str().unwrap(),
        ]);
        let child_ctx = dir.join("child");
        crate::support::write(
            &child_ctx.join("Agentfile"),
            format!("FROM {a}/lib/parent:1\nNAME child\nBIN tool {a}/tools/tool:1\nADD data.bin\n"),
        );
        let data = match big_layer {
            Some(n) => (0..n).map(|i| (i % 251) as u8).collect(),
            None => b"child data\n".to_vec(),
        };
        crate::support::write(&child_ctx.join("data.bin"), data);
        let prefix = dir.join("ci");
        env.ok(&["key", "generate", "--out", prefix.to_str().unwrap()]);
        let key = format!("{}.key", prefix.display());
        env.ok(&[
            "build",
            "-q",
            "--sbom",
            "--sign-key",
            &key,
            "--push",
            "-t",
            &format!("{a}/agents/child:1"),
            child_ctx.to_str().unwrap(),
        ]);
        CopyWorld {
            env,
            reg1,
            reg2,
            runtime,
            tool,
            child_ctx,
            public: format!("{}.pub", prefix.display()),
        }
    }
}

/// The child agent's reference in `reg`.
pub(crate) fn agent(reg: &Registry) -> String {
    format!("{}/agents/child:1", reg.addr)
}

/// The raw manifest skopeo reads at `reference`, or `None` when it cannot.
pub(crate) fn skopeo_raw(reference: &str) -> Option<Vec<u8>> {
    let out = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(reference)
        .output()
        .expect("skopeo");
    out.status.success().then_some(out.stdout)
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    crate::support::sha256(bytes)
}

/// Every image, platform and referrer of `w`'s closure is in registry `reg`, with its digest.
fn assert_closure_in(w: &CopyWorld, reg: &Registry, child_digest: &str) {
    let addr = &reg.addr;
    for (repo, (index, platforms)) in [("tools/runtime", &w.runtime), ("tools/tool", &w.tool)] {
        let raw = skopeo_raw(&format!("docker://{addr}/{repo}:1"))
            .unwrap_or_else(|| panic!("{repo}:1 missing"));
        assert_eq!(&sha256(&raw), index, "{repo}: the index was not kept whole");
        for platform in platforms {
            let manifest = skopeo_raw(&format!("docker://{addr}/{repo}@{platform}"))
                .unwrap_or_else(|| panic!("{repo}@{platform} missing"));
            assert_eq!(&sha256(&manifest), platform);
            // Each platform's blobs too: skopeo copies the manifest out of the registry.
            let doc: Value = serde_json::from_slice(&manifest).unwrap();
            for layer in doc["layers"].as_array().unwrap() {
                let d = layer["digest"].as_str().unwrap();
                assert!(
                    reg.blobs().iter().any(|b| b == d),
                    "blob {d} of {repo}@{platform} missing"
                );
            }
        }
    }
    let parent1 = skopeo_raw(&format!("docker://{}/lib/parent:1", w.reg1.addr)).unwrap();
    let parent2 = skopeo_raw(&format!("docker://{addr}/lib/parent:1")).expect("parent missing");
    assert_eq!(sha256(&parent1), sha256(&parent2));
    let child = skopeo_raw(&format!("docker://{addr}/agents/child:1")).expect("child missing");
    assert_eq!(sha256(&child), child_digest);
    let referrers = skopeo_raw(&format!(
        "docker://{addr}/agents/child:sha256-{}",
        child_digest.trim_start_matches("sha256:")
    ))
    .expect("no referrers tag");
    let v: Value = serde_json::from_slice(&referrers).unwrap();
    assert_eq!(
        v["manifests"].as_array().unwrap().len(),
        2,
        "signature and SBOM: {v}"
    );
}

#[test]
fn copy_r_moves_the_whole_closure_between_registries_and_it_verifies_there() {
    let w = CopyWorld::new(None);
    let child_digest = sha256(&skopeo_raw(&format!("docker://{}", agent(&w.reg1))).unwrap());

    // --dry-run lists the four images and moves nothing.
    let plan = json(&w.env.ok(&[
        "copy",
        "-r",
        "--dry-run",
        "--format",
        "json",
        &agent(&w.reg1),
        &agent(&w.reg2),
    ]));
    let roles: Vec<&str> = plan["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["image", "from", "runtime", "bin"], "{plan}");
    assert!(
        w.reg2.blobs().is_empty(),
        "a dry run wrote to the destination"
    );

    let report = json(&w.env.ok(&[
        "copy",
        "-r",
        "--format",
        "json",
        &agent(&w.reg1),
        &agent(&w.reg2),
    ]));
    assert_eq!(report["images"].as_array().unwrap().len(), 4, "{report}");
    let runtime = report["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["role"] == "runtime")
        .unwrap();
    assert_eq!(runtime["digest"], w.runtime.0.as_str(), "{report}");
    assert_eq!(
        runtime["platforms"].as_array().unwrap().len(),
        2,
        "{report}"
    );
    assert!(report["referrers"].as_u64().unwrap() >= 2, "{report}");
    assert_closure_in(&w, &w.reg2, &child_digest);

    // The signature verifies on the second registry, from a machine that never saw the first.
    let fresh = Env::new();
    let out = fresh.ok(&["verify", "--remote", &agent(&w.reg2), "--key", &w.public]);
    assert!(
        out.contains("Verified OK") || flat(&out).contains("Verified OK"),
        "{out}"
    );

    // Copied again: nothing moves, everything is already there.
    let again = json(&w.env.ok(&[
        "copy",
        "-r",
        "--format",
        "json",
        &agent(&w.reg1),
        &agent(&w.reg2),
    ]));
    assert_eq!(again["uploaded"], 0, "{again}");
    assert_eq!(again["downloaded"], 0, "{again}");
    assert!(again["skipped"].as_u64().unwrap() >= 8, "{again}");

    // Within one registry every blob is mounted from the repository it came from.
    let promoted = format!("{}/prod/child:1", w.reg2.addr);
    let within = json(
        &w.env
            .ok(&["copy", "--format", "json", &agent(&w.reg2), &promoted]),
    );
    assert_eq!(within["uploaded"], 0, "{within}");
    assert!(within["mounted"].as_u64().unwrap() >= 2, "{within}");
    let moved = skopeo_raw(&format!("docker://{promoted}")).expect("promoted");
    assert_eq!(sha256(&moved), child_digest);
}

#[test]
fn save_with_deps_then_load_runs_verifies_and_rebuilds_with_no_registry() {
    let mut w = CopyWorld::new(None);
    let child = agent(&w.reg1);
    let archive = w.env.dir.path().join("air-gap.tar");
    w.env.ok(&[
        "save",
        "--with-deps",
        &child,
        "-o",
        archive.to_str().unwrap(),
    ]);
    w.reg1.kill();

    let fresh = Env::new();
    let loaded = fresh.ok(&["load", "-i", archive.to_str().unwrap()]);
    for name in [
        format!("{}/tools/runtime:1", w.reg1.addr),
        format!("{}/tools/tool:1", w.reg1.addr),
        format!("{}/lib/parent:1", w.reg1.addr),
        child.clone(),
    ] {
        assert!(
            loaded.contains(&name),
            "{name} not loaded under its reference:\n{loaded}"
        );
    }
    let out = fresh.ok(&["verify", &child, "--key", &w.public]);
    assert!(flat(&out).contains("Verified OK"), "{out}");

    let root = fresh.dir.path().join("tree");
    let mut run = fresh.otters();
    run.env("ANTHROPIC_API_KEY", "sk-test")
        .args(["run", "--pull", "never", &child, "--root"])
        .arg(&root);
    crate::support::cli::ok(&mut run);
    let report = std::fs::read_to_string(root.join("workspace/report.txt")).unwrap();
    assert!(report.starts_with("RUNTIME"), "{report}");
    let tool = std::fs::read_to_string(root.join("workspace/tool.txt")).unwrap();
    assert_eq!(tool, "tool-ran\n", "the runtime did not run its BIN");

    // The Agentfile and its lock, on the air-gapped machine: the lock's pins resolve from the
    // store and the rebuild gives the same image.
    let ctx = fresh.dir.path().join("child");
    std::fs::create_dir_all(&ctx).unwrap();
    for f in ["Agentfile", "Agentfile.lock", "data.bin"] {
        std::fs::copy(w.child_ctx.join(f), ctx.join(f)).unwrap();
    }
    let rebuilt = fresh.ok(&[
        "build",
        "-q",
        "--offline",
        "-t",
        "child:offline",
        ctx.to_str().unwrap(),
    ]);
    let original = json(&w.env.ok(&["inspect", "--format", "json", &child]));
    assert_eq!(
        rebuilt.trim(),
        original["digest"].as_str().unwrap(),
        "{original}"
    );
}

#[test]
fn copy_through_an_oci_layout_and_an_archive_keeps_every_digest() {
    let w = CopyWorld::new(None);
    let child_digest = sha256(&skopeo_raw(&format!("docker://{}", agent(&w.reg1))).unwrap());
    let dir = w.env.dir.path().join("layout");
    let tar = w.env.dir.path().join("closure.tar");
    w.env.ok(&[
        "copy",
        "-r",
        &agent(&w.reg1),
        &format!("oci:{}:child", dir.display()),
    ]);
    // skopeo reads the layout: the agent by its name, the runtime by its reference as written.
    let raw = skopeo_raw(&format!("oci:{}:child", dir.display())).expect("skopeo reads the layout");
    assert_eq!(sha256(&raw), child_digest);
    let rt = skopeo_raw(&format!(
        "oci:{}:{}/tools/runtime:1",
        dir.display(),
        w.reg1.addr
    ))
    .expect("runtime in the layout");
    assert_eq!(sha256(&rt), w.runtime.0);
    w.env.ok(&[
        "copy",
        "-r",
        &format!("oci:{}:child", dir.display()),
        &format!("oci-archive:{}:child", tar.display()),
    ]);
    w.env.ok(&[
        "copy",
        "-r",
        &format!("oci-archive:{}:child", tar.display()),
        &agent(&w.reg2),
    ]);
    assert_closure_in(&w, &w.reg2, &child_digest);
}

#[test]
fn a_copy_killed_midway_completes_when_run_again() {
    let w = CopyWorld::new(Some(48 << 20));
    let child_digest = sha256(&skopeo_raw(&format!("docker://{}", agent(&w.reg1))).unwrap());
    // A machine that never saw the agent: the big layer streams from the first registry into
    // the second, and the copy is killed while it does.
    let other = Env::new();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("otters"))
        .env("OTTERS_HOME", other.home())
        .env("DOCKER_CONFIG", other.docker())
        .args(["copy", "-r", "-q", &agent(&w.reg1), &agent(&w.reg2)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn copy");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !w.reg2.upload_in_progress(1 << 20) {
        assert!(
            std::time::Instant::now() < deadline,
            "the big upload never started"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the copy ended before it could be interrupted"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    let _ = child.wait();
    assert!(
        skopeo_raw(&format!("docker://{}", agent(&w.reg2))).is_none(),
        "the killed copy tagged the agent"
    );

    let report = json(&other.ok(&[
        "copy",
        "-r",
        "--format",
        "json",
        &agent(&w.reg1),
        &agent(&w.reg2),
    ]));
    // The rerun sends what is missing, the big layer once (streamed: counted once, not as a
    // download plus an upload).
    let bytes = report["bytes"].as_u64().unwrap();
    assert!((48 << 20..2 * (48 << 20)).contains(&bytes), "{report}");
    assert_closure_in(&w, &w.reg2, &child_digest);
}

#[test]
fn a_pin_gone_from_its_source_names_the_agentfile_line_that_pinned_it() {
    let w = CopyWorld::new(None);
    // The tool's index and its platform manifests are deleted from the first registry.
    let a = &w.reg1.addr;
    for d in w.tool.1.iter().chain([&w.tool.0]) {
        let out = Command::new("skopeo")
            .args(["delete", "--tls-verify=false"])
            .arg(format!("docker://{a}/tools/tool@{d}"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut t = Transcript::on(&w.env);
    t.filter(a.clone(), "[REG1]")
        .filter(w.reg2.addr.clone(), "[REG2]");
    let (ok, ..) = t.run(&w.env, &["copy", "-r", &agent(&w.reg1), &agent(&w.reg2)]);
    assert!(!ok);
    t.assert("copy_cli", "pin_gone_from_its_source");
    assert!(
        w.reg2.blobs().is_empty(),
        "a copy that could not find its closure wrote to the destination"
    );
}

#[test]
fn referrers_follow_their_subject_between_the_tag_schema_and_the_referrers_api() {
    let env = Env::new();
    let (tag_schema, tag_schema2) = (Registry::start(), Registry::start());
    let (api, api_tags) = crate::referrers::referrers_registry();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME signed\nMODEL anthropic/claude-test\nADD notes.txt\n",
    );
    crate::support::write(&ctx.join("notes.txt"), "notes\n");
    let prefix = env.dir.path().join("ci");
    env.ok(&["key", "generate", "--out", prefix.to_str().unwrap()]);
    let (key, public) = (
        format!("{}.key", prefix.display()),
        format!("{}.pub", prefix.display()),
    );
    let first = format!("{}/agents/signed:1", tag_schema.addr);
    env.ok(&[
        "build",
        "-q",
        "--sbom",
        "--sign-key",
        &key,
        "--push",
        "-t",
        &first,
        ctx.to_str().unwrap(),
    ]);
    // docker-registry (tag schema) → a registry with the referrers API → docker-registry again.
    let second = format!("{}/agents/signed:1", api.addr);
    let third = format!("{}/agents/signed:1", tag_schema2.addr);
    let mover = Env::new();
    let report = json(&mover.ok(&["copy", "--format", "json", &first, &second]));
    assert_eq!(report["referrers"], 2, "{report}");
    assert!(
        !api_tags
            .lock()
            .unwrap()
            .iter()
            .any(|t| t.starts_with("sha256-")),
        "the referrers API needs no tag-schema index"
    );
    mover.ok(&["copy", &second, &third]);
    for reference in [&second, &third] {
        let out = Env::new().ok(&["verify", "--remote", reference, "--key", &public]);
        assert!(flat(&out).contains("Verified OK"), "{reference}: {out}");
    }
}

/// `copy … oci:DIR` writes DIR as `build -o type=oci-layout` does (issue 17.1): a `blobs` link
/// planted in an existing layout is refused and nothing is written where it points.
#[test]
fn a_copy_into_a_layout_with_a_planted_link_writes_nothing_outside() {
    let env = crate::support::cli::Env::new();
    let dir = env.dir.path();
    let hello = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/hello");
    crate::support::cli::ok(
        env.otters()
            .args([
                "build",
                "-q",
                "--offline",
                "--allow-unpinned",
                "-t",
                "meteo:1.0",
            ])
            .arg(&hello),
    );
    let archive = dir.join("meteo.tar");
    env.ok(&["save", "meteo:1.0", "-o", archive.to_str().unwrap()]);
    let victim = dir.join("victim");
    let dest = dir.join("layout");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::write(dest.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::os::unix::fs::symlink(&victim, dest.join("blobs")).unwrap();
    let mut t = Transcript::on(&env);
    let (ok, _, err) = t.run(
        &env,
        &[
            "copy",
            &format!("oci-archive:{}", archive.display()),
            &format!("oci:{}:meteo", dest.display()),
        ],
    );
    assert!(!ok);
    t.assert("copy_cli", "planted_link_in_a_layout");
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0, "{err}");
}
