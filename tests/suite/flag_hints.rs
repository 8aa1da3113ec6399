//! Library errors speak of values (a token, an issuer, an agent name, a directory); the CLI adds
//! the flag that helps as a `help:` line, matched on the typed error (`src/cli/errors/hints.rs`,
//! issue 19 item 5). Each test here runs the binary into one such error and checks its help line,
//! so a hint that goes missing fails. Hints checked beside their command's other tests:
//! `registry::references_are_checked_before_anything_happens` (--insecure),
//! `store::rm_takes_a_digest_or_prefix_and_removes_untagged_images` (--force),
//! `build_cli` (--annotation), `source_date_epoch_git` (--source-date-epoch), `kube` (--image,
//! --config, --mount), `run` (--root, --name), `supply` (--out), `fmt` (--diff), `lint_cli` and
//! `lsp` (--stdin-filename, --fix).

use crate::store::build_minimal;
use crate::support::cli::{flat, Env};

/// Runs otters with no identity token in its environment; returns (success, flat stderr).
fn without_token(env: &Env, args: &[&str]) -> (bool, String) {
    let out = env
        .otters()
        .env_remove("SIGSTORE_ID_TOKEN")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_URL")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
        .args(args)
        .output()
        .expect("run otters");
    (
        out.status.success(),
        flat(&String::from_utf8_lossy(&out.stderr)),
    )
}

#[test]
fn keyless_signing_without_a_token_names_the_token_flag() {
    let env = Env::new();
    build_minimal(&env, &["-t", "a:1"]);
    let (ok, err) = without_token(&env, &["sign", "--keyless", "a:1"]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("keyless signing needs an OIDC identity token: set SIGSTORE_ID_TOKEN")
            && !err.contains("pass --identity-token"),
        "{err}"
    );
    assert!(
        err.contains("help: or pass the token with --identity-token TOKEN"),
        "{err}"
    );
}

#[test]
fn keyless_verification_names_the_issuer_and_trusted_root_flags() {
    let env = Env::new();
    let id = "https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main";
    let err = env.fails(&["verify", "a:1", "--certificate-identity", id]);
    assert!(
        err.contains("keyless verification needs the certificate's OIDC issuer")
            && err.contains("help: pass --certificate-oidc-issuer URL"),
        "{err}"
    );
    let err = env.fails(&[
        "verify",
        "a:1",
        "--certificate-identity",
        id,
        "--certificate-oidc-issuer",
        "https://token.actions.githubusercontent.com",
    ]);
    assert!(
        err.contains("keyless verification needs a trusted root")
            && err.contains("help: pass --trusted-root FILE"),
        "{err}"
    );
}

#[test]
fn run_names_the_name_and_root_flags() {
    let env = Env::new();
    build_minimal(&env, &["-t", "a:1"]);
    let err = env.fails(&["run", "--dry-run", "--name", "no spaces", "a:1"]);
    assert!(
        err.contains("agent name \"no spaces\" must match")
            && err.contains("help: pass --name NAME"),
        "{err}"
    );
    // A symlink as the agent root: refused, with the flag that names the directory itself.
    let dir = env.dir.path().join("trees");
    std::fs::create_dir_all(&dir).unwrap();
    let link = env.dir.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    let err = env.fails(&["run", "--dry-run", "--root", link.to_str().unwrap(), "a:1"]);
    assert!(
        err.contains("is a symlink") && err.contains("help: pass --root with the directory itself"),
        "{err}"
    );
}

/// Not in the store with pulling off: `run` turns it off with --offline or `--pull never`,
/// `export` only with --offline; the help line names both, and says which is run's.
#[test]
fn an_image_not_in_the_store_with_pulling_off_names_the_flags_that_turn_it_off() {
    let env = Env::new();
    for args in [
        &["run", "--dry-run", "--pull", "never", "nothing:1"][..],
        &["export", "nothing:1", "--as", "runnable", "--offline"],
    ] {
        let err = env.fails(args);
        assert!(
            err.contains("nothing:1: not in the local store, and pulling is off")
                && err.contains(
                    "help: or let otters pull it: drop --offline (or, for `otters run`, --pull never)"
                ),
            "{args:?}: {err}"
        );
    }
}
