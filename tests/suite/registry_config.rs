//! `$OTTERS_HOME/config.toml` through the real binary: per-registry `insecure`, and the errors a
//! malformed file gets. See docs/registries.md, "Registry configuration".

use crate::support::cli::Env;

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
    crate::support::write(
        &env.home().join("config.toml"),
        "[registry.\"otters-test.invalid:5001\"]\ninsecure = true\n",
    );
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(!e.contains(&plain), "other registry's setting applied: {e}");

    // Its own table: plain HTTP is tried after HTTPS (and fails on DNS, never contacted).
    crate::support::write(
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
    crate::support::write(
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

    crate::support::write(&file, format!("[registry.\"{NOWHERE}\"]\ninsecur = true\n"));
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
    crate::support::write(&file, "#".repeat(1024 * 1024 + 1));
    let e = pull_error(&env, &format!("{NOWHERE}/x:1"));
    assert!(e.contains("largerthan1MiB"), "{e}");
}

/// A bin image pushed to a fresh HTTPS registry whose certificate no system trusts.
fn tls_registry_with_image() -> (crate::support::tls_registry::TlsRegistry, String) {
    let reg = crate::support::tls_registry::TlsRegistry::start();
    let layout = reg.dir.path().join("layout");
    crate::support::images::bin_single(
        &layout,
        "1",
        "hello",
        b"#!/bin/sh\necho hi\n",
        crate::support::images::BinPrefix::Io,
        None,
    );
    let reference = format!("{}/bins/hello:1", reg.addr);
    crate::support::images::skopeo_push(&layout, "1", &reference, None);
    (reg, reference)
}

fn pull(env: &Env, reference: &str, certs_d: &std::path::Path) -> std::process::Output {
    env.otters()
        .args(["pull", reference])
        .env("OTTERS_CERTS_D", certs_d)
        .env("OTTERS_REGISTRY_TIMEOUT", "10")
        .output()
        .expect("run otters")
}

#[test]
fn ca_from_config_is_trusted_for_that_registry() {
    let (reg, reference) = tls_registry_with_image();
    let env = Env::new();
    let no_certs_d = env.dir.path().join("no-certs.d");

    let out = pull(&env, &reference, &no_certs_d);
    let e = squash(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "pulled without trusting the CA");
    assert!(e.contains("UnknownIssuer"), "{e}");
    assert!(e.contains(&format!("certs.d/{}/ca.crt", reg.addr)), "{e}");

    // The CA for another registry does not help.
    crate::support::write(
        &env.home().join("config.toml"),
        format!(
            "[registry.\"127.0.0.1:1\"]\nca = \"{}\"\n",
            reg.ca().display()
        ),
    );
    let out = pull(&env, &reference, &no_certs_d);
    let e = squash(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "another registry's CA was trusted");
    assert!(e.contains("UnknownIssuer"), "{e}");

    // Relative to the config file's directory.
    std::fs::copy(reg.ca(), env.home().join("internal-ca.pem")).unwrap();
    crate::support::write(
        &env.home().join("config.toml"),
        format!("[registry.\"{}\"]\nca = \"internal-ca.pem\"\n", reg.addr),
    );
    let out = pull(&env, &reference, &no_certs_d);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        reg.log()
    );
    let images = crate::support::cli::ok(env.otters().args(["images"]));
    assert!(images.contains("bins/hello"), "{images}");
}

#[test]
fn ca_from_certs_d_is_trusted() {
    let (reg, reference) = tls_registry_with_image();
    let env = Env::new();
    let certs_d = env.dir.path().join("certs.d");
    std::fs::create_dir_all(certs_d.join("other.example:5000")).unwrap();
    std::fs::copy(reg.ca(), certs_d.join("other.example:5000/ca.crt")).unwrap();
    let out = pull(&env, &reference, &certs_d);
    let e = squash(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "another registry's certs.d was used");
    assert!(e.contains("UnknownIssuer"), "{e}");

    std::fs::create_dir_all(certs_d.join(&reg.addr)).unwrap();
    std::fs::copy(reg.ca(), certs_d.join(&reg.addr).join("ca.crt")).unwrap();
    let out = pull(&env, &reference, &certs_d);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        reg.log()
    );

    // A file there that is not a certificate is an error naming it.
    crate::support::write(
        &certs_d.join(&reg.addr).join("zz.crt"),
        "not a certificate\n",
    );
    let out = pull(&env, &reference, &certs_d);
    let e = squash(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(e.contains("zz.crt") && e.contains("PEM"), "{e}");
}
