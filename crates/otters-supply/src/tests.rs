//! Unit tests of the crate: key files and their refusals, bundle round trips and every refusal of
//! the verifier, SBOM and provenance contents and their reproducibility.

use crate::bundle::{self, VerifyError};
use crate::inputs::{Agent, BinInput, BuildInputs, ContextInput, FileInput, ImageInput};
use crate::keys::{KeyError, KeyPair, PublicKey};
use crate::statement::{Statement, Subject, SIGN_PREDICATE};
use crate::{provenance, sbom};
use base64::Engine as _;
use otters_spec::digest::Digest;
use serde_json::Value as J;
use std::os::unix::fs::PermissionsExt as _;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn digest(seed: &str) -> Digest {
    Digest::of(seed.as_bytes())
}

fn wrong_text(e: KeyError) -> String {
    match e {
        KeyError::Wrong { what, .. } => what,
        other => panic!("expected a wrong-key error, got {other}"),
    }
}

// ---- keys ----

#[test]
fn a_generated_key_round_trips_through_its_pem_files() {
    let dir = tempfile::tempdir().unwrap();
    let key = KeyPair::generate();
    let (kp, pp) = key.write_new(&dir.path().join("ci")).unwrap();
    assert_eq!(kp, dir.path().join("ci.key"));
    assert_eq!(pp, dir.path().join("ci.pub"));
    let text = std::fs::read_to_string(&kp).unwrap();
    assert!(text.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{text}");
    assert!(std::fs::read_to_string(&pp)
        .unwrap()
        .starts_with("-----BEGIN PUBLIC KEY-----\n"));
    assert_eq!(
        std::fs::metadata(&kp).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let read = KeyPair::read(&kp).unwrap();
    let public = PublicKey::read(&pp).unwrap();
    assert_eq!(read.public(), key.public());
    assert_eq!(public, key.public());
    let sig = read.sign(b"hello");
    assert!(public.verifies(b"hello", &sig));
    assert!(!public.verifies(b"hellO", &sig));
}

#[test]
fn generating_never_overwrites_a_key_or_its_public_half() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    std::fs::write(dir.path().join("k.pub"), "old").unwrap();
    let e = KeyPair::generate().write_new(&prefix).unwrap_err();
    assert!(
        matches!(&e, KeyError::Exists { path } if path.ends_with("k.pub")),
        "{e}"
    );
    assert!(!dir.path().join("k.key").exists(), "no half pair is left");
    std::fs::remove_file(dir.path().join("k.pub")).unwrap();
    KeyPair::generate().write_new(&prefix).unwrap();
    let before = std::fs::read(dir.path().join("k.key")).unwrap();
    let e = KeyPair::generate().write_new(&prefix).unwrap_err();
    assert!(e.to_string().contains("never overwrites"), "{e}");
    assert_eq!(std::fs::read(dir.path().join("k.key")).unwrap(), before);
}

#[test]
fn an_openssl_pkcs8_p256_key_is_read() {
    let key = KeyPair::from_pem(include_bytes!("../testdata/openssl-p256.pem"), "o.pem").unwrap();
    assert!(key.public().verifies(b"x", &key.sign(b"x")));
}

#[test]
fn wrong_key_files_are_refused_with_what_they_are_and_the_path() {
    let cases: [(&[u8], &str); 5] = [
        (include_bytes!("../testdata/rsa.pem"), "it is an RSA key"),
        (include_bytes!("../testdata/p384.pem"), "P-384"),
        (
            include_bytes!("../testdata/encrypted-p256.pem"),
            "openssl pkey -in KEY",
        ),
        (
            include_bytes!("../testdata/sec1-p256.pem"),
            "openssl pkcs8 -topk8 -nocrypt",
        ),
        (
            include_bytes!("../testdata/rsa-public.pem"),
            "it is a public key",
        ),
    ];
    for (pem, want) in cases {
        let e = KeyPair::from_pem(pem, "/keys/x.pem").unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(
                "/keys/x.pem is not a private key (PKCS#8 PEM, ECDSA P-256) otters can use: "
            ),
            "{text}"
        );
        assert!(wrong_text(e).contains(want), "{want}: {text}");
    }
    let e = KeyPair::from_pem(b"just text", "t").unwrap_err();
    assert!(wrong_text(e).contains("no PEM block"));
    let e = KeyPair::from_pem(
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        "t",
    )
    .unwrap_err();
    assert!(wrong_text(e).contains("PKCS#8 structure does not parse"));
}

#[test]
fn a_private_key_given_as_public_and_foreign_public_keys_are_refused() {
    let pem = KeyPair::generate().to_pkcs8_pem().unwrap();
    let e = PublicKey::from_pem(pem.as_bytes(), "ci.key").unwrap_err();
    assert!(wrong_text(e).contains("it is a private key"));
    let e = PublicKey::from_pem(include_bytes!("../testdata/rsa-public.pem"), "r.pub").unwrap_err();
    assert!(wrong_text(e).contains("RSA"));
    let e = PublicKey::from_pem(
        b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        "c",
    )
    .unwrap_err();
    assert!(wrong_text(e).contains("openssl x509 -pubkey"));
}

#[test]
fn a_missing_or_huge_key_file_is_refused_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let e = KeyPair::read(&dir.path().join("nope.key")).unwrap_err();
    assert!(
        matches!(e, KeyError::Read { .. }) && e.to_string().contains("nope.key"),
        "{e}"
    );
    let big = dir.path().join("big.key");
    std::fs::write(&big, vec![b'a'; 70_000]).unwrap();
    assert!(wrong_text(KeyPair::read(&big).unwrap_err()).contains("larger than"));
    let e = PublicKey::read(dir.path()).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

// ---- bundles ----

fn signed(key: &KeyPair, d: &Digest) -> Vec<u8> {
    bundle::sign(
        &Statement::signature(Subject {
            name: "registry.example/agents/ledger".into(),
            digest: d.clone(),
        }),
        key,
    )
}

fn edit(bundle: &[u8], f: impl FnOnce(&mut J)) -> Vec<u8> {
    let mut v: J = serde_json::from_slice(bundle).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn a_bundle_verifies_with_its_key_and_digest_and_is_reproducible() {
    let key = KeyPair::generate();
    let d = digest("manifest");
    let b = signed(&key, &d);
    assert_eq!(
        b,
        signed(&key, &d),
        "RFC 6979: the same input signs to the same bytes"
    );
    let v = bundle::verify(&b, &key.public(), d.hex()).unwrap();
    assert_eq!(v.predicate_type, SIGN_PREDICATE);
    assert_eq!(v.subjects, [format!("registry.example/agents/ledger@{d}")]);
    assert_eq!(v.hint, key.public().hint());
    let j: J = serde_json::from_slice(&b).unwrap();
    assert_eq!(j["mediaType"], bundle::BUNDLE_V03);
    assert_eq!(
        j["verificationMaterial"]["tlogEntries"],
        serde_json::json!([])
    );
    let payload = B64
        .decode(j["dsseEnvelope"]["payload"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(payload).unwrap(),
        format!(
            r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"name":"registry.example/agents/ledger","digest":{{"sha256":"{}"}}}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{{}}}}"#,
            d.hex()
        )
    );
}

#[test]
fn pae_is_the_dsse_v1_encoding() {
    assert_eq!(
        bundle::pae("application/vnd.in-toto+json", b"{}"),
        b"DSSEv1 28 application/vnd.in-toto+json 2 {}"
    );
}

#[test]
fn the_verifier_refuses_a_wrong_key_digest_or_a_tampered_payload() {
    let key = KeyPair::generate();
    let d = digest("manifest");
    let b = signed(&key, &d);
    let other = KeyPair::generate().public();
    assert_eq!(
        bundle::verify(&b, &other, d.hex()),
        Err(VerifyError::BadSignature)
    );
    let e = bundle::verify(&b, &key.public(), digest("evil").hex()).unwrap_err();
    assert!(matches!(e, VerifyError::WrongDigest { .. }));
    assert!(e.to_string().contains(&d.to_string()), "{e}");
    let tampered = edit(&b, |v| {
        let p = B64
            .decode(v["dsseEnvelope"]["payload"].as_str().unwrap())
            .unwrap();
        let p = String::from_utf8(p)
            .unwrap()
            .replace(d.hex(), digest("evil").hex());
        v["dsseEnvelope"]["payload"] = J::String(B64.encode(p));
    });
    assert_eq!(
        bundle::verify(&tampered, &key.public(), digest("evil").hex()),
        Err(VerifyError::BadSignature)
    );
    let retyped = edit(&b, |v| {
        v["dsseEnvelope"]["payloadType"] = J::String("text/plain".into());
    });
    assert!(matches!(
        bundle::verify(&retyped, &key.public(), d.hex()),
        Err(VerifyError::PayloadType(_))
    ));
}

#[test]
fn the_verifier_wants_exactly_one_signature() {
    let key = KeyPair::generate();
    let d = digest("m");
    let b = signed(&key, &d);
    let two = edit(&b, |v| {
        let s = v["dsseEnvelope"]["signatures"][0].clone();
        v["dsseEnvelope"]["signatures"]
            .as_array_mut()
            .unwrap()
            .push(s);
    });
    assert_eq!(
        bundle::verify(&two, &key.public(), d.hex()),
        Err(VerifyError::SignatureCount(2))
    );
    let none = edit(&b, |v| {
        v["dsseEnvelope"]["signatures"] = serde_json::json!([]);
    });
    assert_eq!(
        bundle::verify(&none, &key.public(), d.hex()),
        Err(VerifyError::SignatureCount(0))
    );
    let garbage = edit(&b, |v| {
        v["dsseEnvelope"]["signatures"][0]["sig"] = J::String("AAAA".into());
    });
    assert_eq!(
        bundle::verify(&garbage, &key.public(), d.hex()),
        Err(VerifyError::BadSignature)
    );
    let not_b64 = edit(&b, |v| {
        v["dsseEnvelope"]["signatures"][0]["sig"] = J::String("%%".into());
    });
    assert!(matches!(
        bundle::verify(&not_b64, &key.public(), d.hex()),
        Err(VerifyError::BadField { .. })
    ));
}

#[test]
fn the_verifier_refuses_other_bundle_shapes() {
    let key = KeyPair::generate();
    let pk = key.public();
    let d = digest("m");
    let b = signed(&key, &d);
    let check = |bytes: Vec<u8>, want: &str| {
        let e = bundle::verify(&bytes, &pk, d.hex())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "wanted {want:?} in {e:?}");
    };
    check(b"not json".to_vec(), "not JSON");
    check(
        edit(&b, |v| {
            v["mediaType"] = J::String("application/json".into());
        }),
        "mediaType",
    );
    check(edit(&b, |v| v["extra"] = J::Bool(true)), "field `extra`");
    check(
        edit(&b, |v| {
            v["verificationMaterial"]["publicKeyHint"] = J::String("x".into());
        }),
        "verificationMaterial.publicKeyHint",
    );
    check(
        edit(&b, |v| {
            v["verificationMaterial"]["certificate"] = serde_json::json!({"rawBytes": "AAAA"});
        }),
        "a certificate",
    );
    check(
        edit(&b, |v| {
            v["verificationMaterial"]["tlogEntries"] = serde_json::json!([{"logIndex": "1"}]);
        }),
        "Rekor",
    );
    check(
        edit(&b, |v| {
            let o = v.as_object_mut().unwrap();
            o.remove("dsseEnvelope");
            o.insert("messageSignature".into(), serde_json::json!({}));
        }),
        "messageSignature",
    );
    check(
        edit(&b, |v| {
            v.as_object_mut().unwrap().remove("dsseEnvelope");
        }),
        "no `dsseEnvelope`",
    );
    check(
        edit(&b, |v| v["dsseEnvelope"]["signatures"][0]["id"] = J::Null),
        "signatures[0].id",
    );
    // A payload that is signed but is no in-toto statement.
    let raw = {
        let payload = br#"{"_type":"https://in-toto.io/Statement/v0.9","subject":[]}"#;
        bundle::sign_payload(payload, &key)
    };
    check(raw, "not an in-toto Statement v1");
    let no_subject = bundle::sign_payload(
        br#"{"_type":"https://in-toto.io/Statement/v1","predicateType":"x","subject":[]}"#,
        &key,
    );
    check(no_subject, "no subject");
    check(vec![b' '; bundle::MAX_BUNDLE + 1], "more than");
}

#[test]
fn a_v02_bundle_with_the_same_envelope_verifies() {
    let key = KeyPair::generate();
    let d = digest("m");
    let v02 = edit(&signed(&key, &d), |v| {
        v["mediaType"] = J::String("application/vnd.dev.sigstore.bundle+json;version=0.2".into());
    });
    assert!(bundle::verify(&v02, &key.public(), d.hex()).is_ok());
}

// ---- SBOM and provenance ----

pub(crate) fn sample() -> BuildInputs {
    let img = |repo: &str, tag: Option<&str>| ImageInput {
        repository: repo.into(),
        tag: tag.map(Into::into),
        digest: digest(repo),
    };
    BuildInputs {
        agent: Agent {
            name: "ledger".into(),
            repository: Some("registry.example/agents/ledger".into()),
            tag: Some("1.0".into()),
            manifest_digest: digest("agent manifest"),
        },
        agentfile: FileInput {
            path: "Agentfile".into(),
            digest: digest("FROM scratch\n"),
        },
        runtime: Some(img("ghcr.io/openotters/runtime", Some("v1"))),
        bins: vec![BinInput {
            name: "curl".into(),
            image: img("ghcr.io/openotters/tools/curl", None),
        }],
        parent: Some(img("registry.example/agents/base", Some("2"))),
        adds: vec![FileInput {
            path: "data/rates.csv".into(),
            digest: digest("a,b\n"),
        }],
        contexts: vec![
            ContextInput {
                name: "SOUL".into(),
                source: None,
                digest: digest("soul"),
            },
            ContextInput {
                name: "STYLE".into(),
                source: Some("style.md".into()),
                digest: digest("style"),
            },
        ],
        model: Some("anthropic/claude-haiku-4-5".into()),
        build_args: vec![("Z".into(), "1".into()), ("A".into(), "x&y".into())],
        env_build_args: Vec::new(),
        platform: "linux/amd64".into(),
        created: Some("2023-11-14T22:13:20Z".into()),
        otters_version: "0.1.0".into(),
        egress: None,
    }
}

#[test]
fn the_sbom_lists_every_input_with_its_digest() {
    let inputs = sample();
    let bytes = sbom::to_bytes(&inputs);
    assert_eq!(bytes, sbom::to_bytes(&sample()), "same inputs, same bytes");
    let v: J = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["bomFormat"], "CycloneDX");
    assert_eq!(v["specVersion"], "1.6");
    assert_eq!(v["metadata"]["timestamp"], "2023-11-14T22:13:20Z");
    let agent = &v["metadata"]["component"];
    assert_eq!(
        agent["purl"],
        format!(
            "pkg:oci/ledger@{}?repository_url=registry.example/agents/ledger&tag=1.0",
            inputs.agent.manifest_digest
        )
    );
    let comps = v["components"].as_array().unwrap();
    let by_ref = |r: &str| {
        comps
            .iter()
            .find(|c| c["bom-ref"] == r)
            .unwrap_or_else(|| panic!("{r}"))
    };
    let curl = by_ref("bin:curl");
    assert_eq!(
        curl["purl"],
        format!(
            "pkg:oci/curl@{}?repository_url=ghcr.io/openotters/tools/curl",
            digest("ghcr.io/openotters/tools/curl")
        )
    );
    assert_eq!(
        curl["hashes"][0]["content"],
        digest("ghcr.io/openotters/tools/curl").hex()
    );
    assert_eq!(by_ref("runtime")["properties"][0]["value"], "runtime");
    assert_eq!(by_ref("parent")["version"], "2");
    assert_eq!(
        by_ref("agentfile")["hashes"][0]["content"],
        digest("FROM scratch\n").hex()
    );
    assert_eq!(by_ref("add:0:data/rates.csv")["type"], "file");
    assert_eq!(
        by_ref("context:STYLE")["properties"][1]["value"],
        "style.md"
    );
    assert_eq!(by_ref("context:SOUL")["name"], "SOUL.md");
    assert_eq!(comps.len(), 7);
    let model = &v["services"][0];
    assert_eq!(model["name"], "claude-haiku-4-5");
    assert_eq!(model["provider"]["name"], "anthropic");
    assert_eq!(
        v["dependencies"][0]["dependsOn"].as_array().unwrap().len(),
        8
    );
    assert!(v.get("serialNumber").is_none());
}

#[test]
fn without_a_time_the_sbom_has_no_timestamp_and_without_a_model_no_service() {
    let mut inputs = sample();
    inputs.created = None;
    inputs.model = None;
    let v: J = serde_json::from_slice(&sbom::to_bytes(&inputs)).unwrap();
    assert!(v["metadata"].get("timestamp").is_none());
    assert!(v.get("services").is_none());
}

#[test]
fn the_sbom_statement_is_about_the_agent() {
    let st = sbom::statement(&sample());
    assert_eq!(st.predicate_type, sbom::CYCLONEDX_PREDICATE);
    assert_eq!(st.subjects[0].name, "registry.example/agents/ledger");
    assert_eq!(st.subjects[0].digest, digest("agent manifest"));
}

#[test]
fn the_provenance_names_every_dependency_and_parameter() {
    let inputs = sample();
    let bytes = provenance::to_bytes(&inputs, provenance::DEFAULT_BUILDER_ID);
    assert_eq!(
        bytes,
        provenance::to_bytes(&sample(), provenance::DEFAULT_BUILDER_ID)
    );
    let v: J = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(v["predicateType"], "https://slsa.dev/provenance/v1");
    assert_eq!(
        v["subject"][0]["digest"]["sha256"],
        digest("agent manifest").hex()
    );
    let def = &v["predicate"]["buildDefinition"];
    assert_eq!(def["buildType"], provenance::BUILD_TYPE);
    assert_eq!(
        def["externalParameters"]["buildArgs"],
        serde_json::json!({"A": "x&y", "Z": "1"})
    );
    assert_eq!(
        serde_json::to_string(&def["externalParameters"]["buildArgs"]).unwrap(),
        r#"{"A":"x&y","Z":"1"}"#,
        "build args sorted"
    );
    assert_eq!(def["externalParameters"]["platform"], "linux/amd64");
    let deps = def["resolvedDependencies"].as_array().unwrap();
    let names: Vec<&str> = deps.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "agentfile",
            "runtime",
            "bin:curl",
            "parent",
            "add",
            "context:SOUL",
            "context:STYLE"
        ]
    );
    assert_eq!(deps[0]["uri"], "file:Agentfile");
    assert_eq!(
        deps[2]["digest"]["sha256"],
        digest("ghcr.io/openotters/tools/curl").hex()
    );
    assert!(deps[2]["uri"]
        .as_str()
        .unwrap()
        .starts_with("pkg:oci/curl@sha256:"));
    assert!(
        deps[5].get("uri").is_none(),
        "a heredoc CONTEXT has no file"
    );
    assert_eq!(
        v["predicate"]["runDetails"]["builder"]["id"],
        provenance::DEFAULT_BUILDER_ID
    );
    assert!(!String::from_utf8(bytes).unwrap().contains("startedOn"));
}

#[test]
fn the_provenance_names_environment_build_args_without_their_values() {
    let v = |inputs: &BuildInputs| -> J {
        serde_json::from_slice(&provenance::to_bytes(
            inputs,
            provenance::DEFAULT_BUILDER_ID,
        ))
        .unwrap()
    };
    assert!(
        v(&sample())["predicate"]["buildDefinition"]["externalParameters"]
            .get("buildArgsFromEnvironment")
            .is_none(),
        "written only when there are such arguments"
    );
    let mut inputs = sample();
    inputs.env_build_args = vec!["TIER".into(), "REGION".into()];
    let ext = &v(&inputs)["predicate"]["buildDefinition"]["externalParameters"];
    assert_eq!(
        ext["buildArgsFromEnvironment"],
        serde_json::json!(["REGION", "TIER"])
    );
    let keys: Vec<&String> = ext.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "agentfile",
            "buildArgs",
            "buildArgsFromEnvironment",
            "platform"
        ]
    );
}

#[test]
fn a_signed_provenance_verifies() {
    let key = KeyPair::generate();
    let st = provenance::statement(&sample(), provenance::DEFAULT_BUILDER_ID);
    let b = bundle::sign(&st, &key);
    let v = bundle::verify(&b, &key.public(), digest("agent manifest").hex()).unwrap();
    assert_eq!(v.predicate_type, provenance::SLSA_PROVENANCE_V1);
    assert_eq!(
        v.predicate["buildDefinition"]["buildType"],
        provenance::BUILD_TYPE
    );
}

#[test]
fn a_predicate_read_as_json_keeps_its_key_order_and_numbers() {
    let v: J = serde_json::from_str(
        r#"{"z":1,"a":[-2,1.5,18446744073709551615],"m":{"k":null,"b":true}}"#,
    )
    .unwrap();
    let bytes = otters_core::json::to_compact(&crate::statement::from_serde(&v)).unwrap();
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        r#"{"z":1,"a":[-2,1.5,18446744073709552000],"m":{"k":null,"b":true}}"#
    );
}

#[test]
fn the_sbom_lists_declared_egress_as_properties() {
    let mut i = sample();
    let props = |i: &crate::inputs::BuildInputs| {
        let v: serde_json::Value = serde_json::from_slice(&crate::sbom::to_bytes(i)).unwrap();
        v["metadata"]["properties"].clone()
    };
    assert_eq!(
        props(&i),
        serde_json::json!([{"name":"otters:platform","value":"linux/amd64"}])
    );
    i.egress = Some(vec![
        crate::inputs::EgressInput {
            host: "api.example.com".into(),
            port: 443,
            description: None,
        },
        crate::inputs::EgressInput {
            host: "2001:db8::1".into(),
            port: 853,
            description: Some("dns".into()),
        },
    ]);
    assert_eq!(
        props(&i),
        serde_json::json!([
            {"name":"otters:platform","value":"linux/amd64"},
            {"name":"otters:egress","value":"api.example.com:443"},
            {"name":"otters:egress","value":"[2001:db8::1]:853"}
        ])
    );
    i.egress = Some(Vec::new());
    assert_eq!(
        props(&i)[1],
        serde_json::json!({"name":"otters:egress","value":"none"})
    );
}
