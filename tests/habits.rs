//! Docker habits through the real binary (issue 12): tags validated before anything is written,
//! and the flags and commands users of `docker buildx`, `docker image` and `oras` expect.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use support::cli::{flat, ok, Env};

fn fixture(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/build")
        .join(case)
}

/// A copy of `testdata/build/minimal` (FROM scratch, a RUNTIME, NAME tiny) in `env`'s dir.
fn minimal(env: &Env) -> PathBuf {
    let ctx = env.dir.path().join("ctx");
    fs::create_dir_all(&ctx).unwrap();
    fs::copy(fixture("minimal").join("Agentfile"), ctx.join("Agentfile")).unwrap();
    ctx
}

fn stderr_of(out: &std::process::Output) -> String {
    flat(&String::from_utf8_lossy(&out.stderr))
}

fn index_of(store: &Path) -> String {
    fs::read_to_string(store.join("index.json")).unwrap()
}

#[test]
fn bad_tags_are_refused_before_anything_is_written() {
    let cases = [
        ("Meteo:1.0", "must be lowercase", "meteo:1.0"),
        ("meteo::1", "path component `meteo:`", "meteo:1"),
        (
            "meteo:-1",
            "tag `-1` starts with a character that is not allowed",
            "meteo:1",
        ),
        ("Org/Meteo", "must be lowercase", "org/meteo"),
    ];
    for (tag, rule, fix) in cases {
        let env = Env::new();
        let ctx = minimal(&env);
        // Not offline: without the early check, resolution would run and could write a lock.
        let out = env
            .otters()
            .args(["build", "--allow-unpinned", "-t", "ok:1", "-t", tag])
            .arg(&ctx)
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(1), "{tag}: {err}");
        assert!(err.contains(&format!("-t {tag}")), "{tag}: {err}");
        assert!(err.contains(rule), "{tag}: {err}");
        // miette may wrap a long line after a `/`.
        assert!(
            err.replace(' ', "").contains(&format!("`{fix}`")),
            "{tag}: {err}"
        );
        assert!(!env.home().exists(), "{tag}: the store was created");
        assert!(
            !ctx.join("Agentfile.lock").exists(),
            "{tag}: a lock was written"
        );
        // The suggested spelling builds.
        let digest = ok(env
            .otters()
            .args(["build", "--offline", "--allow-unpinned", "-q", "-t", fix])
            .arg(&ctx));
        assert!(digest.starts_with("sha256:"), "{fix}: {digest}");
        assert!(ok(env.otters().args(["images"])).contains(fix.split(':').next().unwrap()));
    }
}

#[test]
fn tag_refuses_a_bad_target_and_keeps_the_index() {
    let env = Env::new();
    let ctx = minimal(&env);
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
        .arg(&ctx));
    let before = index_of(&env.store());
    let out = env
        .otters()
        .args(["tag", "meteo:1.0", "Meteo:2"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("must be lowercase") && err.contains("`meteo:2`"),
        "{err}"
    );
    assert_eq!(index_of(&env.store()), before);
    ok(env.otters().args(["tag", "meteo:1.0", "meteo:2"]));
    assert!(index_of(&env.store()).contains("meteo:2"));
}
