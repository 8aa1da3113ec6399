//! `otters run` arguments as a newcomer types them: a mistyped path reads as a missing path (not a
//! registry error), and `run PATH` takes the build's offline flags so an Agentfile runs behind a
//! firewall. Needs no registry: the example's images are recorded unpinned, never fetched. The
//! outputs are pinned whole (`snapshots/run_args/`).

use crate::support::cli::Env;
use crate::support::repo;
use crate::support::snap::Transcript;

#[test]
fn a_mistyped_path_is_reported_as_a_missing_path() {
    let env = Env::new();
    let mut t = Transcript::on(&env);
    for arg in ["./helo", "../nowhere/agent", "/definitely/not/here"] {
        let (ok, ..) = t.run(&env, &["run", "--dry-run", arg]);
        assert!(!ok, "{arg}");
    }
    t.assert("run_args", "mistyped_paths");
}

#[test]
fn run_path_takes_the_build_offline_flags() {
    let env = Env::new();
    let example = repo().join("examples/hello");
    let example = example.to_str().expect("utf8");
    let mut t = Transcript::on(&env);
    // Without --allow-unpinned the offline build refuses, and its advice names a flag `run` has.
    let (ok, ..) = t.run(&env, &["run", "--offline", "--dry-run", example]);
    assert!(!ok);
    // The advice works: the same command with the flag builds and prints the plan. The example
    // declares a MOUNT nobody supplied: the dry run lists it and says a run would stop there
    // (once).
    // (The plan on stdout is pinned by `run`'s snapshot.)
    let (ok, out, _) = t.run_stderr(
        &env,
        &["run", "--offline", "--allow-unpinned", "--dry-run", example],
    );
    assert!(ok);
    let plan = crate::support::cli::json(&out);
    assert_eq!(
        plan["missing_mounts"],
        serde_json::json!(["/reports"]),
        "{plan}"
    );
    // `--pull never` means the same for a path.
    let (ok, ..) = t.run_stderr(
        &env,
        &[
            "run",
            "--pull",
            "never",
            "--allow-unpinned",
            "--dry-run",
            example,
        ],
    );
    assert!(ok);
    t.assert("run_args", "run_path_offline");
}
