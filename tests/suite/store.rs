//! The local store commands through the real binary: images, inspect, tag, rm, save, load.

use crate::support::cli::Env;
use crate::support::fixture;
use crate::support::snap::Transcript;

/// Builds the `minimal` fixture offline with `args` before the context; returns its digest.
pub(crate) fn build_minimal(env: &Env, args: &[&str]) -> String {
    let ctx = fixture("minimal");
    let mut all = vec!["build", "--offline", "--allow-unpinned", "-q"];
    all.extend_from_slice(args);
    all.push(ctx.to_str().unwrap());
    env.ok(&all).trim().to_owned()
}

fn snapshot(name: &str, text: &str) {
    crate::support::snap::assert("build", name, text);
}

#[test]
fn tag_images_inspect_rm() {
    let env = Env::new();
    let digest = build_minimal(&env, &[]);
    env.otters()
        .args(["tag", "tiny", "127.0.0.1:5000/team/tiny:v1"])
        .assert()
        .success();
    env.otters()
        .args(["tag", &digest[7..19], "alias"])
        .assert()
        .success();
    snapshot("images_json", &env.ok(&["images", "--format", "json"]));
    // (The fixture's digest is golden: its short form in the table is the same everywhere.)
    let mut t = Transcript::on(&env);
    t.run(&env, &["images"]);

    snapshot(
        "inspect_json",
        &env.ok(&["inspect", "alias:latest", "--format", "json"]),
    );
    t.run(&env, &["inspect", &digest]);

    env.otters()
        .args(["rm", "alias", "tiny:latest"])
        .assert()
        .success();
    let left: serde_json::Value =
        serde_json::from_str(&env.ok(&["images", "--format", "json"])).unwrap();
    assert_eq!(left.as_array().unwrap().len(), 1);
    for args in [
        &["rm", "alias"][..],
        &["inspect", "nope:1"],
        &["tag", "127.0.0.1:5000/team/tiny:v1", "bad name"],
    ] {
        let (ok, ..) = t.run(&env, args);
        assert!(!ok, "{args:?}");
    }
    // The table, the text of inspect, and the refusals, pinned whole.
    t.assert("store", "images_inspect_rm");
}

#[test]
fn save_and_load_round_trip_into_an_empty_store() {
    let a = Env::new();
    let digest = build_minimal(&a, &["-t", "tiny:2"]);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tiny.tar");
    a.otters()
        .args(["save", "tiny:2", "-o", file.to_str().unwrap()])
        .assert()
        .success();
    let first = std::fs::read(&file).unwrap();
    a.otters()
        .args(["save", "tiny:2", "-o", file.to_str().unwrap()])
        .assert()
        .success();
    assert_eq!(
        first,
        std::fs::read(&file).unwrap(),
        "save is deterministic"
    );

    let b = Env::new();
    assert_eq!(
        b.ok(&["load", "-i", file.to_str().unwrap()]).trim(),
        format!("tiny:2 {digest}")
    );
    let v: serde_json::Value =
        serde_json::from_str(&b.ok(&["inspect", "tiny:2", "--format", "json"])).unwrap();
    assert_eq!(v["digest"], digest.as_str());
    assert_eq!(v["config"]["agent"]["name"], "tiny");

    std::fs::write(&file, b"not a tar").unwrap();
    let mut t = Transcript::on(&b);
    t.path(tmp.path(), "[ARCHIVES]");
    let (ok, ..) = t.run(&b, &["load", "-i", file.to_str().unwrap()]);
    assert!(!ok);
    t.assert("store", "load_not_a_tar");
}

#[test]
fn rm_takes_a_digest_or_prefix_and_removes_untagged_images() {
    let env = Env::new();
    let digest = build_minimal(&env, &["-t", "a:1"]);
    env.ok(&["tag", "a:1", "b:1"]);
    // Two tags name it: by digest, only with --force (as docker rmi).
    let mut t = Transcript::on(&env);
    let (ok, ..) = t.run(&env, &["rm", &digest[..19]]);
    assert!(!ok);
    let (ok, ..) = t.run(&env, &["rm", "-f", &digest[..19]]);
    assert!(ok);
    assert_eq!(env.ok(&["images", "-q"]), "");

    // An untagged `<none>` image (loaded from an archive saved by digest) can be removed.
    let other = Env::new();
    build_minimal(&other, &["-t", "c:1"]);
    let archive = env.dir.path().join("untagged.tar");
    other.ok(&["save", &digest, "-o", archive.to_str().unwrap()]);
    env.ok(&["load", "-i", archive.to_str().unwrap()]);
    assert!(env.ok(&["images"]).contains("<none>"));
    let out = env.ok(&["rm", &digest["sha256:".len()..][..12]]);
    assert_eq!(out, format!("removed {digest}\n"));
    assert_eq!(env.ok(&["images", "-q"]), "");
    let (ok, ..) = t.run(&env, &["rm", &digest]);
    assert!(!ok);
    t.assert("store", "rm_by_digest");
    // A tag still removes just that tag.
    env.ok(&["load", "-i", archive.to_str().unwrap()]);
    env.ok(&["tag", &digest, "d:1"]);
    assert_eq!(env.ok(&["rm", "d:1"]), "untagged d:1\n");
}
