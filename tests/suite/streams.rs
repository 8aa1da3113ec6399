//! `otters save` and `otters load` as streams, through the real binary: several images in one
//! archive piped from `save` into `load` in another store, a terminal refused as the archive's
//! destination, and a stream cut short loading nothing.

use crate::support::cli::{flat, Env};
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// The `otters` binary, as a plain `std` command (for pipes between two processes).
fn otters_std(env: &Env) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("otters"));
    c.env("OTTERS_HOME", env.home())
        .env("DOCKER_CONFIG", env.docker())
        .env("NO_COLOR", "1")
        .env_remove("SOURCE_DATE_EPOCH");
    c
}

/// Builds an offline agent called `name` and tags it `tag`; returns its digest.
fn build(env: &Env, name: &str, tag: &str) -> String {
    let ctx = env.dir.path().join(format!("ctx-{name}"));
    fs::create_dir_all(&ctx).unwrap();
    fs::write(
        ctx.join("Agentfile"),
        format!("FROM scratch\nNAME {name}\nMODEL anthropic/claude-haiku-4-5-20251001\nRUNTIME ghcr.io/openotters/runtime:v1\n"),
    )
    .unwrap();
    env.ok(&[
        "build",
        "--offline",
        "--allow-unpinned",
        "-q",
        "-t",
        tag,
        ctx.to_str().unwrap(),
    ])
    .trim()
    .to_owned()
}

/// `(tag, digest)` of every tagged image, from `images --format json`.
fn tags(env: &Env) -> Vec<(String, String)> {
    let v: serde_json::Value =
        serde_json::from_str(&env.ok(&["images", "--format", "json"])).unwrap();
    let mut out: Vec<(String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["reference"].as_str().unwrap_or_default().to_owned(),
                i["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Files left in the store's temp dir (a failed load must leave none).
fn temp_files(env: &Env) -> Vec<String> {
    fs::read_dir(env.store().join(".tmp"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `otters save` of `refs` to standard output (a pipe), as bytes.
fn save_bytes(env: &Env, refs: &[&str]) -> Vec<u8> {
    let out = otters_std(env)
        .arg("save")
        .args(refs)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn save_of_several_images_piped_into_load_round_trips() {
    let a = Env::new();
    let one = build(&a, "alpha", "alpha:1");
    let two = build(&a, "beta", "beta:2");
    assert_ne!(one, two);

    // A real pipe between two processes: save's stdout is load's stdin.
    let b = Env::new();
    let mut save = otters_std(&a)
        .args(["save", "alpha:1", "beta:2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let load = otters_std(&b)
        .arg("load")
        .stdin(save.stdout.take().unwrap())
        .output()
        .unwrap();
    let saved = save.wait_with_output().unwrap();
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    assert!(
        load.status.success(),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&load.stdout).trim(),
        format!("alpha:1 {one}\nbeta:2 {two}")
    );
    assert_eq!(
        tags(&b),
        [
            ("alpha:1".to_owned(), one.clone()),
            ("beta:2".to_owned(), two)
        ]
    );

    // Every blob in the new store verifies: `save` checks each while copying it, and the archive
    // it writes is the same bytes as the first store's (archives are deterministic).
    let again = b.dir.path().join("again.tar");
    b.ok(&["save", "alpha:1", "beta:2", "-o", again.to_str().unwrap()]);
    assert_eq!(
        fs::read(&again).unwrap(),
        save_bytes(&a, &["alpha:1", "beta:2"])
    );

    // `-i -` is standard input too; an image named twice is one manifest with both tags.
    a.ok(&["tag", "alpha:1", "alpha:latest"]);
    let c = Env::new();
    let mut load = otters_std(&c)
        .args(["load", "-i", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = save_bytes(&a, &["alpha:1", "alpha:latest"]);
    load.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = load.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        tags(&c),
        [
            ("alpha:1".to_owned(), one.clone()),
            ("alpha:latest".to_owned(), one)
        ]
    );
}

#[test]
fn save_refuses_a_terminal_as_its_output() {
    if !crate::support::tools::require(
        "save_refuses_a_terminal",
        "script",
        &["-V"],
        "install util-linux",
    ) {
        return;
    }
    let env = Env::new();
    build(&env, "alpha", "alpha:1");
    let bin = assert_cmd::cargo::cargo_bin("otters");
    // `script` runs the command with a pseudo-terminal as its stdin, stdout and stderr.
    let out = Command::new("script")
        .args([
            "-qec",
            &format!("{} save alpha:1", bin.display()),
            "/dev/null",
        ])
        .env("OTTERS_HOME", env.home())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "save wrote to a terminal:\n{text}");
    let text = flat(&text);
    assert!(
        text.contains("refusing to write an oci-archive to a terminal")
            && text.contains("-o FILE")
            && text.contains("| otters load"),
        "{text}"
    );
    assert!(
        !text.contains("blobs/sha256"),
        "archive bytes reached the terminal: {text}"
    );
}

#[test]
fn a_stream_cut_short_loads_nothing() {
    let a = Env::new();
    build(&a, "alpha", "alpha:1");
    build(&a, "beta", "beta:2");
    let bytes = save_bytes(&a, &["alpha:1", "beta:2"]);
    // Inside a header, inside a blob, on a block boundary between entries (a clean end of
    // stream for tar), and just before the end-of-archive blocks are all cut points; the
    // archive ends with index.json, oci-layout and two zero blocks.
    let end_of_index = bytes.len() - 2 * 512 - 1024;
    let cuts = [
        0,
        100,
        512,
        bytes.len() / 2,
        bytes.len() / 2 / 512 * 512,
        end_of_index - 512,
        end_of_index - 1,
    ];
    for cut in cuts {
        let b = Env::new();
        let mut load = otters_std(&b)
            .arg("load")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        load.stdin.take().unwrap().write_all(&bytes[..cut]).unwrap();
        let out = load.wait_with_output().unwrap();
        let err = flat(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "a stream cut at {cut} loaded: {err}");
        assert!(err.contains("standard input"), "cut at {cut}: {err}");
        assert!(!err.contains("panicked"), "cut at {cut}: {err}");
        assert!(
            tags(&b).is_empty(),
            "cut at {cut}: something was tagged: {:?}",
            tags(&b)
        );
        assert!(
            temp_files(&b).is_empty(),
            "cut at {cut}: {:?}",
            temp_files(&b)
        );
    }
}

#[test]
fn load_of_a_missing_file_names_it() {
    let env = Env::new();
    let missing = env.dir.path().join("nope.tar");
    let err = env.fails(&["load", "-i", missing.to_str().unwrap()]);
    assert!(err.contains("nope.tar"), "{err}");
    assert!(Path::new(&missing).metadata().is_err());
}

/// `skopeo` with its arguments, which must succeed.
fn skopeo(args: &[&str]) {
    crate::support::run_ok(Command::new("skopeo").args(args));
}

#[test]
fn pull_reads_layouts_and_archives_written_by_skopeo() {
    if !crate::support::tools::require(
        "pull_reads_layouts",
        "skopeo",
        &["--version"],
        "install skopeo",
    ) {
        return;
    }
    let a = Env::new();
    let digest = build(&a, "alpha", "alpha:1");
    let store = a.store();
    let layout = a.dir.path().join("layout");
    let archive = a.dir.path().join("alpha.tar");
    let src = format!("oci:{}:alpha:1", store.display());
    skopeo(&["copy", "-q", &src, &format!("oci:{}:1.0", layout.display())]);
    skopeo(&[
        "copy",
        "-q",
        &src,
        &format!("oci-archive:{}:v2", archive.display()),
    ]);

    let b = Env::new();
    let out = b.ok(&[
        "pull",
        &format!("oci:{}:1.0", layout.display()),
        "-t",
        "alpha:1",
    ]);
    assert_eq!(out.trim(), digest);
    let out = b.ok(&[
        "pull",
        &format!("oci-archive:{}", archive.display()),
        "-t",
        "alpha:2",
    ]);
    assert_eq!(out.trim(), digest);
    assert_eq!(
        tags(&b),
        [
            ("alpha:1".to_owned(), digest.clone()),
            ("alpha:2".to_owned(), digest.clone())
        ]
    );
    // Every blob verifies (save checks each as it copies it).
    let again = b.dir.path().join("again.tar");
    b.ok(&["save", "alpha:2", "-o", again.to_str().unwrap()]);

    // A tag the layout does not hold is named with what it does hold; `load -i DIR` reads it.
    let err = b.fails(&["pull", &format!("oci:{}:nope", layout.display())]);
    assert!(
        err.contains("has no image named `nope`") && err.contains("1.0"),
        "{err}"
    );
    // Its bare tag `1.0` names no repository: loaded untagged (not as `1.0:latest`).
    let c = Env::new();
    assert_eq!(
        c.ok(&["load", "-i", layout.to_str().unwrap()]).trim(),
        digest
    );
}

#[test]
fn pull_from_a_hostile_layout_stores_and_tags_nothing() {
    if !crate::support::tools::require(
        "pull_from_a_hostile",
        "skopeo",
        &["--version"],
        "install skopeo",
    ) {
        return;
    }
    let a = Env::new();
    build(&a, "alpha", "alpha:1");
    let good = a.dir.path().join("good");
    skopeo(&[
        "copy",
        "-q",
        &format!("oci:{}:alpha:1", a.store().display()),
        &format!("oci:{}:1", good.display()),
    ]);
    let copy = |name: &str| {
        let dir = a.dir.path().join(name);
        crate::support::run_ok(Command::new("cp").arg("-r").arg(&good).arg(&dir));
        dir
    };
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(good.join("index.json")).unwrap()).unwrap();
    let manifest_digest = index["manifests"][0]["digest"].as_str().unwrap().to_owned();
    let manifest: serde_json::Value = serde_json::from_slice(
        &fs::read(good.join("blobs/sha256").join(&manifest_digest[7..])).unwrap(),
    )
    .unwrap();
    let config = manifest["config"]["digest"].as_str().unwrap()[7..].to_owned();

    // A config blob whose bytes are not its name (same size).
    let swapped = copy("swapped");
    let path = swapped.join("blobs/sha256").join(&config);
    let mut bytes = fs::read(&path).unwrap();
    bytes[0] ^= 1;
    fs::write(&path, &bytes).unwrap();
    // An index.json entry declaring an absurd size (the registry pull's descriptor limit).
    let huge = copy("huge");
    let mut idx = index.clone();
    idx["manifests"][0]["size"] = serde_json::json!(1u64 << 50);
    fs::write(huge.join("index.json"), idx.to_string()).unwrap();
    // A manifest whose media type contradicts the index entry naming it.
    let liar = copy("liar");
    let mut idx = index.clone();
    idx["manifests"][0]["mediaType"] = serde_json::json!("application/vnd.oci.image.index.v1+json");
    fs::write(liar.join("index.json"), idx.to_string()).unwrap();

    for (dir, expect) in [
        (&swapped, "holds content with digest"),
        (&huge, "limit"),
        (
            &liar,
            "says an image index but the document is an image manifest",
        ),
    ] {
        let b = Env::new();
        let err = b.fails(&["pull", &format!("oci:{}:1", dir.display()), "-t", "x:1"]);
        assert!(err.contains(expect), "{}: {err}", dir.display());
        assert!(
            tags(&b).is_empty(),
            "{}: tagged {:?}",
            dir.display(),
            tags(&b)
        );
        assert!(
            !b.store_blob(&format!("sha256:{config}")).exists() || dir != &swapped,
            "the swapped config landed in the store"
        );
        assert!(temp_files(&b).is_empty(), "{:?}", temp_files(&b));
    }
}

#[test]
fn build_progress_plain_prints_a_line_per_step_and_auto_is_unchanged() {
    let env = Env::new();
    let ctx = env.dir.path().join("big");
    fs::create_dir_all(&ctx).unwrap();
    // Above the 32 MiB progress threshold, so the write is a reported step.
    fs::write(ctx.join("data.bin"), vec![7u8; 33 << 20]).unwrap();
    fs::write(
        ctx.join("Agentfile"),
        "FROM scratch\nNAME big\nMODEL anthropic/claude-haiku-4-5-20251001\nRUNTIME ghcr.io/openotters/runtime:v1\nADD data.bin \"payload\"\n",
    )
    .unwrap();
    let ctx = ctx.to_str().unwrap();
    let base = ["build", "--offline", "--allow-unpinned", "--no-cache"];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        args.push(ctx);
        env.run(&args)
    };
    let (ok, out, plain) = with(&["--progress", "plain", "-t", "big:1"]);
    assert!(ok, "{plain}");
    assert!(plain.contains("wrote data.bin (33.0 MiB) in "), "{plain}");
    assert_eq!(
        plain.lines().filter(|l| l.starts_with("layer ")).count(),
        3,
        "{plain}"
    );
    assert!(plain.contains("layer data.bin sha256:"), "{plain}");
    let digest = out.trim().to_owned();

    // `auto` off a terminal is today's output, byte for byte.
    let default = with(&["-t", "big:1"]);
    let auto = with(&["--progress", "auto", "-t", "big:1"]);
    assert!(default.0 && auto.0);
    assert_eq!(default.1, auto.1);
    assert_eq!(default.2, auto.2);
    assert!(!auto.2.contains("layer "), "{}", auto.2);

    // `quiet` is `-q`: the digest alone.
    let (ok, out, err) = with(&["--progress", "quiet", "-t", "big:1"]);
    assert!(ok);
    assert_eq!(out.trim(), digest);
    assert_eq!(
        err,
        env.run(&[&base[..], &["-q", "-t", "big:1", ctx]].concat())
            .2
    );
}

/// skopeo's `oci-archive:FILE:1.0` names an image by a bare tag: `load` stores it untagged with a
/// hint (never as repository `1.0:latest`, nor moving that tag on a second load); containerd's
/// `io.containerd.image.name` gives the full name.
#[test]
fn load_keeps_bare_tags_untagged_and_reads_containerds_name() {
    if !crate::support::tools::require(
        "load_keeps_bare_tags",
        "skopeo",
        &["--version"],
        "install skopeo",
    ) {
        return;
    }
    let a = Env::new();
    let alpha = build(&a, "alpha", "alpha:1");
    let beta = build(&a, "beta", "beta:1");
    let store = a.store();
    let b = Env::new();
    for (name, digest) in [("alpha:1", &alpha), ("beta:1", &beta)] {
        for bare in ["1.0", "latest", "v2"] {
            let file = format!("{}-{bare}.tar", name.replace(':', "-"));
            let archive = a.dir.path().join(file);
            skopeo(&[
                "copy",
                "-q",
                &format!("oci:{}:{name}", store.display()),
                &format!("oci-archive:{}:{bare}", archive.display()),
            ]);
            let (ok, out, err) = b.run(&["load", "-i", archive.to_str().unwrap()]);
            assert!(ok, "{err}");
            assert_eq!(out.trim(), digest.as_str(), "{bare}: {err}");
            assert!(
                err.contains(&format!("named only `{bare}`")) && err.contains("otters tag"),
                "{bare}: {err}"
            );
        }
    }
    assert!(
        tags(&b).iter().all(|(name, _)| name.is_empty()) && tags(&b).len() == 2,
        "a bare tag became a name: {:?}",
        tags(&b)
    );
    let listed = b.ok(&["images", "--format", "json"]);
    assert!(
        listed.contains(&alpha) && listed.contains(&beta),
        "{listed}"
    );

    // containerd's full name wins over the bare ref name.
    let layout = a.dir.path().join("ctr");
    skopeo(&[
        "copy",
        "-q",
        &format!("oci:{}:alpha:1", store.display()),
        &format!("oci:{}:1.0", layout.display()),
    ]);
    let path = layout.join("index.json");
    let mut index: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    index["manifests"][0]["annotations"]["io.containerd.image.name"] =
        serde_json::json!("registry.example/team/alpha:3");
    fs::write(&path, index.to_string()).unwrap();
    let c = Env::new();
    let out = c.ok(&["load", "-i", layout.to_str().unwrap()]);
    assert_eq!(out.trim(), format!("registry.example/team/alpha:3 {alpha}"));
}
