//! `$OTTERS_HOME/config.toml` through the real binary: per-registry `insecure`, and the errors a
//! malformed file gets. See docs/registries.md, "Registry configuration".

mod support;

use support::cli::Env;

/// A name that never resolves (RFC 2606), so nothing is ever contacted.
const NOWHERE: &str = "otters-test.invalid:5000";

fn pull_error(env: &Env, reference: &str) -> String {
    let out = env
        .otters()
        .args(["pull", reference])
        .env("OTTERS_REGISTRY_TIMEOUT", "5")
        .output()
        .expect("run otters");
    assert!(!out.status.success(), "pull of {reference} succeeded");
    squash(&String::from_utf8_lossy(&out.stderr))
}

/// The text without whitespace or miette's gutter, since miette wraps long words at `-`, `/`.
fn squash(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '│' | '×'))
        .collect()
}

#[test]
fn insecure_in_config_allows_plain_http_for_that_registry_only() {
    let env = Env::new();
    std::fs::create_dir_all(env.home()).unwrap();
    let plain = format!("(http://{NOWHERE}/v2/)");
    let secure = format!("(https://{NOWHERE}/v2/)");

    // No configuration: HTTPS only, and the message says how to allow plain HTTP.
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(e.contains(&secure), "{e}");
    assert!(
        !e.contains(&plain),
        "plain HTTP tried without the config: {e}"
    );
    assert!(
        e.contains("`insecure=true`forit") && e.contains("config.toml"),
        "{e}"
    );

    // Another registry's table changes nothing for this one.
    support::write(
        &env.home().join("config.toml"),
        "[registry.\"otters-test.invalid:5001\"]\ninsecure = true\n",
    );
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(!e.contains(&plain), "other registry's setting applied: {e}");

    // Its own table: plain HTTP is tried after HTTPS (and fails on DNS, never contacted).
    support::write(
        &env.home().join("config.toml"),
        format!("# registries\n[registry.\"{NOWHERE}\"]\ninsecure = true\n"),
    );
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(e.contains(&secure) && e.contains(&plain), "{e}");
    assert!(e.contains("dnserror"), "{e}");
}

#[test]
fn malformed_config_names_file_line_and_key() {
    let env = Env::new();
    let file = env.home().join("config.toml");
    support::write(
        &file,
        format!("[registry.\"{NOWHERE}\"]\n\ninsecure = \"yes\"\n"),
    );
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(
        e.contains(&squash(&format!("{}:3: `insecure`:", file.display()))),
        "{e}"
    );
    assert!(e.contains("expectedaboolean"), "{e}");
    assert!(
        !e.contains("dnserror"),
        "contacted despite a bad config: {e}"
    );

    support::write(&file, format!("[registry.\"{NOWHERE}\"]\ninsecur = true\n"));
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(
        e.contains(&squash(&format!("{}:2: `insecur`:", file.display()))),
        "{e}"
    );

    // Not a regular file: refused by name, not read.
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(e.contains("notaregularfile"), "{e}");
}

#[test]
fn oversized_config_is_refused() {
    let env = Env::new();
    let file = env.home().join("config.toml");
    support::write(&file, "#".repeat(1024 * 1024 + 1));
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(e.contains("largerthan1MiB"), "{e}");
}
