//! `otters run` arguments as a newcomer types them: a mistyped path reads as a missing path (not a
//! registry error), and `run PATH` takes the build's offline flags so an Agentfile runs behind a
//! firewall. Needs no registry: the example's images are recorded unpinned, never fetched.

mod support;

use support::cli::{flat, Env};

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_mistyped_path_is_reported_as_a_missing_path() {
    let env = Env::new();
    for arg in ["./helo", "../nowhere/agent", "/definitely/not/here"] {
        let out = env
            .otters()
            .args(["run", "--dry-run", arg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{arg}");
        let err = flat(&String::from_utf8_lossy(&out.stderr));
        assert!(
            err.contains(&format!("{arg}: no such file or directory")),
            "{arg}: {err}"
        );
        assert!(
            !err.contains("invalid reference"),
            "{arg} must not be read as a reference: {err}"
        );
    }
}

#[test]
fn run_path_takes_the_build_offline_flags() {
    let env = Env::new();
    let example = repo().join("examples/hello");
    // Without --allow-unpinned the offline build refuses, and its advice names a flag `run` has.
    let out = env
        .otters()
        .args(["run", "--offline", "--dry-run"])
        .arg(&example)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(err.contains("AF405"), "{err}");
    assert!(err.contains("--allow-unpinned"), "{err}");
    // The advice works: the same command with the flag builds and reaches the plan (which then
    // stops on the example's declared mount, proving the build succeeded first).
    let out = env
        .otters()
        .args(["run", "--offline", "--allow-unpinned", "--dry-run"])
        .arg(&example)
        .output()
        .unwrap();
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!err.contains("AF405"), "{err}");
    assert!(!err.contains("failed; nothing was run"), "{err}");
    assert!(err.contains("declared mount(s) missing"), "{err}");
    // `--pull never` means the same for a path.
    let out = env
        .otters()
        .args(["run", "--pull", "never", "--allow-unpinned", "--dry-run"])
        .arg(&example)
        .output()
        .unwrap();
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!err.contains("AF405"), "{err}");
}
