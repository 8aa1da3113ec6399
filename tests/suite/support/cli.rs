//! Running the `otters` binary in tests: a command with its own `OTTERS_HOME`, a temp "machine"
//! (`Env`: an otters home and a docker config dir), and readers for what the binary prints.
//!
//! Never reads the caller's otters home, docker config, colour setting or `SOURCE_DATE_EPOCH`.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// `otters` with `OTTERS_HOME=home`, `NO_COLOR=1` and no inherited `SOURCE_DATE_EPOCH`.
pub fn otters(home: &Path) -> Command {
    let mut c = Command::cargo_bin("otters").expect("otters binary");
    c.env("OTTERS_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("SOURCE_DATE_EPOCH");
    c
}

/// Runs `cmd`, which must succeed (else panics with its output), and returns its stdout.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run otters");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Parses JSON output, panicking with the text when it is not JSON.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Error text with miette's wrapping and gutter removed, whitespace collapsed.
pub fn flat(text: &str) -> String {
    text.replace(['│', '×'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// One user's machine: a temp dir holding an otters home (`otters/`) and a docker config dir
/// (`docker/`); contexts and other files may go beside them in `dir`.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("tmp"),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("otters")
    }

    pub fn docker(&self) -> PathBuf {
        self.dir.path().join("docker")
    }

    pub fn store(&self) -> PathBuf {
        self.home().join("store")
    }

    pub fn store_blob(&self, digest: &str) -> PathBuf {
        self.store()
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    }

    /// `otters` against this machine's home and docker config.
    pub fn otters(&self) -> Command {
        let mut c = otters(&self.home());
        c.env("DOCKER_CONFIG", self.docker());
        c
    }

    /// Runs otters; returns (success, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.otters().args(args).output().expect("run otters");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs otters with `vars` added to its environment, waiting at most `limit` for it: `None`
    /// when it had not finished by then (it is killed), else (success, stdout, stderr). Its
    /// output goes to files, so a chatty run cannot block on a full pipe.
    pub fn run_within(
        &self,
        args: &[&str],
        vars: &[(&str, &str)],
        limit: std::time::Duration,
    ) -> Option<(bool, String, String)> {
        let out = tempfile::NamedTempFile::new_in(self.dir.path()).expect("tmp");
        let err = tempfile::NamedTempFile::new_in(self.dir.path()).expect("tmp");
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("otters"));
        cmd.env("OTTERS_HOME", self.home())
            .env("DOCKER_CONFIG", self.docker())
            .env("NO_COLOR", "1")
            .env_remove("SOURCE_DATE_EPOCH")
            .envs(vars.iter().copied())
            .args(args)
            .stdout(out.reopen().expect("reopen"))
            .stderr(err.reopen().expect("reopen"));
        let mut child = cmd.spawn().expect("run otters");
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let read = |f: &tempfile::NamedTempFile| {
            String::from_utf8_lossy(&std::fs::read(f.path()).expect("read")).into_owned()
        };
        Some((status.success(), read(&out), read(&err)))
    }

    /// Runs otters, which must succeed; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        ok(self.otters().args(args))
    }

    /// `otters build -q --offline --allow-unpinned -t TAG CONTEXT`, which must succeed: an agent
    /// built with no registry, its RUNTIME and BINs left unpinned. Returns its digest.
    pub fn build_unpinned(&self, tag: &str, context: &Path) -> String {
        let out = ok(self
            .otters()
            .args(["build", "-q", "--offline", "--allow-unpinned", "-t", tag])
            .arg(context));
        out.trim().to_owned()
    }

    /// `otters key generate --out DIR/NAME` on this machine; returns the (private, public) key
    /// paths.
    pub fn key_pair(&self, name: &str) -> (String, String) {
        let prefix = self.dir.path().join(name);
        self.ok(&["key", "generate", "--out", &prefix.to_string_lossy()]);
        (
            format!("{}.key", prefix.display()),
            format!("{}.pub", prefix.display()),
        )
    }

    /// Runs otters expecting failure; returns stderr with miette's line wrapping undone.
    pub fn fails(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(!ok, "otters {args:?} should fail:\n{out}\n{err}");
        flat(&err)
    }
}
