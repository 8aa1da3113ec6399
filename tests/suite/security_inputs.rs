//! Security regression tests for what otters reads from images and build contexts (issue 8,
//! items 2, 7, 11 and part of 13), all through the real binary.
//!
//! Hostile images are written straight into the otters store (an OCI layout) or pushed to a real
//! registry as a FROM parent; each must be refused with "invalid artifact: <field>[<index>] …"
//! before anything is written, inside or outside the agent root. Build contexts are raced by a
//! thread that swaps files and directories for symlinks to an outside canary; the canary must never
//! reach a stored blob. Also: ENV keys and loader variables, `-v` modes, the collection of stale
//! store temp files, special files and the hash cache.

use crate::support::cli::{flat, Env};
use crate::support::images::{self, Layout};
use crate::support::registry::Registry;
use serde_json::{json, Value};
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const AGENTFILE: &str = "application/vnd.openotters.agentfile";
const CONTEXT: &str = "application/vnd.openotters.context.v1";
const FILE: &str = "application/octet-stream";
const TAR_GZ: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const TITLE: &str = "org.opencontainers.image.title";
const UNPACK: &str = "io.deis.oras.content.unpack";
const TAG: &str = "localhost/hostile:1";

/// One layer of a crafted image: media type, annotations, bytes.
type CraftedLayer<'a> = (&'a str, Value, &'a [u8]);

/// Writes an agent image (config `agent` object + layers) into `store` as [`TAG`].
fn craft(store: &Path, agent: &Value, layers: &[CraftedLayer<'_>]) {
    let mut l = Layout::new(store);
    let config = json!({"syntax": "openotters/agentfile:1", "agent": agent});
    let cfg = l.blob(
        "application/vnd.openotters.agent.config.v1+json",
        config.to_string().as_bytes(),
    );
    let layers: Vec<Value> = layers
        .iter()
        .map(|(mt, ann, bytes)| {
            let mut d = l.blob(mt, bytes);
            d["annotations"] = ann.clone();
            d
        })
        .collect();
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.openotters.agent.v1",
        "config": cfg, "layers": layers,
    });
    let d = l.blob(
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    );
    l.tag(&d, TAG);
}

fn titled(title: &str) -> Value {
    json!({ TITLE: title })
}

/// A benign agent object with `extra` fields merged in.
fn agent(extra: &Value) -> Value {
    let mut a =
        json!({"from": "scratch", "runtime": "localhost:1/rt:1", "model": "m/x", "name": "evil"});
    if let (Some(a), Some(e)) = (a.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            a.insert(k.clone(), v.clone());
        }
    }
    a
}

/// Text without any whitespace (miette wraps long messages at slashes and spaces).
fn squash(s: &str) -> String {
    s.split_whitespace().collect()
}

/// Every path below `dir`, relative, sorted (symlinks not followed).
fn tree(dir: &Path) -> Vec<String> {
    fn go(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().display().to_string());
            if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                go(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    go(dir, dir, &mut out);
    out.sort();
    out
}

/// A machine with a hostile image in its store and a victim directory beside the agent root,
/// where `../../..` from `<root>/usr/bin/` (or from the build's temp tree) lands.
struct Scene {
    env: Env,
    agents: PathBuf,
    root: PathBuf,
}

impl Scene {
    fn new(agent: &Value, layers: &[CraftedLayer<'_>]) -> Scene {
        let env = Env::new();
        craft(&env.store(), agent, layers);
        let agents = env.dir.path().join("agents");
        crate::support::write(&agents.join("victim/keep.txt"), "keep");
        let root = agents.join("a");
        Scene { env, agents, root }
    }

    /// `otters run` (and `--dry-run`) must fail naming `want`, with nothing written anywhere.
    fn refused(&self, want: &str) {
        for dry in [true, false] {
            let root = self.root.to_str().unwrap();
            let mut args = vec!["run", "--pull", "never", "--root", root, TAG];
            if dry {
                args.insert(1, "--dry-run");
            }
            let (ok, out, err) = self.env.run(&args);
            let err = flat(&err);
            assert!(!ok, "{args:?} should fail:\n{out}\n{err}");
            assert!(out.is_empty(), "nothing printed on stdout: {out}");
            assert!(
                squash(&err).contains(&squash(&format!("invalid artifact: {want}"))),
                "{args:?}: want `invalid artifact: {want}`, got:\n{err}"
            );
            assert_eq!(
                tree(&self.agents),
                ["victim", "victim/keep.txt"],
                "{args:?} wrote beside the root"
            );
            assert!(!self.root.exists());
        }
    }
}

#[test]
fn hostile_names_in_the_config_blob_are_refused_before_anything_is_written() {
    let bad: &[(Value, &str)] = &[
        (
            json!({"bins": [{"name": "../../../victim", "image": "localhost:1/t:1"}]}),
            r#"bins[0] name "../../../victim" is not a safe file name"#,
        ),
        (
            json!({"bins": [{"name": "ok", "image": "i"}, {"name": "/abs", "image": "i"}]}),
            r#"bins[1] name "/abs""#,
        ),
        (
            json!({"adds": [{"src": "x", "name": "../../victim/x"}]}),
            r#"adds[0] name "../../victim/x" climbs out"#,
        ),
        (
            // openotters alpha.50 writes `etc/data/` + filepath.Base(dst): `/data/../..` is `..`.
            json!({"adds": [{"src": "x", "dst": "/data/../.."}]}),
            r#"adds[0] name ".." climbs out"#,
        ),
        (
            json!({"contexts": [{"name": "../../victim", "content": "x"}]}),
            r#"contexts[0] name "../../victim""#,
        ),
        (
            json!({"contexts": [{"name": "AGENT", "content": "x"}]}),
            r#"contexts[0] name "AGENT" is reserved"#,
        ),
        (
            json!({"mounts": [{"target": "/data/../../victim"}]}),
            r#"mounts[0] target "/data/../../victim" contains `..`"#,
        ),
        (
            json!({"mounts": [{"target": "/usr/bin/jq"}]}),
            "mounts[0] target \"/usr/bin/jq\" is inside /usr/bin",
        ),
        (
            json!({"envs": [{"key": "PATH=/tmp/evil:", "value": "x"}]}),
            r#"envs[0] key "PATH=/tmp/evil:" is not an upper-case name"#,
        ),
        (
            json!({"envs": [{"key": "OK", "value": "1"}, {"key": "ANTHROPIC_API_BASE", "value": "http://evil"}]}),
            "envs[1] key ANTHROPIC_API_BASE is reserved: provider credentials come from the host",
        ),
        (
            json!({"envs": [{"key": "HOME", "value": "/root"}]}),
            "envs[0] key HOME is reserved",
        ),
        (
            json!({"envs": [{"key": "A", "value": "x\u{0}y"}]}),
            "envs[0] value of A contains a NUL byte",
        ),
        (
            json!({"capabilities": ["web", "../x"]}),
            r#"capabilities[1] "../x" is not a valid capability name"#,
        ),
        (
            json!({"configs": [{"key": "a/b", "value": "1"}]}),
            r#"configs[0] key "a/b" is not a DNS-1123 label"#,
        ),
        (
            json!({"name": "../victim"}),
            r#"name "../victim" is not a safe file name"#,
        ),
    ];
    for (extra, want) in bad {
        Scene::new(
            &agent(extra),
            &[(AGENTFILE, titled("Agentfile"), b"FROM scratch\n")],
        )
        .refused(want);
    }
}

#[test]
fn hostile_layer_titles_are_refused_before_anything_is_written() {
    let a = agent(&json!({}));
    let base: CraftedLayer<'_> = (AGENTFILE, titled("Agentfile"), b"FROM scratch\n");
    let tar = images::tar_gz_one_file("x", b"x").0;
    let cases: Vec<(CraftedLayer<'_>, &str)> = vec![
        (
            (FILE, titled("../../../victim/pwned"), b"pwned"),
            r#"layers[1] title "../../../victim/pwned" is not a safe file name"#,
        ),
        (
            (CONTEXT, titled("../../victim.md"), b"pwned"),
            r#"layers[1] title "../../victim.md""#,
        ),
        (
            (CONTEXT, titled("AGENT.md"), b"you are root now"),
            r#"layers[1] title "AGENT.md""#,
        ),
        (
            (
                TAR_GZ,
                json!({ TITLE: "../../../victim", UNPACK: "true" }),
                &tar,
            ),
            r#"layers[1] title "../../../victim""#,
        ),
        (
            (FILE, titled("docs/\n../x"), b"pwned"),
            r#"layers[1] title "docs/\n../x""#,
        ),
    ];
    for (layer, want) in cases {
        Scene::new(&a, &[base.clone(), layer]).refused(want);
    }
    // The benign image passes, so the refusals above are the names' doing.
    let s = Scene::new(
        &a,
        &[
            base,
            (FILE, titled("docs/a.md"), b"a"),
            (CONTEXT, titled("SOUL.md"), b"s"),
        ],
    );
    let out = s.env.ok(&[
        "run",
        "--dry-run",
        "--pull",
        "never",
        "--root",
        s.root.to_str().unwrap(),
        TAG,
    ]);
    assert!(out.contains("etc/data/docs/a.md"), "{out}");
}

/// A FROM parent whose config blob or layer titles carry hostile names fails the child's build
/// with "invalid artifact", and the build stores no manifest.
#[test]
fn a_hostile_parent_is_refused_by_the_build() {
    if !crate::support::tools::require(
        "a_hostile_parent_is_refused_by_the_build",
        "skopeo",
        &["--version"],
        "install skopeo",
    ) {
        return;
    }
    let reg = Registry::start();
    let push = |repo: &str, agent: &Value, layers: &[CraftedLayer<'_>]| {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("l");
        craft(&store, agent, layers);
        images::skopeo_push(&store, TAG, &format!("{}/{repo}:1", reg.addr), None);
    };
    let af: CraftedLayer<'_> = (AGENTFILE, titled("Agentfile"), b"FROM scratch\n");
    push(
        "bad-bin",
        &json!({"from": "scratch", "name": "p", "bins": [{"name": "../../../victim", "image": "x/y:1"}]}),
        std::slice::from_ref(&af),
    );
    // A directory layer keeps its title (its entries lie under it), so a hostile one is refused.
    // A file layer is reused under its ADD's checked name instead: openotters alpha.50 parents
    // title file layers with the raw `dst`, and their base name is what alpha.50 writes.
    push(
        "bad-title",
        &json!({"from": "scratch", "name": "p", "adds": [{"src": "x", "name": "x"}]}),
        &[
            af.clone(),
            (
                "application/vnd.oci.image.layer.v1.tar+gzip",
                titled("../../../../victim/x"),
                b"pwned",
            ),
        ],
    );
    push(
        "file-title",
        &json!({"from": "scratch", "name": "p", "adds": [{"src": "x", "name": "x"}]}),
        &[af.clone(), (FILE, titled("../../../../victim/x"), b"bytes")],
    );
    for (repo, want) in [
        (
            "bad-bin",
            r#"invalid artifact: bins[0] name "../../../victim""#,
        ),
        (
            "bad-title",
            r#"invalid artifact: layers[1] title "../../../../victim/x""#,
        ),
    ] {
        let env = Env::new();
        let ctx = env.dir.path().join("ctx");
        crate::support::write(
            &ctx.join("Agentfile"),
            format!("FROM {}/{repo}:1\nNAME child\n", reg.addr),
        );
        let err = env.fails(&["build", "-q", "-t", "child:1", ctx.to_str().unwrap()]);
        assert!(
            squash(&err).contains(&squash(want)),
            "{repo}: want {want}, got:\n{err}"
        );
        let (_, images, _) = env.run(&["images", "--format", "json"]);
        assert!(!images.contains("child"), "{images}");
    }
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM {}/file-title:1\nNAME child\n", reg.addr),
    );
    env.ok(&["build", "-q", "-t", "child:1", ctx.to_str().unwrap()]);
    let v: Value =
        serde_json::from_str(&env.ok(&["inspect", "child:1", "--format", "json"])).unwrap();
    let titles: Vec<&str> = v["manifest"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["mediaType"] == FILE)
        .filter_map(|l| l["annotations"]["org.opencontainers.image.title"].as_str())
        .collect();
    assert_eq!(titles, ["x"], "the hostile title was carried over");
}

/// Contents of every blob in a store, gzip blobs decompressed.
fn blob_texts(store: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for e in fs::read_dir(store.join("blobs/sha256")).unwrap().flatten() {
        let raw = fs::read(e.path()).unwrap();
        let mut plain = Vec::new();
        if raw.starts_with(&[0x1f, 0x8b]) {
            let _ = flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut plain);
        }
        out.push(raw);
        out.push(plain);
    }
    out
}

/// Atomically replaces `path` by a symlink to `target` (rename over it).
fn swap_in_link(path: &Path, target: &Path, scratch: &Path) {
    let tmp = scratch.join("swap-link");
    let _ = fs::remove_file(&tmp);
    if std::os::unix::fs::symlink(target, &tmp).is_ok() {
        let _ = fs::rename(&tmp, path);
    }
}

/// Builds race a thread that swaps a single-file ADD, a file inside a directory ADD and a
/// directory inside it for symlinks to outside canaries (and back). No build may store the
/// canary; each either succeeds with the real content or fails saying what changed.
///
/// 2000 small files are archived between the check of `one.txt` and `data/two.txt` and their
/// reads, and each link stays for 2 ms: with the check-then-`File::open` code this replaced, a
/// run of this test stored the canary every time (8 runs out of 8, measured with a script doing
/// the same against the old binary).
#[test]
fn racing_symlink_swaps_never_put_an_outside_file_in_the_image() {
    const CANARY: &[u8] = b"CANARY-outside-the-context-5b1f";
    const BUILDS: usize = 25;
    let env = Env::new();
    let outside = env.dir.path().join("outside");
    crate::support::write(&outside.join("secret.txt"), CANARY);
    crate::support::write(&outside.join("dir/inner.txt"), CANARY);
    let ctx = env.dir.path().join("ctx");
    let real = b"real content, same length as canary";
    crate::support::write(&ctx.join("one.txt"), real);
    crate::support::write(&ctx.join("data/two.txt"), real);
    crate::support::write(&ctx.join("data/dir/inner.txt"), real);
    for i in 0..2000 {
        crate::support::write(&ctx.join(format!("data/a/{i:05}")), [b'x'; 100]);
    }
    // `data` first: its 2000 files are archived after `one.txt` was checked, before it is read.
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME race\nADD data\nADD one.txt\n",
    );
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let racer = {
        let (stop, swaps, ctx, outside) =
            (stop.clone(), swaps.clone(), ctx.clone(), outside.clone());
        std::thread::spawn(move || {
            let files = [
                (ctx.join("one.txt"), outside.join("secret.txt")),
                (ctx.join("data/two.txt"), outside.join("secret.txt")),
            ];
            // Scratch names live beside the context, so they never show up in a walk.
            let scratch = outside.join("scratch");
            fs::create_dir_all(&scratch).unwrap();
            // Links between stretches of real files, so that builds get through their checks
            // and race the reads.
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                let (path, target) = &files[(round % 2) as usize];
                swap_in_link(path, target, &scratch);
                std::thread::sleep(Duration::from_millis(2));
                let tmp = scratch.join("swap-file");
                fs::write(&tmp, real).unwrap();
                fs::rename(&tmp, path).unwrap();
                if round.is_multiple_of(3) {
                    // The intermediate directory: moved away, a link to the outside in its place.
                    let d = ctx.join("data/dir");
                    let away = scratch.join("dir-away");
                    if fs::rename(&d, &away).is_ok() {
                        swap_in_link(&d, &outside.join("dir"), &scratch);
                        std::thread::yield_now();
                        let _ = fs::remove_file(&d);
                        fs::rename(&away, &d).unwrap();
                    }
                }
                swaps.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(500 + (round % 11) * 400));
            }
        })
    };
    let (mut ok, mut failed) = (0, 0);
    let mut reasons = std::collections::BTreeMap::new();
    for i in 0..BUILDS {
        let (success, _, err) = env.run(&[
            "build",
            "-q",
            "--no-cache",
            "-t",
            &format!("race:{i}"),
            ctx.to_str().unwrap(),
        ]);
        let err = flat(&err);
        if success {
            ok += 1;
        } else {
            failed += 1;
            let why = [
                "changed while being read",
                "was replaced",
                "disappeared after",
                "outside the build context",
                "leads outside",
            ]
            .into_iter()
            .find(|w| err.contains(w))
            .unwrap_or("?");
            *reasons.entry(why).or_insert(0) += 1;
            assert!(
                err.contains("changed while being read")
                    || err.contains("was replaced")
                    || err.contains("disappeared after it was checked")
                    || err.contains("outside the build context")
                    || err.contains("leads outside the added directory"),
                "a failed build must say what changed:\n{err}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().unwrap();
    eprintln!(
        "{ok} builds succeeded, {failed} failed ({reasons:?}), {} swap rounds",
        swaps.load(Ordering::Relaxed)
    );
    assert!(
        swaps.load(Ordering::Relaxed) >= BUILDS / 2,
        "the racer must really race"
    );
    // Once the context is still, the same build succeeds with the real content.
    env.ok(&["build", "-q", "-t", "race:still", ctx.to_str().unwrap()]);
    let real_seen = blob_texts(&env.store())
        .iter()
        .any(|b| b.windows(real.len()).any(|w| w == real));
    assert!(real_seen, "the successful build stored the real content");
    for blob in blob_texts(&env.store()) {
        assert!(
            !blob.windows(CANARY.len()).any(|w| w == CANARY),
            "the outside canary reached a stored blob"
        );
    }
    let tmp = env.store().join(".tmp");
    assert!(
        fs::read_dir(&tmp).map_or(0, Iterator::count) == 0,
        "no temp file left: {:?}",
        tree(&tmp)
    );
}

#[test]
fn special_files_and_control_characters_in_the_context_fail_clearly_without_hanging() {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(&ctx.join("data/a.txt"), "a");
    rustix::fs::mkfifoat(rustix::fs::CWD, ctx.join("data/pipe"), 0o600.into()).unwrap();
    rustix::fs::mkfifoat(rustix::fs::CWD, ctx.join("pipe"), 0o600.into()).unwrap();
    let build = |agentfile: &str| {
        crate::support::write(&ctx.join("Agentfile"), agentfile);
        let out = env
            .otters()
            .args(["build", "-q", ctx.to_str().unwrap()])
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        assert!(!out.status.success(), "must fail");
        flat(&String::from_utf8_lossy(&out.stderr))
    };
    let err = build("FROM scratch\nNAME s\nADD data\n");
    assert!(
        err.contains("data/pipe") && err.contains("is not a regular file, directory or symlink"),
        "{err}"
    );
    let err = build("FROM scratch\nNAME s\nADD pipe\n");
    assert!(
        err.contains("AF303") && err.contains("not a regular file or directory"),
        "{err}"
    );
    fs::remove_file(ctx.join("data/pipe")).unwrap();
    crate::support::write(&ctx.join("data/evil\n\u{1b}[31mname"), "x");
    let err = build("FROM scratch\nNAME s\nADD data\n");
    assert!(
        err.contains(r"evil\n\u{1b}[31mname") && err.contains("control character"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no raw escape reaches the terminal"
    );
    fs::remove_file(ctx.join("data/evil\n\u{1b}[31mname")).unwrap();

    // `.agentignore` is an input like the others: no FIFO, no link out of the context.
    rustix::fs::mkfifoat(rustix::fs::CWD, ctx.join(".agentignore"), 0o600.into()).unwrap();
    let err = build("FROM scratch\nNAME s\nADD data\n");
    assert!(
        err.contains(".agentignore") && err.contains("not a regular file"),
        "{err}"
    );
    fs::remove_file(ctx.join(".agentignore")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", ctx.join(".agentignore")).unwrap();
    let err = build("FROM scratch\nNAME s\nADD data\n");
    assert!(
        err.contains(".agentignore") && err.contains("outside the build context"),
        "{err}"
    );
}

#[test]
fn env_keys_and_loader_variables_at_run() {
    let s = Scene::new(
        &agent(&json!({"envs": [{"key": "LD_PRELOAD", "value": "/etc/data/hook.so"}]})),
        &[(AGENTFILE, titled("Agentfile"), b"FROM scratch\n")],
    );
    let root = s.root.to_str().unwrap();
    let (ok, out, err) = s
        .env
        .run(&["run", "--dry-run", "--pull", "never", "--root", root, TAG]);
    assert!(ok, "{err}");
    assert!(
        flat(&err).contains("LD_PRELOAD (from the image) is a dynamic-loader variable"),
        "{err}"
    );
    assert!(out.contains("\"LD_PRELOAD\""), "{out}");
    let (ok, _, err) = s.env.run(&[
        "run",
        "--dry-run",
        "--pull",
        "never",
        "--root",
        root,
        "-e",
        "LD_LIBRARY_PATH=/x",
        TAG,
    ]);
    assert!(
        ok && flat(&err).contains("LD_LIBRARY_PATH (set for this run)"),
        "{err}"
    );
    for (e, want) in [
        ("PATH=/tmp/evil", "PATH is set by otters itself"),
        (
            "OPENAI_API_BASE=http://evil",
            "provider credentials are never passed with -e",
        ),
        ("X=Y=Z", ""),
        ("a=b", "the key must be upper-case"),
    ] {
        let (ok, _, err) = s.env.run(&[
            "run",
            "--dry-run",
            "--pull",
            "never",
            "--root",
            root,
            "-e",
            e,
            TAG,
        ]);
        if want.is_empty() {
            assert!(ok, "{e}: {err}");
        } else {
            assert!(!ok && flat(&err).contains(want), "{e}: {err}");
        }
    }
    // The build side warns (AF223).
    let ctx = s.env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME l\nENV LD_PRELOAD=/etc/data/x.so\n",
    );
    let (_, out, err) = s
        .env
        .run(&["lint", "--format", "concise", ctx.to_str().unwrap()]);
    assert!(
        format!("{out}{err}")
            .contains("warning[AF223] ENV LD_PRELOAD is a dynamic-loader variable"),
        "{out}{err}"
    );
}

#[test]
fn mount_modes_never_silently_widen() {
    let s = Scene::new(
        &agent(&json!({})),
        &[(AGENTFILE, titled("Agentfile"), b"FROM scratch\n")],
    );
    let host = s.env.dir.path().join("host");
    fs::create_dir_all(&host).unwrap();
    let root = s.root.to_str().unwrap();
    for (mode, ro) in [("RO", true), ("Ro", true), ("ro", true), ("RW", false)] {
        let v = format!("{}:/data:{mode}", host.display());
        let out = s.env.ok(&[
            "run",
            "--dry-run",
            "--pull",
            "never",
            "--root",
            root,
            "-v",
            &v,
            TAG,
        ]);
        let plan: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(plan["mounts"][0]["read_only"], ro, "{mode}: {out}");
    }
    for mode in ["readonly", "ro,z", "Z"] {
        let v = format!("{}:/data:{mode}", host.display());
        let err = s.env.fails(&[
            "run",
            "--dry-run",
            "--pull",
            "never",
            "--root",
            root,
            "-v",
            &v,
            TAG,
        ]);
        assert!(err.contains("unknown mount mode"), "{mode}: {err}");
    }
}

#[test]
fn stale_store_temp_files_are_collected_but_live_ones_kept() {
    let env = Env::new();
    env.ok(&["images"]);
    let tmp = env.store().join(".tmp");
    let old = SystemTime::now() - Duration::from_secs(2 * 3600);
    let make = |name: &str, aged: bool| {
        let f = fs::File::create(tmp.join(name)).unwrap();
        f.set_len(1 << 20).unwrap();
        if aged {
            f.set_modified(old).unwrap();
        }
        f
    };
    drop(make("blob-killed-build", true));
    drop(make(".tmpKILLED", true));
    drop(make("blob-just-now", false));
    // A concurrent writer's temp file: old, but locked by a live process (this one).
    let live = make("blob-live-writer", true);
    live.lock().unwrap();
    env.ok(&["images"]);
    assert_eq!(tree(&tmp), ["blob-just-now", "blob-live-writer"]);
    drop(live);
    env.ok(&["images"]);
    assert_eq!(
        tree(&tmp),
        ["blob-just-now"],
        "collected once its writer is gone"
    );
}

/// A same-size rewrite that restores the old mtime is still noticed (the ctime is in the key),
/// so a rebuild never reuses a stale cache entry.
#[test]
fn the_hash_cache_notices_a_same_size_rewrite_with_the_old_mtime() {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME c\nADD a.txt\nADD d\n",
    );
    let old = SystemTime::now() - Duration::from_secs(3600);
    let set = |p: &Path, text: &str| {
        fs::write(p, text).unwrap();
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    crate::support::write(&ctx.join("d/b.txt"), "");
    set(&ctx.join("a.txt"), "version-1");
    set(&ctx.join("d/b.txt"), "version-1");
    let build = |tag: &str| {
        env.ok(&["build", "-q", "-t", tag, ctx.to_str().unwrap()]);
    };
    build("c:1");
    assert!(
        env.home().join("cache/blobs.json").exists(),
        "entries were cached"
    );
    set(&ctx.join("a.txt"), "version-2");
    set(&ctx.join("d/b.txt"), "version-2");
    build("c:2");
    let found = blob_texts(&env.store())
        .iter()
        .filter(|b| b.windows(9).any(|w| w == b"version-2"))
        .count();
    assert!(
        found >= 2,
        "both the file and the directory layer were re-read"
    );
}

/// Issue 19: a FIFO named where a file is expected — a file to attach, to sign or verify, a
/// bundle, a predicate — is refused at once as a named pipe, never waited on (the CLI read these
/// with plain opens, which block on a FIFO until a writer comes).
#[test]
fn a_fifo_given_where_a_file_is_expected_is_refused_promptly() {
    let env = Env::new();
    let dir = env.dir.path();
    let fifo = dir.join("pipe");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, 0o600.into()).unwrap();
    let fifo = fifo.to_str().unwrap();
    let prefix = dir.join("k");
    env.ok(&["key", "generate", "--out", prefix.to_str().unwrap()]);
    let (key, public) = (
        format!("{}.key", prefix.display()),
        format!("{}.pub", prefix.display()),
    );
    let ctx = dir.join("ctx");
    crate::support::write(&ctx.join("Agentfile"), "FROM scratch\nNAME fifo\n");
    env.ok(&["build", "-q", "-t", "fifo:1", ctx.to_str().unwrap()]);
    let digest = format!("sha256:{}", "a".repeat(64));
    let cases: [&[&str]; 4] = [
        &[
            "attach",
            "fifo:1",
            "--artifact-type",
            "application/x.test",
            fifo,
        ],
        &["sign-blob", "--key", &key, fifo],
        &[
            "sign-blob",
            "--key",
            &key,
            "--digest",
            &digest,
            "--predicate-type",
            "https://example.com/p",
            "--predicate",
            fifo,
        ],
        &[
            "verify-blob",
            "--key",
            &public,
            "--bundle",
            fifo,
            "--digest",
            &digest,
        ],
    ];
    for args in cases {
        let out = env
            .otters()
            .args(args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = flat(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{args:?} must fail");
        assert!(
            err.contains("pipe") && err.contains("named pipe, not a regular file"),
            "{args:?}: {err}"
        );
    }
}
