//! Hostile images against `otters run` and `otters save` (issue 8): symlink chains across layers,
//! hard links through replaced directories, tar header bombs, corrupt store blobs, the tree-wide
//! extraction budget, and a run-tree swap that fails midway.
//!
//! Every test runs the real binary on an agent image whose layers were crafted here, with a
//! temp dir standing for the host: a `canary` file beside the agent root must stay as it was.
//! Layer paths reach the host through `/` (enough `..` to get there, then the host dir's absolute
//! path as a layer title), so they do not depend on how deep the root is.

use crate::support::cli::{flat, Env};
use crate::support::hostile_layers::{self as h, dir, file, hardlink, symlink};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::Registry;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Shell builtins only: the runtime's PATH holds nothing.
const RUNTIME: &str = "#!/bin/sh\necho ran > ran.txt\n";

/// A registry with a runtime, an agent built from it, and a host dir with a canary.
struct CanaryWorld {
    env: Env,
    reg: Registry,
    agent: String,
    /// Stands for the host: `canary`, and the agent roots.
    host: tempfile::TempDir,
}

fn world() -> CanaryWorld {
    let env = Env::new();
    let reg = Registry::start();
    let a = reg.addr.clone();
    let rt = env.dir.path().join("rt");
    images::push_bin_index(
        &rt,
        &format!("{a}/runtime:1"),
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        None,
    );
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME probe\nRUNTIME {a}/runtime:1\nMODEL m\n"),
    );
    let agent = format!("{a}/agent:1");
    env.ok(&["build", "-q", "-t", &agent, ctx.to_str().unwrap()]);
    // Layer titles must be plain names: no leading dot in the host dir's name.
    let host = tempfile::Builder::new()
        .prefix("otterssec")
        .tempdir()
        .unwrap();
    fs::write(host.path().join("canary"), "original").unwrap();
    CanaryWorld {
        env,
        reg,
        agent,
        host,
    }
}

impl CanaryWorld {
    fn store(&self) -> PathBuf {
        self.env.store()
    }

    /// The host dir as a relative path from `/` (for layer titles that reach it through `/`).
    fn host_rel(&self) -> String {
        let p = fs::canonicalize(self.host.path()).unwrap();
        p.to_str().unwrap().trim_start_matches('/').to_owned()
    }

    fn root(&self, name: &str) -> PathBuf {
        self.host.path().join(name)
    }

    /// Tags the agent with extra directory layers as `localhost/evil-<case>:1`.
    fn hostile(&self, case: &str, layers: &[(&str, &[u8])]) -> String {
        let tag = format!("localhost/evil-{case}:1");
        h::agent_with_layers(&self.store(), &self.agent, &tag, layers);
        tag
    }

    /// `otters run TAG --root <host>/<root> EXTRA…` (the runtime is pulled when missing).
    fn run(&self, tag: &str, root: &str, extra: &[&str]) -> (bool, String) {
        let root = self.root(root);
        let mut args = vec!["run", tag, "--root", root.to_str().unwrap()];
        args.extend(extra);
        let (ok, out, err) = self.env.run(&args);
        (ok, flat(&format!("{out}{err}")))
    }

    /// The canary is as it was, not hard-linked, and the host dir holds nothing but the canary
    /// and the agent roots in `roots` (no temp dir left behind).
    fn assert_host_untouched(&self, roots: &[&str]) {
        let canary = self.host.path().join("canary");
        assert_eq!(fs::read_to_string(&canary).unwrap(), "original");
        assert_eq!(
            fs::metadata(&canary).unwrap().nlink(),
            1,
            "the canary was hard-linked into a tree"
        );
        let mut left: Vec<String> = fs::read_dir(self.host.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want: Vec<String> = roots.iter().map(|s| (*s).to_owned()).collect();
        want.push("canary".into());
        want.sort();
        assert_eq!(left, want, "unexpected files in the host dir");
    }
}

/// `q/` ×16 then `..` ×16: inside while `q` is a directory, `/` once `q -> .`.
fn climb_to_slash() -> String {
    format!(
        "{}{}",
        "q/".repeat(16),
        "../".repeat(16).trim_end_matches('/')
    )
}

const DOCKER: &[&str] = &["--executor", "docker", "--docker", "/nonexistent/docker"];

#[test]
fn symlink_chain_across_layers_never_writes_on_the_host() {
    let w = world();
    // Layer 1: `p -> q/q/…/../..` while `q` is a directory, then `q -> .`: `p` would be `/`.
    let l1 = h::gz(&h::tar(&[
        dir("q/"),
        symlink("p", &climb_to_slash()),
        symlink("q", "."),
    ]));
    // Layer 2, titled to land below `p`: `<host>/canary` through `/`.
    let l2 = h::gz(&h::tar(&[file("canary", b"pwned")]));
    let title2 = format!("a/p/{}", w.host_rel());
    let tag = w.hostile("chain", &[("a", &l1), (&title2, &l2)]);
    for (root, extra) in [("agent", &[][..]), ("agent-docker", DOCKER)] {
        let (ok, out) = w.run(&tag, root, extra);
        assert!(!ok, "{root}: the chain was accepted: {out}");
        assert!(out.contains("entry \"p\""), "{root}: {out}");
        assert!(out.contains("`..` after a name"), "{root}: {out}");
        w.assert_host_untouched(&[]);
    }
}

#[test]
fn a_layer_below_an_earlier_layers_link_is_refused() {
    let w = world();
    // `d/p -> ..` stays inside its layer; a later layer rooted below it must not go through it.
    let l1 = h::gz(&h::tar(&[symlink("d/p", "..")]));
    let l2 = h::gz(&h::tar(&[file("x", b"x")]));
    let tag = w.hostile("below", &[("a", &l1), ("a/d/p/sub", &l2)]);
    for (root, extra) in [("agent", &[][..]), ("agent-docker", DOCKER)] {
        let (ok, out) = w.run(&tag, root, extra);
        assert!(!ok, "{root}: {out}");
        assert!(
            out.contains("is a symlink, and otters never writes through one"),
            "{root}: {out}"
        );
        w.assert_host_untouched(&[]);
    }
}

#[test]
fn a_hard_link_through_a_replaced_directory_never_links_a_host_file() {
    let w = world();
    // `x/canary` is a file of the layer; then `x` becomes a link that (once `q -> .`) reaches
    // the host dir, and `hl` hard-links `x/canary`.
    let x_target = format!("{}/{}", climb_to_slash(), w.host_rel());
    let layer = h::gz(&h::tar(&[
        file("x/canary", b"mine"),
        dir("q/"),
        symlink("x", &x_target),
        symlink("q", "."),
        hardlink("hl", "x/canary"),
    ]));
    let tag = w.hostile("hardlink", &[("h", &layer)]);
    for (root, extra) in [("agent", &[][..]), ("agent-docker", DOCKER)] {
        let (ok, out) = w.run(&tag, root, extra);
        assert!(!ok, "{root}: {out}");
        assert!(out.contains("entry \"x\""), "{root}: {out}");
        w.assert_host_untouched(&[]);
    }
}

/// Peak RSS in KiB of `otters ARGS` (GNU time), with its combined output.
fn peak_rss(w: &CanaryWorld, args: &[&str]) -> (u64, String) {
    let rss = w.env.dir.path().join("rss.txt");
    let out = std::process::Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(assert_cmd::cargo::cargo_bin("otters"))
        .args(args)
        .env("OTTERS_HOME", w.env.home())
        .env("DOCKER_CONFIG", w.env.docker())
        .env("NO_COLOR", "1")
        .output()
        .expect("run /usr/bin/time");
    let kib = fs::read_to_string(&rss)
        .unwrap()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .expect("time wrote no RSS");
    (
        kib,
        flat(&format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    )
}

#[test]
fn tar_header_bombs_are_refused_with_bounded_memory() {
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("SKIP tar_header_bombs_are_refused_with_bounded_memory: no /usr/bin/time");
        return;
    }
    let w = world();
    // A PAX record and a GNU long name claiming 1 GiB, with the gigabyte really there: the
    // `tar` crate read such records whole into memory before any check.
    for (case, flag) in [("pax", b'x'), ("longname", b'L')] {
        let head = h::header(b"bomb", flag, 1 << 30, b"");
        let layer = h::gz_repeat(&head, &vec![b'a'; 1 << 20], 1024, &[0u8; 1024]);
        assert!(layer.len() < 4 << 20, "{} bytes", layer.len());
        let tag = w.hostile(&format!("bomb-{case}"), &[("bomb", &layer)]);
        let root = w.root("agent");
        let (kib, out) = peak_rss(
            &w,
            &[
                "run",
                &tag,
                "--pull",
                "never",
                "--root",
                root.to_str().unwrap(),
            ],
        );
        assert!(
            out.contains("more than the 65536-byte limit"),
            "{case}: {out}"
        );
        eprintln!("run, {case} bomb: peak RSS {kib} KiB");
        assert!(kib < 100 * 1024, "{case}: peak RSS {kib} KiB");
        w.assert_host_untouched(&[]);
    }
    // `otters load` reads archives with the same reader: a sparse 1 GiB PAX record.
    let archive = w.host.path().join("bomb.tar");
    fs::write(&archive, h::header(b"bomb", b'x', 1 << 30, b"")).unwrap();
    fs::File::options()
        .write(true)
        .open(&archive)
        .unwrap()
        .set_len((1 << 30) + 2048)
        .unwrap();
    let (kib, out) = peak_rss(&w, &["load", "-i", archive.to_str().unwrap()]);
    assert!(
        out.contains("more than the 65536-byte limit"),
        "load: {out}"
    );
    eprintln!("load bomb: peak RSS {kib} KiB");
    assert!(kib < 100 * 1024, "load: peak RSS {kib} KiB");
    fs::remove_file(&archive).unwrap();
}

/// A `tar+zstd` layer gets the bounds of a `tar+gzip` one: the PAX header bomb (its 256 MiB
/// really there, a few KiB compressed) is refused at the header with bounded memory, a frame that
/// asks for a 2 GiB window is refused before anything is allocated, and a compression otters
/// cannot read is refused by its media type, never unpacked as a tar.
#[test]
fn zstd_layers_are_bounded_as_gzip_layers_are() {
    // 256 MiB of one byte: zstd makes it a few KiB.
    let mut bomb = h::header(b"bomb", b'x', 1 << 30, b"").to_vec();
    bomb.resize(bomb.len() + (256 << 20), b'a');
    let Some(bomb) = crate::support::tools::zstd(&bomb, 1) else {
        crate::support::tools::skip(
            "zstd_layers_are_bounded_as_gzip_layers_are",
            "the zstd tool is missing (apt-get install zstd)",
        );
        return;
    };
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    let mut window = 0xFD2F_B528u32.to_le_bytes().to_vec();
    window.extend_from_slice(&[0x00, (31 - 10) << 3]);
    window.extend_from_slice(&[0; 64]);
    let zstd_type = "application/vnd.oci.image.layer.v1.tar+zstd";
    let bzip2_type = "application/vnd.oci.image.layer.v1.tar+bzip2";
    let w = world();
    for (case, media_type, layer, want) in [
        ("bomb", zstd_type, &bomb, "more than the 65536-byte limit"),
        (
            "window",
            zstd_type,
            &window,
            "zstd: a frame asks for a 2147483648-byte window, more than the 134217728 bytes otters allows",
        ),
        (
            "bzip2",
            bzip2_type,
            &bomb,
            "has media type application/vnd.oci.image.layer.v1.tar+bzip2, a compression otters cannot read",
        ),
    ] {
        let tag = format!("localhost/evil-zstd-{case}:1");
        h::agent_with_typed_layers(&w.store(), &w.agent, &tag, &[("data", media_type, layer)]);
        let root = w.root("agent");
        let args = ["run", &tag, "--pull", "never", "--root", root.to_str().unwrap()];
        let out = if Path::new("/usr/bin/time").exists() {
            let (kib, out) = peak_rss(&w, &args);
            eprintln!("run, zstd {case}: peak RSS {kib} KiB");
            assert!(kib < 100 * 1024, "{case}: peak RSS {kib} KiB");
            out
        } else {
            w.run(&tag, "agent", &["--pull", "never"]).1
        };
        assert!(out.contains(want), "{case}: {out}");
        // Refused before the runtime ran, and nothing is left on the host.
        assert!(!root.join("workspace/ran.txt").exists(), "{case}: the runtime ran");
        w.assert_host_untouched(&[]);
    }
}

#[test]
fn a_corrupt_layer_in_the_store_is_refused_by_run_and_save() {
    let w = world();
    let layer = h::gz(&h::tar(&[
        file("notes.txt", b"hello\n"),
        file("more.txt", b"x"),
    ]));
    let tag = w.hostile("corrupt", &[("data", &layer)]);
    let (ok, out) = w.run(&tag, "agent", &[]);
    assert!(ok, "the intact image must run: {out}");
    let root = w.root("agent");
    assert_eq!(
        fs::read_to_string(root.join("etc/data/data/notes.txt")).unwrap(),
        "hello\n"
    );
    fs::remove_file(root.join("workspace/ran.txt")).unwrap();
    let digest = crate::support::sha256(&layer);
    h::flip_byte(&h::blob_path(&w.store(), &digest), Some(layer.len() / 2));
    let (ok, out) = w.run(&tag, "agent", &[]);
    assert!(!ok, "a corrupt layer was unpacked: {out}");
    assert!(
        out.contains(&format!("blob {digest} in the store is corrupt")),
        "{out}"
    );
    assert!(out.contains("otters pull"), "{out}");
    // The previous tree is as it was, and the runtime did not run.
    assert!(!root.join("workspace/ran.txt").exists());
    assert!(root.join("etc/data/data/notes.txt").exists());
    w.assert_host_untouched(&["agent"]);
    // `save` must not export the damaged bytes under the old digest.
    let archive = w.host.path().join("out.tar");
    let (ok, _, err) = w.env.run(&["save", &tag, "-o", archive.to_str().unwrap()]);
    let err = flat(&err);
    assert!(!ok, "save exported a corrupt blob");
    assert!(
        err.contains(&format!("blob {digest} in the store is corrupt")),
        "{err}"
    );
    w.assert_host_untouched(&["agent"]);
}

#[test]
fn a_corrupt_runtime_blob_is_refused_before_the_runtime_runs() {
    let w = world();
    let (ok, out) = w.run(&w.agent, "agent", &[]);
    assert!(ok, "{out}");
    let root = w.root("agent");
    fs::remove_file(root.join("workspace/ran.txt")).unwrap();
    // The bin lookup stops at the binary, before the gzip trailer: flip the trailer's last byte.
    let (layer, _) = images::tar_gz_one_file("runtime", RUNTIME.as_bytes());
    let digest = crate::support::sha256(&layer);
    let blob = h::blob_path(&w.store(), &digest);
    assert!(blob.exists(), "the runtime layer is not in the store");
    h::flip_byte(&blob, None);
    for (root_name, extra) in [("agent", &[][..]), ("agent-docker", DOCKER)] {
        let (ok, out) = w.run(&w.agent, root_name, extra);
        assert!(!ok, "{root_name}: a corrupt runtime was installed: {out}");
        assert!(
            out.contains(&format!("blob {digest} in the store is corrupt")),
            "{root_name}: {out}"
        );
    }
    assert!(!root.join("workspace/ran.txt").exists(), "the runtime ran");
    w.assert_host_untouched(&["agent"]);
}

#[test]
fn the_extraction_budget_spans_all_layers() {
    let w = world();
    // 90 000 entries per layer (under the 100 000 per-layer limit), three layers: more than the
    // 250 000 entries one agent tree may hold.
    let entry = h::header(b"d/", b'5', 0, b"");
    let chunk: Vec<u8> = entry.iter().copied().cycle().take(512 * 2048).collect();
    let per_layer = 90_000 / 2048 * 2048;
    let layer = h::gz_repeat(&[], &chunk, per_layer / 2048, &[0u8; 1024]);
    let tag = w.hostile("budget", &[("b1", &layer), ("b2", &layer), ("b3", &layer)]);
    let (ok, out) = w.run(&tag, "agent", &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("more than 250000 entries"), "{out}");
    assert!(out.contains("across all its layers"), "{out}");
    w.assert_host_untouched(&[]);
}

/// Runs `chattr`; false when the file system or the process cannot set the flag.
fn chattr(flag: &str, p: &Path) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .arg(p)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Clears the immutable flag on everything below a dir on drop (wherever a failing swap moved
/// the pinned file), so the temp dirs can always be removed.
struct Immutable(PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .args(["-R", "-i"])
            .arg(&self.0)
            .output();
    }
}

#[test]
fn a_failed_swap_keeps_the_previous_workspace() {
    let w = world();
    let probe = w.host.path().join("probe");
    fs::write(&probe, "").unwrap();
    let can = chattr("+i", &probe) && chattr("-i", &probe);
    fs::remove_file(&probe).unwrap();
    if !can || rustix_uid() != 0 {
        eprintln!("SKIP a_failed_swap_keeps_the_previous_workspace: needs root and chattr +i");
        return;
    }
    let (ok, out) = w.run(&w.agent, "agent", &[]);
    assert!(ok, "{out}");
    let root = w.root("agent");
    for d in ["workspace", "home", "var/lib"] {
        fs::write(root.join(d).join("keep.txt"), d).unwrap();
    }
    let check = |case: &str| {
        for d in ["workspace", "home", "var/lib"] {
            assert_eq!(
                fs::read_to_string(root.join(d).join("keep.txt")).unwrap_or_default(),
                d,
                "{case}: {d} was lost"
            );
        }
        assert!(root.join("workspace/ran.txt").exists(), "{case}");
        w.assert_host_untouched(&["agent"]);
    };
    // 1. The docker executor (as root) chowns the carried directories: an immutable file in
    //    `home/` makes that fail after `workspace/` would have been moved.
    let pinned = root.join("home/keep.txt");
    let guard = Immutable(w.host.path().to_owned());
    assert!(chattr("+i", &pinned));
    let (ok, out) = w.run(&w.agent, "agent", DOCKER);
    assert!(!ok, "{out}");
    assert!(out.contains("cannot chown"), "{out}");
    drop(guard);
    check("chown");
    // 2. Moving `var/lib/` fails after `workspace/` and `home/` were moved.
    let pinned = root.join("var/lib");
    let guard = Immutable(w.host.path().to_owned());
    assert!(chattr("+i", &pinned));
    let (ok, out) = w.run(&w.agent, "agent", &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("carry over"), "{out}");
    drop(guard);
    check("rename");
    // And with nothing in the way, the next run works and keeps them.
    fs::remove_file(root.join("workspace/ran.txt")).unwrap();
    let (ok, out) = w.run(&w.agent, "agent", &[]);
    assert!(ok, "{out}");
    check("after");
    drop(w.reg);
}

fn rustix_uid() -> u32 {
    fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

#[test]
fn an_added_directory_with_links_that_stay_inside_still_runs() {
    let w = world();
    let ctx = w.env.dir.path().join("ctx2");
    crate::support::write(&ctx.join("data/a.txt"), "a");
    crate::support::write(&ctx.join("data/sub/b.txt"), "b");
    std::os::unix::fs::symlink("../a.txt", ctx.join("data/sub/up")).unwrap();
    std::os::unix::fs::symlink("sub/b.txt", ctx.join("data/down")).unwrap();
    crate::support::write(
        &ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME probe\nRUNTIME {}/runtime:1\nMODEL m\nADD data\n",
            w.reg.addr
        ),
    );
    let tag = format!("{}/links:1", w.reg.addr);
    w.env
        .ok(&["build", "-q", "-t", &tag, ctx.to_str().unwrap()]);
    let (ok, out) = w.run(&tag, "agent", &[]);
    assert!(ok, "{out}");
    let root = w.root("agent");
    let mut found = Vec::new();
    for e in walk(&root.join("etc/data")) {
        if fs::symlink_metadata(&e).unwrap().file_type().is_symlink() {
            found.push(fs::read_to_string(&e).unwrap());
        }
    }
    found.sort();
    assert_eq!(found, ["a", "b"], "links were not kept");
    w.assert_host_untouched(&["agent"]);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// Runs of one agent at the same time wait for each other's swap instead of interleaving, and a
/// tree a killed run left half-written beside the root (`.<root>.tmp-*`) is collected by the next
/// run; a `.<root>.old-*` directory, which may hold a workspace a cut-short swap left, is kept.
#[test]
fn concurrent_runs_of_one_agent_and_leftovers_of_killed_runs() {
    let w = world();
    let (ok, out) = w.run(&w.agent, "agent", &[]);
    assert!(ok, "{out}");
    let stale = w.root(".agent.tmp-killed");
    fs::create_dir_all(stale.join("etc")).unwrap();
    fs::write(stale.join("etc/half"), "x").unwrap();
    let kept = w.root(".agent.old-cut");
    fs::create_dir_all(kept.join("workspace")).unwrap();
    fs::write(kept.join("workspace/notes"), "mine").unwrap();

    let runs: Vec<_> = (0..4)
        .map(|_| {
            let root = w.root("agent");
            let mut cmd = w.env.otters();
            cmd.args(["run", &w.agent, "--root", root.to_str().unwrap()]);
            std::thread::spawn(move || cmd.output().unwrap())
        })
        .collect();
    for r in runs {
        let out = r.join().unwrap();
        assert!(
            out.status.success(),
            "a concurrent run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(w.root("agent/workspace/ran.txt").is_file());
    assert!(
        !stale.exists(),
        "the killed run's half tree was not collected"
    );
    assert_eq!(
        fs::read_to_string(kept.join("workspace/notes")).unwrap(),
        "mine"
    );
    fs::remove_dir_all(&kept).unwrap();
    w.assert_host_untouched(&["agent"]);
}

/// The previous tree's `etc/agent.yaml` (read for the agent's id) is the agent's to change: a FIFO
/// or a link to `/dev/zero` there must neither hang nor exhaust the next run.
#[test]
fn a_planted_agent_yaml_never_hangs_the_next_run() {
    let w = world();
    let (ok, out) = w.run(&w.agent, "agent", &[]);
    assert!(ok, "{out}");
    let yaml = w.root("agent/etc/agent.yaml");
    for plant in ["fifo", "zero"] {
        fs::remove_file(&yaml).unwrap();
        if plant == "fifo" {
            assert!(std::process::Command::new("mkfifo")
                .arg(&yaml)
                .status()
                .unwrap()
                .success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", &yaml).unwrap();
        }
        let (ok, out) = w.run(&w.agent, "agent", &[]);
        assert!(ok, "{plant}: {out}");
        let text = fs::read_to_string(&yaml).unwrap();
        assert!(
            text.contains("id:"),
            "{plant}: a fresh agent.yaml is written"
        );
    }
}
