//! An agent whose runtime and BIN are real static binaries (`gcc -static` of
//! `testdata/static/*.c`), pushed to a real registry and built with the real `otters`: the
//! fixture of the export and kube suites, whose images run in a FROM-scratch container. And podman
//! set up as TESTING.md says (runc, cgroupfs, the local registry insecure).
//!
//! The runtime prints what it sees (uid, argv, cwd, environment, the tree, its mounts, whether it
//! can write its workspace and `/out`, its tool's output) and, with `RUNTIME_HOLD` set, then
//! sleeps so a pod stays up.

use super::cli::{self, ok};
use super::images::{self, BinPrefix};
use super::registry::Registry;
use super::tools::skip;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The agent's Agentfile; `{a}` is the registry, `{name}` the agent's NAME.
const AGENTFILE: &str = "FROM scratch\nNAME {name}\nRUNTIME {a}/runtime:1\nMODEL anthropic/claude-test\nBIN tool {a}/tool:1 \"prints tool-ran\"\nCONFIG max-tokens=256\nCONFIG webhook! \"where to post\"\nENV LOG_LEVEL=debug\nADD notes.txt \"notes\"\nMOUNT /data ro \"input files\"\nMOUNT /out rw \"results\"\nCONTEXT SOUL \"rules\" <<EOF\nBe brief.\nEOF\n";

/// A registry holding the static runtime and tool, and agents built from them.
pub struct StaticWorld {
    pub tmp: tempfile::TempDir,
    pub reg: Registry,
    /// `$OTTERS_HOME` of the builds.
    pub home: PathBuf,
}

/// Compiles `testdata/static/<name>.c` into a static binary; `None` (after `skip`) when gcc or
/// the static libc is missing.
pub fn static_binary(test: &str, dir: &Path, name: &str) -> Option<Vec<u8>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("testdata/static/{name}.c"));
    let out = dir.join(name);
    let status = Command::new("gcc")
        .args(["-static", "-Os", "-o"])
        .arg(&out)
        .arg(&src)
        .output();
    match status {
        Ok(o) if o.status.success() => Some(fs::read(&out).expect("read the binary")),
        Ok(o) => {
            skip(
                test,
                &format!(
                    "gcc -static failed (install gcc and libc6-dev): {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
            );
            None
        }
        Err(e) => {
            skip(test, &format!("gcc is not usable here: {e}"));
            None
        }
    }
}

impl StaticWorld {
    /// Starts a registry and pushes the static runtime and tool images to it (with skopeo).
    pub fn start(test: &str) -> Option<StaticWorld> {
        let tmp = tempfile::tempdir().expect("temp dir");
        let runtime = static_binary(test, tmp.path(), "runtime")?;
        let tool = static_binary(test, tmp.path(), "tool")?;
        let reg = Registry::start();
        let a = &reg.addr;
        for (name, bytes, prefix) in [
            ("runtime", &runtime, BinPrefix::Io),
            ("tool", &tool, BinPrefix::Vnd),
        ] {
            let dir = tmp.path().join(format!("img-{name}"));
            images::push_bin_index(
                &dir,
                &format!("{a}/{name}:1"),
                name,
                bytes,
                prefix,
                Some(name),
            );
        }
        let home = tmp.path().join("home");
        Some(StaticWorld { tmp, reg, home })
    }

    /// Writes the Agentfile (NAME `name`), builds it as `REG/<repo>:1`, pushes it, and returns
    /// that reference.
    pub fn agent(&self, name: &str, repo: &str) -> String {
        self.agent_for(name, repo, &[])
    }

    /// [`StaticWorld::agent`], with extra `otters build` flags (e.g. `--platform`).
    pub fn agent_for(&self, name: &str, repo: &str, flags: &[&str]) -> String {
        self.agent_with_notes(name, repo, flags, b"some notes\n")
    }

    /// [`StaticWorld::agent_for`], with `notes` as the content of `notes.txt` (which the Agentfile adds).
    pub fn agent_with_notes(&self, name: &str, repo: &str, flags: &[&str], notes: &[u8]) -> String {
        let ctx = self.tmp.path().join(format!("ctx-{repo}"));
        fs::create_dir_all(&ctx).expect("context dir");
        fs::write(ctx.join("notes.txt"), notes).expect("notes");
        let text = AGENTFILE
            .replace("{a}", &self.reg.addr)
            .replace("{name}", name);
        fs::write(ctx.join("Agentfile"), text).expect("Agentfile");
        let agent = format!("{}/{repo}:1", self.reg.addr);
        ok(cli::otters(&self.home)
            .args(["build", "-q", "-t", &agent])
            .args(flags)
            .arg(&ctx));
        ok(cli::otters(&self.home).args(["push", "-q", &agent]));
        agent
    }

    /// A fresh `$OTTERS_HOME` below the world's temp dir.
    pub fn fresh_home(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
}

/// `podman` with TESTING.md's `containers.conf` and a `registries.conf` that lets it pull from
/// the local registry over plain HTTP; `None` (after `skip`) when podman cannot run here.
pub fn podman(test: &str, dir: &Path, registry: &str) -> Option<impl Fn() -> Command> {
    let conf = dir.join("containers.conf");
    fs::write(&conf, "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n").expect("containers.conf");
    let regs = dir.join("registries.conf");
    fs::write(
        &regs,
        format!("[[registry]]\nlocation = \"{registry}\"\ninsecure = true\n"),
    )
    .expect("registries.conf");
    let make = move || {
        let mut c = Command::new("podman");
        c.env("CONTAINERS_CONF", &conf)
            .env("CONTAINERS_REGISTRIES_CONF", &regs);
        c
    };
    if make()
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        Some(make)
    } else {
        skip(
            test,
            "podman is not usable here (apt-get install podman runc)",
        );
        None
    }
}

/// The last line of a command's standard output (`build` and `export` print the digest there).
pub fn last_line(out: &str) -> String {
    out.lines().last().unwrap_or_default().trim().to_owned()
}

/// Checks the static runtime's report (a container's output): it ran as the image's non-root
/// user, in its workspace, with its BIN on PATH, the agent's CONFIG (and `webhook` given at
/// deploy time) and ENV, its context and data, `/data` mounted read-only from the host and
/// `/out` writable; then that it wrote `/out/result.txt` into `outdir`. `extra` lines too.
pub fn assert_report(what: &str, report: &str, outdir: &Path, extra: &[&str]) {
    let common = [
        "UID 65532 GID 65532",
        "ARG serve",
        "PWD /workspace",
        "ENV PATH=/opt/bins",
        "ENV RUNTIME_MAX_TOKENS=256",
        "ENV RUNTIME_WEBHOOK=https://example.com/hook",
        "ENV LOG_LEVEL=debug",
        "TREE /etc/context/SOUL.md",
        "TREE /etc/context/AGENT.md",
        "TREE /etc/data/notes.txt",
        "MOUNT hello from the host",
        "MOUNTRO yes",
        "OUTRW yes",
        "WORKSPACE yes",
        "TOOL tool-ran",
    ];
    for want in common.iter().chain(extra) {
        assert!(
            report.contains(want),
            "{what}: {want:?} not in the runtime's report:\n{report}"
        );
    }
    assert_eq!(
        fs::read_to_string(outdir.join("result.txt")).unwrap_or_default(),
        "written by the runtime\n",
        "{what}: /out/result.txt"
    );
}
