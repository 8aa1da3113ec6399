//! What a user sees when resolution, registries and credentials go wrong (issue 9): offline
//! builds FROM a parent in the local store, one code per failure (an unreadable lock, an
//! unreachable registry, a missing platform), `--offline` advice only where it would work, push
//! with a stale password, `otters login` on a terminal and through a credential store, and the
//! provider-key warning of `otters run`. Every test runs the real binary, against a real
//! `docker-registry` where a registry is involved.

mod support;

use std::path::{Path, PathBuf};
use support::cli::{flat, Env};
use support::images::{self, BinPrefix};
use support::registry::{free_port, Registry};

const RUNTIME: &str = "#!/bin/sh\necho runtime\n";

/// Writes an Agentfile (and `files`) into `env.dir/name`; returns the context.
fn context(env: &Env, name: &str, agentfile: &str, files: &[(&str, &str)]) -> PathBuf {
    let ctx = env.dir.path().join(name);
    support::write(&ctx.join("Agentfile"), agentfile);
    for (path, body) in files {
        support::write(&ctx.join(path), body);
    }
    ctx
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Pushes a runtime image for this host as an index (with an s390x/ppc64le sibling) under
/// `REG/name:tag`; returns the host manifest's digest.
fn push_runtime_index(env: &Env, reg: &Registry, name: &str, tag: &str) -> String {
    let dir = env.dir.path().join(format!("layouts/{name}-{tag}"));
    let (_, digest) = images::bin_index(
        &dir,
        tag,
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        Some("test runtime"),
    );
    images::skopeo_push(&dir, tag, &format!("{}/{name}:{tag}", reg.addr), None);
    digest
}

/// Pushes a single-manifest (no index) image for this host's platform only.
fn push_runtime_single(env: &Env, reg: &Registry, name: &str, tag: &str) -> String {
    let dir = env.dir.path().join(format!("layouts/{name}-{tag}-single"));
    let digest = images::bin_single(
        &dir,
        tag,
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        None,
    );
    images::skopeo_push(&dir, tag, &format!("{}/{name}:{tag}", reg.addr), None);
    digest
}

/// An architecture no test image is built for.
fn foreign_arch() -> &'static str {
    if support::host_arch() == "riscv64" {
        "mips64le"
    } else {
        "riscv64"
    }
}

// ---- item 5: offline builds FROM a parent in the local store ------------------------------

#[test]
fn offline_child_of_a_local_parent_builds_and_reuses_its_layers() {
    let env = Env::new();
    let port = free_port(); // nothing listens here
    let parent_ref = format!("127.0.0.1:{port}/lib/parent:1");
    let parent_ctx = context(
        &env,
        "parent",
        "FROM scratch\nNAME parent\nMODEL anthropic/claude-test\nADD notes.txt\nCONTEXT STYLE file://style.md\n",
        &[("notes.txt", "parent notes\n"), ("style.md", "be terse\n")],
    );
    env.ok(&["build", "-q", "-t", &parent_ref, s(&parent_ctx)]);
    let child_ctx = context(
        &env,
        "child",
        &format!("FROM {parent_ref}\nNAME child\nADD more.txt\n"),
        &[("more.txt", "child notes\n")],
    );

    // --offline: no lock, but the parent is in the store under that tag.
    let (ok, out, err) = env.run(&["build", "-q", "--offline", "-t", "child:1", s(&child_ctx)]);
    assert!(ok, "offline child build failed:\n{err}");
    assert!(out.trim().starts_with("sha256:"), "{out}");
    assert!(!err.contains("AF405"), "{err}");
    assert!(
        !child_ctx.join("Agentfile.lock").exists(),
        "an offline build wrote a lock"
    );
    // The child carries the parent's layers by digest, and the merged model.
    let titles = |r: &str| -> Vec<(String, String)> {
        let v = support::cli::json(&env.ok(&["inspect", "--format", "json", r]));
        v["layers"]
            .as_array()
            .expect("layers")
            .iter()
            .map(|l| {
                (
                    l["title"].as_str().unwrap_or_default().to_owned(),
                    l["digest"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let parent_layers = titles(&parent_ref);
    let child_layers = titles("child:1");
    for title in ["notes.txt", "STYLE.md"] {
        let p = parent_layers.iter().find(|(t, _)| t == title);
        assert!(p.is_some(), "parent has no {title}: {parent_layers:?}");
        assert!(
            child_layers.iter().any(|l| Some(l) == p),
            "child does not reuse {title}: {child_layers:?}"
        );
    }
    assert!(child_layers.iter().any(|(t, _)| t == "more.txt"));

    // With --allow-unpinned too (what `.ci/run` passes): the same image.
    let (ok, out2, err) = env.run(&[
        "build",
        "-q",
        "--offline",
        "--allow-unpinned",
        "-t",
        "child:2",
        s(&child_ctx),
    ]);
    assert!(ok, "{err}");
    assert_eq!(out2.trim(), out.trim());

    // Online, the registry cannot be reached: AF410 (not "image not found"), and the advice
    // points at the local copy and --offline.
    let (ok, _, err) = env.run(&["build", "-q", s(&child_ctx)]);
    let err = flat(&err);
    assert!(!ok);
    assert!(err.contains("AF410") && !err.contains("AF401"), "{err}");
    assert!(err.contains(&format!("cannot reach registry 127.0.0.1:{port}")), "{err}");
    assert!(
        err.contains("this parent is in the local store, so `otters build --offline` builds from it"),
        "{err}"
    );
}

#[test]
fn offline_parent_missing_everywhere_never_advises_the_flag_already_given() {
    let env = Env::new();
    let ctx = context(&env, "child", "FROM 127.0.0.1:1/lib/gone:1\nNAME child\n", &[]);
    for args in [
        vec!["build", "--offline", s(&ctx)],
        vec!["build", "--offline", "--allow-unpinned", s(&ctx)],
    ] {
        let err = env.fails(&args);
        assert!(err.contains("AF405"), "{err}");
        assert!(
            err.contains("the parent `127.0.0.1:1/lib/gone:1` is neither pinned in Agentfile.lock nor in the local store"),
            "{err}"
        );
        assert!(!err.contains("pass --allow-unpinned"), "{args:?}: {err}");
        assert!(err.contains("otters pull 127.0.0.1:1/lib/gone:1"), "{err}");
        if args.contains(&"--allow-unpinned") {
            assert!(err.contains("--allow-unpinned cannot stand in for a parent"), "{err}");
        }
    }
}

// ---- item 8: an unreadable lock and a client that cannot be set up have their own codes ----

#[test]
fn unreadable_lock_is_af409_and_a_bad_client_setting_af410() {
    let env = Env::new();
    let ctx = context(
        &env,
        "a",
        "FROM scratch\nNAME a\nRUNTIME 127.0.0.1:1/rt:1\n",
        &[("Agentfile.lock", "<<<<<<< HEAD\n{\"version\": 1}\n")],
    );
    for args in [
        vec!["build", "--offline", s(&ctx)],
        vec!["build", s(&ctx)],
        vec!["lock", s(&ctx)],
    ] {
        let err = env.fails(&args);
        assert!(err.contains("AF409"), "{args:?}: {err}");
        assert!(!err.contains("AF406"), "{args:?}: {err}");
        assert!(err.contains("is not a valid lock file"), "{err}");
    }
    // `otters explain` knows the code.
    let page = env.ok(&["explain", "AF409"]);
    assert!(page.contains("lock-unreadable"), "{page}");

    // The HTTP client cannot be set up (a timeout that is not a number): AF410, not AF401.
    let ok_ctx = context(&env, "b", "FROM scratch\nNAME b\nRUNTIME 127.0.0.1:1/rt:1\n", &[]);
    let out = env
        .otters()
        .env("OTTERS_REGISTRY_TIMEOUT", "soon")
        .args(["build", s(&ok_ctx)])
        .output()
        .expect("run");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(err.contains("AF410") && !err.contains("AF401"), "{err}");
    assert!(err.contains("OTTERS_REGISTRY_TIMEOUT"), "{err}");
}

// ---- item 16: an unreachable registry is AF410; --offline is advised only when it would work --

#[test]
fn unreachable_registry_is_af410_with_offline_advice_only_when_the_lock_pins_it() {
    let env = Env::new();
    let mut reg = Registry::start();
    push_runtime_index(&env, &reg, "rt", "1");
    let a = reg.addr.clone();
    let pinned = context(&env, "pinned", &format!("FROM scratch\nNAME p\nRUNTIME {a}/rt:1\n"), &[]);
    env.ok(&["build", "-q", s(&pinned)]);
    assert!(pinned.join("Agentfile.lock").exists());
    let unpinned = context(&env, "unpinned", &format!("FROM scratch\nNAME u\nRUNTIME {a}/rt:1\n"), &[]);

    // Connection refused.
    reg.kill();
    let err = env.fails(&["build", "-q", s(&pinned)]);
    assert!(err.contains("AF410") && !err.contains("AF401"), "{err}");
    assert!(err.contains(&format!("cannot reach registry {a}")), "{err}");
    assert!(
        err.contains("Agentfile.lock pins this image, so `otters build --offline` builds from the lock"),
        "{err}"
    );
    let err = env.fails(&["build", "-q", s(&unpinned)]);
    assert!(err.contains("AF410"), "{err}");
    assert!(!err.contains("with --offline") && !err.contains("build --offline"), "{err}");
    assert!(err.contains("Agentfile.lock has no pin for this image"), "{err}");
    // What it advised works.
    let (ok, _, e) = env.run(&["build", "-q", "--offline", s(&pinned)]);
    assert!(ok, "{e}");

    // A host name that does not resolve (`.invalid` never does, RFC 2606).
    let dns = context(
        &env,
        "dns",
        "FROM scratch\nNAME d\nRUNTIME registry.otters-test.invalid/rt:1\n",
        &[],
    );
    let out = env
        .otters()
        .env("OTTERS_REGISTRY_TIMEOUT", "2")
        .args(["build", "-q", s(&dns)])
        .output()
        .expect("run");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(err.contains("AF410") && !err.contains("AF401"), "{err}");
    assert!(err.contains("registry.otters-test.invalid"), "{err}");
    assert!(!err.contains("build --offline"), "{err}");
}

// ---- item 11: a platform the image does not have fails the build ----------------------------

#[test]
fn build_for_a_platform_the_images_lack_fails_naming_what_they_have() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    push_runtime_single(&env, &reg, "single", "1");
    push_runtime_index(&env, &reg, "multi", "1");
    let host = format!("linux/{}", support::host_arch());
    let target = format!("linux/{}", foreign_arch());

    for (name, has) in [("single", host.clone()), ("multi", host.clone())] {
        let ctx = context(&env, name, &format!("FROM scratch\nNAME {name}\nRUNTIME {a}/{name}:1\n"), &[]);
        let err = env.fails(&["build", "--platform", &target, s(&ctx)]);
        assert!(err.contains("AF411"), "{name}: {err}");
        assert!(
            err.contains(&format!("image `{a}/{name}:1` has no image for {target}")),
            "{name}: {err}"
        );
        assert!(err.contains(&has), "{name} must name what it has: {err}");
        assert!(
            err.contains(&format!("(`--platform {host}`)")),
            "{name}: {err}"
        );
        assert!(!ctx.join("Agentfile.lock").exists(), "{name}: a lock was written");
        assert!(
            !env.ok(&["images"]).contains(&format!("{name}:latest")),
            "{name}: an image was stored"
        );
        // The platform the image has builds.
        env.ok(&["build", "-q", "--platform", &host, s(&ctx)]);
    }

    // An offline build for another platform than the lock's is refused, not pinned wrongly.
    let ctx = env.dir.path().join("single");
    let err = env.fails(&["build", "--offline", "--platform", &target, s(&ctx)]);
    assert!(err.contains("AF405"), "{err}");
    assert!(
        err.contains(&format!("Agentfile.lock pins images for {host}, not {target}")),
        "{err}"
    );
}
