//! What `otters export --as runnable` makes of the agents and images it is given, through the
//! real binary: its working copy is private while it runs; names that are not UTF-8 keep their
//! bytes; the agent's time, LABELs and the layers' origins reach the image config (and `kube`'s
//! version label); a RUNTIME or BIN that cannot start in the image (a script without its
//! interpreter, a dynamically linked program without its loader) is refused by name; and RUNTIME
//! and BIN images pushed with zstd layers run and export.

use crate::security_registry::hostile_registry::{Body, Content, Hostile, Reply, Req};
use crate::support::cli::{self, ok};
use crate::support::images::{self, BinPrefix};
use crate::support::runnable::{last_line, StaticWorld};
use crate::support::{run_ok, write};
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Builds `agentfile` (`{a}` the world's registry) with the files `extra` beside it as
/// `REG/<repo>:1` in the world's home, with `env` set; returns the reference.
fn build(
    w: &StaticWorld,
    repo: &str,
    agentfile: &str,
    extra: &[(&[u8], &[u8])],
    env: &[(&str, &str)],
) -> String {
    let ctx = w.tmp.path().join(format!("ctx-{repo}"));
    fs::create_dir_all(&ctx).unwrap();
    fs::write(ctx.join("Agentfile"), agentfile.replace("{a}", &w.reg.addr)).unwrap();
    for (name, bytes) in extra {
        let p = ctx.join(OsStr::from_bytes(name));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }
    let agent = format!("{}/{repo}:1", w.reg.addr);
    let mut cmd = cli::otters(&w.home);
    cmd.args(["build", "-q", "-t", &agent]).arg(&ctx);
    for (k, v) in env {
        cmd.env(k, v);
    }
    ok(&mut cmd);
    agent
}

fn store_blob(home: &Path, digest: &str) -> Vec<u8> {
    fs::read(
        home.join("store/blobs/sha256")
            .join(digest.trim_start_matches("sha256:")),
    )
    .unwrap_or_else(|e| panic!("blob {digest}: {e}"))
}

fn store_json(home: &Path, digest: &str) -> Value {
    serde_json::from_slice(&store_blob(home, digest)).unwrap()
}

/// `sha256:` and 64 hex digits → `sha256:DIGEST`.
fn redact_digests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("sha256:") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 7..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex == 64 {
            out.push_str("sha256:DIGEST");
            rest = &after[64..];
        } else {
            out.push_str("sha256:");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Runs `otters export` that must fail; its standard error.
fn export_fails(home: &Path, agent: &str) -> String {
    let out = cli::otters(home)
        .args(["export", agent, "--as", "runnable"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "export of {agent} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn snapshot(name: &str, text: &str) {
    crate::support::snap::assert("export", name, text);
}

/// The export copies the agent into the system's temp directory while it writes the layers: that
/// copy is private (0700), never 0755 for every user of the machine to read. Seen from outside
/// while the export is held up fetching the runtime from a registry that stalls.
#[test]
fn the_working_copy_of_an_export_is_private_while_it_runs() {
    let content = Arc::new(Content::new());
    let (layer, diff_id) = images::tar_gz_one_file("rt", b"\x7fELF not really");
    let layer_digest = content.put_blob(&layer);
    let config = json!({"architecture": crate::support::host_arch(), "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": [diff_id]}})
    .to_string();
    let config_digest = content.put_blob(config.as_bytes());
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.openotters.bin.v1",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": layer.len(),
            "annotations": {"org.opencontainers.image.title": "rt"}}],
        "annotations": images::bin_annotations("rt", BinPrefix::Io, None),
    })
    .to_string();
    content.put_manifest(
        "tools/rt",
        "1",
        "application/vnd.oci.image.manifest.v1+json",
        manifest.as_bytes(),
    );
    let stall = Arc::new(AtomicBool::new(false));
    let (c, s, d) = (content.clone(), stall.clone(), layer_digest.clone());
    let reg = Hostile::start(move |r: &Req| {
        if s.load(Ordering::SeqCst) && r.path().ends_with(&format!("/blobs/{d}")) {
            return Reply::new(200).body(Body::Stall(c.blob(&d).unwrap_or_default(), 10));
        }
        c.serve(r)
    });
    let env = cli::Env::new();
    let ctx = env.dir.path().join("ctx");
    write(
        &ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME held\nMODEL anthropic/x\nRUNTIME {}/tools/rt:1\n",
            reg.addr
        ),
    );
    ok(env.otters().args(["build", "-q", "-t", "held:1"]).arg(&ctx));
    stall.store(true, Ordering::SeqCst);
    let tmp = env.dir.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("otters"))
        .env("OTTERS_HOME", env.home())
        .env("TMPDIR", &tmp)
        .env("OTTERS_REGISTRY_TIMEOUT", "60")
        .args(["export", "held:1", "--as", "runnable"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Once the runtime's blob is asked for, the working copy exists (it is made first).
    let started = Instant::now();
    let asked = || {
        reg.requests()
            .iter()
            .any(|r| r.method == "GET" && r.path().ends_with(&layer_digest))
    };
    while !asked() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let work: Vec<PathBuf> = fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("otters-export-"))
        })
        .collect();
    let modes: Vec<u32> = work
        .iter()
        .map(|p| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777)
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert!(asked(), "the export never asked for the runtime's blob");
    assert_eq!(modes, [0o700], "{work:?}");
}

/// Two files whose names are not UTF-8 stay two files, with their own bytes and names, in the
/// exported layer (they were one `\u{FFFD}.txt`).
#[test]
fn names_that_are_not_utf8_keep_their_bytes_in_the_export() {
    let test = "names_that_are_not_utf8_keep_their_bytes_in_the_export";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = build(
        &w,
        "bytes",
        "FROM scratch\nNAME bytes\nRUNTIME {a}/runtime:1\nMODEL anthropic/claude-test\nADD data \"files\"\n",
        &[(b"data/\xff.txt", b"first"), (b"data/\xfe.txt", b"second")],
        &[],
    );
    let digest = last_line(&ok(
        cli::otters(&w.home).args(["export", &agent, "--as", "runnable"])
    ));
    let manifest = store_json(&w.home, &digest);
    let agent_layer = manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["annotations"]["org.opencontainers.image.title"] == "agent")
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let bytes = store_blob(&w.home, &agent_layer);
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path_bytes().into_owned();
        if name.starts_with(b"etc/data/data/") && !name.ends_with(b"/") {
            let mut body = Vec::new();
            e.read_to_end(&mut body).unwrap();
            found.push((name, body));
        }
    }
    assert_eq!(
        found,
        [
            (b"etc/data/data/\xfe.txt".to_vec(), b"second".to_vec()),
            (b"etc/data/data/\xff.txt".to_vec(), b"first".to_vec()),
        ]
    );
}

/// The image config carries the agent's time (its `SOURCE_DATE_EPOCH`), one history entry per
/// layer naming the pinned image it came from, and the agent's LABELs; skopeo shows them from the
/// registry; `kube` labels the version with `org.opencontainers.image.version`.
#[test]
fn the_export_carries_the_agents_time_history_and_labels() {
    let test = "the_export_carries_the_agents_time_history_and_labels";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = build(
        &w,
        "meta",
        "FROM scratch\nNAME meta\nRUNTIME {a}/runtime:1\nMODEL anthropic/claude-test\nBIN tool {a}/tool:1\nLABEL org.opencontainers.image.version=1.2.3\nLABEL team=payments\n",
        &[],
        &[("SOURCE_DATE_EPOCH", "1700000000")],
    );
    ok(cli::otters(&w.home).args(["push", "-q", &agent]));
    let digest = last_line(&ok(
        cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"])
    ));
    let image = format!("{}@{digest}", agent.trim_end_matches(":1"));
    let info: Value = serde_json::from_str(&run_ok(Command::new("skopeo").args([
        "inspect",
        "--tls-verify=false",
        &format!("docker://{image}"),
    ])))
    .unwrap();
    assert_eq!(info["Created"], "2023-11-14T22:13:20Z");
    assert_eq!(info["Labels"]["org.opencontainers.image.version"], "1.2.3");
    assert_eq!(info["Labels"]["team"], "payments");
    assert_eq!(info["Labels"]["org.opencontainers.image.title"], "meta");
    let config: Value = serde_json::from_str(&run_ok(Command::new("skopeo").args([
        "inspect",
        "--config",
        "--tls-verify=false",
        &format!("docker://{image}"),
    ])))
    .unwrap();
    let history: Vec<String> = config["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            assert_eq!(h["created"], "2023-11-14T22:13:20Z");
            redact_digests(h["created_by"].as_str().unwrap()).replace(&w.reg.addr, "REGISTRY")
        })
        .collect();
    assert_eq!(
        history,
        [
            "otters export: RUNTIME REGISTRY/runtime:1@sha256:DIGEST",
            "otters export: BIN tool REGISTRY/tool:1@sha256:DIGEST",
            "otters export: the agent REGISTRY/meta@sha256:DIGEST",
        ]
    );
    assert_eq!(
        config["rootfs"]["diff_ids"].as_array().unwrap().len(),
        history.len()
    );
    let yaml = ok(cli::otters(&w.home).args(["kube", &agent, "--offline"]));
    assert!(
        yaml.contains("app.kubernetes.io/version: \"1.2.3\"")
            || yaml.contains("app.kubernetes.io/version: 1.2.3"),
        "{yaml}"
    );
}

/// A RUNTIME that is a shell script, or a dynamically linked program, cannot start in an image
/// that holds nothing else (nor can such a BIN): the export is refused, naming the missing
/// interpreter or loader and what to do. A script whose interpreter is one of the agent's BINs
/// exports.
#[test]
fn a_runtime_that_cannot_start_in_the_image_is_refused_by_name() {
    let test = "a_runtime_that_cannot_start_in_the_image_is_refused_by_name";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let dynamic = w.tmp.path().join("dynamic");
    let src = crate::support::repo().join("testdata/static/tool.c");
    let built = Command::new("gcc")
        .arg("-o")
        .arg(&dynamic)
        .arg(&src)
        .output();
    let dynamic = match built {
        Ok(o) if o.status.success() => fs::read(&dynamic).unwrap(),
        _ => {
            crate::support::tools::skip(test, "gcc cannot link a dynamic program");
            return;
        }
    };
    for (name, bytes) in [
        ("script", &b"#!/bin/sh\necho hello\n"[..]),
        ("dynamic", &dynamic[..]),
        ("tooled", &b"#!/opt/bins/tool\n"[..]),
    ] {
        let dir = w.tmp.path().join(format!("img-{name}"));
        images::push_bin_index(
            &dir,
            &format!("{}/{name}:1", w.reg.addr),
            name,
            bytes,
            BinPrefix::Io,
            None,
        );
    }
    let agentfile = |rt: &str| {
        format!("FROM scratch\nNAME {rt}\nRUNTIME {{a}}/{rt}:1\nMODEL anthropic/claude-test\nBIN tool {{a}}/tool:1\n")
    };
    // A BIN is checked as the RUNTIME is.
    let bin_script = "FROM scratch\nNAME binscript\nRUNTIME {a}/runtime:1\nMODEL anthropic/claude-test\nBIN helper {a}/script:1\n";
    let mut shown = String::new();
    for (rt, text) in [
        ("script", agentfile("script")),
        ("dynamic", agentfile("dynamic")),
        ("binscript", bin_script.to_owned()),
    ] {
        let agent = build(&w, rt, &text, &[], &[]);
        let err = export_fails(&w.home, &agent);
        let err = redact_digests(&err).replace(&w.reg.addr, "REGISTRY");
        // The loader's path is the toolchain's: name it by its role.
        let err = err.replace(
            &String::from_utf8_lossy(&loader_of(&dynamic)).into_owned(),
            "LOADER",
        );
        // Whitespace collapsed: miette wraps by width, and the address and loader vary in length.
        let _ = writeln!(
            shown,
            "$ otters export {rt} --as runnable\n{}",
            cli::flat(&err)
        );
    }
    snapshot("runtime_cannot_start", &shown);
    let agent = build(&w, "tooled", &agentfile("tooled"), &[], &[]);
    ok(cli::otters(&w.home).args(["export", &agent, "--as", "runnable"]));
}

/// The `PT_INTERP` of an ELF file (enough of it for a test: 64-bit little-endian).
fn loader_of(elf: &[u8]) -> Vec<u8> {
    let u = |at: usize, n: usize| {
        elf[at..at + n]
            .iter()
            .rev()
            .fold(0usize, |v, b| (v << 8) | usize::from(*b))
    };
    let (phoff, size, num) = (u(0x20, 8), u(0x36, 2), u(0x38, 2));
    for i in 0..num {
        let ph = phoff + i * size;
        if u(ph, 4) == 3 {
            let (off, len) = (u(ph + 8, 8), u(ph + 0x20, 8));
            return elf[off..off + len]
                .iter()
                .copied()
                .take_while(|b| *b != 0)
                .collect();
        }
    }
    Vec::new()
}

/// A bin image for this machine whose one layer is `tar+zstd`, compressed by the `zstd` tool in
/// two frames with a skippable frame between them (the shape `zstd:chunked` layers have), copied
/// to `dest` by skopeo. Returns the manifest's digest; `None` (after `skip`) without `zstd`.
fn push_zstd_bin(test: &str, dir: &Path, dest: &str, name: &str, content: &[u8]) -> Option<String> {
    let mut tar_bytes = Vec::new();
    {
        let mut b = tar::Builder::new(&mut tar_bytes);
        let mut h = tar::Header::new_ustar();
        h.set_size(content.len() as u64);
        h.set_mode(0o755);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, content).unwrap();
        b.finish().unwrap();
    }
    let half = tar_bytes.len() / 2;
    let zstd = crate::support::tools::zstd;
    let (Some(first), Some(second)) = (zstd(&tar_bytes[..half], 3), zstd(&tar_bytes[half..], 3))
    else {
        crate::support::tools::skip(test, "the zstd tool is missing (apt-get install zstd)");
        return None;
    };
    let mut layer = first;
    layer.extend_from_slice(&0x184D_2A5Eu32.to_le_bytes());
    layer.extend_from_slice(&8u32.to_le_bytes());
    layer.extend_from_slice(b"metadata");
    layer.extend_from_slice(&second);
    let mut l = images::Layout::new(dir);
    let mut layer_desc = l.blob("application/vnd.oci.image.layer.v1.tar+zstd", &layer);
    layer_desc["annotations"] = json!({"org.opencontainers.image.title": name});
    let cfg = json!({
        "architecture": crate::support::host_arch(), "os": "linux",
        "config": {"Entrypoint": [format!("/{name}")]},
        "rootfs": {"type": "layers", "diff_ids": [crate::support::sha256(&tar_bytes)]},
    });
    let cfg_desc = l.blob(
        "application/vnd.oci.image.config.v1+json",
        cfg.to_string().as_bytes(),
    );
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.openotters.bin.v1",
        "config": cfg_desc, "layers": [layer_desc],
        "annotations": images::bin_annotations(name, BinPrefix::Io, None),
    });
    let d = l.blob(
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    );
    l.tag(&d, "1");
    images::skopeo_push(dir, "1", dest, None);
    Some(d["digest"].as_str().unwrap_or_default().to_owned())
}

/// RUNTIME and BIN images pushed with zstd layers (as podman, buildah and buildx push on request)
/// run and export: they failed with "tar header at byte 0: checksum mismatch".
#[test]
fn images_with_zstd_layers_run_and_export() {
    let test = "images_with_zstd_layers_run_and_export";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    for name in ["runtime", "tool"] {
        let bytes = fs::read(w.tmp.path().join(name)).unwrap();
        let Some(manifest) = push_zstd_bin(
            test,
            &w.tmp.path().join(format!("zimg-{name}")),
            &format!("{}/z{name}:1", w.reg.addr),
            name,
            &bytes,
        ) else {
            return;
        };
        // What the registry holds is zstd.
        let pushed: Value = serde_json::from_str(&run_ok(Command::new("skopeo").args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{}/z{name}@{manifest}", w.reg.addr),
        ])))
        .unwrap();
        assert_eq!(
            pushed["layers"][0]["mediaType"],
            "application/vnd.oci.image.layer.v1.tar+zstd"
        );
    }
    let agent = build(
        &w,
        "zagent",
        "FROM scratch\nNAME zagent\nRUNTIME {a}/zruntime:1\nMODEL anthropic/claude-test\nBIN tool {a}/ztool:1\n",
        &[],
        &[],
    );
    // Run: the system executor starts the runtime, which runs its BIN.
    let root = w.tmp.path().join("zroot");
    let out = cli::otters(&w.home)
        .args(["run", "--root"])
        .arg(&root)
        .arg(&agent)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("TOOL tool-ran"),
        "run: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Export: the same binaries land in the image's runtime and BIN layers (gzip, as always).
    let digest = last_line(&ok(
        cli::otters(&w.home).args(["export", &agent, "--as", "runnable"])
    ));
    let manifest = store_json(&w.home, &digest);
    let runtime = fs::read(w.tmp.path().join("runtime")).unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap().to_owned();
    let bytes = store_blob(&w.home, &layer);
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let mut got = None;
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        if e.path_bytes().as_ref() == b"opt/runtime/runtime" {
            let mut body = Vec::new();
            e.read_to_end(&mut body).unwrap();
            got = Some(body);
        }
    }
    assert!(
        got == Some(runtime),
        "the exported runtime differs from the pushed one"
    );
}
