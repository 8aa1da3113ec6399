//! Library errors speak of values (a token, an issuer, an agent name, a directory); the CLI adds
//! the flag that helps as a `help:` line, matched on the typed error (`src/cli/errors/hints.rs`,
//! issue 19 item 5). Each test here runs the binary into one such error and checks its help line,
//! so a hint that goes missing fails. Hints checked beside their command's other tests:
//! `registry::references_are_checked_before_anything_happens` (--insecure),
//! `store::rm_takes_a_digest_or_prefix_and_removes_untagged_images` (--force),
//! `build_cli` (--annotation), `source_date_epoch_git` (--source-date-epoch), `kube` (--image,
//! --config, --mount), `run` (--root, --name), `supply` (--out), `fmt` (--diff), `lint_cli` and
//! `lsp` (--stdin-filename, --fix).
//!
//! Each output is pinned whole (`snapshots/flag_hints/`).

use crate::store::build_minimal;
use crate::support::cli::Env;
use crate::support::snap::snapshot;

fn pin(name: &str, env: &Env, args: &[&str]) {
    let (ok, _, err) = snapshot("flag_hints", name, env, args);
    assert!(!ok, "{err}");
}

#[test]
fn keyless_signing_without_a_token_names_the_token_flag() {
    let env = Env::new();
    build_minimal(&env, &["-t", "a:1"]);
    // No identity token in the environment (a transcript's command inherits none).
    pin(
        "keyless_sign_without_token",
        &env,
        &["sign", "--keyless", "a:1"],
    );
}

#[test]
fn keyless_verification_names_the_issuer_and_trusted_root_flags() {
    let env = Env::new();
    let id = "https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main";
    pin(
        "keyless_verify_without_issuer",
        &env,
        &["verify", "a:1", "--certificate-identity", id],
    );
    pin(
        "keyless_verify_without_trusted_root",
        &env,
        &[
            "verify",
            "a:1",
            "--certificate-identity",
            id,
            "--certificate-oidc-issuer",
            "https://token.actions.githubusercontent.com",
        ],
    );
}

#[test]
fn run_names_the_name_and_root_flags() {
    let env = Env::new();
    build_minimal(&env, &["-t", "a:1"]);
    pin(
        "run_bad_name",
        &env,
        &["run", "--dry-run", "--name", "no spaces", "a:1"],
    );
    // A symlink as the agent root: refused, with the flag that names the directory itself.
    let dir = env.dir.path().join("trees");
    std::fs::create_dir_all(&dir).unwrap();
    let link = env.dir.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    pin(
        "run_root_symlink",
        &env,
        &["run", "--dry-run", "--root", link.to_str().unwrap(), "a:1"],
    );
}

/// Not in the store with pulling off: `run` turns it off with --offline or `--pull never`,
/// `export` only with --offline; the help line names both, and says which is run's.
#[test]
fn an_image_not_in_the_store_with_pulling_off_names_the_flags_that_turn_it_off() {
    let env = Env::new();
    pin(
        "run_not_in_store_pull_never",
        &env,
        &["run", "--dry-run", "--pull", "never", "nothing:1"],
    );
    pin(
        "export_not_in_store_offline",
        &env,
        &["export", "nothing:1", "--as", "runnable", "--offline"],
    );
}
