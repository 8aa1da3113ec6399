//! Interoperability with third-party clients, through the `otters` binary and a real
//! `docker-registry`: oras-py pulls what otters pushes (files by title, directories unpacked) and
//! otters reads what oras-py pushes; umoci unpacks ordinary images from the otters store (and
//! refuses agent artifacts); a child's `build --push` mounts its parent's layers across
//! repositories instead of uploading them (seen in the registry's own access log).

use crate::support::cli::{json, Env};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::Registry;
use crate::support::tools::{require, skip};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

const PIP_ORAS: &str = "install it with `python3 -m pip install oras` (.ci/install does)";
const APT_UMOCI: &str = "install it with `apt-get install umoci` (.ci/install does)";

/// Bytes that are not text: every byte value, then a counter pattern, `n` bytes long.
fn binary(n: usize, seed: u8) -> Vec<u8> {
    let mut state = u32::from(seed).wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// Every regular file under `root`, as relative path → bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap_or_else(|e| panic!("read {}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The manifest's layer descriptor titled `title` (from `otters inspect --format json`).
fn layer_desc(inspect: &Value, title: &str) -> Value {
    inspect["manifest"]["layers"]
        .as_array()
        .unwrap_or_else(|| panic!("no layers in {inspect}"))
        .iter()
        .find(|l| l["annotations"]["org.opencontainers.image.title"] == title)
        .unwrap_or_else(|| panic!("no layer titled {title} in {inspect}"))
        .clone()
}

#[test]
fn oras_py_pulls_an_otters_agent_files_by_title_and_directories_unpacked() {
    const TEST: &str = "oras_py_pulls_an_otters_agent_files_by_title_and_directories_unpacked";
    if !require(TEST, "python3", &crate::support::oras::PROBE, PIP_ORAS) {
        return;
    }
    let env = Env::new();
    let reg = Registry::start();
    let ctx = env.dir.path().join("ctx");
    let agentfile =
        "FROM scratch\nNAME interop\nCONTEXT STYLE file://style.md\nADD model.bin\nADD data\n";
    crate::support::write(&ctx.join("Agentfile"), agentfile);
    crate::support::write(&ctx.join("style.md"), "be terse\n");
    let model = binary(70_000, 1);
    crate::support::write(&ctx.join("model.bin"), &model);
    crate::support::write(&ctx.join("data/a.txt"), "first file\n");
    crate::support::write(&ctx.join("data/sub/b.bin"), binary(3_000, 2));

    let dest = format!("{}/team/interop:1", reg.addr);
    let digest = env
        .ok(&["build", "-q", "-t", &dest, ctx.to_str().unwrap()])
        .trim()
        .to_owned();
    let pushed = json(&env.ok(&["push", "--format", "json", &dest]));
    assert_eq!(pushed["digest"], digest.as_str(), "{pushed}");

    // What otters wrote: the directory layer is a tar+gzip carrying the oras unpack annotation.
    let inspect = json(&env.ok(&["inspect", "--format", "json", &dest]));
    let data = layer_desc(&inspect, "data");
    assert_eq!(
        data["mediaType"], "application/vnd.oci.image.layer.v1.tar+gzip",
        "{data}"
    );
    assert_eq!(
        data["annotations"]["io.deis.oras.content.unpack"], "true",
        "{data}"
    );
    let model_desc = layer_desc(&inspect, "model.bin");
    assert_eq!(
        model_desc["digest"],
        crate::support::sha256(&model).as_str()
    );

    let out = env.dir.path().join("oras-out");
    let files = crate::support::oras::pull(&reg.addr, &dest, &out);
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            Path::new(f)
                .strip_prefix(&out)
                .unwrap_or_else(|_| panic!("oras-py wrote {f} outside {}", out.display()))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        ["Agentfile", "STYLE.md", "model.bin", "data", "agent.yaml"],
        "oras-py pulled {files:?}"
    );

    // File layers land under their titles with identical bytes.
    assert_eq!(
        fs::read(out.join("Agentfile")).unwrap(),
        agentfile.as_bytes()
    );
    assert_eq!(fs::read(out.join("STYLE.md")).unwrap(), b"be terse\n");
    assert_eq!(fs::read(out.join("model.bin")).unwrap(), model);
    let yaml_desc = layer_desc(&inspect, "agent.yaml");
    let yaml_blob = fs::read(env.store_blob(yaml_desc["digest"].as_str().unwrap())).unwrap();
    assert_eq!(fs::read(out.join("agent.yaml")).unwrap(), yaml_blob);

    // The directory layer is unpacked into `data/`: exactly the source files, same bytes.
    assert!(out.join("data").is_dir(), "data was not unpacked");
    assert_eq!(tree(&out.join("data")), tree(&ctx.join("data")));
}

#[test]
fn otters_reads_pulls_and_repushes_an_artifact_pushed_by_oras_py() {
    const TEST: &str = "otters_reads_pulls_and_repushes_an_artifact_pushed_by_oras_py";
    if !require(TEST, "python3", &crate::support::oras::PROBE, PIP_ORAS) {
        return;
    }
    let env = Env::new();
    let reg = Registry::start();
    let up = env.dir.path().join("upload");
    let bytes = binary(5_000, 3);
    crate::support::write(&up.join("hello.bin"), &bytes);
    let target = format!("{}/misc/artifact:1", reg.addr);
    let status = crate::support::oras::push(&reg.addr, &target, &up, &["hello.bin"]);
    assert_eq!(status, 201, "oras-py push answered {status}");
    let oras_digest = images::skopeo_digest(&target, None);

    // inspect --remote reads the foreign manifest: same digest as skopeo sees, the titled layer.
    let remote = json(&env.ok(&["inspect", "--remote", "--format", "json", &target]));
    assert_eq!(remote["digest"], oras_digest.as_str(), "{remote}");
    let layers = remote["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "{remote}");
    assert_eq!(layers[0]["title"], "hello.bin");
    assert_eq!(layers[0]["digest"], crate::support::sha256(&bytes).as_str());

    // pull is generic (any OCI manifest, not only agents): it stores and tags the artifact.
    let pulled = json(&env.ok(&["pull", "--format", "json", &target]));
    assert_eq!(pulled["digest"], oras_digest.as_str(), "{pulled}");
    assert_eq!(
        fs::read(env.store_blob(&crate::support::sha256(&bytes))).unwrap(),
        bytes
    );
    let local = json(&env.ok(&["inspect", "--format", "json", &target]));
    assert_eq!(local["digest"], oras_digest.as_str());

    // Pushed back by otters elsewhere, the manifest keeps its digest and oras-py reads it again.
    let copy = format!("{}/misc/copy:1", reg.addr);
    let repushed = json(&env.ok(&["push", "--format", "json", &target, &copy]));
    assert_eq!(repushed["digest"], oras_digest.as_str(), "{repushed}");
    assert_eq!(images::skopeo_digest(&copy, None), oras_digest);
    let out = env.dir.path().join("oras-out");
    crate::support::oras::pull(&reg.addr, &copy, &out);
    assert_eq!(fs::read(out.join("hello.bin")).unwrap(), bytes);
}

#[test]
fn umoci_unpacks_an_ordinary_image_from_the_otters_store_and_refuses_an_agent() {
    const TEST: &str = "umoci_unpacks_an_ordinary_image_from_the_otters_store_and_refuses_an_agent";
    if !require(TEST, "umoci", &["--version"], APT_UMOCI) {
        return;
    }
    let env = Env::new();
    let reg = Registry::start();
    let tool = [b"#!/bin/sh\necho tool\n".as_slice(), &binary(40_000, 4)].concat();
    let layout = env.dir.path().join("layout");
    let remote = format!("{}/tools/tool:1", reg.addr);
    let (_, host_manifest) = images::push_bin_index(
        &layout,
        &remote,
        "tool",
        &tool,
        BinPrefix::Io,
        Some("a tool"),
    );

    // Pull this platform's manifest into the store, tagged with the full registry reference.
    let platform = format!("linux/{}", crate::support::host_arch());
    let digest = env.ok(&["pull", "-q", "--platform", &platform, &remote]);
    assert_eq!(digest.trim(), host_manifest);

    // umoci reads the store as an OCI layout; the tag is the `ref.name` otters wrote.
    let bundle = env.dir.path().join("bundle");
    let image = format!("{}:{remote}", env.store().display());
    crate::support::run_ok(
        std::process::Command::new("umoci")
            .args(["unpack", "--rootless", "--image", &image])
            .arg(&bundle),
    );
    let unpacked = bundle.join("rootfs/tool");
    assert_eq!(fs::read(&unpacked).unwrap(), tool);
    let mode = fs::metadata(&unpacked).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "tool lost its exec bits: {mode:o}");

    // An agent artifact in the same store is refused: its config is not an image config.
    let ctx = env.dir.path().join("agent");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME a\nADD notes.txt\n",
    );
    crate::support::write(&ctx.join("notes.txt"), "notes\n");
    env.ok(&["build", "-q", "-t", "agent:1", ctx.to_str().unwrap()]);
    let refused = env.dir.path().join("refused");
    let out = std::process::Command::new("umoci")
        .args(["unpack", "--rootless", "--image"])
        .arg(format!("{}:agent:1", env.store().display()))
        .arg(&refused)
        .output()
        .expect("run umoci");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "umoci unpacked an agent artifact");
    assert!(
        err.contains("application/vnd.openotters.agent.config.v1+json"),
        "{err}"
    );
    assert!(!refused.join("rootfs/notes.txt").exists());
}

/// Access-log lines of `method` requests to the blob uploads of `repo` that name `digest`.
fn upload_lines<'a>(log: &'a str, method: &str, repo: &str, digest: &str) -> Vec<&'a str> {
    let hex = digest.trim_start_matches("sha256:");
    let prefix = format!("\"{method} /v2/{repo}/blobs/uploads/");
    log.lines()
        .filter(|l| l.contains(&prefix) && l.contains(hex))
        .collect()
}

#[test]
fn a_child_build_push_mounts_the_parent_layer_instead_of_uploading_it() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    let big = binary(1 << 20, 5);
    let big_digest = crate::support::sha256(&big);
    let parent_ctx = env.dir.path().join("parent");
    crate::support::write(
        &parent_ctx.join("Agentfile"),
        "FROM scratch\nNAME parent\nADD big.bin\n",
    );
    crate::support::write(&parent_ctx.join("big.bin"), &big);
    let parent_ref = format!("{a}/lib/a:1");
    env.ok(&[
        "build",
        "-q",
        "--push",
        "-t",
        &parent_ref,
        parent_ctx.to_str().unwrap(),
    ]);
    assert_eq!(
        upload_lines(&reg.log(), "PUT", "lib/a", &big_digest).len(),
        1,
        "the parent's layer was not uploaded once to lib/a:\n{}",
        reg.log()
    );

    // The child is built and pushed from another home: the parent comes from the registry.
    let child_ctx = env.dir.path().join("child");
    crate::support::write(
        &child_ctx.join("Agentfile"),
        format!("FROM {parent_ref}\nNAME child\nADD more.txt\n"),
    );
    crate::support::write(&child_ctx.join("more.txt"), "child notes\n");
    let home2 = env.dir.path().join("home2");
    let child_ref = format!("{a}/lib/b:1");
    let child = crate::support::cli::ok(
        env.otters()
            .env("OTTERS_HOME", &home2)
            .args(["build", "-q", "--push", "-t", &child_ref])
            .arg(&child_ctx),
    );
    assert_eq!(images::skopeo_digest(&child_ref, None), child.trim());

    // The registry saw a cross-repository mount from lib/a (201) and no upload of that layer.
    let log = reg.log();
    let mounts = upload_lines(&log, "POST", "lib/b", &big_digest);
    assert!(
        mounts.iter().any(|l| l.contains("mount=")
            && (l.contains("from=lib%2Fa") || l.contains("from=lib/a"))
            && l.contains("\" 201 ")),
        "no mount of {big_digest} into lib/b:\n{log}"
    );
    assert!(
        upload_lines(&log, "PUT", "lib/b", &big_digest).is_empty(),
        "the parent's layer was uploaded to lib/b:\n{log}"
    );

    // The same through `otters push --format json` to a third repository: reported as mounted.
    let report = json(&crate::support::cli::ok(
        env.otters().env("OTTERS_HOME", &home2).args([
            "push",
            "--format",
            "json",
            &child_ref,
            &format!("{a}/lib/c:1"),
        ]),
    ));
    let listed = |key: &str| -> bool {
        report[key]
            .as_array()
            .is_some_and(|v| v.iter().any(|d| d == big_digest.as_str()))
    };
    assert!(listed("mounted"), "{report}");
    assert!(!listed("uploaded"), "{report}");
    assert!(
        upload_lines(&reg.log(), "PUT", "lib/c", &big_digest).is_empty(),
        "the parent's layer was uploaded to lib/c"
    );
}

#[test]
fn skip_fails_under_ci() {
    // The skip rule itself: under CI a missing tool is a failure, never a silent pass.
    let under_ci = std::env::var_os("CI").is_some();
    let r = std::panic::catch_unwind(|| skip("probe", "nothing missing, just checking"));
    assert_eq!(r.is_err(), under_ci);
}

/// A directory layer longer than one compression block (`pgzip::BLOCK`, 1 MiB): random bytes
/// (stored blocks) and text (deflated blocks). The same digest when built on one core
/// (`taskset -c 0`: one compression thread) as on all of them; GNU tar, oras-py, otters' own
/// reader (`export`) and umoci all unpack exactly the source files.
#[test]
fn a_multi_block_directory_layer_is_the_same_on_one_core_and_unpacks_everywhere() {
    const TEST: &str =
        "a_multi_block_directory_layer_is_the_same_on_one_core_and_unpacks_everywhere";
    if !require(TEST, "python3", &crate::support::oras::PROBE, PIP_ORAS)
        || !require(TEST, "umoci", &["--version"], APT_UMOCI)
        || !require(TEST, "taskset", &["--version"], "it is in util-linux")
    {
        return;
    }
    let Some(w) = crate::support::runnable::StaticWorld::start(TEST) else {
        return;
    };
    let a = &w.reg.addr;
    let ctx = w.tmp.path().join("ctx-big");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME big\nRUNTIME {a}/runtime:1\nADD data\n"),
    );
    let random = binary(3 << 20, 9);
    let text = (0..60_000)
        .map(|i| format!("{i:06} otters write deterministic layers\n"))
        .collect::<Vec<_>>()
        .concat();
    crate::support::write(&ctx.join("data/random.bin"), &random);
    crate::support::write(&ctx.join("data/logs/text.log"), &text);
    crate::support::write(&ctx.join("data/small.txt"), "small\n");
    let agent = format!("{a}/big:1");
    let build = |home: &Path, one_core: bool| {
        let mut cmd = std::process::Command::new("taskset");
        cmd.args(["-c", if one_core { "0" } else { "0-1023" }])
            .arg(assert_cmd::cargo::cargo_bin("otters"))
            .env("OTTERS_HOME", home)
            .env("NO_COLOR", "1")
            .env_remove("SOURCE_DATE_EPOCH")
            .args(["build", "-q", "-t", &agent])
            .arg(&ctx);
        crate::support::run_ok(&mut cmd).trim().to_owned()
    };
    let digest = build(&w.home, false);
    let one_core = build(&w.tmp.path().join("home-one-core"), true);
    assert_eq!(one_core, digest, "one compression thread wrote other bytes");

    // The layer is gzip: the text is compressed, the random bytes are stored.
    let inspect = json(&crate::support::cli::ok(
        crate::support::cli::otters(&w.home).args(["inspect", "--format", "json", &agent]),
    ));
    let layer = layer_desc(&inspect, "data");
    assert_eq!(
        layer["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let size = layer["size"].as_u64().unwrap();
    let raw = (random.len() + text.len()) as u64;
    assert!(
        size > random.len() as u64,
        "random bytes cannot shrink: {size}"
    );
    assert!(
        size < raw - text.len() as u64 / 2,
        "the text was not compressed: {size} of {raw}"
    );

    // GNU tar (and gzip) unpack the blob from the store.
    let blob = w.home.join("store/blobs/sha256").join(
        layer["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:"),
    );
    let untar = w.tmp.path().join("untar");
    fs::create_dir_all(&untar).unwrap();
    crate::support::run_ok(
        std::process::Command::new("tar")
            .arg("-xzf")
            .arg(&blob)
            .arg("-C")
            .arg(&untar),
    );
    assert!(
        tree(&untar.join("data")) == tree(&ctx.join("data")),
        "GNU tar"
    );

    // oras-py (Python's gzip and tarfile) unpacks it after a push.
    crate::support::cli::ok(crate::support::cli::otters(&w.home).args(["push", "-q", &agent]));
    let out = w.tmp.path().join("oras-out");
    crate::support::oras::pull(a, &agent, &out);
    assert!(
        tree(&out.join("data")) == tree(&ctx.join("data")),
        "oras-py"
    );

    // otters reads it back (export unpacks it into the runnable image), and umoci unpacks that.
    let exported = crate::support::cli::ok(
        crate::support::cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"]),
    );
    let image = format!(
        "{a}/big@{}",
        exported.lines().last().unwrap_or_default().trim()
    );
    let layout = w.tmp.path().join("layout");
    crate::support::run_ok(std::process::Command::new("skopeo").args([
        "copy",
        "--src-tls-verify=false",
        &format!("docker://{image}"),
        &format!("oci:{}:x", layout.display()),
    ]));
    let bundle = w.tmp.path().join("bundle");
    crate::support::run_ok(
        std::process::Command::new("umoci")
            .args(["unpack", "--rootless", "--image"])
            .arg(format!("{}:x", layout.display()))
            .arg(&bundle),
    );
    assert!(
        tree(&bundle.join("rootfs/etc/data/data")) == tree(&ctx.join("data")),
        "otters export + umoci"
    );
}
