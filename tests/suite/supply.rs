//! Supply-chain output checked by independent verifiers (tests/harness/supply): keys from `otters key
//! generate` and bundles from `otters sign-blob` verified by npm `@sigstore/verify`; bundles made by
//! Python's `cryptography` verified by `otters verify-blob`; SBOMs validated by `CycloneDX`'s own
//! schema validator; everything reproducible byte for byte.
//!
//! The verifiers are installed by `tests/harness/supply/install.sh` (see `.ci/install`). A test skips
//! only when `node` / `python3` itself is missing, and fails under CI then. What the commands
//! print is pinned whole (`snapshots/supply/`).

use crate::support::cli::{flat, Env};
use crate::support::snap::Transcript;
use crate::support::tools::{skip, works};
use base64::Engine as _;
use otters_oci::spec::digest::Digest;
use otters_supply::inputs::{Agent, BinInput, BuildInputs, ContextInput, FileInput, ImageInput};
use otters_supply::{bundle, keys, provenance, sbom};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Filters the hint of a new key (random with the key) that `key generate` printed in `said` as
/// `[KEY HINT]`.
fn hide_key_hint(t: &mut Transcript, said: &str) {
    let hint = said
        .lines()
        .find_map(|l| l.strip_prefix("key hint:"))
        .unwrap_or_else(|| panic!("no key hint in {said}"));
    t.filter(hint.trim(), "[KEY HINT]");
}

fn supply_dir() -> PathBuf {
    crate::support::harness::supply()
}

/// Runs a verifier; returns (exit code, stdout + stderr).
fn run(program: &str, args: &[&Path]) -> (i32, String) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.code() != Some(3),
        "the verifiers are not installed: {}\n{text}",
        crate::support::harness::INSTALL
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `node verify_bundle.mjs BUNDLE PUB DIGEST`; `None` (after a skip) when node is missing.
fn node_verify(test: &str, bundle: &Path, key: &Path, digest: &str) -> Option<(i32, String)> {
    if !works("node", &["--version"]) {
        skip(
            test,
            "node is not installed (apt-get install nodejs npm; then tests/harness/supply/install.sh)",
        );
        return None;
    }
    let script = supply_dir().join("verify_bundle.mjs");
    Some(run("node", &[&script, bundle, key, Path::new(digest)]))
}

fn validate_sbom(test: &str, path: &Path) -> Option<(i32, String)> {
    if !works("python3", &["--version"]) {
        skip(test, "python3 is not installed");
        return None;
    }
    let script = supply_dir().join("validate_sbom.py");
    Some(run("python3", &[&script, path]))
}

#[test]
fn generated_keys_and_sign_blob_bundles_verify_with_sigstore_verify() {
    const TEST: &str = "generated_keys_and_sign_blob_bundles_verify_with_sigstore_verify";
    let env = Env::new();
    let dir = env.dir.path();
    let mut t = Transcript::on(&env);
    let out = dir.join("ci");
    let (ok, said, _) = t.run(&env, &["key", "generate", "--out", &out.to_string_lossy()]);
    assert!(ok);
    hide_key_hint(&mut t, &said);
    let key = dir.join("ci.key");
    let public = dir.join("ci.pub");
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let before = std::fs::read(&key).unwrap();
    let (ok, ..) = t.run(&env, &["key", "generate", "--out", &out.to_string_lossy()]);
    assert!(!ok);
    assert_eq!(
        std::fs::read(&key).unwrap(),
        before,
        "the old key is untouched"
    );
    env.ok(&[
        "key",
        "generate",
        "--out",
        &dir.join("other").to_string_lossy(),
    ]);

    let digest = Digest::of(b"an agent manifest");
    let bundle_path = dir.join("sig.bundle.json");
    let sign = |out: &Path| {
        env.ok(&[
            "sign-blob",
            "--key",
            &key.to_string_lossy(),
            "--digest",
            digest.as_str(),
            "--name",
            "registry.example/agents/ledger",
            "-o",
            &out.to_string_lossy(),
        ])
    };
    sign(&bundle_path);
    sign(&dir.join("again.json"));
    assert_eq!(
        std::fs::read(&bundle_path).unwrap(),
        std::fs::read(dir.join("again.json")).unwrap(),
        "two signatures of the same digest with the same key are the same bytes (RFC 6979)"
    );
    // Our own verifier, through the binary.
    let (ok, ..) = t.run(
        &env,
        &[
            "verify-blob",
            "--key",
            &public.to_string_lossy(),
            "--bundle",
            &bundle_path.to_string_lossy(),
            "--digest",
            digest.as_str(),
        ],
    );
    assert!(ok);
    t.assert("supply", "key_generate_and_verify_blob");

    let Some((code, text)) = node_verify(TEST, &bundle_path, &public, digest.as_str()) else {
        return;
    };
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("verified dsse predicateType=https://sigstore.dev/cosign/sign/v1")
            && text.contains(&format!("registry.example/agents/ledger@{digest}")),
        "{text}"
    );
    let (code, text) =
        node_verify(TEST, &bundle_path, &dir.join("other.pub"), digest.as_str()).unwrap();
    assert_eq!(code, 1, "another key must not verify: {text}");
    let (code, text) = node_verify(TEST, &bundle_path, &public, Digest::of(b"x").as_str()).unwrap();
    assert_eq!(code, 1, "another digest must not verify: {text}");

    // A tampered payload: the upstream verifier and ours both refuse it.
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&bundle_path).unwrap()).unwrap();
    let payload = B64
        .decode(v["dsseEnvelope"]["payload"].as_str().unwrap())
        .unwrap();
    let evil = Digest::of(b"evil");
    let payload = String::from_utf8(payload)
        .unwrap()
        .replace(digest.hex(), evil.hex());
    v["dsseEnvelope"]["payload"] = serde_json::Value::String(B64.encode(payload));
    let tampered = dir.join("tampered.json");
    std::fs::write(&tampered, serde_json::to_vec(&v).unwrap()).unwrap();
    let (code, text) = node_verify(TEST, &tampered, &public, evil.as_str()).unwrap();
    assert_eq!(code, 1, "{text}");
    let err = env.fails(&[
        "verify-blob",
        "--key",
        &public.to_string_lossy(),
        "--bundle",
        &tampered.to_string_lossy(),
        "--digest",
        evil.as_str(),
    ]);
    assert!(
        err.contains("the signature does not verify with this key"),
        "{err}"
    );
}

#[test]
fn a_file_signed_with_sign_blob_verifies_only_while_unchanged() {
    const TEST: &str = "a_file_signed_with_sign_blob_verifies_only_while_unchanged";
    let env = Env::new();
    let dir = env.dir.path();
    env.ok(&["key", "generate", "--out", &dir.join("k").to_string_lossy()]);
    let file = dir.join("manifest.json");
    std::fs::write(&file, b"{\"schemaVersion\":2}").unwrap();
    let bundle_text = env.ok(&[
        "sign-blob",
        "--key",
        &dir.join("k.key").to_string_lossy(),
        &file.to_string_lossy(),
    ]);
    let bundle_path = dir.join("b.json");
    std::fs::write(&bundle_path, &bundle_text).unwrap();
    let args = |f: &Path| {
        vec![
            "verify-blob".to_owned(),
            "--key".into(),
            dir.join("k.pub").to_string_lossy().into_owned(),
            "--bundle".into(),
            bundle_path.to_string_lossy().into_owned(),
            f.to_string_lossy().into_owned(),
        ]
    };
    let a = args(&file);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let mut t = Transcript::on(&env);
    let (ok, ..) = t.run(&env, &a);
    assert!(ok);
    let digest = Digest::of(b"{\"schemaVersion\":2}");
    if let Some((code, text)) = node_verify(TEST, &bundle_path, &dir.join("k.pub"), digest.as_str())
    {
        assert_eq!(code, 0, "{text}");
    }
    std::fs::write(&file, b"{\"schemaVersion\":3}").unwrap();
    let (ok, ..) = t.run(&env, &a);
    assert!(!ok);
    t.assert("supply", "verify_blob_of_a_changed_file");
}

/// A signed file's name is the bundle's subject, and `verify-blob` prints it: a name with control
/// characters (anybody's file) is shown escaped, as are the key paths `key generate` prints.
#[test]
fn verify_blob_and_key_generate_escape_what_they_print() {
    let env = Env::new();
    let dir = env.dir.path();
    let prefix = dir.join("k\u{1b}[2J");
    let mut t = Transcript::on(&env);
    let (ok, said, _) = t.run(
        &env,
        &["key", "generate", "--out", &prefix.to_string_lossy()],
    );
    assert!(ok);
    hide_key_hint(&mut t, &said);
    let key = |ext: &str| format!("{}.{ext}", prefix.to_string_lossy());
    let file = dir.join("m\u{1b}]0;x\u{7}.json");
    std::fs::write(&file, b"{}").unwrap();
    let bundle = env.ok(&["sign-blob", "--key", &key("key"), &file.to_string_lossy()]);
    let bundle_path = dir.join("b.json");
    std::fs::write(&bundle_path, bundle).unwrap();
    let (ok, said, _) = t.run(
        &env,
        &[
            "verify-blob",
            "--key",
            &key("pub"),
            "--bundle",
            &bundle_path.to_string_lossy(),
            &file.to_string_lossy(),
        ],
    );
    assert!(ok && !said.contains(['\u{1b}', '\u{7}']), "{said:?}");
    // (The transcript escapes its arguments, never the output: an escape printed raw would show.)
    t.assert("supply", "names_escaped");
}

#[test]
fn bundles_made_by_python_cryptography_verify_with_otters() {
    const TEST: &str = "bundles_made_by_python_cryptography_verify_with_otters";
    if !works("python3", &["-c", "import cryptography"]) {
        skip(
            TEST,
            "python3 with `cryptography` is not installed (apt-get install python3-cryptography)",
        );
        return;
    }
    let env = Env::new();
    let fx = env.dir.path().join("fx");
    let out = Command::new("python3")
        .arg(supply_dir().join("make_fixtures.py"))
        .arg(&fx)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let digest = format!(
        "sha256:{}",
        std::fs::read_to_string(fx.join("artifact.sha256"))
            .unwrap()
            .trim()
    );
    let verify = |bundle: &str, key: &str| {
        env.run(&[
            "verify-blob",
            "--key",
            &fx.join(key).to_string_lossy(),
            "--bundle",
            &fx.join(bundle).to_string_lossy(),
            "--digest",
            &digest,
        ])
    };
    let (ok, out, err) = verify("dsse.bundle.json", "key.pub");
    assert!(
        ok && out.contains("https://slsa.dev/provenance/v1"),
        "{out}{err}"
    );
    assert!(verify("dsse-v02.bundle.json", "key.pub").0);
    for (bundle, key, why) in [
        (
            "dsse.bundle.json",
            "other.pub",
            "the signature does not verify with this key",
        ),
        (
            "dsse-tampered.bundle.json",
            "key.pub",
            "the signature does not verify with this key",
        ),
        (
            "dsse-unknown-key.bundle.json",
            "key.pub",
            "verificationMaterial.publicKeyHint",
        ),
        ("msg.bundle.json", "key.pub", "messageSignature"),
    ] {
        let (ok, out, err) = verify(bundle, key);
        assert!(
            !ok && flat(&err).contains(why),
            "{bundle} with {key}: {out}{}",
            flat(&err)
        );
    }
    // Its private key is PKCS#8 PEM from another library: otters signs with it.
    let b = env.ok(&[
        "sign-blob",
        "--key",
        &fx.join("key.key").to_string_lossy(),
        "--digest",
        &digest,
    ]);
    let path = env.dir.path().join("ours.json");
    std::fs::write(&path, b).unwrap();
    assert!(verify("../ours.json", "key.pub").0);
}

#[test]
fn key_files_of_the_wrong_kind_are_refused_by_name() {
    let env = Env::new();
    let dir = env.dir.path();
    env.ok(&["key", "generate", "--out", &dir.join("k").to_string_lossy()]);
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/otters-supply/testdata");
    let d = Digest::of(b"m");
    let mut t = Transcript::on(&env);
    for key in [
        dir.join("k.pub"),
        data.join("rsa.pem"),
        data.join("encrypted-p256.pem"),
        dir.join("missing.key"),
    ] {
        let (ok, ..) = t.run(
            &env,
            &[
                "sign-blob",
                "--key",
                &key.to_string_lossy(),
                "--digest",
                d.as_str(),
            ],
        );
        assert!(!ok, "{}", key.display());
    }
    let (ok, ..) = t.run(
        &env,
        &[
            "verify-blob",
            "--key",
            &dir.join("k.key").to_string_lossy(),
            "--bundle",
            "b.json",
            "--digest",
            d.as_str(),
        ],
    );
    assert!(!ok);
    let (ok, ..) = t.run(
        &env,
        &[
            "sign-blob",
            "--key",
            &dir.join("k.key").to_string_lossy(),
            "--digest",
            "sha256:nothex",
        ],
    );
    assert!(!ok);
    t.assert("supply", "keys_of_the_wrong_kind");
}

fn inputs() -> BuildInputs {
    let img = |repo: &str, tag: Option<&str>| ImageInput {
        repository: repo.into(),
        tag: tag.map(Into::into),
        digest: Digest::of(repo.as_bytes()),
    };
    BuildInputs {
        agent: Agent {
            name: "ledger".into(),
            repository: Some("127.0.0.1:5000/agents/ledger".into()),
            tag: Some("1.0".into()),
            manifest_digest: Digest::of(b"agent manifest"),
        },
        agentfile: FileInput {
            path: "Agentfile".into(),
            digest: Digest::of(b"NAME ledger\n"),
        },
        runtime: Some(img("ghcr.io/openotters/runtime", Some("v1"))),
        bins: vec![
            BinInput {
                name: "curl".into(),
                image: img("ghcr.io/openotters/tools/curl", Some("8")),
            },
            BinInput {
                name: "jq".into(),
                image: img("docker.io/library/jq", None),
            },
        ],
        parent: Some(img("127.0.0.1:5000/agents/base", Some("2"))),
        adds: vec![
            FileInput {
                path: "data/rates.csv".into(),
                digest: Digest::of(b"a,b\n"),
            },
            FileInput {
                path: "data/rates.csv".into(),
                digest: Digest::of(b"a,b\n"),
            },
        ],
        contexts: vec![ContextInput {
            name: "STYLE".into(),
            source: Some("style.md".into()),
            digest: Digest::of(b"# style\n"),
        }],
        model: Some("anthropic/claude-haiku-4-5-20251001".into()),
        build_args: vec![("REGISTRY".into(), "127.0.0.1:5000".into())],
        env_build_args: Vec::new(),
        platform: "linux/amd64".into(),
        created: Some("2023-11-14T22:13:20Z".into()),
        otters_version: env!("CARGO_PKG_VERSION").into(),
        egress: None,
    }
}

#[test]
fn the_sbom_is_valid_cyclonedx_and_reproducible() {
    const TEST: &str = "the_sbom_is_valid_cyclonedx_and_reproducible";
    let dir = tempfile::tempdir().unwrap();
    let first = sbom::to_bytes(&inputs());
    assert_eq!(
        first,
        sbom::to_bytes(&inputs()),
        "two generations, same bytes"
    );
    let path = dir.path().join("sbom.cdx.json");
    std::fs::write(&path, &first).unwrap();
    let Some((code, text)) = validate_sbom(TEST, &path) else {
        return;
    };
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("CycloneDX 1.6 valid: 8 components"), "{text}");
    // Without a time or a model, and with nothing but an Agentfile, still valid.
    let mut bare = inputs();
    bare.created = None;
    bare.model = None;
    bare.runtime = None;
    bare.parent = None;
    bare.bins.clear();
    bare.adds.clear();
    bare.contexts.clear();
    bare.agent.repository = None;
    std::fs::write(&path, sbom::to_bytes(&bare)).unwrap();
    let (code, text) = validate_sbom(TEST, &path).unwrap();
    assert_eq!(code, 0, "{text}");
    // The validator does check: a component type CycloneDX does not have is refused.
    let broken = String::from_utf8(first).unwrap().replacen(
        "\"type\": \"file\"",
        "\"type\": \"agentfile\"",
        1,
    );
    std::fs::write(&path, broken).unwrap();
    let (code, text) = validate_sbom(TEST, &path).unwrap();
    assert_eq!(code, 1, "{text}");
}

#[test]
fn signed_sbom_and_provenance_attestations_verify_with_sigstore_verify() {
    const TEST: &str = "signed_sbom_and_provenance_attestations_verify_with_sigstore_verify";
    let dir = tempfile::tempdir().unwrap();
    let key = keys::KeyPair::generate();
    let (_, public) = key.write_new(&dir.path().join("k")).unwrap();
    let subject = Digest::of(b"agent manifest");
    let prov = provenance::statement(&inputs(), provenance::DEFAULT_BUILDER_ID);
    assert_eq!(
        provenance::to_bytes(&inputs(), provenance::DEFAULT_BUILDER_ID),
        provenance::to_bytes(&inputs(), provenance::DEFAULT_BUILDER_ID)
    );
    for (name, statement, predicate) in [
        ("prov.json", prov, provenance::SLSA_PROVENANCE_V1),
        (
            "sbom.json",
            sbom::statement(&inputs()),
            sbom::CYCLONEDX_PREDICATE,
        ),
    ] {
        let bytes = bundle::sign(&statement, &key);
        assert_eq!(
            bytes,
            bundle::sign(&statement, &key),
            "{name} is reproducible"
        );
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let Some((code, text)) = node_verify(TEST, &path, &public, subject.as_str()) else {
            return;
        };
        assert_eq!(code, 0, "{text}");
        assert!(
            text.contains(&format!("predicateType={predicate}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("127.0.0.1:5000/agents/ledger@{subject}")),
            "{text}"
        );
    }
    // The SBOM inside its statement, unwrapped, is the valid standalone document.
    let st = sbom::statement(&inputs());
    let unwrapped = otters_core::json::to_indented(&st.predicate).unwrap();
    let path = dir.path().join("unwrapped.cdx.json");
    std::fs::write(&path, unwrapped).unwrap();
    let (code, text) = validate_sbom(TEST, &path).unwrap_or((0, String::new()));
    assert_eq!(code, 0, "{text}");
}

#[test]
fn sign_blob_attests_a_predicate_file() {
    const TEST: &str = "sign_blob_attests_a_predicate_file";
    let env = Env::new();
    let dir = env.dir.path();
    env.ok(&["key", "generate", "--out", &dir.join("k").to_string_lossy()]);
    let predicate = dir.join("predicate.json");
    std::fs::write(&predicate, br#"{"buildDefinition":{"buildType":"https://example.invalid/t","externalParameters":{"n":1.5}},"runDetails":{"builder":{"id":"https://example.invalid/b"}}}"#).unwrap();
    let d = Digest::of(b"artifact");
    let key = dir.join("k.key").to_string_lossy().into_owned();
    let attest = |extra: &[&str]| {
        let mut args = vec!["sign-blob", "--key", &key, "--digest", d.as_str()];
        args.extend_from_slice(extra);
        env.run(&args)
    };
    let (ok, bundle_text, err) = attest(&[
        "--predicate-type",
        "https://slsa.dev/provenance/v1",
        "--predicate",
        &predicate.to_string_lossy(),
    ]);
    assert!(ok, "{err}");
    let path = dir.join("att.json");
    std::fs::write(&path, &bundle_text).unwrap();
    let out = env.ok(&[
        "verify-blob",
        "--key",
        &dir.join("k.pub").to_string_lossy(),
        "--bundle",
        &path.to_string_lossy(),
        "--digest",
        d.as_str(),
    ]);
    assert!(out.contains("(https://slsa.dev/provenance/v1)"), "{out}");
    std::fs::write(&predicate, b"[1]").unwrap();
    let (ok, _, err) = attest(&[
        "--predicate-type",
        "x",
        "--predicate",
        &predicate.to_string_lossy(),
    ]);
    assert!(!ok && flat(&err).contains("is not a JSON object"), "{err}");
    let (ok, _, err) = attest(&["--predicate-type", "x"]);
    assert!(!ok && err.contains("--predicate <FILE>"), "{err}");
    if let Some((code, text)) = node_verify(TEST, &path, &dir.join("k.pub"), d.as_str()) {
        assert_eq!(code, 0, "{text}");
        assert!(
            text.contains("predicateType=https://slsa.dev/provenance/v1"),
            "{text}"
        );
    }
}
