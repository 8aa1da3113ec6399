//! DSSE envelopes and key-based Sigstore bundles (v0.3): writing one over an in-toto statement,
//! and verifying one against a public key and the digest it must cover.
//!
//! Takes: a statement and a private key, or bundle bytes, a public key and an expected sha256.
//! Returns: the bundle's JSON bytes (deterministic: RFC 6979 signatures), or the verified
//! statement. Must never: accept a bundle whose signature does not hold over the DSSE PAE of its
//! exact payload, that carries more or fewer than one signature, a field this shape does not have
//! (certificates, transparency-log entries, timestamps, unknown keys), or whose statement has no
//! subject with the expected digest.
//!
//! The shape is the one `@sigstore/verify` and `cosign verify-blob-attestation --key` accept
//! (see `/work/shared/supply/make_fixtures.py`): protobuf-JSON `lowerCamelCase` keys, standard base64,
//! `verificationMaterial.publicKey.hint`, `tlogEntries: []`, one DSSE signature with `keyid: ""`.

use crate::keys::{KeyPair, PublicKey};
use crate::statement::{Statement, PAYLOAD_TYPE, STATEMENT_V1};
use base64::Engine as _;
use otters_core::json::{self, Value};
use serde_json::Value as J;

/// Media type of a v0.3 bundle, and the `artifactType` of a bundle referrer.
pub const BUNDLE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// Media types a bundle may carry and still be read (the legacy spelling of v0.3, and v0.2).
const READABLE: [&str; 3] = [
    BUNDLE_V03,
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
];
/// Larger bundles are refused before parsing (an SBOM statement of thousands of files is < 4 MiB).
pub const MAX_BUNDLE: usize = 32 * 1024 * 1024;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// DSSE pre-authentication encoding: what is actually signed.
/// `"DSSEv1" SP len(type) SP type SP len(body) SP body`, lengths in decimal bytes.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Signs `statement` with `key`: a v0.3 bundle holding a DSSE envelope, as indented JSON with a
/// final newline. The same statement and key always give the same bytes.
pub fn sign(statement: &Statement, key: &KeyPair) -> Vec<u8> {
    sign_payload(&statement.to_bytes(), key)
}

/// Signs an already serialised in-toto statement (for attestations written elsewhere).
pub fn sign_payload(payload: &[u8], key: &KeyPair) -> Vec<u8> {
    let sig = key.sign(&pae(PAYLOAD_TYPE, payload));
    let bundle = Value::object()
        .with("mediaType", BUNDLE_V03)
        .with(
            "verificationMaterial",
            Value::object()
                .with(
                    "publicKey",
                    Value::object().with("hint", key.public().hint()),
                )
                .with("tlogEntries", Value::Array(Vec::new())),
        )
        .with(
            "dsseEnvelope",
            Value::object()
                .with("payload", B64.encode(payload))
                .with("payloadType", PAYLOAD_TYPE)
                .with(
                    "signatures",
                    vec![Value::object()
                        .with("sig", B64.encode(sig))
                        .with("keyid", "")],
                ),
        );
    let mut out = json::to_indented(&bundle).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Why a bundle was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("the bundle is not JSON: {0}")]
    NotJson(String),
    #[error("the bundle is {0} bytes, more than the {MAX_BUNDLE} a bundle may be")]
    TooLarge(usize),
    #[error("the bundle's mediaType is {0}, not a Sigstore bundle v0.3 (`{BUNDLE_V03}`) or v0.2")]
    MediaType(String),
    #[error("the bundle has a field `{0}` that a key-based DSSE bundle does not have")]
    UnknownField(String),
    #[error("the bundle has no `{0}`")]
    Missing(String),
    #[error("`{field}` in the bundle is {what}")]
    BadField { field: String, what: String },
    #[error("the bundle is not key-based: it carries {0}, which otters cannot check (it verifies bundles signed with a key)")]
    NotKeyBased(String),
    #[error("the DSSE envelope's payloadType is {0}, not `{PAYLOAD_TYPE}`")]
    PayloadType(String),
    #[error("the DSSE envelope has {0} signatures; an otters bundle has exactly one")]
    SignatureCount(usize),
    #[error("the signature does not verify with this key: the bundle was signed by another key, or its payload was changed after signing")]
    BadSignature,
    #[error("the signed payload is not an in-toto Statement v1: {0}")]
    NotStatement(String),
    #[error("the signed statement is about {found}, not {expected}: it signs another digest")]
    WrongDigest { expected: String, found: String },
}

/// A statement whose signature held.
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    pub predicate_type: String,
    /// `name@sha256:hex` of every subject.
    pub subjects: Vec<String>,
    /// The predicate as read.
    pub predicate: J,
    /// The hint the bundle names for its key.
    pub hint: String,
}

/// Verifies `bundle` with `key`: one DSSE signature over its payload, the payload an in-toto
/// Statement v1 with a subject whose sha256 is `expected_hex` (64 lower-case hex digits).
pub fn verify(bundle: &[u8], key: &PublicKey, expected_hex: &str) -> Result<Verified, VerifyError> {
    if bundle.len() > MAX_BUNDLE {
        return Err(VerifyError::TooLarge(bundle.len()));
    }
    let root: J =
        serde_json::from_slice(bundle).map_err(|e| VerifyError::NotJson(e.to_string()))?;
    let top = object(&root, "bundle")?;
    only(
        top,
        "",
        &[
            "mediaType",
            "verificationMaterial",
            "dsseEnvelope",
            "messageSignature",
        ],
    )?;
    let media = string(top, "mediaType")?;
    if !READABLE.contains(&media) {
        return Err(VerifyError::MediaType(format!("`{media}`")));
    }

    let hint = key_hint(top)?;
    let payload = signed_payload(top, key)?;
    // Only now is the payload trusted enough to read.
    read_statement(&payload, expected_hex, hint)
}

/// The bundle's verification material: a public-key hint only (no certificate, no transparency
/// log entry, no timestamp: otters' bundles are key-based).
fn key_hint(top: &serde_json::Map<String, J>) -> Result<String, VerifyError> {
    let material = object(field(top, "verificationMaterial")?, "verificationMaterial")?;
    for (k, what) in [
        ("certificate", "a certificate (keyless signing)"),
        ("x509CertificateChain", "an X.509 certificate chain"),
        ("timestampVerificationData", "timestamp verification data"),
    ] {
        if material.get(k).is_some_and(|v| !empty(v)) {
            return Err(VerifyError::NotKeyBased(what.to_owned()));
        }
    }
    only(
        material,
        "verificationMaterial.",
        &[
            "publicKey",
            "tlogEntries",
            "certificate",
            "x509CertificateChain",
            "timestampVerificationData",
        ],
    )?;
    match material.get("tlogEntries") {
        None => {}
        Some(J::Array(a)) if a.is_empty() => {}
        Some(J::Array(_)) => {
            return Err(VerifyError::NotKeyBased(
                "transparency-log (Rekor) entries".to_owned(),
            ))
        }
        Some(_) => return Err(bad("verificationMaterial.tlogEntries", "not a list")),
    }
    let public = object(
        field(material, "publicKey")?,
        "verificationMaterial.publicKey",
    )?;
    only(public, "verificationMaterial.publicKey.", &["hint"])?;
    match public.get("hint") {
        None => Ok(String::new()),
        Some(J::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad("verificationMaterial.publicKey.hint", "not a string")),
    }
}

/// The DSSE envelope's payload, once its one signature verifies with `key`.
fn signed_payload(
    top: &serde_json::Map<String, J>,
    key: &PublicKey,
) -> Result<Vec<u8>, VerifyError> {
    if top.contains_key("messageSignature") {
        return Err(VerifyError::NotKeyBased(
            "a messageSignature instead of a DSSE envelope".to_owned(),
        ));
    }
    let envelope = object(field(top, "dsseEnvelope")?, "dsseEnvelope")?;
    only(
        envelope,
        "dsseEnvelope.",
        &["payload", "payloadType", "signatures"],
    )?;
    let payload_type = string(envelope, "payloadType")?;
    if payload_type != PAYLOAD_TYPE {
        return Err(VerifyError::PayloadType(format!("`{payload_type}`")));
    }
    let payload = base64_field(string(envelope, "payload")?, "dsseEnvelope.payload")?;
    let J::Array(signatures) = field(envelope, "signatures")? else {
        return Err(bad("dsseEnvelope.signatures", "not a list"));
    };
    if signatures.len() != 1 {
        return Err(VerifyError::SignatureCount(signatures.len()));
    }
    let signature = object(&signatures[0], "dsseEnvelope.signatures[0]")?;
    only(signature, "dsseEnvelope.signatures[0].", &["sig", "keyid"])?;
    if signature.get("keyid").is_some_and(|k| !k.is_string()) {
        return Err(bad("dsseEnvelope.signatures[0].keyid", "not a string"));
    }
    let sig = base64_field(string(signature, "sig")?, "dsseEnvelope.signatures[0].sig")?;
    if !key.verifies(&pae(payload_type, &payload), &sig) {
        return Err(VerifyError::BadSignature);
    }
    Ok(payload)
}

/// The verified payload read as an in-toto Statement v1 that names `expected_hex` among its
/// subjects.
fn read_statement(
    payload: &[u8],
    expected_hex: &str,
    hint: String,
) -> Result<Verified, VerifyError> {
    let statement: J = serde_json::from_slice(payload)
        .map_err(|e| VerifyError::NotStatement(format!("not JSON ({e})")))?;
    let st = object(&statement, "statement")
        .map_err(|_| VerifyError::NotStatement("not an object".into()))?;
    let ty = st.get("_type").and_then(J::as_str).unwrap_or("");
    if ty != STATEMENT_V1 {
        return Err(VerifyError::NotStatement(format!(
            "its _type is `{ty}`, not `{STATEMENT_V1}`"
        )));
    }
    let predicate_type = st
        .get("predicateType")
        .and_then(J::as_str)
        .ok_or_else(|| VerifyError::NotStatement("it has no predicateType".into()))?
        .to_owned();
    let subjects = match st.get("subject") {
        Some(J::Array(a)) if !a.is_empty() => a,
        _ => return Err(VerifyError::NotStatement("it has no subject".into())),
    };
    let mut named = Vec::new();
    let mut matched = false;
    for s in subjects {
        let name = s.get("name").and_then(J::as_str).unwrap_or("");
        let sha = s
            .get("digest")
            .and_then(|d| d.get("sha256"))
            .and_then(J::as_str)
            .unwrap_or("");
        matched |= sha == expected_hex;
        named.push(format!("{name}@sha256:{sha}"));
    }
    if !matched {
        return Err(VerifyError::WrongDigest {
            expected: format!("sha256:{expected_hex}"),
            found: named.join(", "),
        });
    }
    Ok(Verified {
        predicate_type,
        subjects: named,
        predicate: st.get("predicate").cloned().unwrap_or(J::Null),
        hint,
    })
}

type Obj = serde_json::Map<String, J>;

fn bad(field: &str, what: &str) -> VerifyError {
    VerifyError::BadField {
        field: field.to_owned(),
        what: what.to_owned(),
    }
}

fn object<'a>(v: &'a J, name: &str) -> Result<&'a Obj, VerifyError> {
    v.as_object().ok_or_else(|| bad(name, "not an object"))
}

fn field<'a>(o: &'a Obj, key: &str) -> Result<&'a J, VerifyError> {
    o.get(key)
        .ok_or_else(|| VerifyError::Missing(key.to_owned()))
}

fn string<'a>(o: &'a Obj, key: &str) -> Result<&'a str, VerifyError> {
    field(o, key)?
        .as_str()
        .ok_or_else(|| bad(key, "not a string"))
}

/// Refuses keys outside `allowed` (protobuf-JSON readers such as cosign reject them too).
fn only(o: &Obj, prefix: &str, allowed: &[&str]) -> Result<(), VerifyError> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(VerifyError::UnknownField(format!("{prefix}{k}"))),
        None => Ok(()),
    }
}

fn empty(v: &J) -> bool {
    match v {
        J::Null => true,
        J::Array(a) => a.is_empty(),
        J::Object(o) => o.is_empty(),
        J::String(s) => s.is_empty(),
        _ => false,
    }
}

fn base64_field(text: &str, name: &str) -> Result<Vec<u8>, VerifyError> {
    B64.decode(text)
        .map_err(|e| bad(name, &format!("not standard base64 ({e})")))
}
