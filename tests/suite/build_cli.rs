//! `otters build` through the real binary: reproducibility, `SOURCE_DATE_EPOCH`, input safety,
//! `.agentignore`, concurrent builds, skopeo interoperability, golden digests, conformance. What a
//! user reads (errors, warnings, JSON, `inspect`) is pinned whole in `snapshots/build_cli/`.

use crate::support::cli::{json, ok, Env};
use crate::support::snap::{self, snapshot, Transcript};
use crate::support::{fixture, repo};
use assert_cmd::Command;
use std::fs;
use std::path::Path;

/// `otters build --offline --allow-unpinned -q` with `args` through `cmd`; returns the digest.
fn build_with(cmd: &mut Command, args: &[&str]) -> String {
    ok(cmd
        .args(["build", "--offline", "--allow-unpinned"])
        .args(args)
        .arg("-q"))
    .trim()
    .to_owned()
}

/// Builds offline in `env`'s store; returns the digest.
fn build(env: &Env, args: &[&str]) -> String {
    build_with(&mut env.otters(), args)
}

fn copy_tree(from: &Path, to: &Path, reverse: bool) {
    fs::create_dir_all(to).unwrap();
    let mut names: Vec<_> = fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    if reverse {
        names.reverse();
    }
    for n in names {
        let (src, dst) = (from.join(&n), to.join(&n));
        if src.is_dir() {
            copy_tree(&src, &dst, reverse);
        } else {
            fs::copy(&src, &dst).unwrap();
        }
    }
}

fn sh(script: &str, dir: &Path) {
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(ok.success(), "{script}");
}

#[test]
fn same_inputs_give_the_same_digest_whatever_the_filesystem_says() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("sub/dir/b"));
    copy_tree(&fixture("full"), &a, false);
    copy_tree(&fixture("full"), &b, true);
    sh("find . -exec touch -h -d '2001-02-03 04:05:06' {} +; chmod -R go-rwx .; chmod 700 data/nested/run.sh", &a);
    sh("find . -exec touch -h -d '2024-12-31 23:59:59' {} +; chmod 666 docs/style.md data/today.txt", &b);

    let e1 = Env::new();
    let d1 = build(&e1, &[a.to_str().unwrap()]);
    let e2 = Env::new();
    let d2 = build_with(
        e2.otters()
            .current_dir(&b)
            .env("TZ", "Pacific/Kiritimati")
            .env("LANG", "tr_TR.UTF-8")
            .env("LC_ALL", "tr_TR.UTF-8"),
        &["."],
    );
    assert_eq!(d1, d2);
    assert!(d1.starts_with("sha256:") && d1.len() == 71, "{d1}");

    // A changed byte in an added directory changes the digest.
    fs::write(b.join("data/today.txt"), "temp=13\n").unwrap();
    assert_ne!(build(&e2, &[b.to_str().unwrap()]), d1);
}

#[test]
fn source_date_epoch_sets_created_and_must_be_an_integer() {
    let env = Env::new();
    let ctx = fixture("full");
    let plain = build(&env, &[ctx.to_str().unwrap()]);
    let dated = build_with(
        env.otters().env("SOURCE_DATE_EPOCH", "1700000000"),
        &["-t", "dated", ctx.to_str().unwrap()],
    );
    assert_ne!(plain, dated);
    let v = json(&env.ok(&["inspect", "dated", "--format", "json"]));
    assert_eq!(
        v["manifest"]["annotations"]["org.opencontainers.image.created"],
        "2023-11-14T22:13:20Z"
    );
    let p = json(&env.ok(&["inspect", "meteo", "--format", "json"]));
    assert!(p["manifest"]["annotations"]
        .get("org.opencontainers.image.created")
        .is_none());

    let mut bad = Transcript::otters(&env);
    bad.env("SOURCE_DATE_EPOCH", "yesterday");
    let mut t = Transcript::on(&env);
    let (ok, ..) = t.run_cmd(
        bad,
        &[
            "build",
            "--offline",
            "--allow-unpinned",
            ctx.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    t.assert("build_cli", "source_date_epoch_not_an_integer");
}

fn stderr_of(env: &Env, ctx: &Path) -> String {
    let out = env
        .otters()
        .current_dir(ctx)
        .args(["build", "--offline", "--allow-unpinned", "."])
        .assert()
        .failure()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    text.replace(&ctx.display().to_string(), "[CTX]").replace(
        &fs::canonicalize(ctx).unwrap().display().to_string(),
        "[CTX]",
    )
}

#[test]
fn unsafe_and_missing_sources_point_at_their_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("ctx");
    fs::create_dir_all(ctx.join("data")).unwrap();
    fs::write(tmp.path().join("outside.txt"), "secret").unwrap();
    std::os::unix::fs::symlink("../outside.txt", ctx.join("leak.txt")).unwrap();
    fs::write(
        ctx.join("Agentfile"),
        "FROM scratch\nNAME bad\nADD ../outside.txt\nADD /etc/hostname host\nADD missing.csv\nADD leak.txt\nCONTEXT NOTES file://notes.md\n",
    )
    .unwrap();
    let env = Env::new();
    snap::assert("build", "errors_unsafe_sources", &stderr_of(&env, &ctx));
    assert!(
        !env.store().join("index.json").exists()
            || !fs::read_to_string(env.store().join("index.json"))
                .unwrap()
                .contains("bad")
    );

    // A symlink inside a directory ADD that leads out of it is refused too.
    fs::write(ctx.join("Agentfile"), "FROM scratch\nNAME bad\nADD data\n").unwrap();
    std::os::unix::fs::symlink("../../outside.txt", ctx.join("data/escape")).unwrap();
    snap::assert(
        "build",
        "errors_symlink_in_directory",
        &stderr_of(&env, &ctx),
    );
}

/// Words drawn from `seed` (xorshift), in lines of 12: text like `bench/dir.sh`'s.
fn words(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&str; 22] = [
        "agent", "runtime", "model", "context", "weather", "city", "forecast", "rain", "sun",
        "wind", "north", "south", "report", "data", "layer", "image", "registry", "digest",
        "build", "store", "tool", "note",
    ];
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let (mut out, mut k) = (Vec::with_capacity(len + 16), 0);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(WORDS[(state % 22) as usize].as_bytes());
        k += 1;
        out.push(if k % 12 == 0 { b'\n' } else { b' ' });
    }
    out.truncate(len);
    out
}

/// A text directory of two compression blocks (`pgzip::BLOCK`, 1 MiB, then a short one) gives
/// the same digest on one core (`taskset -c 0`: one compressor for both blocks) as on all of them
/// (a worker each). Before, one compressor was reset and reused across blocks, and zlib-rs' reset
/// keeps the window's old bytes: this input's second block came out other than from a new
/// compressor, so the digest depended on the number of cores (and, with several workers, on which
/// took which block). On a one-core machine both builds use one thread and the test cannot fail.
#[test]
fn a_text_directory_over_two_blocks_has_one_digest_on_one_core_and_on_all() {
    const TEST: &str = "a_text_directory_over_two_blocks_has_one_digest_on_one_core_and_on_all";
    if !crate::support::tools::require(TEST, "taskset", &["--version"], "it is in util-linux") {
        return;
    }
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME words\nMODEL m/m\nADD data\n",
    );
    // The tar stream: two 512-byte headers (`data/`, `data/words.txt`), then the file, so its
    // first block ends in `words(57)` and the second holds `words(58)` and the tar's end.
    let (block, window) = (1 << 20, 32 << 10);
    let mut text = words(59, block - window - 1024);
    text.extend(words(57, window));
    text.extend(words(58, 4096));
    crate::support::write(&ctx.join("data/words.txt"), &text);
    let build = |home: &str, cores: &str| {
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", cores])
            .arg(assert_cmd::cargo::cargo_bin("otters"))
            .env("OTTERS_HOME", env.dir.path().join(home))
            .env("NO_COLOR", "1")
            .env_remove("SOURCE_DATE_EPOCH");
        build_with(&mut cmd, &[ctx.to_str().unwrap()])
    };
    let all = build("home-all", "0-1023");
    assert_eq!(build("home-one", "0"), all, "one core wrote other bytes");
}

#[test]
fn agentignore_excludes_files_from_directory_adds() {
    let env = Env::new();
    build(&env, &["-t", "ig", fixture("full").to_str().unwrap()]);
    let v = json(&env.ok(&["inspect", "ig", "--format", "json"]));
    let layer = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["title"] == "data")
        .unwrap();
    assert_eq!(
        layer["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let blob = env.store_blob(layer["digest"].as_str().unwrap());
    let list = std::process::Command::new("tar")
        .arg("-tvzf")
        .arg(&blob)
        .output()
        .unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    assert!(list.contains("data/nested/yesterday.txt"), "{list}");
    assert!(
        list.contains("-rwxr-xr-x 0/0") && list.contains("data/nested/run.sh"),
        "{list}"
    );
    assert!(!list.contains("tmp.log"), "{list}");
}

#[test]
fn concurrent_builds_into_one_store_both_succeed() {
    let env = Env::new();
    let ctx = fixture("full");
    let spawn = |tag: &str| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("otters"))
            .env("OTTERS_HOME", env.home())
            .args([
                "build",
                "--offline",
                "--allow-unpinned",
                "-q",
                "-t",
                tag,
                ctx.to_str().unwrap(),
            ])
            .output()
            .unwrap()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| spawn("one:1"));
        let b = s.spawn(|| spawn("two:2"));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert_eq!(a.stdout, b.stdout);
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(env.store().join("index.json")).unwrap()).unwrap();
    let names: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["annotations"]["org.opencontainers.image.ref.name"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(names, ["one:1", "two:2"]);
}

fn skopeo(args: &[&str]) -> Vec<u8> {
    crate::support::run_ok(std::process::Command::new("skopeo").args(args)).into_bytes()
}

#[test]
fn skopeo_reads_the_store_and_archives_and_keeps_the_digest() {
    let env = Env::new();
    let digest = build(
        &env,
        &["-t", "meteo:1.0", fixture("full").to_str().unwrap()],
    );
    let store = env.store();
    let raw = skopeo(&[
        "inspect",
        "--raw",
        &format!("oci:{}:meteo:1.0", store.display()),
    ]);
    assert_eq!(crate::support::sha256(&raw), digest);

    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("copy");
    skopeo(&[
        "copy",
        "-q",
        &format!("oci:{}:meteo:1.0", store.display()),
        &format!("oci:{}:m", copy.display()),
    ]);
    assert_eq!(
        crate::support::sha256(&skopeo(&[
            "inspect",
            "--raw",
            &format!("oci:{}:m", copy.display())
        ])),
        digest
    );

    let archive = tmp.path().join("meteo.tar");
    env.otters()
        .args(["save", "meteo:1.0", "-o", archive.to_str().unwrap()])
        .assert()
        .success();
    let from_archive = skopeo(&[
        "inspect",
        "--raw",
        &format!("oci-archive:{}:meteo:1.0", archive.display()),
    ]);
    assert_eq!(crate::support::sha256(&from_archive), digest);

    // And the other way: an archive written by skopeo loads into a fresh store.
    let theirs = tmp.path().join("theirs.tar");
    skopeo(&[
        "copy",
        "-q",
        &format!("oci:{}:meteo:1.0", store.display()),
        &format!("oci-archive:{}:again:2", theirs.display()),
    ]);
    let other = Env::new();
    let out = other
        .otters()
        .args(["load", "-i", theirs.to_str().unwrap()])
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout).trim(),
        format!("again:2 {digest}")
    );
}

#[test]
fn output_flag_writes_a_layout_or_an_archive() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("layout");
    let ctx = fixture("minimal");
    let d = build(
        &env,
        &[
            "--output",
            &format!("type=oci-layout,dest={}", layout.display()),
            "-t",
            "x:1",
            ctx.to_str().unwrap(),
        ],
    );
    assert_eq!(
        crate::support::sha256(&skopeo(&[
            "inspect",
            "--raw",
            &format!("oci:{}:x:1", layout.display())
        ])),
        d
    );
    let archive = tmp.path().join("x.tar");
    let d2 = build(
        &env,
        &[
            "--output",
            &format!("type=oci-archive,dest={}", archive.display()),
            "-t",
            "x:1",
            ctx.to_str().unwrap(),
        ],
    );
    assert_eq!(d, d2);
    assert_eq!(
        crate::support::sha256(&skopeo(&[
            "inspect",
            "--raw",
            &format!("oci-archive:{}:x:1", archive.display())
        ])),
        d
    );
    env.otters()
        .args([
            "build",
            "--offline",
            "--allow-unpinned",
            "--output",
            "type=docker",
            ctx.to_str().unwrap(),
        ])
        .assert()
        .failure();
}

#[test]
fn golden_digests_of_the_fixtures() {
    let mut cases: Vec<_> = fs::read_dir(repo().join("testdata/build"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    for case in cases {
        let env = Env::new();
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        build(&env, &["-t", "golden", case.to_str().unwrap()]);
        snap::assert(
            "build",
            &format!("fixture_{name}"),
            &env.ok(&["inspect", "golden", "--format", "json"]),
        );
    }
}

#[test]
fn every_conformance_agentfile_builds() {
    let Some(root) = crate::support::harness::conformance("every_conformance_agentfile_builds")
    else {
        return;
    };
    let mut stack = vec![root];
    let mut built = 0;
    let env = Env::new();
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "Agentfile") {
                env.otters()
                    .args([
                        "build",
                        "-q",
                        "--offline",
                        "--allow-unpinned",
                        "-t",
                        &format!("c{built}"),
                    ])
                    .arg(p.parent().unwrap())
                    .assert()
                    .success();
                built += 1;
            }
        }
    }
    assert!(built >= 14, "only {built} conformance Agentfiles found");
}

#[test]
fn stdin_and_dash_f_and_json_output() {
    let env = Env::new();
    let ctx = fixture("full");
    let text = fs::read(ctx.join("Agentfile")).unwrap();
    let from_file = build(&env, &[ctx.to_str().unwrap()]);
    let mut cmd = Transcript::otters(&env);
    cmd.current_dir(&ctx).write_stdin(text);
    let mut t = Transcript::on(&env);
    let (ok, out, err) = t.run_cmd(
        cmd,
        &[
            "build",
            "--offline",
            "--allow-unpinned",
            "-",
            "--format",
            "json",
            "-t",
            "a:1",
            "-t",
            "b",
        ],
    );
    assert!(ok, "{err}");
    t.assert("build_cli", "stdin_json");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["digest"], from_file.as_str());
    assert_eq!(v["tags"], serde_json::json!(["a:1", "b:latest"]));
    let f = build(&env, &["-f", "Agentfile", ctx.to_str().unwrap()]);
    assert_eq!(f, from_file);
}

#[test]
fn errors_in_the_agentfile_build_nothing() {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(&ctx.join("Agentfile"), "NAME x\nFROBNICATE\n");
    let (ok, ..) = snapshot(
        "build_cli",
        "agentfile_errors",
        &env,
        &[
            "build",
            "--offline",
            "--allow-unpinned",
            ctx.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    let index = fs::read_to_string(env.store().join("index.json")).unwrap_or_default();
    assert!(!index.contains("x:latest"));
}

#[test]
fn a_rebuild_uses_the_cache_and_a_changed_file_is_seen() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("ctx");
    copy_tree(&fixture("full"), &ctx, false);
    sh("find . -exec touch -h -d '2020-01-01 00:00:00' {} +", &ctx);
    let env = Env::new();
    let first = build(&env, &[ctx.to_str().unwrap()]);
    assert!(env.home().join("cache/blobs.json").is_file());
    assert_eq!(build(&env, &[ctx.to_str().unwrap()]), first);
    // Same size, same mtime, new content: the ctime (and inode, via rename) changes, so the cache misses.
    fs::write(
        ctx.join("docs/stations.csv.new"),
        "id,name\n1,Paris\n2,Rome\n",
    )
    .unwrap();
    fs::rename(
        ctx.join("docs/stations.csv.new"),
        ctx.join("docs/stations.csv"),
    )
    .unwrap();
    sh("touch -d '2020-01-01 00:00:00' docs/stations.csv", &ctx);
    let changed = build(&env, &[ctx.to_str().unwrap()]);
    assert_ne!(changed, first);
    assert_eq!(build(&env, &["--no-cache", ctx.to_str().unwrap()]), changed);
}

#[test]
fn a_build_killed_midway_leaves_the_store_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("ctx");
    fs::create_dir_all(&ctx).unwrap();
    fs::write(
        ctx.join("Agentfile"),
        "FROM scratch\nNAME big\nADD big.bin\n",
    )
    .unwrap();
    let f = fs::File::create(ctx.join("big.bin")).unwrap();
    f.set_len(256 << 20).unwrap();
    let env = Env::new();
    build(
        &env,
        &["-t", "before", fixture("minimal").to_str().unwrap()],
    );
    for delay_ms in [5, 40, 150] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("otters"))
            .env("OTTERS_HOME", env.home())
            .args(["build", "--offline", "--allow-unpinned", "-q", "--no-cache"])
            .arg(&ctx)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let raw = skopeo(&[
            "inspect",
            "--raw",
            &format!("oci:{}:before:latest", env.store().display()),
        ]);
        assert!(!raw.is_empty());
        env.otters().arg("images").assert().success();
    }
    build(&env, &[ctx.to_str().unwrap()]);
}

/// A build writes its blobs without a per-blob fsync and makes them durable in one pass before it
/// tags: killed after its big blob is in `blobs/` under its digest name (in full) and before the
/// tag, it leaves no tag behind, the store readable, and a rerun succeeds.
#[test]
fn a_build_killed_between_its_blobs_and_its_tag_leaves_no_tag() {
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("ctx");
    fs::create_dir_all(&ctx).unwrap();
    fs::write(
        ctx.join("Agentfile"),
        "FROM scratch\nNAME big\nADD big.bin\n",
    )
    .unwrap();
    let size: u64 = 96 << 20;
    fs::File::create(ctx.join("big.bin"))
        .unwrap()
        .set_len(size)
        .unwrap();
    // The build is stopped (SIGSTOP) the moment its blob is seen, then the tags are read and it
    // is killed. A build that tagged before it could be stopped missed the window, which is not
    // the rule broken: it is tried again, and one of five must be caught inside the window.
    let mut attempts = 0;
    let (env, placed) = loop {
        attempts += 1;
        let env = Env::new();
        build(
            &env,
            &["-t", "before", fixture("minimal").to_str().unwrap()],
        );
        let blobs = env.store().join("blobs/sha256");
        let index = env.store().join("index.json");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("otters"))
            .env("OTTERS_HOME", env.home())
            .args([
                "build",
                "--offline",
                "--allow-unpinned",
                "-q",
                "--no-cache",
                "-t",
                "big",
            ])
            .arg(&ctx)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let placed = loop {
            let whole = fs::read_dir(&blobs)
                .unwrap()
                .flatten()
                .find(|e| e.metadata().is_ok_and(|m| m.len() == size));
            if let Some(e) = whole {
                break e.path();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the blob never appeared"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if let Some(pid) = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::STOP);
        }
        // Read while it is stopped: the blob is in place and no tag points at it yet.
        let tags_then = fs::read_to_string(&index).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        if !tags_then.contains("big:latest") {
            break (env, placed);
        }
        assert!(
            attempts < 5,
            "five builds tagged before they could be stopped: {tags_then}"
        );
    };
    // Renamed only once whole: never a partial blob under a digest name.
    assert_eq!(fs::metadata(&placed).unwrap().len(), size);
    let listed = env.otters().arg("images").assert().success();
    let listed = String::from_utf8_lossy(&listed.get_output().stdout).into_owned();
    assert!(
        listed.contains("before") && !listed.contains("big"),
        "{listed}"
    );
    let raw = skopeo(&[
        "inspect",
        "--raw",
        &format!("oci:{}:before:latest", env.store().display()),
    ]);
    assert!(!raw.is_empty());
    let digest = build(&env, &["-t", "big", ctx.to_str().unwrap()]);
    assert!(!digest.is_empty());
    // The rerun's image is whole: skopeo reads its manifest and every blob's digest checks.
    let copy = tmp.path().join("copy");
    skopeo(&[
        "copy",
        &format!("oci:{}:big:latest", env.store().display()),
        &format!("oci:{}:big", copy.display()),
    ]);
}

/// Issue 18.14: building the README's example (`--offline --allow-unpinned`, two unpinned
/// references) printed four AF201 warnings: lint's "uses the moving tag" and resolution's "built
/// without a digest" for each reference. One warning per reference now, the build's.
#[test]
fn building_the_example_warns_once_per_unpinned_reference() {
    let env = Env::new();
    let example = repo().join("examples/hello");
    let (ok, _, stderr) = snapshot(
        "build_cli",
        "example_unpinned_warnings",
        &env,
        &[
            "build",
            "--offline",
            "--allow-unpinned",
            "-t",
            "meteo:1.0",
            example.to_str().unwrap(),
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stderr.matches("AF201").count(), 2, "{stderr}");
    for r in [
        "ghcr.io/openotters/runtime:latest",
        "ghcr.io/openotters/tools/curl:latest",
    ] {
        assert_eq!(
            stderr
                .matches(&format!("`{r}` is built without a digest"))
                .count(),
            1,
            "{r}: {stderr}"
        );
    }
}

/// Issue 18.15: `inspect` (text) showed the manifest and layers but none of the agent's own
/// content. It now shows it under `Agent:`, as `docker inspect` shows an image's config.
#[test]
fn inspect_text_shows_the_agents_own_content() {
    let env = Env::new();
    ok(env
        .otters()
        .args([
            "build",
            "--offline",
            "--allow-unpinned",
            "-q",
            "-t",
            "meteo:1.0",
        ])
        .arg(repo().join("examples/hello")));
    let (ok, out, _) = snapshot("build_cli", "inspect_text", &env, &["inspect", "meteo:1.0"]);
    assert!(ok);
    let agent = out
        .split_once("\nAgent:\n")
        .unwrap_or_else(|| panic!("no Agent section:\n{out}"))
        .1;
    for line in [
        "  Name:         meteo",
        "  Model:        anthropic/claude-haiku-4-5-20251001",
        "  Runtime:      ghcr.io/openotters/runtime:latest",
        "    curl  ghcr.io/openotters/tools/curl:latest  \"Fetch a URL\"",
        "    STYLE  file://style.md  \"How to answer\"",
        "    max-tokens=512  \"Short answers\"",
        "    UNITS=metric  \"Units used in answers\"",
        "    regions  \"Regional climate notes\"",
        "    /reports  rw  \"Where to write weather reports\"",
        "    note_save",
    ] {
        assert!(agent.lines().any(|l| l == line), "no {line:?} in:\n{agent}");
    }
    assert!(agent.contains("    SOUL  106 B  \"Core rules\""), "{agent}");
}

/// `otters build -q ARGS CTX` with every CI variable cleared, then `vars` set.
fn ci_build(env: &Env, ctx: &Path, vars: &[(&str, &Path)], args: &[&str]) -> std::process::Output {
    let mut cmd = env.otters();
    for k in [
        "GITHUB_SERVER_URL",
        "GITHUB_REPOSITORY",
        "GITHUB_SHA",
        "CI_PROJECT_URL",
        "CI_COMMIT_SHA",
        "GITHUB_STEP_SUMMARY",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(["build", "-q"])
        .args(args)
        .arg(ctx)
        .output()
        .unwrap()
}

/// `--annotations-from-ci`: GitHub's variables become the source, revision and URL annotations of
/// every manifest and of the multi-platform index; without CI variables the flag fails and says
/// which it reads; `GITHUB_STEP_SUMMARY` gets the digest and tag.
#[test]
fn annotations_from_ci_reach_manifests_and_index_and_the_job_summary() {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\n",
    );
    let summary = env.dir.path().join("summary.md");
    let p = |s: &'static str| Path::new(s);
    let built = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let digest = built(ci_build(
        &env,
        &ctx,
        &[
            ("GITHUB_SERVER_URL", p("https://github.com")),
            ("GITHUB_REPOSITORY", p("acme/agents")),
            ("GITHUB_SHA", p("0123abc")),
            ("GITHUB_STEP_SUMMARY", &summary),
        ],
        &[
            "--annotations-from-ci",
            "--platform",
            "linux/amd64,linux/arm64",
            "-t",
            "demo:ci",
        ],
    ));
    let read = |d: &str| json(&fs::read_to_string(env.store_blob(d)).unwrap());
    let index = read(&digest);
    let want = [
        (
            "org.opencontainers.image.source",
            "https://github.com/acme/agents",
        ),
        (
            "org.opencontainers.image.url",
            "https://github.com/acme/agents",
        ),
        ("org.opencontainers.image.revision", "0123abc"),
    ];
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 2);
    for doc in std::iter::once(index.clone()).chain(
        manifests
            .iter()
            .map(|m| read(m["digest"].as_str().unwrap())),
    ) {
        for (k, v) in want {
            assert_eq!(doc["annotations"][k], v, "{doc}");
        }
    }
    let md = fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains(&format!("| digest | `{digest}` |")) && md.contains("| tag | `demo:ci` |"),
        "{md}"
    );

    // GitLab's variables.
    let m = read(&built(ci_build(
        &env,
        &ctx,
        &[
            ("CI_PROJECT_URL", p("https://gitlab.example/g/p")),
            ("CI_COMMIT_SHA", p("feed")),
        ],
        &["--annotations-from-ci", "-t", "demo:gl"],
    )));
    assert_eq!(
        m["annotations"]["org.opencontainers.image.source"],
        "https://gitlab.example/g/p"
    );
    assert_eq!(
        m["annotations"]["org.opencontainers.image.revision"],
        "feed"
    );

    // No CI: a failure that names the variables; and without the flag, no such annotation.
    // (A transcript's command inherits no CI variable.) The help line names the flag that does
    // without them.
    let (ok, ..) = snapshot(
        "build_cli",
        "annotations_from_ci_without_ci",
        &env,
        &[
            "build",
            "-q",
            "--annotations-from-ci",
            "-t",
            "demo:none",
            ctx.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    let m = read(&built(ci_build(
        &env,
        &ctx,
        &[("GITHUB_REPOSITORY", p("acme/agents"))],
        &["-t", "demo:plain"],
    )));
    assert!(
        m["annotations"]
            .get("org.opencontainers.image.source")
            .is_none(),
        "{m}"
    );
}
