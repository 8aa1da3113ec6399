//! `otters diff` on what a reviewer reads about where an agent came from, through the binary and a
//! real `docker-registry`: who signed each side (a keyless certificate from the mock Fulcio of
//! `tests/harness/supply/keyless/`, and a key), named as the bundles claim it and never verified.

use crate::keyless::Mock;
use crate::support::cli::{json, Env};
use crate::support::registry::Registry;
use crate::support::snap::Transcript;

const GITHUB_ID: &str = "https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main";
const GITHUB_ISS: &str = "https://token.actions.githubusercontent.com";

/// Builds an agent named `name` and pushes it as `tag`.
fn push(env: &Env, tag: &str, name: &str) {
    let ctx = env.dir.path().join(name);
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME {name}\nMODEL openai/gpt-4o\nCONTEXT SOUL \"be brief\"\n"),
    );
    env.ok(&["build", "-q", "--push", "-t", tag, ctx.to_str().unwrap()]);
}

#[test]
fn a_keyless_signer_replaced_by_a_key_is_a_provenance_change_naming_both() {
    const TEST: &str = "a_keyless_signer_replaced_by_a_key_is_a_provenance_change_naming_both";
    let Some(mock) = Mock::start(TEST) else {
        return;
    };
    let reg = Registry::start();
    let env = Env::new();
    let (one, two) = (
        format!("{}/agents/demo:1", reg.addr),
        format!("{}/agents/demo:2", reg.addr),
    );
    push(&env, &one, "demo");
    push(&env, &two, "demo2");
    let token = Mock::token(&["--github", "acme/agents"]);
    let keyless = [
        "--fulcio-url",
        mock.var("FULCIO_URL"),
        "--rekor-url",
        mock.var("REKOR_URL"),
        "--identity-token",
        &token,
    ];
    env.ok(&[&["sign", "--remote", &one, "--keyless"][..], &keyless].concat());
    let (key, public) = env.key_pair("signer");
    env.ok(&["sign", "--remote", &two, "--key", &key]);
    let hint = crate::diff::key_hint(&public);

    // From a fresh home: both sides, and their bundles, come from the registry.
    let fresh = Env::new();
    let mut t = Transcript::on(&fresh);
    t.registry(&reg).filter(hint.clone(), "[KEY HINT]");
    let (ok, out, err) = t.run(&fresh, &["diff", &one, &two, "--remote"]);
    assert!(ok, "{err}");
    let keyless_signer = format!("{GITHUB_ID} ({GITHUB_ISS})");
    assert!(
        out.contains(&format!(
            "signature by {keyless_signer} (not verified; run otters verify)"
        )),
        "{out}"
    );
    t.run(
        &fresh,
        &["diff", &one, &two, "--remote", "--format", "markdown"],
    );
    let (ok, out, err) = fresh.run(&["diff", &one, &two, "--remote", "--format", "json"]);
    assert!(ok, "{err}");
    let v = json(&out);
    let signer: Vec<&serde_json::Value> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["what"] == "signer")
        .collect();
    assert_eq!(
        signer,
        [&serde_json::json!({
            "class": "provenance", "what": "signer", "name": "signature", "field": null,
            "change": "changed", "before": keyless_signer, "after": format!("key {hint}"),
            "diff": null
        })],
        "{out}"
    );
    assert_eq!(
        v["a"]["signers"],
        serde_json::json!([{"kind": "signature", "signer": keyless_signer}])
    );
    t.assert("diff", "keyless_signer");
}
