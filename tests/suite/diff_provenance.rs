//! `otters diff` on what a reviewer reads about where an agent came from, through the binary and a
//! real `docker-registry`: who signed each side (a keyless certificate from the mock Fulcio of
//! `tests/harness/supply/keyless/`, and a key), named as the bundles claim it and never verified;
//! the SBOM component delta of a re-pinned RUNTIME or BIN (`CycloneDX` SBOMs attached in the
//! registry to the platform manifests the agents pin), and "no SBOM to compare" when one lacks it.

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
            "diff": null, "detail": null
        })],
        "{out}"
    );
    assert_eq!(
        v["a"]["signers"],
        serde_json::json!([{"kind": "signature", "signer": keyless_signer}])
    );
    t.assert("diff", "keyless_signer");
}

/// A `CycloneDX` SBOM of `components` (name, version).
fn cyclonedx(components: &[(&str, &str)]) -> String {
    let list: Vec<serde_json::Value> = components
        .iter()
        .map(|(n, v)| serde_json::json!({"type": "library", "name": n, "version": v}))
        .collect();
    serde_json::json!({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": list})
        .to_string()
}

#[test]
fn a_re_pinned_image_with_sboms_on_both_sides_shows_its_component_delta() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    let (runtime, jq) = (format!("{a}/tools/runtime:1"), format!("{a}/tools/jq:1"));
    let script = env.dir.path().join("tool.sh");
    let sbom = env.dir.path().join("sbom.cdx.json");
    let pack = |name: &str, tag: &str, text: &str| {
        crate::support::write(&script, text);
        let s = script.to_str().unwrap();
        let flags = ["--platform", "linux/amd64", "-t", tag, "--push"];
        env.ok(&[&["bin", "pack", name, s][..], &flags].concat());
    };
    // Builds and pushes the agent `name`; returns its reference and the pins of its lock.
    let agent = |name: &str| -> (String, serde_json::Value) {
        let ctx = env.dir.path().join(name);
        crate::support::write(
            &ctx.join("Agentfile"),
            format!("FROM scratch\nRUNTIME {runtime}\nNAME sbom\nBIN jq {jq}\n"),
        );
        let r = format!("{a}/agents/sbom:{name}");
        env.ok(&["build", "-q", "--push", "-t", &r, ctx.to_str().unwrap()]);
        let lock = std::fs::read_to_string(ctx.join("Agentfile.lock")).unwrap();
        (r, json(&lock))
    };
    // Attaches an SBOM of `components` in the registry to the image `lock` pins for `tag` (the
    // platform manifest the agent pins, as a scanner of that image attaches it).
    let attach = |lock: &serde_json::Value, tag: &str, components: &[(&str, &str)]| {
        let pinned = lock["images"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["reference"] == tag)
            .unwrap_or_else(|| panic!("{lock}"))["digest"]
            .as_str()
            .unwrap()
            .to_owned();
        let repo = tag.rsplit_once(':').unwrap().0;
        crate::support::write(&sbom, cyclonedx(components));
        let cdx = "application/vnd.cyclonedx+json";
        let at = format!("{repo}@{pinned}");
        env.ok(&[
            "attach",
            "--remote",
            "--artifact-type",
            cdx,
            "--layer-media-type",
            cdx,
            &at,
            sbom.to_str().unwrap(),
        ]);
    };
    let old = [("busybox", "1.36.1"), ("musl", "1.2.4"), ("zlib", "1.3")];
    let new = [("busybox", "1.37.0"), ("musl", "1.2.4"), ("curl", "8.5.0")];
    pack("runtime", &runtime, "#!/bin/sh\necho one\n");
    pack("jq", &jq, "#!/bin/sh\necho jq one\n");
    let (ra, lock) = agent("a");
    attach(&lock, &runtime, &old);
    attach(&lock, &jq, &old);
    pack("runtime", &runtime, "#!/bin/sh\necho two\n");
    // The new jq has no SBOM: nothing to compare, and the diff says so.
    pack("jq", &jq, "#!/bin/sh\necho jq two\n");
    let (rb, lock) = agent("b");
    attach(&lock, &runtime, &new);

    let fresh = Env::new();
    let mut t = Transcript::on(&fresh);
    t.registry(&reg);
    let (ok, out, err) = t.run(&fresh, &["diff", &ra, &rb, "--remote"]);
    assert!(ok, "{err}");
    let (ok, out_json, err) = fresh.run(&["diff", &ra, &rb, "--remote", "--format", "json"]);
    assert!(ok, "{err}");
    let v = json(&out_json);
    let details: Vec<(String, String)> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!("{} {} {}", c["class"], c["what"], c["name"]),
                c["detail"].as_str().unwrap_or("null").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        details,
        [
            (
                r#""pin" "runtime" "runtime""#.to_owned(),
                "SBOM: ~busybox 1.36.1 → 1.37.0, +curl@8.5.0, -zlib@1.3".to_owned()
            ),
            (
                r#""pin" "bin" "jq""#.to_owned(),
                "no SBOM to compare (the new image has none)".to_owned()
            ),
        ],
        "{out}"
    );
    t.run(
        &fresh,
        &["diff", &ra, &rb, "--remote", "--format", "markdown"],
    );
    t.assert("diff", "sbom_delta");
}

#[test]
fn a_re_pinned_ancestor_is_named_by_its_level_in_the_flattened_chain() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    let (gp, parent) = (
        format!("{a}/agents/grandparent:1"),
        format!("{a}/agents/parent:1"),
    );
    // Builds `text` in the directory `name` and pushes it as `tag`, with its SBOM (which names
    // the parent it was built from).
    let build = |name: &str, tag: &str, text: &str| -> std::path::PathBuf {
        let ctx = env.dir.path().join(name);
        crate::support::write(&ctx.join("Agentfile"), text);
        env.ok(&[
            "build",
            "-q",
            "--sbom",
            "--push",
            "-t",
            tag,
            ctx.to_str().unwrap(),
        ]);
        ctx
    };
    let gp_text =
        |rule: &str| format!("FROM scratch\nNAME gp\nMODEL openai/gpt-4o\nLABEL rule={rule}\n");
    build("gp", &gp, &gp_text("one"));
    build("parent", &parent, &format!("FROM {gp}\nNAME parent\n"));
    let child_text = format!("FROM {parent}\nNAME child\n");
    build("child", &format!("{a}/agents/child:1"), &child_text);
    // The grandparent changes under the same tag; the parent and the child are rebuilt on it.
    build("gp", &gp, &gp_text("two"));
    build("parent", &parent, &format!("FROM {gp}\nNAME parent\n"));
    let child = build("child", &format!("{a}/agents/child:2"), &child_text);

    let fresh = Env::new();
    let mut t = Transcript::on(&fresh);
    t.registry(&reg);
    let (one, two) = (format!("{a}/agents/child:1"), format!("{a}/agents/child:2"));
    let (ok, out, err) = t.run(&fresh, &["diff", &one, &two, "--remote"]);
    assert!(ok, "{err}");
    let (ok, out_json, err) = fresh.run(&["diff", &one, &two, "--remote", "--format", "json"]);
    assert!(ok, "{err}");
    let v = json(&out_json);
    let chain: Vec<String> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["what"] == "chain")
        .map(|c| format!("{} {} {}", c["class"], c["name"], c["change"]))
        .collect();
    assert_eq!(
        chain,
        [
            r#""provenance" "level 1 (the parent)" "changed""#,
            r#""provenance" "level 2 (the grandparent)" "changed""#,
        ],
        "{out}"
    );
    for side in ["a", "b"] {
        let levels = v[side]["chain"].as_array().unwrap();
        assert_eq!(levels.len(), 2, "{out_json}");
        assert_eq!(levels[0]["reference"], parent.as_str());
        assert_eq!(levels[1]["reference"], gp.as_str());
        assert!(levels.iter().all(|l| l["digest"].is_string()), "{out_json}");
        assert!(v[side]["chain_cut"].is_null(), "{out_json}");
    }
    assert_ne!(v["a"]["chain"][1]["digest"], v["b"]["chain"][1]["digest"]);
    // The working tree, built on the fly: the parent's digest from its Agentfile.lock, and the
    // same chain as the image built from it.
    let (ok, tree, err) = env.run(&["diff", &two, child.to_str().unwrap(), "--format", "json"]);
    assert!(ok, "{err}");
    let tree = json(&tree);
    assert_eq!(tree["b"]["chain"], v["b"]["chain"], "{tree}");
    assert_eq!(
        tree["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["what"] == "chain")
            .count(),
        0,
        "{tree}"
    );
    t.assert("diff", "chain");
}

/// Writes `text` as the Agentfile in `ctx`, then builds it and pushes it as `tag`.
fn build_push(env: &Env, ctx: &std::path::Path, text: &str, tag: &str) {
    crate::support::write(&ctx.join("Agentfile"), text);
    env.ok(&["build", "-q", "--push", "-t", tag, ctx.to_str().unwrap()]);
}

/// A parent agent whose SOUL says `soul`.
fn parent_text(soul: &str) -> String {
    format!("FROM scratch\nNAME parent\nMODEL openai/gpt-4o\nCONTEXT SOUL \"{soul}\"\n")
}

/// A pull request's working tree `FROM` a parent, diffed `--offline`: the parent its
/// `Agentfile.lock` pins is lent by the user's store (which `build --push` filled), so the diff
/// builds with no registry at all; from a fresh home (no parent anywhere offline) it fails with
/// the build's own AF401, and `--locked` builds it against the registry instead.
#[test]
fn an_offline_diff_of_a_tree_from_a_parent_takes_the_parent_from_the_users_store() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    let parent = format!("{a}/agents/parent:1");
    let pctx = env.dir.path().join("parent");
    build_push(&env, &pctx, &parent_text("be brief"), &parent);
    let child = env.dir.path().join("child");
    let prod = format!("{a}/agents/child:prod");
    let child_text = format!("FROM {parent}\nNAME child\nLABEL team=ops\n");
    build_push(&env, &child, &child_text, &prod);
    assert!(child.join("Agentfile.lock").is_file());
    let tree = child.to_str().unwrap();

    // A fresh home has no parent to lend: the build's own error, naming the parent.
    let fresh = Env::new();
    let err = fresh.fails(&["diff", &prod, tree, "--offline"]);
    assert!(err.contains("AF401"), "{err}");
    assert!(err.contains(&parent), "{err}");

    // The registry is gone: only the store and the lock are left.
    let seen = env.ok(&["diff", &prod, tree, "--offline", "--format", "json"]);
    drop(reg);
    let (ok, out, err) = env.run(&["diff", &prod, tree, "--offline", "--format", "json"]);
    assert!(ok, "{err}");
    let v = json(&out);
    assert_eq!(v["identical"], true, "{out}");
    assert_eq!(v["b"]["chain"][0]["reference"], parent.as_str(), "{out}");
    assert_eq!(json(&seen)["b"]["digest"], v["b"]["digest"]);
}

/// `--locked` builds the tree against the registry, so a fresh machine (a CI runner) diffs an
/// agent `FROM` a parent; a lock that resolving would change fails the diff (AF406).
#[test]
fn a_locked_diff_builds_the_tree_against_the_registry_and_refuses_a_stale_lock() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    let parent = format!("{a}/agents/parent:1");
    let pctx = env.dir.path().join("parent");
    build_push(&env, &pctx, &parent_text("be brief"), &parent);
    let child = env.dir.path().join("child");
    let prod = format!("{a}/agents/child:prod");
    build_push(&env, &child, &format!("FROM {parent}\nNAME child\n"), &prod);
    let tree = child.to_str().unwrap();

    let fresh = Env::new();
    let out = fresh.ok(&["diff", &prod, tree, "--locked", "--format", "json"]);
    assert_eq!(json(&out)["identical"], true, "{out}");
    // The parent's tag moves: the lock no longer says what resolving gives.
    build_push(&env, &pctx, &parent_text("be thorough"), &parent);
    let err = fresh.fails(&["diff", &prod, tree, "--locked"]);
    assert!(err.contains("AF406"), "{err}");
    let err = fresh.fails(&["diff", &prod, tree, "--locked", "--offline"]);
    assert!(
        err.contains("--offline") && err.contains("--locked"),
        "{err}"
    );
}
