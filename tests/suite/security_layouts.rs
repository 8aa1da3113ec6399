//! Layout and archive paths otters does not own, through the real binary: a `build -o` layout
//! destination shipped with links in it, device nodes and FIFOs where `save -o` or `build -o`
//! would write, FIFOs inside a layout that `pull oci:` or `load -i` reads.

use crate::support::cli::{flat, Env};
use crate::support::fixture;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

fn build_args(out: &str) -> Vec<&str> {
    vec![
        "build",
        "--offline",
        "--allow-unpinned",
        "-q",
        "-t",
        "x:1",
        "-o",
        out,
    ]
}

/// A file in `dir` last changed two hours ago (older than any stale-temp age).
fn old_file(dir: &Path, name: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    fs::write(&path, b"the user's own file").unwrap();
    let two_hours = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(two_hours)
        .unwrap();
    path
}

#[test]
fn a_layout_destination_with_planted_links_never_reaches_outside() {
    let env = Env::new();
    let ctx = fixture("minimal");
    let victim = env.dir.path().join("victim");
    let precious = old_file(&victim, "precious.txt");

    // A repository that ships `out/.tmp -> victim` as an OCI layout: the build writes the layout
    // and leaves `.tmp` (and what it points at) alone.
    let out = env.dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    symlink(&victim, out.join(".tmp")).unwrap();
    let spec = format!("type=oci-layout,dest={}", out.display());
    let mut args = build_args(&spec);
    args.push(ctx.to_str().unwrap());
    let digest = env.ok(&args).trim().to_owned();
    assert!(precious.exists(), "a file outside the layout was deleted");
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 1, "written outside");
    let index = fs::read_to_string(out.join("index.json")).unwrap();
    assert!(index.contains(&digest), "{index}");
    assert!(out
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
        .is_file());

    // The same link in a directory that is not a layout: refused, nothing written.
    let plain = env.dir.path().join("plain");
    fs::create_dir(&plain).unwrap();
    symlink(&victim, plain.join(".tmp")).unwrap();
    let spec = format!("type=oci,tar=false,dest={}", plain.display());
    let mut args = build_args(&spec);
    args.push(ctx.to_str().unwrap());
    let err = env.fails(&args);
    assert!(err.contains("not an OCI image layout"), "{err}");
    assert_eq!(fs::read_dir(&plain).unwrap().count(), 1);
    assert!(precious.exists());

    // `blobs` and `index.json.lock` links are refused, their targets untouched.
    for (name, target) in [
        ("blobs", victim.clone()),
        ("index.json.lock", precious.clone()),
    ] {
        let out = env.dir.path().join(format!("with-{name}"));
        fs::create_dir(&out).unwrap();
        fs::write(out.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        symlink(&target, out.join(name)).unwrap();
        let spec = format!("type=oci-layout,dest={}", out.display());
        let mut args = build_args(&spec);
        args.push(ctx.to_str().unwrap());
        let err = env.fails(&args);
        assert!(err.contains("is a symbolic link"), "{name}: {err}");
        assert_eq!(fs::read_dir(&victim).unwrap().count(), 1, "{name}");
        assert_eq!(
            fs::read(&precious).unwrap(),
            b"the user's own file",
            "{name}"
        );
    }

    // A link as the destination itself (or any component of its path) is refused.
    let linked = env.dir.path().join("linked");
    symlink(&victim, &linked).unwrap();
    let spec = format!("type=oci-layout,dest={}/sub", linked.display());
    let mut args = build_args(&spec);
    args.push(ctx.to_str().unwrap());
    let err = env.fails(&args);
    assert!(err.contains("is a symbolic link"), "{err}");
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 1);
}

fn file_type(path: &Path) -> fs::FileType {
    fs::symlink_metadata(path).unwrap().file_type()
}

#[test]
fn save_and_build_write_into_a_fifo_or_device_and_never_replace_it() {
    use std::os::unix::fs::FileTypeExt;
    let env = Env::new();
    let ctx = fixture("minimal");
    let dir = env.dir.path();
    let plain = ["build", "--offline", "--allow-unpinned", "-q", "-t", "x:1"];
    let mut args = plain.to_vec();
    args.push(ctx.to_str().unwrap());
    let digest = env.ok(&args).trim().to_owned();

    // A named pipe with a reader: the archive goes through it, the pipe stays a pipe.
    let fifo = dir.join("pipe");
    let copy = dir.join("copy.tar");
    let to_fifo = format!("type=oci,dest={}", fifo.display());
    let mut build_to_fifo = plain.to_vec();
    build_to_fifo.extend(["-o", &to_fifo, ctx.to_str().unwrap()]);
    for cmd in [
        vec!["save", "x:1", "-o", fifo.to_str().unwrap()],
        build_to_fifo,
    ] {
        crate::support::run_ok(std::process::Command::new("mkfifo").arg(&fifo));
        let mut reader = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec cat '{}' > '{}'",
                fifo.display(),
                copy.display()
            ))
            .spawn()
            .unwrap();
        let (ok, _, err) = env.run(&cmd);
        let still_fifo = file_type(&fifo).is_fifo();
        if !still_fifo {
            // The old behaviour: the pipe was replaced, its reader still waits.
            let _ = reader.kill();
        }
        let _ = reader.wait();
        assert!(ok, "{cmd:?}: {err}");
        assert!(still_fifo, "{cmd:?} replaced the FIFO with a file");
        let other = Env::new();
        let loaded = other.ok(&["load", "-i", copy.to_str().unwrap()]);
        assert!(loaded.contains(&digest), "{cmd:?}: {loaded}");
        fs::remove_file(&fifo).unwrap();
    }

    // A character device (as root, a copy of /dev/null): written into, never replaced.
    if crate::support::tools::works("mknod", &["--version"]) {
        let null = dir.join("null");
        let made = std::process::Command::new("mknod")
            .arg(&null)
            .args(["c", "1", "3"])
            .status()
            .is_ok_and(|s| s.success());
        if made {
            env.ok(&["save", "x:1", "-o", null.to_str().unwrap()]);
            assert!(
                file_type(&null).is_char_device(),
                "save replaced the device"
            );
        } else {
            eprintln!("(not root: the character-device case is covered by the FIFO only)");
        }
    }

    // A directory is refused with what to do.
    let err = env.fails(&["save", "x:1", "-o", dir.to_str().unwrap()]);
    assert!(err.contains("it is a directory"), "{err}");
}

#[test]
fn fifos_inside_a_layout_are_refused_not_waited_on() {
    let env = Env::new();
    let ctx = fixture("minimal");
    let good = env.dir.path().join("good");
    let spec = format!("type=oci-layout,dest={}", good.display());
    let mut args = build_args(&spec);
    args.push(ctx.to_str().unwrap());
    let digest = env.ok(&args).trim().to_owned();
    let manifest_path = good
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(&manifest_path).unwrap()).unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap()[7..].to_owned();

    let fifo_at = |name: &str, inside: &str| {
        let dir = env.dir.path().join(name);
        crate::support::run_ok(
            std::process::Command::new("cp")
                .arg("-r")
                .arg(&good)
                .arg(&dir),
        );
        fs::remove_file(dir.join(inside)).unwrap();
        crate::support::run_ok(std::process::Command::new("mkfifo").arg(dir.join(inside)));
        dir
    };
    let index_fifo = fifo_at("index-fifo", "index.json");
    let manifest_fifo = fifo_at(
        "manifest-fifo",
        &format!("blobs/sha256/{}", digest.trim_start_matches("sha256:")),
    );
    let layer_fifo = fifo_at("layer-fifo", &format!("blobs/sha256/{layer}"));
    for dir in [&index_fifo, &manifest_fifo, &layer_fifo] {
        for cmd in [
            vec!["pull".to_owned(), format!("oci:{}:x:1", dir.display())],
            vec![
                "load".to_owned(),
                "-i".to_owned(),
                dir.display().to_string(),
            ],
        ] {
            let other = Env::new();
            let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
            // At most two minutes: a FIFO once made it wait forever.
            let (ok, _, err) = other
                .run_within(&cmd, &[], std::time::Duration::from_secs(120))
                .unwrap_or_else(|| panic!("{cmd:?} hung on a FIFO"));
            let err = flat(&err);
            assert!(!ok, "{cmd:?} succeeded");
            assert!(err.contains("is not a regular file"), "{cmd:?}: {err}");
        }
    }
}

/// `index.json` of the layout `dir`, with `n` entries `name0:1` … of its first image.
fn many_names(dir: &Path, n: usize) {
    let path = dir.join("index.json");
    let mut index: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let first = index["manifests"][0].clone();
    let entries: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let mut e = first.clone();
            e["annotations"]["org.opencontainers.image.ref.name"] =
                serde_json::json!(format!("name{i}:1"));
            e
        })
        .collect();
    index["manifests"] = serde_json::json!(entries);
    fs::write(&path, index.to_string()).unwrap();
}

#[test]
fn load_tags_in_one_update_caps_its_index_and_never_moves_a_tag_silently() {
    let env = Env::new();
    let ctx = fixture("minimal");
    let dir = env.dir.path();
    let plain = ["build", "--offline", "--allow-unpinned", "-q"];
    let build = |env: &Env, extra: &[&str]| {
        let mut args = plain.to_vec();
        args.extend_from_slice(extra);
        args.push(ctx.to_str().unwrap());
        env.ok(&args).trim().to_owned()
    };
    // Here `y:1` is one image; the archive calls another image `y:1`.
    let mine = build(&env, &["--label", "mine=yes", "-t", "y:1"]);
    let other = Env::new();
    let theirs = build(&other, &["-t", "y:1"]);
    assert_ne!(mine, theirs);
    let archive = dir.join("theirs.tar");
    other.ok(&["save", "y:1", "-o", archive.to_str().unwrap()]);
    let err = env.fails(&["load", "-i", archive.to_str().unwrap()]);
    assert!(
        err.contains("would move 1 local tag(s): y:1") && err.contains("--force"),
        "{err}"
    );
    let id = |env: &Env, r: &str| {
        crate::support::cli::json(&env.ok(&["inspect", r, "--format", "json"]))["digest"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(id(&env, "y:1"), mine, "the tag moved without --force");
    let (ok, out, err) = env.run(&["load", "--force", "-i", archive.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("y:1 {theirs}"));
    assert!(
        err.contains(&format!("moved tag y:1 from {mine} to {theirs}")),
        "{err}"
    );
    assert_eq!(id(&env, "y:1"), theirs);

    // 1000 names: one index.json rename, not one per name.
    let layout = dir.join("many");
    let spec = format!("type=oci-layout,dest={}", layout.display());
    build(&other, &["-t", "z:1", "-o", &spec]);
    many_names(&layout, 1000);
    let fresh = Env::new();
    let trace = dir.join("trace");
    let traced = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=rename,renameat,renameat2", "-o"])
        .arg(&trace)
        .arg(assert_cmd::cargo::cargo_bin("otters"))
        .args(["load", "-i", layout.to_str().unwrap()])
        .env("OTTERS_HOME", fresh.home())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let listed = fresh.ok(&["images", "--format", "{{.Reference}}"]);
    assert_eq!(listed.lines().count(), 1000, "{listed}");
    if traced.status.success() {
        let renames = fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .filter(|l| l.contains("index.json\""))
            .count();
        assert!(renames <= 2, "index.json was rewritten {renames} times");
    } else {
        crate::support::tools::skip(
            "load_tags_in_one_update",
            &format!(
                "strace cannot trace here: {}",
                String::from_utf8_lossy(&traced.stderr)
            ),
        );
    }

    // An archive's index.json is read up to the documented 4 MiB, not 64.
    let big = dir.join("big");
    crate::support::run_ok(
        std::process::Command::new("cp")
            .arg("-r")
            .arg(&layout)
            .arg(&big),
    );
    let mut index = fs::read(big.join("index.json")).unwrap();
    index.extend(std::iter::repeat_n(b' ', 4 << 20));
    fs::write(big.join("index.json"), &index).unwrap();
    let big_tar = dir.join("big.tar");
    crate::support::run_ok(
        std::process::Command::new("tar")
            .arg("-cf")
            .arg(&big_tar)
            .arg("-C")
            .arg(&big)
            .args(["oci-layout", "index.json", "blobs"]),
    );
    let err = Env::new().fails(&["load", "-i", big_tar.to_str().unwrap()]);
    assert!(
        err.contains("index.json is more than the 4194304-byte limit"),
        "{err}"
    );
}
