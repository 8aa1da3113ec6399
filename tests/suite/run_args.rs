//! `otters run` arguments as a newcomer types them: a mistyped path reads as a missing path (not a
//! registry error), and `run PATH` takes the build's offline flags so an Agentfile runs behind a
//! firewall. Needs no registry: the example's images are recorded unpinned, never fetched.

use crate::support::cli::{flat, Env};
use crate::support::repo;

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
    // The advice works: the same command with the flag builds and prints the plan. The example
    // declares a MOUNT nobody supplied: the dry run lists it and says a run would stop there.
    let out = env
        .otters()
        .args(["run", "--offline", "--allow-unpinned", "--dry-run"])
        .arg(&example)
        .output()
        .unwrap();
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("AF405"), "{err}");
    let plan = crate::support::cli::json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        plan["missing_mounts"],
        serde_json::json!(["/reports"]),
        "{plan}"
    );
    assert!(
        err.contains("a run would stop here: declared mount(s) missing: /reports"),
        "{err}"
    );
    assert!(!err.contains("left unmounted"), "said twice: {err}");
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
