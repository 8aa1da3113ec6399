//! The whole pipeline through the `otters` binary: build → resolve (pins, `Agentfile.lock`,
//! `--locked`, `--offline`) → store → push → inspect --remote → FROM inheritance → run, against a
//! real `docker-registry` with runtime and BIN images built by the shared harness.

use crate::support::cli::{json, ok};
use crate::support::images::{self, BinPrefix};
use crate::support::World;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// A runtime that only writes which version it is (shell builtins only: its PATH is empty).
fn runtime_script(version: &str) -> String {
    format!("#!/bin/sh\necho \"RUNTIME {version} $*\" > report.txt\n")
}

const TOOL: &str = "#!/bin/sh\necho tool\n";

/// `pipeline`'s steps on the shared [`World`] (a temp machine and a registry).
trait Pipeline {
    /// Pushes a runtime image (an index with this host's platform) under `name:tag`; returns
    /// the host manifest's digest.
    fn push_runtime(&self, name: &str, tag: &str, version: &str) -> String;
    /// Pushes a BIN image `tool` under `name:tag`; returns the host manifest's digest.
    fn push_tool(&self, name: &str, tag: &str) -> String;
    /// `otters build` with `args`; returns (exit code, stdout, stderr).
    fn build(&self, args: &[&str]) -> (i32, String, String);
    /// `otters build` that must succeed; returns the digest.
    fn build_ok(&self, args: &[&str]) -> String;
    fn inspect(&self, reference: &str) -> Value;
    /// The bytes of the layer titled `title` of a local image.
    fn layer(&self, reference: &str, title: &str) -> Vec<u8>;
}

impl Pipeline for World {
    fn push_runtime(&self, name: &str, tag: &str, version: &str) -> String {
        let (_, digest) = images::push_bin_index(
            &self.dir().join(format!("layouts/{name}-{version}")),
            &format!("{}/{name}:{tag}", self.reg.addr),
            "runtime",
            runtime_script(version).as_bytes(),
            BinPrefix::Io,
            Some("test runtime"),
        );
        digest
    }

    fn push_tool(&self, name: &str, tag: &str) -> String {
        let (_, digest) = images::push_bin_index(
            &self.dir().join(format!("layouts/{name}")),
            &format!("{}/{name}:{tag}", self.reg.addr),
            "tool",
            TOOL.as_bytes(),
            BinPrefix::Io,
            Some("a tool"),
        );
        digest
    }

    fn build(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.env.otters().arg("build").args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn build_ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.build(args);
        assert_eq!(code, 0, "build {args:?} failed:\n{err}");
        out
    }

    fn inspect(&self, reference: &str) -> Value {
        json(&self.env.ok(&["inspect", "--format", "json", reference]))
    }

    fn layer(&self, reference: &str, title: &str) -> Vec<u8> {
        let v = self.inspect(reference);
        let layer = v["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["title"] == title)
            .unwrap_or_else(|| panic!("no layer {title} in {v}"));
        fs::read(self.env.store_blob(layer["digest"].as_str().unwrap())).unwrap()
    }
}

fn agentfile(reg: &str, extra: &str) -> String {
    format!(
        "FROM scratch\nNAME pinned\nRUNTIME {reg}/runtime:1\nMODEL anthropic/claude-test\nBIN tool {reg}/tool:1\n{extra}"
    )
}

fn lock_of(ctx: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(ctx.join("Agentfile.lock")).unwrap()).unwrap()
}

#[test]
fn run_dry_run_of_a_path_prints_one_json_document() {
    let w = World::new();
    w.push_runtime("runtime", "1", "v1");
    w.push_tool("tool", "1");
    let ctx = w.context("dry", &agentfile(&w.reg.addr, ""), &[]);
    let out = ok(w
        .otters()
        .args(["run", "--dry-run", "--root"])
        .arg(w.dir().join("agent"))
        .arg(&ctx));
    // The whole of stdout is one JSON document: no digest line before it.
    let plan: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{out}"));
    assert!(plan["argv"].is_array(), "{plan}");
    assert!(ctx.join("Agentfile.lock").is_file());
    // The lock is committed and shared: it follows the umask like any file a tool writes.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &fs::metadata(ctx.join("Agentfile.lock"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(
        mode & 0o777,
        0o666 & !test_umask(),
        "Agentfile.lock mode {mode:o}"
    );
    assert!(!w.dir().join("agent").exists(), "dry run wrote the tree");
}

/// This process's umask, as the kernel reports it (children inherit it).
fn test_umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

fn inode(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    fs::metadata(p).unwrap().ino()
}

#[test]
fn build_pins_writes_the_lock_and_honours_locked_and_offline() {
    let mut w = World::new();
    let rt = w.push_runtime("runtime", "1", "v1");
    let tool = w.push_tool("tool", "1");
    let ctx = w.context("agent", &agentfile(&w.reg.addr, ""), &[]);
    let (code, digest, err) = w.build(&["-t", "pinned:1", ctx.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Agentfile.lock (2 image(s) pinned)"), "{err}");

    // The lock holds the host manifests' digests, and agent.yaml carries the same pins.
    let lock = lock_of(&ctx);
    let pinned: Vec<(&str, &str)> = lock["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["role"].as_str().unwrap(), e["digest"].as_str().unwrap()))
        .collect();
    assert_eq!(pinned, [("runtime", rt.as_str()), ("bin", tool.as_str())]);
    let yaml = String::from_utf8(w.layer("pinned:1", "agent.yaml")).unwrap();
    assert!(yaml.contains(&rt) && yaml.contains(&tool), "{yaml}");

    // Nothing changed: same image, lock not rewritten (same inode: no rename happened).
    let before = inode(&ctx.join("Agentfile.lock"));
    let lock_bytes = fs::read(ctx.join("Agentfile.lock")).unwrap();
    assert_eq!(w.build_ok(&["-q", ctx.to_str().unwrap()]), digest);
    assert_eq!(inode(&ctx.join("Agentfile.lock")), before);
    assert_eq!(
        w.build_ok(&["-q", "--locked", ctx.to_str().unwrap()]),
        digest
    );

    // The tag moves: --locked refuses (AF406) and leaves the lock alone.
    w.push_runtime("runtime", "1", "v2");
    let (code, out, err) = w.build(&["--locked", ctx.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("AF406"), "{err}");
    assert_eq!(fs::read(ctx.join("Agentfile.lock")).unwrap(), lock_bytes);

    // The registry is gone: --offline builds from the lock alone, to the same digest.
    w.reg.kill();
    assert_eq!(
        w.build_ok(&["-q", "--offline", ctx.to_str().unwrap()]),
        digest
    );
    assert_eq!(fs::read(ctx.join("Agentfile.lock")).unwrap(), lock_bytes);

    // No lock: --offline is AF405 for every reference; --allow-unpinned builds with warnings.
    let bare = w.context("bare", &agentfile(&w.reg.addr, ""), &[]);
    let (code, _, err) = w.build(&["--offline", bare.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.matches("AF405").count(), 2, "{err}");
    let (code, unpinned, err) = w.build(&["--offline", "--allow-unpinned", bare.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("built without a digest").count(), 2, "{err}");
    assert_ne!(unpinned, digest);
    assert!(
        !bare.join("Agentfile.lock").exists(),
        "an offline build wrote a lock"
    );
    let yaml = String::from_utf8(w.layer("pinned:latest", "agent.yaml")).unwrap();
    assert!(!yaml.contains("sha256:"), "{yaml}");
}

#[test]
fn push_then_inspect_remote_reads_only_manifest_and_config() {
    let w = World::new();
    w.push_runtime("runtime", "1", "v1");
    w.push_tool("tool", "1");
    let ctx = w.context(
        "agent",
        &agentfile(&w.reg.addr, "ADD notes.txt\n"),
        &[("notes.txt", "some notes\n")],
    );
    let dest = format!("{}/team/agent:1", w.reg.addr);
    let (code, digest, err) = w.build(&["--push", "-t", &dest, ctx.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("pushed {dest}@{digest}")), "{err}");
    assert_eq!(images::skopeo_digest(&dest, None), digest);

    // A fresh home: inspect --remote shows the image and writes no blob anywhere.
    let fresh = w.dir().join("fresh");
    let remote = json(&ok(w
        .otters()
        .env("OTTERS_HOME", &fresh)
        .args(["inspect", "--remote", "--format", "json", &dest])));
    assert_eq!(remote["digest"], digest.as_str());
    assert_eq!(remote["config"]["agent"]["name"], "pinned", "{remote}");
    let local = w.inspect(&dest);
    for key in [
        "digest",
        "mediaType",
        "size",
        "manifest",
        "config",
        "layers",
    ] {
        assert_eq!(remote[key], local[key], "{key} differs");
    }
    let blobs = fresh.join("store/blobs/sha256");
    let stored = fs::read_dir(&blobs).map_or(0, Iterator::count);
    assert_eq!(
        stored,
        0,
        "inspect --remote stored blobs in {}",
        blobs.display()
    );

    // Text output names the layers.
    let out = w
        .otters()
        .env("OTTERS_HOME", &fresh)
        .args(["inspect", "--remote", &dest])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&digest) && text.contains("notes.txt"),
        "{text}"
    );
}

#[test]
fn a_child_of_a_registry_parent_reuses_its_layers() {
    let w = World::new();
    w.push_runtime("runtime", "1", "v1");
    let a = &w.reg.addr;
    let parent_ctx = w.context(
        "parent",
        &format!("FROM scratch\nNAME parent\nRUNTIME {a}/runtime:1\nMODEL anthropic/claude-test\nADD notes.txt\nADD data\nCONTEXT STYLE file://style.md\n"),
        &[("notes.txt", "parent notes\n"), ("data/a.txt", "a\n"), ("style.md", "be terse\n")],
    );
    let parent_ref = format!("{a}/lib/parent:1");
    let parent = w.build_ok(&[
        "-q",
        "--push",
        "-t",
        &parent_ref,
        parent_ctx.to_str().unwrap(),
    ]);

    // The child is built in another home, so the parent comes from the registry.
    let child_ctx = w.context(
        "child",
        &format!("FROM {parent_ref}\nNAME child\nADD more.txt\n"),
        &[("more.txt", "child notes\n")],
    );
    let home2 = w.dir().join("home2");
    ok(w.otters()
        .env("OTTERS_HOME", &home2)
        .args(["build", "-q", "-t", "child:1"])
        .arg(&child_ctx));
    let lock = lock_of(&child_ctx);
    assert_eq!(lock["images"][0]["role"], "from");
    assert_eq!(lock["images"][0]["digest"], parent.as_str());

    let layers = |home: &Path, r: &str| -> Vec<(String, String)> {
        let out = w
            .otters()
            .env("OTTERS_HOME", home)
            .args(["inspect", "--format", "json", r])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["title"].as_str().unwrap_or("").to_owned(),
                    l["digest"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let p = layers(&w.env.home(), &parent_ref);
    let c = layers(&home2, "child:1");
    for title in ["notes.txt", "data", "STYLE.md"] {
        let pd = p.iter().find(|l| l.0 == title).unwrap();
        let cd = c
            .iter()
            .find(|l| l.0 == title)
            .unwrap_or_else(|| panic!("child has no {title}: {c:?}"));
        assert_eq!(pd.1, cd.1, "{title} was not reused");
    }
    assert!(c.iter().any(|l| l.0 == "more.txt"), "{c:?}");
    let titles: Vec<&str> = c.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Agentfile",
            "STYLE.md",
            "notes.txt",
            "data",
            "more.txt",
            "agent.yaml"
        ]
    );
}

#[test]
fn run_fetches_the_runtime_by_its_pinned_digest() {
    let w = World::new();
    w.push_runtime("runtime", "1", "v1");
    w.push_tool("tool", "1");
    let ctx = w.context("agent", &agentfile(&w.reg.addr, ""), &[]);
    let agent = format!("{}/team/pinned:1", w.reg.addr);
    w.build_ok(&["-q", "--push", "-t", &agent, ctx.to_str().unwrap()]);

    // The tag now names another runtime; the agent must still run the one it was built with.
    w.push_runtime("runtime", "1", "v2");
    let fresh = w.dir().join("fresh");
    let root = w.dir().join("tree");
    ok(w.otters()
        .env("OTTERS_HOME", &fresh)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .args(["run", &agent, "--root"])
        .arg(&root));
    let report = fs::read_to_string(root.join("workspace/report.txt")).unwrap();
    assert!(report.starts_with("RUNTIME v1 serve"), "{report}");
}

#[test]
fn context_files_are_relative_to_the_agentfile_directory() {
    let w = World::new();
    let ctx = w.dir().join("ctx");
    crate::support::write(&ctx.join("agents/a/style.md"), "beside the agentfile\n");
    crate::support::write(&ctx.join("shared/rules.md"), "shared rules\n");
    crate::support::write(&ctx.join("data.txt"), "data\n");
    crate::support::write(
        &ctx.join("agents/a/Agentfile"),
        "FROM scratch\nNAME a\nCONTEXT STYLE file://style.md\nCONTEXT RULES file://../../shared/rules.md\nADD data.txt\n",
    );
    w.build_ok(&[
        "-q",
        "-t",
        "a:1",
        "-f",
        "agents/a/Agentfile",
        ctx.to_str().unwrap(),
    ]);
    assert_eq!(w.layer("a:1", "STYLE.md"), b"beside the agentfile\n");
    assert_eq!(w.layer("a:1", "RULES.md"), b"shared rules\n");
    // ADD sources stay relative to the context.
    assert_eq!(w.layer("a:1", "data.txt"), b"data\n");

    // Inside the context but outside the Agentfile's directory is fine; leaving the context is not.
    crate::support::write(
        &ctx.join("agents/a/Agentfile"),
        "FROM scratch\nNAME a\nCONTEXT OUT file://../../../outside.md\n",
    );
    crate::support::write(&w.dir().join("outside.md"), "secret\n");
    let (code, _, err) = w.build(&["-f", "agents/a/Agentfile", ctx.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("AF302"), "{err}");
    assert!(err.contains("Agentfile:3"), "{err}");
}
