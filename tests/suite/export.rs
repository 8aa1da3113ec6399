//! `otters export --as runnable` through the real binary: the image is read by skopeo (no
//! `--raw`), unpacked by umoci into the same files as a run's tree, has the same digest from two
//! fresh `OTTERS_HOME`s, shares its runtime and BIN layers between agents, and runs under podman
//! from a local registry with no otters on the host: the static runtime with its BIN on PATH, its
//! CONFIG and ENV, a bind-mounted MOUNT, as a non-root user.

use crate::support::cli::{self, flat, ok};
use crate::support::runnable::{assert_report, last_line, podman, StaticWorld};
use crate::support::{run_ok, write};
use serde_json::Value;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

fn skopeo_inspect(reference: &str) -> Value {
    let out = run_ok(Command::new("skopeo").args([
        "inspect",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]));
    serde_json::from_str(&out).expect("skopeo inspect JSON")
}

/// `otters run --executor docker` with a stand-in docker CLI that does nothing: the tree the
/// docker executor would show the container, written at `root`.
fn run_tree(w: &StaticWorld, agent: &str, root: &Path) {
    let fake = w.tmp.path().join("fake-docker");
    write(&fake, "#!/bin/sh\nexit 0\n");
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let data = w.tmp.path().join("run-data");
    let out = w.tmp.path().join("run-out");
    fs::create_dir_all(&data).unwrap();
    fs::create_dir_all(&out).unwrap();
    // The container user must be able to write an rw mount (otters refuses it otherwise when it
    // runs as root, as here: docs/run.md); a non-root otters owns the directory already.
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(&out, Some(65532), Some(65532)).unwrap();
    }
    ok(cli::otters(&w.home)
        .args(["run", "--executor", "docker", "--docker"])
        .arg(&fake)
        .arg("--root")
        .arg(root)
        .args(["--config", "webhook=https://example.com/hook", "-v"])
        .arg(format!("{}:/data:ro", data.display()))
        .arg("-v")
        .arg(format!("{}:/out", out.display()))
        .arg(agent));
}

/// Every file below `dir`, relative, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn layer_titles(store_manifest: &Value) -> Vec<(String, String)> {
    store_manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["annotations"]["org.opencontainers.image.title"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                l["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn manifest_of(reference: &str) -> Value {
    let raw = run_ok(Command::new("skopeo").args([
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]));
    serde_json::from_str(&raw).unwrap()
}

/// umoci unpacks the image into the files of a run's tree (the docker executor's view), its
/// writable directories owned by the image's user, no directory world-writable.
fn umoci_gives_the_run_tree(w: &StaticWorld, agent: &str, image: &str) {
    // umoci unpacks it into the files of a run's tree (the docker executor's view).
    let layout = w.tmp.path().join("layout");
    run_ok(Command::new("skopeo").args([
        "copy",
        "--src-tls-verify=false",
        &format!("docker://{image}"),
        &format!("oci:{}:x", layout.display()),
    ]));
    let bundle = w.tmp.path().join("bundle");
    run_ok(
        Command::new("umoci")
            .args(["unpack", "--image"])
            .arg(format!("{}:x", layout.display()))
            .arg(&bundle),
    );
    let rootfs = bundle.join("rootfs");
    let run_root = w.tmp.path().join("run-root");
    run_tree(w, agent, &run_root);
    for (tree, image_path) in [
        ("usr/local/bin/runtime", "opt/runtime/runtime"),
        ("usr/bin/tool", "opt/bins/tool"),
        ("etc/Agentfile", "etc/Agentfile"),
        ("etc/context/SOUL.md", "etc/context/SOUL.md"),
        ("etc/context/WORKSPACE.md", "etc/context/WORKSPACE.md"),
        ("etc/context/MOUNTS.md", "etc/context/MOUNTS.md"),
        ("etc/data/notes.txt", "etc/data/notes.txt"),
    ] {
        let a = fs::read(run_root.join(tree)).unwrap_or_else(|e| panic!("run tree {tree}: {e}"));
        let b =
            fs::read(rootfs.join(image_path)).unwrap_or_else(|e| panic!("image {image_path}: {e}"));
        assert!(
            a == b,
            "{tree} of the run differs from {image_path} of the image"
        );
    }
    // The same files, each directory the container sees (the id of a run is its own).
    let id_of = |yaml: &str| {
        let first = yaml.lines().next().unwrap_or_default();
        first
            .trim_start_matches("id: ")
            .trim_matches('"')
            .to_owned()
    };
    let run_id = id_of(&fs::read_to_string(run_root.join("etc/agent.yaml")).unwrap());
    let image_yaml = fs::read_to_string(rootfs.join("etc/agent.yaml")).unwrap();
    let image_id = id_of(&image_yaml);
    assert!(
        image_yaml.contains("binary: \"/opt/runtime/runtime\""),
        "{image_yaml}"
    );
    let agent_md = |root: &Path, id: &str| {
        fs::read_to_string(root.join("etc/context/AGENT.md"))
            .unwrap()
            .replace(id, "ID")
    };
    assert_eq!(agent_md(&run_root, &run_id), agent_md(&rootfs, &image_id));
    for (from, to) in [
        ("etc/context", "etc/context"),
        ("etc/data", "etc/data"),
        ("usr/bin", "opt/bins"),
    ] {
        let names = |d: &Path| files(d).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        assert_eq!(
            names(&run_root.join(from)),
            names(&rootfs.join(to)),
            "{from}"
        );
    }
    // Writable directories belong to the image's user and to group 0, group-writable (`tmp`
    // sticky), so a platform's arbitrary UID in group 0 can write them; no directory is
    // world-writable.
    for (d, mode) in [
        ("workspace", 0o775),
        ("home", 0o775),
        ("tmp", 0o1775),
        ("var/lib", 0o775),
    ] {
        let m = fs::metadata(rootfs.join(d)).unwrap();
        assert_eq!(
            (m.uid(), m.gid(), m.mode() & 0o7777),
            (65532, 0, mode),
            "{d}"
        );
    }
    let mut todo = vec![rootfs.clone()];
    while let Some(d) = todo.pop() {
        let m = fs::symlink_metadata(&d).unwrap();
        assert_eq!(m.mode() & 0o002, 0, "{} is world-writable", d.display());
        for e in fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            }
        }
    }
}

#[test]
fn export_is_an_image_that_skopeo_umoci_and_podman_take() {
    let test = "export_is_an_image_that_skopeo_umoci_and_podman_take";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = w.agent("probe", "probe");
    let out = ok(cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"]));
    let digest = last_line(&out);
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "{out}");
    let repo = agent.trim_end_matches(":1");
    let image = format!("{repo}@{digest}");

    // Linked to its agent: discover lists it, and the registry has it by digest.
    let found = ok(cli::otters(&w.home).args(["discover", &agent]));
    assert!(
        found.contains(&digest),
        "discover does not list {digest}:\n{found}"
    );

    // skopeo reads it as an ordinary image.
    let info = skopeo_inspect(&image);
    assert_eq!(info["Digest"], digest.as_str());
    assert_eq!(info["Os"], "linux");
    assert_eq!(info["Architecture"], crate::support::host_arch());
    let env: Vec<&str> = info["Env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for want in [
        "PATH=/opt/bins",
        "HOME=/home",
        "TMPDIR=/tmp",
        "LANG=C.UTF-8",
        "RUNTIME_MAX_TOKENS=256",
        "LOG_LEVEL=debug",
    ] {
        assert!(env.contains(&want), "{want} missing from {env:?}");
    }
    assert!(
        env.iter().all(|e| !e.contains("API_KEY")),
        "a credential in the image: {env:?}"
    );
    let manifest = manifest_of(&image);
    assert_eq!(
        manifest["subject"]["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let titles = layer_titles(&manifest);
    assert_eq!(
        titles.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ["runtime", "bin/tool", "agent"]
    );

    umoci_gives_the_run_tree(&w, &agent, &image);

    // Reproducible: two fresh homes (each pulls the agent, its runtime and BIN) export the
    // same bytes.
    for name in ["other-a", "other-b"] {
        let home = w.fresh_home(name);
        let again = last_line(&ok(
            cli::otters(&home).args(["export", &agent, "--as", "runnable"])
        ));
        assert_eq!(again, digest, "export from a fresh home {name}");
    }

    // Agents sharing a runtime and a BIN share those layers.
    let other = w.agent("second", "second");
    let other_digest = last_line(&ok(
        cli::otters(&w.home).args(["export", &other, "--as", "runnable", "--push"])
    ));
    let other_titles = layer_titles(&manifest_of(&format!(
        "{}@{other_digest}",
        other.trim_end_matches(":1")
    )));
    assert_eq!(titles[0], other_titles[0], "runtime layer");
    assert_eq!(titles[1], other_titles[1], "bin/tool layer");
    assert_ne!(titles[2], other_titles[2], "agent layer");

    // podman runs it from the registry: static runtime, its BIN on PATH, CONFIG and ENV, a
    // bind-mounted MOUNT (read-only, as declared) and a writable one, not as root.
    let Some(podman) = podman(test, w.tmp.path(), &w.reg.addr) else {
        return;
    };
    let data = w.tmp.path().join("data");
    let outdir = w.tmp.path().join("out");
    write(&data.join("in.txt"), "hello from the host\n");
    fs::create_dir_all(&outdir).unwrap();
    fs::set_permissions(&outdir, fs::Permissions::from_mode(0o777)).unwrap();
    let report = run_ok(
        podman()
            .args(["run", "--rm", "--tls-verify=false", "--network=none", "-e"])
            .arg("RUNTIME_WEBHOOK=https://example.com/hook")
            .arg("-v")
            .arg(format!("{}:/data:ro", data.display()))
            .arg("-v")
            .arg(format!("{}:/out", outdir.display()))
            .arg(&image),
    );
    // As a platform that assigns the UID runs it (OpenShift restricted-v2: an arbitrary UID in
    // group 0): it can write its workspace, home, tmp and var/lib.
    let assigned = run_ok(
        podman()
            .args(["run", "--rm", "--tls-verify=false", "--network=none"])
            .args(["--user", "1000680000:0", "-e"])
            .arg("RUNTIME_WEBHOOK=https://example.com/hook")
            .arg(&image),
    );
    let _ = podman().args(["rmi", "-f", &image]).output();
    assert_report(
        "podman run",
        &report,
        &outdir,
        &[
            "ARG --model\nARG anthropic/claude-test",
            "HOME yes",
            "TMP yes",
            "VARLIB yes",
        ],
    );
    for want in [
        "UID 1000680000 GID 0",
        "WORKSPACE yes",
        "HOME yes",
        "TMP yes",
        "VARLIB yes",
    ] {
        assert!(
            assigned.contains(want),
            "--user 1000680000:0: {want:?} not in the runtime's report:\n{assigned}"
        );
    }
}

#[test]
fn export_refuses_an_agent_without_runtime_or_pins_and_a_bad_push_target() {
    let env = cli::Env::new();
    let ctx = env.dir.path().join("ctx");
    write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME idle\nMODEL anthropic/x\n",
    );
    ok(env
        .otters()
        .args(["build", "-q", "--offline", "-t", "idle:1"])
        .arg(&ctx));
    let err = flat(&env.fails(&["export", "idle:1", "--as", "runnable", "--offline"]));
    assert!(
        err.contains("idle:1")
            && err.contains("has no RUNTIME")
            && err.contains("add a RUNTIME line"),
        "{err}"
    );
    // An agent built `--allow-unpinned`: its export would copy whatever the tags mean today. The
    // refusal says why for an export (there is no verify key here) and how to pin.
    write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME loose\nMODEL anthropic/x\nRUNTIME example.test/rt:1\nBIN jq example.test/jq:1\n",
    );
    env.build_unpinned("loose:1", &ctx);
    let err = flat(&env.fails(&["export", "loose:1", "--as", "runnable", "--offline"]));
    assert!(
        err.contains("cannot export loose:1")
            && err.contains(
                "RUNTIME example.test/rt:1, BIN jq (example.test/jq:1) has no pinned digest"
            )
            && err.contains("`otters lock`")
            && !err.contains("verify key"),
        "{err}"
    );
    let err = flat(&env.fails(&["export", "idle:1", "--as", "image"]));
    assert!(err.contains("runnable"), "{err}");
}

#[test]
fn an_agent_built_as_an_index_exports_an_index_of_one_image_per_platform() {
    let test = "an_agent_built_as_an_index_exports_an_index_of_one_image_per_platform";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    // The bin images have this machine's architecture and s390x (ppc64le on s390x).
    let other = if crate::support::host_arch() == "s390x" {
        "ppc64le"
    } else {
        "s390x"
    };
    let host = format!("linux/{}", crate::support::host_arch());
    let both = format!("{host},linux/{other}");
    let agent = w.agent_for("multi", "multi", &["--platform", &both]);
    let digest = last_line(&ok(
        cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"])
    ));
    let repo = agent.trim_end_matches(":1");
    let index = manifest_of(&format!("{repo}@{digest}"));
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    assert_eq!(
        index["subject"]["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    let mut arches: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["platform"]["architecture"].as_str())
        .collect();
    arches.sort_unstable();
    let mut want = [crate::support::host_arch(), other];
    want.sort_unstable();
    assert_eq!(arches, want);
    // skopeo resolves the index to this machine's image, an ordinary image.
    let info = skopeo_inspect(&format!("{repo}@{digest}"));
    assert_eq!(info["Architecture"], crate::support::host_arch());
    // One platform alone: that platform's image.
    let single = last_line(&ok(cli::otters(&w.home).args([
        "export",
        &agent,
        "--as",
        "runnable",
        "--platform",
        &host,
    ])));
    assert!(
        index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["digest"] == single.as_str()),
        "{single} not in {index}"
    );
    let err = flat(&w_fails(
        &w,
        &[
            "export",
            &agent,
            "--as",
            "runnable",
            "--platform",
            "linux/mips64",
        ],
    ));
    assert!(
        err.contains("no image for linux/mips64") && err.contains("--platform"),
        "{err}"
    );
}

/// An agent whose layer is several compression blocks (`pgzip::BLOCK`, 1 MiB) of text exports
/// to one digest on one core (`taskset -c 0`: one compressor thread) and on all of them, from two
/// fresh homes. On a one-core machine both exports use one thread and the test cannot fail.
#[test]
fn an_export_of_several_blocks_has_one_digest_on_one_core_and_on_all() {
    let test = "an_export_of_several_blocks_has_one_digest_on_one_core_and_on_all";
    if !crate::support::tools::require(test, "taskset", &["--version"], "it is in util-linux") {
        return;
    }
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let notes: Vec<u8> = (0..150_000u32)
        .flat_map(|i| format!("note {i}: {}\n", i.wrapping_mul(2_654_435_761) % 9973).into_bytes())
        .collect();
    assert!(notes.len() > 2 << 20);
    let agent = w.agent_with_notes("big", "big", &[], &notes);
    let export = |home: &str, cores: &str| {
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", cores])
            .arg(assert_cmd::cargo::cargo_bin("otters"))
            .env("OTTERS_HOME", w.fresh_home(home))
            .env("NO_COLOR", "1")
            .env_remove("SOURCE_DATE_EPOCH")
            .args(["export", &agent, "--as", "runnable"]);
        last_line(&ok(&mut assert_cmd::Command::from_std(cmd)))
    };
    let all = export("home-all", "0-1023");
    assert!(all.starts_with("sha256:"), "{all}");
    assert_eq!(export("home-one", "0"), all, "one core wrote other bytes");
}

fn w_fails(w: &StaticWorld, args: &[&str]) -> String {
    let out = cli::otters(&w.home).args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every blob an exported manifest in `home`'s store names (itself, its config, its layers).
fn missing_blobs_of(home: &Path, digest: &str) -> Vec<String> {
    let blob = |d: &str| {
        home.join("store/blobs/sha256")
            .join(d.trim_start_matches("sha256:"))
    };
    let Ok(bytes) = fs::read(blob(digest)) else {
        return vec![digest.to_owned()];
    };
    let m: Value = serde_json::from_slice(&bytes).unwrap();
    let mut named = vec![m["config"]["digest"].as_str().unwrap().to_owned()];
    for l in m["layers"].as_array().unwrap() {
        named.push(l["digest"].as_str().unwrap().to_owned());
    }
    named.into_iter().filter(|d| !blob(d).exists()).collect()
}

/// `export` writes through a leased store, as `build` and `pull` do: a concurrent `prune` (which
/// removes every blob no image reaches and no lease lists) never takes the runtime and BIN blobs
/// it fetches, or the layers it writes, before the referrer that makes them reachable exists.
/// Each round pulls the agent into a store a pruner empties again and again, exports it, checks
/// every blob of the export is there, and untags the agent (so the next round writes anew).
#[test]
fn a_concurrent_prune_never_takes_the_blobs_of_an_export() {
    let test = "a_concurrent_prune_never_takes_the_blobs_of_an_export";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = w.agent("racer", "racer");
    let home = w.fresh_home("racing");
    crate::support::beside_a_pruner(&home, 6, |round| {
        ok(cli::otters(&home).args(["pull", "-q", &agent]));
        let out = cli::otters(&home)
            .args(["export", &agent, "--as", "runnable"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "round {round}: export failed: {err}");
        let digest = last_line(&String::from_utf8_lossy(&out.stdout));
        let missing = missing_blobs_of(&home, &digest);
        assert!(
            missing.is_empty(),
            "round {round}: a prune took {missing:?} of the export {digest}"
        );
        ok(cli::otters(&home).args(["rm", &agent]));
    });
}
