//! The whole pipeline through the `otters` binary: build → resolve (pins, `Agentfile.lock`,
//! `--locked`, `--offline`) → store → push → inspect --remote → FROM inheritance → run, against a
//! real `docker-registry` with runtime and BIN images built by the shared harness.

mod support;

use assert_cmd::Command;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use support::images::{self, BinPrefix};
use support::registry::Registry;

/// A runtime that only writes which version it is (shell builtins only: its PATH is empty).
fn runtime_script(version: &str) -> String {
    format!("#!/bin/sh\necho \"RUNTIME {version} $*\" > report.txt\n")
}

const TOOL: &str = "#!/bin/sh\necho tool\n";

/// A temp dir, a registry and an `OTTERS_HOME`.
struct World {
    tmp: tempfile::TempDir,
    reg: Registry,
    home: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        World {
            tmp,
            reg: Registry::start(),
            home,
        }
    }

    fn otters(&self) -> Command {
        let mut c = Command::cargo_bin("otters").unwrap();
        c.env("OTTERS_HOME", &self.home)
            .env("NO_COLOR", "1")
            .env("DOCKER_CONFIG", self.tmp.path().join("docker"))
            .env_remove("SOURCE_DATE_EPOCH");
        c
    }

    /// Pushes a runtime image (an index with this host's platform) under `name:tag`; returns
    /// the host manifest's digest.
    fn push_runtime(&self, name: &str, tag: &str, version: &str) -> String {
        let dir = self.tmp.path().join(format!("layouts/{name}-{version}"));
        let (_, digest) = images::bin_index(
            &dir,
            tag,
            "runtime",
            runtime_script(version).as_bytes(),
            BinPrefix::Io,
            Some("test runtime"),
        );
        images::skopeo_push(&dir, tag, &format!("{}/{name}:{tag}", self.reg.addr), None);
        digest
    }

    /// Pushes a BIN image `tool` under `name:tag`; returns the host manifest's digest.
    fn push_tool(&self, name: &str, tag: &str) -> String {
        let dir = self.tmp.path().join(format!("layouts/{name}"));
        let (_, digest) = images::bin_index(
            &dir,
            tag,
            "tool",
            TOOL.as_bytes(),
            BinPrefix::Io,
            Some("a tool"),
        );
        images::skopeo_push(&dir, tag, &format!("{}/{name}:{tag}", self.reg.addr), None);
        digest
    }

    /// Writes an Agentfile (and `files`) into a new context directory.
    fn context(&self, name: &str, agentfile: &str, files: &[(&str, &str)]) -> PathBuf {
        let ctx = self.tmp.path().join(name);
        support::write(&ctx.join("Agentfile"), agentfile);
        for (path, body) in files {
            support::write(&ctx.join(path), body);
        }
        ctx
    }

    /// `otters build` with `args`; returns (exit code, stdout, stderr).
    fn build(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.otters().arg("build").args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `otters build` that must succeed; returns the digest.
    fn build_ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.build(args);
        assert_eq!(code, 0, "build {args:?} failed:\n{err}");
        out
    }

    fn inspect(&self, reference: &str) -> Value {
        let out = self
            .otters()
            .args(["inspect", "--format", "json", reference])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn store_blob(&self, digest: &str) -> PathBuf {
        self.home
            .join("store/blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    }

    /// The bytes of the layer titled `title` of a local image.
    fn layer(&self, reference: &str, title: &str) -> Vec<u8> {
        let v = self.inspect(reference);
        let layer = v["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["title"] == title)
            .unwrap_or_else(|| panic!("no layer {title} in {v}"));
        fs::read(self.store_blob(layer["digest"].as_str().unwrap())).unwrap()
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
    let out = w
        .otters()
        .args(["run", "--dry-run", "--root"])
        .arg(w.tmp.path().join("agent"))
        .arg(&ctx)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The whole of stdout is one JSON document: no digest line before it.
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert!(plan["argv"].is_array(), "{plan}");
    assert!(ctx.join("Agentfile.lock").is_file());
    assert!(
        !w.tmp.path().join("agent").exists(),
        "dry run wrote the tree"
    );
}
