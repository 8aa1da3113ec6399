//! `otters run` end to end: real registry, runtime/BIN images built here, `otters build`, then
//! `otters run` on the host (system executor) and through the docker CLI against podman.
//!
//! The test runtime is a `/bin/sh` script that writes its argv, cwd, environment and the tree it
//! sees to `report.txt` in its working directory, using busybox for every tool (the runtime's PATH
//! holds only the agent's bin dir).

use crate::support::cli::{self, ok};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::Registry;
use crate::support::tools::skip;
use assert_cmd::Command;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

const RUNTIME: &str = r#"#!/bin/sh
B=/bin/busybox
{
  echo "ARGV $*"
  echo "PWD $($B pwd)"
  echo "ID $($B id -u)"
  $B env | $B sort | $B sed 's/^/ENV /'
  root=$($B pwd)/..
  [ "$OTTERS_AGENT_ROOT" = / ] && root=/
  for p in etc/Agentfile etc/agent.yaml etc/context/AGENT.md etc/context/WORKSPACE.md etc/context/MOUNTS.md etc/context/SOUL.md etc/data/notes.txt usr/bin/tool usr/local/bin/runtime opt/bins/tool opt/runtime/runtime; do
    [ -e "$root/$p" ] && echo "TREE $p"
  done
  [ -e /data/in.txt ] && echo "MOUNT $($B cat /data/in.txt)"
  $B touch /data/new 2>/dev/null && echo "MOUNTRW yes" || echo "MOUNTRW no"
  [ -d /out ] && { $B touch /out/new 2>/dev/null && echo "OUTRW yes" || echo "OUTRW no"; }
  [ -x "$PATH/tool" ] && echo "TOOL $("$PATH/tool")"
} > report.txt
exit "${RUNTIME_EXIT:-0}"
"#;

const TOOL: &str = "#!/bin/sh\necho tool-ran\n";

fn have(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Push the runtime and tool images, write an Agentfile, and build it into `home`'s store.
struct ProbeWorld {
    tmp: tempfile::TempDir,
    reg: Registry,
    home: PathBuf,
    agent: String,
}

fn world(tag: &str) -> ProbeWorld {
    let tmp = tempfile::tempdir().unwrap();
    let reg = Registry::start();
    let a = &reg.addr;
    images::push_bin_index(
        &tmp.path().join("rt"),
        &format!("{a}/runtime:1"),
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        Some("test runtime"),
    );
    images::push_bin_index(
        &tmp.path().join("tool"),
        &format!("{a}/tool:1"),
        "tool",
        TOOL.as_bytes(),
        BinPrefix::Vnd,
        Some("a tool"),
    );
    let ctx = tmp.path().join("ctx");
    fs::create_dir_all(&ctx).unwrap();
    fs::write(ctx.join("notes.txt"), "some notes\n").unwrap();
    fs::write(
        ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME probe\nRUNTIME {a}/runtime:1\nMODEL anthropic/claude-test\nBIN tool {a}/tool:1 \"says tool-ran\"\nCONFIG max-tokens=256\nCONFIG webhook! \"where to post\"\nENV LOG_LEVEL=debug\nADD notes.txt \"notes\"\nMOUNT /data ro \"input files\"\nCONTEXT SOUL \"rules\" <<EOF\nBe brief.\nEOF\n"
        ),
    )
    .unwrap();
    let home = tmp.path().join("home");
    let agent = format!("{a}/agent:{tag}");
    ok(cli::otters(&home)
        .args(["build", "-q", "-t", &agent])
        .arg(&ctx));
    ProbeWorld {
        tmp,
        reg,
        home,
        agent,
    }
}

/// A [`world`] and an empty `data` directory for its `/data` MOUNT, when the test runtime can run
/// on this host (it needs `/bin/busybox`); `None` after [`skip`] otherwise.
fn busybox_world(test: &str, tag: &str) -> Option<(ProbeWorld, PathBuf)> {
    if !Path::new("/bin/busybox").exists() {
        skip(test, "/bin/busybox (busybox-static) is not installed");
        return None;
    }
    let w = world(tag);
    let data = w.tmp.path().join("data");
    fs::create_dir_all(&data).unwrap();
    Some((w, data))
}

/// A file of a test tree, which must exist.
fn text(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn otters(w: &ProbeWorld) -> Command {
    let mut c = cli::otters(&w.home);
    c.env("ANTHROPIC_API_KEY", "sk-test-secret")
        .env("OTTERS_LEAK_CANARY", "leaked");
    c
}

fn report(root: &Path) -> String {
    fs::read_to_string(root.join("workspace/report.txt")).unwrap_or_default()
}

fn grep_tree(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let m = fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            hits.extend(grep_tree(&p, needle));
        } else if m.is_file()
            && fs::read(&p)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
        {
            hits.push(p);
        }
    }
    hits
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario in order: refusals, a dry run, the run, a rerun and a failed rerun share one agent tree"
)]
fn system_executor_end_to_end() {
    let Some((w, data)) = busybox_world("system_executor_end_to_end", "sys") else {
        return;
    };
    fs::write(data.join("in.txt"), "host-input").unwrap();
    let root = w.home.join("agents/probe");
    let vol = format!("{}:/data", data.display());

    // Refusals come before anything is written.
    let out = otters(&w)
        .args(["run", &w.agent, "-v", &vol])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = cli::flat(&String::from_utf8_lossy(&out.stderr));
    assert!(
        err.contains("required config(s) have no value: webhook")
            && err.contains("help: pass --config webhook=VALUE"),
        "{err}"
    );
    let out = otters(&w)
        .args(["run", &w.agent, "--config", "webhook=http://hook"])
        .output()
        .unwrap();
    let err = cli::flat(&String::from_utf8_lossy(&out.stderr));
    assert!(
        err.contains("declared mount(s) missing: /data")
            && err
                .contains("help: supply them with -v HOST:TARGET, or pass --allow-missing-mounts"),
        "{err}"
    );
    let out = otters(&w)
        .args([
            "run",
            &w.agent,
            "--config",
            "webhook=x",
            "-v",
            &vol,
            "-e",
            "HOME=/x",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("HOME is set by otters itself"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!root.exists(), "a refused run wrote the tree");

    // Dry run: the whole plan, secrets redacted, nothing written.
    let text = ok(otters(&w).args([
        "run",
        &w.agent,
        "--dry-run",
        "--config",
        "webhook=http://hook",
        "-v",
        &vol,
        "-e",
        "EXTRA=1",
    ]));
    assert!(!text.contains("sk-test-secret"), "secret in dry-run output");
    let plan: Value = serde_json::from_str(&text).unwrap();
    let env = plan["env"].as_array().unwrap();
    let key = env
        .iter()
        .find(|e| e["key"] == "ANTHROPIC_API_KEY")
        .unwrap();
    assert_eq!(key["value"], "<redacted>");
    assert_eq!(plan["argv"][1], "serve");
    assert!(!root.exists(), "--dry-run wrote the tree");

    // The real run: otters becomes the runtime; its exit code is the runtime's.
    let out = otters(&w)
        .args([
            "run",
            &w.agent,
            "--config",
            "webhook=http://hook",
            "-v",
            &vol,
            "-e",
            "EXTRA=1",
            "-e",
            "RUNTIME_EXIT=7",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&root);
    let root_s = root.display().to_string();
    assert!(
        r.contains(&format!(
            "ARGV serve --root {root_s} --model anthropic/claude-test\n"
        )),
        "{r}"
    );
    assert!(r.contains(&format!("PWD {root_s}/workspace\n")), "{r}");
    for line in [
        format!("ENV PATH={root_s}/usr/bin"),
        format!("ENV HOME={root_s}/home"),
        format!("ENV TMPDIR={root_s}/tmp"),
        format!("ENV OTTERS_AGENT_ROOT={root_s}"),
        "ENV ANTHROPIC_API_KEY=sk-test-secret".into(),
        "ENV RUNTIME_MAX_TOKENS=256".into(),
        "ENV RUNTIME_WEBHOOK=http://hook".into(),
        "ENV LOG_LEVEL=debug".into(),
        "ENV EXTRA=1".into(),
        "ENV LANG=C.UTF-8".into(),
    ] {
        assert!(r.contains(&format!("{line}\n")), "missing {line}:\n{r}");
    }
    assert!(
        !r.contains("OTTERS_LEAK_CANARY"),
        "host environment leaked:\n{r}"
    );
    for p in [
        "etc/Agentfile",
        "etc/agent.yaml",
        "etc/context/AGENT.md",
        "etc/context/WORKSPACE.md",
        "etc/context/MOUNTS.md",
        "etc/context/SOUL.md",
        "etc/data/notes.txt",
        "usr/bin/tool",
        "usr/local/bin/runtime",
    ] {
        assert!(r.contains(&format!("TREE {p}\n")), "missing {p}:\n{r}");
    }
    assert!(r.contains("TOOL tool-ran"), "{r}");
    let yaml = fs::read_to_string(root.join("etc/agent.yaml")).unwrap();
    assert!(yaml.starts_with("id: \""), "{yaml}");
    assert!(yaml.contains(&format!("  ref: \"{}\"", w.agent)), "{yaml}");
    assert!(yaml.contains("  digest: \"sha256:"), "{yaml}");
    let agent_md = fs::read_to_string(root.join("etc/context/AGENT.md")).unwrap();
    for want in [
        "# probe\n",
        "## Identity",
        "## Binaries",
        "- **tool** — says tool-ran",
        "### How to call a binary",
        "| notes.txt | notes |",
        "| EXTRA | 1 | - |",
        "## Filesystem",
    ] {
        assert!(
            agent_md.contains(want),
            "AGENT.md lacks {want:?}:\n{agent_md}"
        );
    }
    let ws = fs::read_to_string(root.join("etc/context/WORKSPACE.md")).unwrap();
    assert!(
        ws.contains(&format!("`{root_s}/usr/bin/` — your binaries")),
        "{ws}"
    );
    let mounts = fs::read_to_string(root.join("etc/context/MOUNTS.md")).unwrap();
    assert!(mounts.contains("`/data` *(ro)* — input files"), "{mounts}");
    assert_eq!(fs::read_link(root.join("data")).unwrap(), data);
    // (the test runtime itself writes its environment to workspace/report.txt)
    let hits: Vec<_> = grep_tree(&root, "sk-test-secret")
        .into_iter()
        .filter(|p| !p.ends_with("workspace/report.txt"))
        .collect();
    assert!(hits.is_empty(), "the API key was written to disk: {hits:?}");

    // A second run keeps the workspace (and the id) and rewrites everything else.
    fs::write(root.join("workspace/keep.txt"), "kept").unwrap();
    fs::write(root.join("etc/context/AGENT.md"), "tampered").unwrap();
    let id = yaml.lines().next().unwrap().to_owned();
    let out = otters(&w)
        .args(["run", &w.agent, "--config", "webhook=h2", "-v", &vol])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read_to_string(root.join("workspace/keep.txt")).unwrap(),
        "kept"
    );
    assert!(report(&root).contains("ENV RUNTIME_WEBHOOK=h2\n"));
    assert_ne!(
        fs::read_to_string(root.join("etc/context/AGENT.md")).unwrap(),
        "tampered"
    );
    let yaml2 = fs::read_to_string(root.join("etc/agent.yaml")).unwrap();
    assert_eq!(
        yaml2.lines().next().unwrap(),
        id,
        "the agent id changed between runs"
    );

    // A run that fails while materialising leaves the previous tree and workspace intact.
    let out = otters(&w)
        .args([
            "run",
            &w.agent,
            "--config",
            "webhook=h3",
            "-v",
            &vol,
            "--platform",
            "linux/riscv64",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no image for platform linux/riscv64"), "{err}");
    assert_eq!(
        fs::read_to_string(root.join("workspace/keep.txt")).unwrap(),
        "kept"
    );
    assert_eq!(
        fs::read_to_string(root.join("etc/agent.yaml")).unwrap(),
        yaml2
    );
    assert!(root.join("usr/local/bin/runtime").is_file());
    let leftovers: Vec<_> = fs::read_dir(root.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers,
        vec![std::ffi::OsString::from("probe")],
        "temp dirs left behind"
    );
    drop(w.reg);
}

#[test]
fn malicious_bin_layers_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = Registry::start();
    let a = &reg.addr;
    images::bin_index(
        &tmp.path().join("rt"),
        "1",
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        None,
    );
    images::skopeo_push(&tmp.path().join("rt"), "1", &format!("{a}/runtime:1"), None);
    let evil_cases: [(&str, &str, &str); 3] = [
        ("traversal", "../../../escaped", "contains `..`"),
        ("absolute", "/tmp/otters-absolute-escape", "absolute path"),
        ("whiteout", ".wh.tool", "whiteout"),
    ];
    for (case, entry, why) in evil_cases {
        // One gzip tar layer with the bad entry first, then the real binary.
        let mut raw = Vec::new();
        for (name, data) in [(entry, &b"x"[..]), ("tool", TOOL.as_bytes())] {
            let mut h = tar::Header::new_old();
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.set_size(data.len() as u64);
            h.set_mode(0o755);
            h.set_entry_type(tar::EntryType::Regular);
            h.set_cksum();
            raw.extend_from_slice(h.as_bytes());
            raw.extend_from_slice(data);
            raw.extend(std::iter::repeat_n(0u8, (512 - data.len() % 512) % 512));
        }
        raw.extend([0u8; 1024]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &raw).unwrap();
        let layer = gz.finish().unwrap();
        let dir = tmp.path().join(case);
        let mut l = images::Layout::new(&dir);
        let mut ld = l.blob("application/vnd.oci.image.layer.v1.tar+gzip", &layer);
        ld["annotations"] = serde_json::json!({"org.opencontainers.image.title": "tool"});
        let cfg = l.blob("application/vnd.oci.image.config.v1+json", b"{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}");
        let m = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cfg, "layers": [ld],
            "annotations": images::bin_annotations("tool", BinPrefix::Io, None)});
        let md = l.blob(
            "application/vnd.oci.image.manifest.v1+json",
            m.to_string().as_bytes(),
        );
        l.tag(&md, "1");
        images::skopeo_push(&dir, "1", &format!("{a}/evil-{case}:1"), None);

        let ctx = tmp.path().join(format!("ctx-{case}"));
        fs::create_dir_all(&ctx).unwrap();
        fs::write(ctx.join("Agentfile"), format!("FROM scratch\nNAME evil\nRUNTIME {a}/runtime:1\nMODEL m\nBIN tool {a}/evil-{case}:1\n")).unwrap();
        let home = tmp.path().join(format!("home-{case}"));
        let agent = format!("{a}/evil-agent:{case}");
        cli::otters(&home)
            .args(["build", "-q", "-t", &agent])
            .arg(&ctx)
            .assert()
            .success();
        let out = cli::otters(&home).args(["run", &agent]).output().unwrap();
        assert!(
            !out.status.success(),
            "{case}: a malicious layer was accepted"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{case}: {err}");
        assert!(
            !home.join("agents/evil").exists(),
            "{case}: a half-written tree was left"
        );
        let left = fs::read_dir(home.join("agents")).map_or(0, |d| d.flatten().count());
        assert_eq!(left, 0, "{case}: temp dirs left behind");
        assert!(
            !tmp.path().join("escaped").exists()
                && !Path::new("/tmp/otters-absolute-escape").exists()
        );
    }
}

/// A podman API service on a private socket, driven through the real docker CLI (TESTING.md).
struct Podman {
    child: std::process::Child,
    sock: PathBuf,
    conf: PathBuf,
    image: String,
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = std::process::Command::new("podman")
            .env("CONTAINERS_CONF", &self.conf)
            .args(["rmi", "-f", &self.image])
            .output();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Podman {
    /// `otters run` of the world's agent with the docker executor against this podman service.
    fn run(&self, w: &ProbeWorld) -> Command {
        let mut c = otters(w);
        c.env("DOCKER_HOST", format!("unix://{}", self.sock.display()))
            .env("CONTAINERS_CONF", &self.conf)
            .args([
                "run",
                &w.agent,
                "--executor",
                "docker",
                "--base-image",
                &self.image,
            ]);
        c
    }
}

/// Base images imported so far by this process: one name per call, as two tests of this process
/// each import and, on drop, remove their own.
static BASE_IMAGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Start podman's service and import a busybox base image; `Err(reason)` when podman cannot run.
fn podman(dir: &Path) -> Result<Podman, String> {
    for tool in ["podman", "docker"] {
        if !have(tool) {
            return Err(format!("{tool} is not installed"));
        }
    }
    let conf = dir.join("containers.conf");
    fs::write(&conf, "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n").unwrap();
    // Base image: /bin/busybox and /bin/sh -> busybox, imported from a tar.
    let mut tar_bytes = Vec::new();
    {
        let mut b = tar::Builder::new(&mut tar_bytes);
        let bb = fs::read("/bin/busybox").map_err(|e| format!("cannot read /bin/busybox: {e}"))?;
        let mut h = tar::Header::new_gnu();
        h.set_size(bb.len() as u64);
        h.set_mode(0o755);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, "bin/busybox", &bb[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        h.set_mode(0o777);
        b.append_link(&mut h, "bin/sh", "busybox").unwrap();
        b.finish().unwrap();
    }
    let tar_path = dir.join("base.tar");
    fs::write(&tar_path, &tar_bytes).unwrap();
    let n = BASE_IMAGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let image = format!("localhost/otters-run-test-base:{}-{n}", std::process::id());
    let out = std::process::Command::new("podman")
        .env("CONTAINERS_CONF", &conf)
        .arg("import")
        .arg(&tar_path)
        .arg(&image)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "podman import failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let sock = dir.join("podman.sock");
    let child = std::process::Command::new("podman")
        .env("CONTAINERS_CONF", &conf)
        .args(["system", "service", "--time=0"])
        .arg(format!("unix://{}", sock.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let p = Podman {
        child,
        sock,
        conf,
        image,
    };
    for _ in 0..100 {
        if p.sock.exists() {
            return Ok(p);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err("podman system service did not create its socket".into())
}

#[test]
fn docker_executor_through_podman() {
    let w = world("docker");
    let pod = match podman(w.tmp.path()) {
        Ok(p) => p,
        Err(reason) => {
            skip("docker_executor_through_podman", &reason);
            return;
        }
    };
    let data = w.tmp.path().join("data");
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("in.txt"), "host-input").unwrap();
    let root = w.tmp.path().join("agent-root");
    let out = pod
        .run(&w)
        .args(["--config", "webhook=http://hook", "-e", "EXTRA=1"])
        .arg("--root")
        .arg(&root)
        .arg("-v")
        .arg(format!("{}:/data:rw", data.display()))
        .output()
        .unwrap();
    // podman's compat API loses the exit code of `docker run --rm` (TESTING.md), so the report is
    // the evidence.
    let r = report(&root);
    assert!(
        !r.is_empty(),
        "no report; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        r.contains("ARGV serve --root / --model anthropic/claude-test --addr 0.0.0.0:9999\n"),
        "{r}"
    );
    assert!(r.contains("PWD /workspace\n"), "{r}");
    assert!(r.contains("ID 65532\n"), "not the unprivileged user:\n{r}");
    for line in [
        "ENV PATH=/opt/bins",
        "ENV HOME=/home",
        "ENV OTTERS_AGENT_ROOT=/",
        "ENV ANTHROPIC_API_KEY=sk-test-secret",
        "ENV RUNTIME_WEBHOOK=http://hook",
        "ENV EXTRA=1",
    ] {
        assert!(r.contains(&format!("{line}\n")), "missing {line}:\n{r}");
    }
    assert!(
        !r.contains("OTTERS_LEAK_CANARY"),
        "host environment leaked:\n{r}"
    );
    for p in [
        "etc/Agentfile",
        "etc/agent.yaml",
        "etc/context/AGENT.md",
        "etc/context/MOUNTS.md",
        "etc/data/notes.txt",
        "opt/bins/tool",
        "opt/runtime/runtime",
    ] {
        assert!(r.contains(&format!("TREE {p}\n")), "missing {p}:\n{r}");
    }
    assert!(r.contains("MOUNT host-input\n"), "{r}");
    assert!(r.contains("TOOL tool-ran\n"), "{r}");
    // The declared MOUNT is `ro`: the merge keeps it read-only even though -v said rw.
    assert!(
        r.contains("MOUNTRW no\n"),
        "read-only mount was writable:\n{r}"
    );
    let yaml = fs::read_to_string(root.join("etc/agent.yaml")).unwrap();
    assert!(yaml.contains("binary: \"/opt/bins/tool\""), "{yaml}");
}

/// The `--dry-run` plan, with temp paths, the registry address, digests and the id replaced.
#[test]
fn dry_run_plan_snapshot() {
    let w = world("snap");
    let data = w.tmp.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let out = ok(otters(&w)
        .args([
            "run",
            &w.agent,
            "--dry-run",
            "--config",
            "webhook=http://hook",
            "-e",
            "EXTRA=1",
            "--platform",
            "linux/amd64",
        ])
        .arg("-v")
        .arg(format!("{}:/data::ro", data.display())));
    let mut text = out
        .replace(&w.tmp.path().display().to_string(), "[TMP]")
        .replace(&w.reg.addr, "[REG]");
    let plan: Value = serde_json::from_str(&text).unwrap();
    text = text.replace(plan["id"].as_str().unwrap(), "[ID]");
    let mut redacted = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("sha256:") {
        redacted.push_str(&rest[..i + 7]);
        redacted.push_str("[DIGEST]");
        rest = rest[i + 7..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    redacted.push_str(rest);
    crate::support::snap::assert("run", "dry_run_plan", &redacted);
    // The reference says which flags `run` appends after EXEC: exactly the plan's.
    let flags: Vec<&str> = plan["argv"].as_array().unwrap()[2..]
        .iter()
        .filter_map(Value::as_str)
        .filter(|a| a.starts_with("--"))
        .collect();
    assert_eq!(flags, ["--root", "--model"]);
    let reference = fs::read_to_string(crate::support::repo().join("docs/reference.md")).unwrap();
    assert!(
        reference.contains("`otters run` appends\n`--root ROOT` (the agent's tree on the host) and, when the agent has a MODEL, `--model MODEL`; it\npasses no `--addr`"),
        "docs/reference.md (EXEC) does not say what `run` appends: {flags:?}"
    );
}

/// `--dry-run` of an image the store lacks pulls it (planning needs its config) and says so; a
/// MOUNT nobody supplied is listed in the plan with a warning instead of stopping the dry run.
#[test]
fn dry_run_says_it_pulled_and_lists_missing_mounts() {
    let w = world("dry");
    ok(otters(&w).args(["push", "-q", &w.agent]));
    let fresh = w.tmp.path().join("fresh-home");
    let out = cli::otters(&fresh)
        .env("ANTHROPIC_API_KEY", "sk-test-secret")
        .args(["run", "--dry-run", &w.agent, "--config", "webhook=x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "note: {} was pulled into the local store",
            w.agent
        )),
        "{err}"
    );
    assert!(
        err.contains("a run would stop here: declared mount(s) missing: /data"),
        "{err}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["missing_mounts"], serde_json::json!(["/data"]));
    // A second dry run finds the image in the store and pulls nothing.
    let out = cli::otters(&fresh)
        .env("ANTHROPIC_API_KEY", "sk-test-secret")
        .args(["run", "--dry-run", &w.agent, "--config", "webhook=x"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("was pulled"));
}

/// Issue 17.2: a verify key covers the agent manifest and what its `agent.yaml` pins; an agent
/// built without pins (`--offline --allow-unpinned`, no lock) would get its RUNTIME and BIN by
/// tag, so with a key (flag or `[verify] key`) the run is refused before anything is fetched,
/// naming each unpinned image and how to pin it. Without a key it runs with a warning, as before.
#[test]
fn verify_key_refuses_an_unpinned_runtime_or_bin() {
    let w = world("pins");
    let a = &w.reg.addr;
    let keys = w.tmp.path().join("k");
    ok(otters(&w).args(["key", "generate", "--out"]).arg(&keys));
    let (key, public) = (keys.with_extension("key"), keys.with_extension("pub"));
    // Pinned and signed: the gate lets the plan through.
    ok(otters(&w).args(["sign", &w.agent, "--key"]).arg(&key));
    ok(otters(&w)
        .args(["run", "--dry-run", &w.agent, "--config", "webhook=x"])
        .arg("--verify-key")
        .arg(&public));

    // The same Agentfile without its lock, built offline in a fresh home: nothing pinned.
    let ctx = w.tmp.path().join("unpinned");
    fs::create_dir_all(&ctx).unwrap();
    for f in ["Agentfile", "notes.txt"] {
        fs::copy(w.tmp.path().join("ctx").join(f), ctx.join(f)).unwrap();
    }
    let home = w.tmp.path().join("home-unpinned");
    let unpinned = format!("{a}/agent:unpinned");
    let cmd = |args: &[&str]| {
        let mut c = cli::otters(&home);
        c.args(args);
        c
    };
    ok(cmd(&[
        "build",
        "-q",
        "--offline",
        "--allow-unpinned",
        "-t",
        &unpinned,
    ])
    .arg(&ctx));
    ok(cmd(&["sign", &unpinned, "--key"]).arg(&key));
    // The signature itself is fine.
    ok(cmd(&["verify", &unpinned, "--key"]).arg(&public));
    let dry = ["run", "--dry-run", &unpinned, "--config", "webhook=x"];
    let refused = |out: std::process::Output| {
        let err = cli::flat(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "an unpinned agent ran:\n{err}");
        for needle in [
            "refusing to run with a verify key",
            &format!("RUNTIME {a}/runtime:1, BIN tool ({a}/tool:1) has no pinned digest"),
            "`otters lock`",
            "`otters build` (not `otters build --allow-unpinned`)",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
        }
        assert!(out.stdout.is_empty(), "a plan was printed");
    };
    refused(cmd(&dry).arg("--verify-key").arg(&public).output().unwrap());
    // Without a key: the old behaviour, a warning per image.
    let out = cmd(&dry).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no pinned digest"));
    // The key of config.toml counts as the flag does, and a real run is refused too.
    fs::write(
        home.join("config.toml"),
        format!("[verify]\nkey = \"{}\"\n", public.display()),
    )
    .unwrap();
    refused(cmd(&dry).output().unwrap());
    let root = w.tmp.path().join("never");
    refused(
        cmd(&["run", &unpinned, "--config", "webhook=x", "--root"])
            .arg(&root)
            .output()
            .unwrap(),
    );
    assert!(!root.exists(), "a tree was written");
}

/// Issue 17.8: `--root DIR` reuses only a tree otters made (its `.otters-agent` marker); a
/// non-empty other directory is refused and its files survive, an empty one is taken.
/// Issue 17.3: the marker names the repository that made the tree, and another repository whose
/// image declares the same NAME does not inherit the default root's workspace and id unless the
/// user names the tree (`--name`), while a new tag of the same repository does.
#[test]
fn run_roots_belong_to_otters_and_to_one_repository() {
    let Some((w, data)) =
        busybox_world("run_roots_belong_to_otters_and_to_one_repository", "roots")
    else {
        return;
    };
    let a = &w.reg.addr;
    let vol = format!("{}:/data", data.display());
    let cmd = |reference: &str, extra: &[&str]| {
        let mut c = otters(&w);
        c.args(["run", reference, "--config", "webhook=x", "-v", &vol])
            .args(extra);
        c
    };
    let run = |reference: &str, extra: &[&str]| cmd(reference, extra).output().unwrap();
    let stderr = |o: &std::process::Output| cli::flat(&String::from_utf8_lossy(&o.stderr));

    // The user's own directory, as with `--root .`: refused, for a dry run too; nothing moves.
    let mine = w.tmp.path().join("mine");
    fs::create_dir_all(mine.join("src")).unwrap();
    fs::write(mine.join("notes.txt"), "my notes").unwrap();
    fs::write(mine.join("src/main.rs"), "fn main() {}").unwrap();
    for extra in [&["--dry-run"][..], &[]] {
        let out = cmd(&w.agent, &["--root", "."])
            .current_dir(&mine)
            .args(extra)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "--root . was taken: {err}");
        assert!(
            err.contains("not an agent tree otters made")
                && crate::support::cli::flat(&err)
                    .contains("help: pass --root with a new or empty directory"),
            "{err}"
        );
    }
    assert_eq!(text(&mine.join("notes.txt")), "my notes");
    assert_eq!(text(&mine.join("src/main.rs")), "fn main() {}");
    let mut names: Vec<_> = fs::read_dir(&mine)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["notes.txt", "src"]);

    // An empty directory is taken; the tree it gets is marked, and a second run reuses it.
    let empty = w.tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let out = run(&w.agent, &["--root", empty.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let marker: Value = serde_json::from_str(&text(&empty.join(".otters-agent"))).unwrap();
    assert_eq!(marker["repository"], format!("{a}/agent"));
    fs::write(empty.join("workspace/kept.txt"), "kept").unwrap();
    let out = run(&w.agent, &["--root", empty.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(text(&empty.join("workspace/kept.txt")), "kept");

    // Default root agents/probe, made by {a}/agent.
    let root = w.home.join("agents/probe");
    let out = run(&w.agent, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    fs::write(root.join("workspace/secret.txt"), "victim's").unwrap();
    let id = text(&root.join("etc/agent.yaml"));

    // Another repository's image with the same NAME (here: the same Agentfile, pushed elsewhere).
    let other = format!("{a}/other:1");
    ok(otters(&w)
        .args(["build", "-q", "-t", &other])
        .arg(w.tmp.path().join("ctx")));
    for extra in [&["--dry-run"][..], &[]] {
        let out = run(&other, extra);
        let err = stderr(&out);
        assert!(
            !out.status.success(),
            "another repository took the tree: {err}"
        );
        assert!(
            err.contains(&format!(
                "the agent tree of NAME probe was made by {a}/agent, not by {a}/other"
            )) && crate::support::cli::flat(&err).contains(
                "help: run this image under its own name (--name NAME or --root DIR), or, to hand the tree over on purpose, name it explicitly: --name probe"
            ),
            "{err}"
        );
    }
    assert_eq!(text(&root.join("workspace/secret.txt")), "victim's");
    assert_eq!(text(&root.join("etc/agent.yaml")), id);
    // Under its own name it gets its own tree.
    let out = run(&other, &["--name", "probe-other"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!w
        .home
        .join("agents/probe-other/workspace/secret.txt")
        .exists());
    // A new tag of the same repository keeps the tree.
    let v2 = format!("{a}/agent:roots-2");
    ok(otters(&w).args(["tag", &w.agent, &v2]));
    let out = run(&v2, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(root.join("workspace/secret.txt").exists());
    // Naming the tree hands it over on purpose.
    let out = run(&other, &["--name", "probe"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(root.join("workspace/secret.txt").exists());
    let marker: Value = serde_json::from_str(&text(&root.join(".otters-agent"))).unwrap();
    assert_eq!(marker["repository"], format!("{a}/other"));
}

/// Issue 17, "Also": a MODEL provider picks `<PROVIDER>_API_KEY` out of the environment only when
/// otters knows the provider or the user names it (`--provider`): `stripe/x` must not receive
/// `STRIPE_API_KEY`, and the warning says how to name it.
#[test]
fn model_provider_credentials_only_for_known_or_named_providers() {
    let w = world("providers");
    let data = w.tmp.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let plan = |extra: &[&str]| {
        let out = otters(&w)
            .env("STRIPE_API_KEY", "sk-stripe-secret")
            .args(["run", "--dry-run", &w.agent, "--config", "webhook=x", "-v"])
            .arg(format!("{}:/data", data.display()))
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
        let keys: Vec<String> = plan["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["key"].as_str().unwrap().to_owned())
            .filter(|k| k.ends_with("_API_KEY"))
            .collect();
        (keys, cli::flat(&String::from_utf8_lossy(&out.stderr)))
    };
    let (keys, err) = plan(&["--model", "stripe/x"]);
    assert!(keys.is_empty(), "{keys:?}");
    assert!(
        err.contains("provider stripe is not one otters knows, so STRIPE_API_KEY is not passed")
            && err.contains("pass --provider stripe"),
        "{err}"
    );
    assert!(!err.contains("needs STRIPE_API_KEY"), "{err}");
    let (keys, err) = plan(&["--model", "stripe/x", "--provider", "stripe"]);
    assert_eq!(keys, ["STRIPE_API_KEY"]);
    assert!(!err.contains("not one otters knows"), "{err}");
    // A known provider needs no naming.
    let (keys, _) = plan(&[]);
    assert_eq!(keys, ["ANTHROPIC_API_KEY"]);
}

/// Issue 18.1: running by digest (`REG/repo@sha256:…`, `REG/repo:tag@sha256:…`), also with
/// `--dry-run` and `--verify-key`, works on first use against a real registry: the pull is not
/// tagged with a reference that holds a digest; `repo:tag@…` tags its `repo:tag` part.
#[test]
fn run_by_digest_works_on_first_use() {
    let w = world("bydigest");
    let keys = w.tmp.path().join("k");
    ok(otters(&w).args(["key", "generate", "--out"]).arg(&keys));
    ok(otters(&w)
        .args(["sign", &w.agent, "--key"])
        .arg(keys.with_extension("key")));
    ok(otters(&w).args(["push", "-q", &w.agent]));
    let digest = images::skopeo_digest(&w.agent, None);
    let repo = format!("{}/agent", w.reg.addr);
    let data = w.tmp.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let vol = format!("{}:/data", data.display());
    let cases = [
        (format!("{repo}@{digest}"), vec![]),
        (format!("{}@{digest}", w.agent), vec![]),
        (format!("{repo}@{digest}"), vec!["--verify-key"]),
    ];
    for (i, (reference, extra)) in cases.iter().enumerate() {
        let home = w.tmp.path().join(format!("fresh-{i}"));
        let mut c = cli::otters(&home);
        c.env("ANTHROPIC_API_KEY", "k").args([
            "run",
            "--dry-run",
            reference,
            "--config",
            "webhook=x",
            "-v",
            &vol,
        ]);
        if !extra.is_empty() {
            c.args(extra).arg(keys.with_extension("pub"));
        }
        let out = c.output().unwrap();
        let err = cli::flat(&String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{reference} {extra:?}: {err}");
        let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(plan["image"]["digest"], digest.as_str());
        assert!(err.contains("was pulled into the local store"), "{err}");
        // Only `repo:tag@…` leaves a tag, and the tag names the pulled image.
        let tagged = reference.contains(":bydigest@");
        let images = ok(cli::otters(&home).args(["images", "--format", "json"]));
        assert_eq!(images.contains(&w.agent), tagged, "{images}");
        // A second run finds it in the store: no registry needed.
        ok(cli::otters(&home)
            .args(["run", "--dry-run", "--pull", "never", reference])
            .args(["--config", "webhook=x", "--allow-missing-mounts"]));
    }
}

/// Issue 18.3: with the docker executor run by root, the container user (65532) cannot write a
/// root-owned `rw` mount; otters says so (with what to do) before anything runs, instead of the
/// agent failing silently inside the container. Once that user may write it, the write works.
#[test]
fn docker_rw_mount_the_container_user_cannot_write_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let w = world("dockerrw");
    let pod = match podman(w.tmp.path()) {
        Ok(p) => p,
        Err(reason) => {
            skip(
                "docker_rw_mount_the_container_user_cannot_write_is_refused",
                &reason,
            );
            return;
        }
    };
    if !std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
    {
        skip(
            "docker_rw_mount_the_container_user_cannot_write_is_refused",
            "the container user differs from otters' only when otters runs as root",
        );
        return;
    }
    let data = w.tmp.path().join("data");
    let out_dir = w.tmp.path().join("out");
    for d in [&data, &out_dir] {
        fs::create_dir_all(d).unwrap();
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let root = w.tmp.path().join("agent-root");
    let run = |extra: &[&str]| {
        pod.run(&w)
            .args(["--config", "webhook=x", "--root"])
            .arg(&root)
            .arg("-v")
            .arg(format!("{}:/data", data.display()))
            .arg("-v")
            .arg(format!("{}:/out:rw", out_dir.display()))
            .args(extra)
            .output()
            .unwrap()
    };
    for extra in [&["--dry-run"][..], &[]] {
        let out = run(extra);
        let err = cli::flat(&String::from_utf8_lossy(&out.stderr));
        assert!(
            !out.status.success(),
            "ran with an unwritable rw mount: {err}"
        );
        assert!(
            err.contains("the container runs as 65532:65532")
                && err.contains("owner 0:0, mode 755")
                && err.contains(&format!("chown -R 65532:65532 {}", out_dir.display())),
            "{err}"
        );
    }
    assert!(!root.exists(), "a refused run wrote the tree");
    std::os::unix::fs::chown(&out_dir, Some(65532), Some(65532)).unwrap();
    let out = run(&[]);
    let r = report(&root);
    assert!(
        r.contains("OUTRW yes\n"),
        "{r}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out_dir.join("new").exists());
}

/// Issue 18.10: `run` of something that is not an agent says what it is, as `build` does for a
/// FROM: a container image, a bin image (index), an oras-py artifact.
#[test]
fn run_of_a_non_agent_says_what_it_is() {
    const TEST: &str = "run_of_a_non_agent_says_what_it_is";
    let w = world("notagent");
    let a = &w.reg.addr;
    let plain = w.tmp.path().join("plain");
    images::bin_single(&plain, "1", "app", b"#!/bin/sh\n", BinPrefix::None, None);
    images::skopeo_push(&plain, "1", &format!("{a}/plain:1"), None);
    let mut cases = vec![
        (
            format!("{a}/plain:1"),
            "its config is application/vnd.oci.image.config.v1+json, not an agent config (application/vnd.openotters.agent.config.v1+json); it is a container image",
        ),
        (format!("{a}/tool:1"), "it is a bin image: name it as RUNTIME or BIN"),
    ];
    if crate::support::tools::require(
        TEST,
        "python3",
        &crate::support::oras::PROBE,
        "install oras-py with `python3 -m pip install oras` (.ci/install does)",
    ) {
        fs::write(w.tmp.path().join("hello.txt"), "hi").unwrap();
        let target = format!("{a}/files:1");
        crate::support::oras::push(a, &target, w.tmp.path(), &["hello.txt"]);
        cases.push((target, "it is an OCI artifact"));
    }
    for (reference, needle) in cases {
        let home = w.tmp.path().join("fresh");
        let out = cli::otters(&home)
            .args(["run", "--dry-run", &reference])
            .output()
            .unwrap();
        // miette wraps long lines after a `/`.
        let err = cli::flat(&String::from_utf8_lossy(&out.stderr)).replace("/ ", "/");
        assert!(!out.status.success(), "{reference} ran: {err}");
        assert!(
            err.contains(&format!("{reference}: not an agent: ")) && err.contains(needle),
            "{reference}: missing {needle:?} in:\n{err}"
        );
    }
}
