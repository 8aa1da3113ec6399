//! `otters bin pack` (issue 32.17): a user's own static binary packed into a bin image, the same
//! bytes anywhere (its digest pinned in a snapshot), pushed, pinned by an Agentfile's build with
//! its description and usage read from the annotations, run (the runtime calling the BIN), and read
//! by skopeo and umoci as an ordinary OCI image.

use crate::support::cli::{json, Env};
use crate::support::registry::Registry;
use crate::support::tools;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// A runtime that calls its BIN: `busybox echo` from the agent's `usr/bin`.
const RUNTIME: &str = "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\necho \"runtime ran\"\n\"$root/usr/bin/busybox\" echo \"bin ran\"\n";

/// linux on this machine's architecture, as OCI names it.
fn host() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("linux/{arch}")
}

fn snapshot(name: &str, text: &str) {
    crate::support::snap::assert("bin", name, text);
}

/// The same file packed twice, in two stores, from two paths with other times, gives one digest;
/// pinned (with the whole `inspect`) for a fixed file, so any change of the image's bytes shows.
#[test]
fn a_packed_bin_image_is_the_same_bytes_anywhere() {
    let env = Env::new();
    let rt = env.dir.path().join("rt.sh");
    crate::support::write(&rt, RUNTIME);
    let usage = env.dir.path().join("USAGE.md");
    crate::support::write(&usage, "# runtime\nServes the agent.\n");
    let pack = |env: &Env, file: &Path| {
        env.run(&[
            "bin",
            "pack",
            "runtime",
            file.to_str().unwrap(),
            "--platform",
            "linux/amd64",
            "--usage",
            usage.to_str().unwrap(),
            "--description",
            "a test runtime",
            "-t",
            "example.com/tools/runtime:1",
        ])
    };
    let (ok, out, err) = pack(&env, &rt);
    assert!(ok, "{err}");
    let other = Env::new();
    let moved = other.dir.path().join("elsewhere/runtime");
    crate::support::write(&moved, RUNTIME);
    let (ok2, out2, _) = pack(&other, &moved);
    assert!(ok2);
    assert_eq!(out, out2, "the same file packed elsewhere is another image");
    let shown = env.ok(&["inspect", "example.com/tools/runtime:1"]);
    snapshot(
        "pack_runtime",
        &format!("$ otters bin pack …\n{out}{err}\n$ otters inspect …\n{shown}"),
    );
    // Several platforms: one index, its manifests in platform order whatever the command line's.
    let arm = env.dir.path().join("rt-arm64.sh");
    crate::support::write(&arm, RUNTIME.replace("runtime ran", "arm64 runtime ran"));
    let (rt, arm) = (rt.to_str().unwrap(), arm.to_str().unwrap());
    let multi = |files: [&str; 2], platforms: [&str; 2], tag: &str| {
        let flags = [
            "--platform",
            platforms[0],
            "--platform",
            platforms[1],
            "-t",
            tag,
        ];
        env.ok(&[&["bin", "pack", "runtime"][..], &files, &flags].concat())
    };
    let one = multi(
        [rt, arm],
        ["linux/amd64", "linux/arm64"],
        "example.com/tools/multi:1",
    );
    let two = multi(
        [arm, rt],
        ["linux/arm64", "linux/amd64"],
        "example.com/tools/multi:2",
    );
    assert_eq!(one, two, "the order of the files changed the image");
    let index = json(&env.ok(&["inspect", "example.com/tools/multi:1", "--format", "json"]));
    let text = index.to_string();
    let (amd, arm64) = (
        text.find("\"amd64\"").unwrap(),
        text.find("\"arm64\"").unwrap(),
    );
    assert!(amd < arm64, "{text}");
    let rt = Path::new(rt);
    // SOURCE_DATE_EPOCH sets the time, and only it.
    let timed = env
        .otters()
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args([
            "bin",
            "pack",
            "runtime",
            rt.to_str().unwrap(),
            "--platform",
            "linux/amd64",
        ])
        .args(["-t", "example.com/tools/runtime:2"])
        .output()
        .unwrap();
    assert!(timed.status.success());
    let index = json(&env.ok(&["inspect", "example.com/tools/runtime:2", "--format", "json"]));
    assert_ne!(String::from_utf8_lossy(&timed.stdout), out);
    assert!(
        index.to_string().contains("2023-11-14T22:13:20Z"),
        "{index}"
    );
}

/// Refusals name what is wrong and what to do.
#[test]
fn bin_pack_refuses_what_it_cannot_pack_and_says_why() {
    let env = Env::new();
    let script = env.dir.path().join("tool.sh");
    crate::support::write(&script, "#!/bin/sh\necho hi\n");
    let s = script.to_str().unwrap();
    let dir = env.dir.path().to_str().unwrap();
    let amd64 = ["--platform", "linux/amd64"];
    let cases: [(Vec<&str>, &[&str]); 5] = [
        (
            vec!["tool", s],
            &["is not an ELF executable", "give its platform (OS/ARCH"],
        ),
        (
            [&["a/b", s][..], &amd64].concat(),
            &["`a/b` is not a bin name"],
        ),
        (
            [&["t", s, s][..], &amd64].concat(),
            &["2 file(s) but 1 platform(s)", "one platform per file"],
        ),
        (
            [&["t", s, s][..], &amd64, &amd64].concat(),
            &["are both for linux/amd64"],
        ),
        (
            [&["t", dir][..], &amd64].concat(),
            &["is not a regular file"],
        ),
    ];
    for (args, says) in cases {
        let err = env.fails(&[&["bin", "pack"][..], &args, &["-t", "x/t:1"]].concat());
        assert!(says.iter().all(|w| err.contains(w)), "{args:?}: {err}");
    }
    // Hostile paths where a file is expected: a FIFO (no writer: opening it would block), an
    // endless device, and --usage naming either. Each is refused at once, nothing is stored.
    let fifo = env.dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.to_str().unwrap();
    let hostile: [Vec<&str>; 4] = [
        [&["t", fifo][..], &amd64].concat(),
        [&["t", "/dev/zero"][..], &amd64].concat(),
        [&["t", s, "--usage", fifo][..], &amd64].concat(),
        [&["t", s, "--usage", "/dev/urandom"][..], &amd64].concat(),
    ];
    for args in hostile {
        let err = env.fails(&[&["bin", "pack"][..], &args, &["-t", "x/t:1"]].concat());
        assert!(err.contains("is not a regular file"), "{args:?}: {err}");
    }
    let (_, images, _) = env.run(&["images", "-q"]);
    assert!(images.trim().is_empty(), "{images}");
}

/// The path a user takes: pack a static binary and a runtime, push both, build an Agentfile that
/// names them (description and usage come from the annotations), run it: the runtime runs and
/// calls the BIN. skopeo reads the index, umoci unpacks an image as any OCI image.
#[test]
fn a_packed_runtime_and_bin_build_and_run_and_other_tools_read_them() {
    const TEST: &str = "a_packed_runtime_and_bin_build_and_run_and_other_tools_read_them";
    if !Path::new("/bin/busybox").exists() {
        tools::skip(TEST, "/bin/busybox (busybox-static) is not installed");
        return;
    }
    let reg = Registry::start();
    let a = &reg.addr;
    let env = Env::new();
    let dir = env.dir.path();
    crate::support::write(
        &dir.join("busybox.md"),
        "# busybox\n`busybox echo TEXT` prints TEXT.\n",
    );
    crate::support::write(&dir.join("rt.sh"), RUNTIME);
    let bin = format!("{a}/tools/busybox:1");
    let (ok, _, err) = env.run(&[
        "bin",
        "pack",
        "busybox",
        "/bin/busybox",
        "--usage",
        &dir.join("busybox.md").to_string_lossy(),
        "--description",
        "a static busybox",
        "-t",
        &bin,
        "--push",
    ]);
    assert!(ok && err.contains(&format!("pushed {bin}")), "{err}");
    let runtime = format!("{a}/tools/runtime:1");
    let (ok, _, err) = env.run(&[
        "bin",
        "pack",
        "runtime",
        &dir.join("rt.sh").to_string_lossy(),
        "--platform",
        &host(),
        "-t",
        &runtime,
        "--push",
    ]);
    assert!(ok, "{err}");

    let ctx = dir.join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME packed\nRUNTIME {runtime}\nBIN busybox {bin}\n"),
    );
    let agent = format!("{a}/agents/packed:1");
    env.ok(&["build", "-q", "-t", &agent, ctx.to_str().unwrap()]);
    let lock = std::fs::read_to_string(ctx.join("Agentfile.lock")).unwrap();
    assert!(lock.contains("a static busybox"), "{lock}");
    let (ok, out, err) = env.run(&["run", &agent]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("runtime ran\nbin ran\n"), "{out}{err}");

    // skopeo reads the index and the manifest; umoci unpacks the image: the file, mode 0755.
    if !tools::require(TEST, "skopeo", &["--version"], "apt-get install skopeo")
        || !tools::require(TEST, "umoci", &["--version"], "apt-get install umoci")
    {
        return;
    }
    let raw = crate::support::run_ok(std::process::Command::new("skopeo").args([
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{bin}"),
    ]));
    let index = json(&raw);
    assert_eq!(
        index["annotations"]["io.openotters.bin.name"], "busybox",
        "{raw}"
    );
    assert_eq!(index["manifests"][0]["platform"]["os"], "linux", "{raw}");
    // umoci unpacks an image without a usage document (it wants a diff_id per layer, and the
    // contract's usage layer is not a tar: see docs/bins.md).
    let layout = dir.join("layout");
    crate::support::run_ok(std::process::Command::new("skopeo").args([
        "copy",
        "--src-tls-verify=false",
        &format!("docker://{runtime}"),
        &format!("oci:{}:rt", layout.display()),
    ]));
    let bundle = dir.join("bundle");
    crate::support::run_ok(std::process::Command::new("umoci").args([
        "unpack",
        "--rootless",
        "--image",
        &format!("{}:rt", layout.display()),
        bundle.to_str().unwrap(),
    ]));
    let unpacked = bundle.join("rootfs/runtime");
    assert_eq!(std::fs::read_to_string(&unpacked).unwrap(), RUNTIME);
    assert_eq!(
        std::fs::metadata(&unpacked).unwrap().permissions().mode() & 0o777,
        0o755
    );
}
