//! Keyless (Fulcio + Rekor) signing, without the network: the requests otters sends to Fulcio,
//! Rekor and a timestamp authority, the checks of their answers, and the Sigstore bundle v0.3
//! they make (the leaf certificate alone, a `dsse` tlog entry with its signed entry timestamp and
//! inclusion proof, an optional RFC 3161 timestamp, the DSSE envelope).
//!
//! Takes: an OIDC identity token, an ephemeral key, a statement, and the services' answers as
//! bytes. Returns: request bodies and the bundle's JSON bytes. Must never: write the ephemeral key
//! anywhere (it lives in a [`KeyPair`] in memory), accept an answer it cannot read whole, or put
//! anything in the bundle that a strict protobuf reader would refuse.
//!
//! The wire formats are Fulcio v2 `signingCert`, Rekor v1 `log/entries` (kind `dsse` 0.0.1) and
//! the timestamp authority's JSON request, as `tests/harness/supply/README.md` records them
//! and `@sigstore/sign` sends them.

use crate::bundle::{pae, BUNDLE_V03};
use crate::keys::KeyPair;
use crate::statement::PAYLOAD_TYPE;
use base64::Engine as _;
use otters_core::json::{self, Value};
use serde_json::Value as J;
use sha2::{Digest as _, Sha256};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const B64URL: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The public-good instances, used when no URL is given.
pub const PUBLIC_FULCIO: &str = "https://fulcio.sigstore.dev";
pub const PUBLIC_REKOR: &str = "https://rekor.sigstore.dev";

/// Why keyless signing cannot go on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeylessError {
    #[error(
        "the identity token is not a JWT (three base64url parts with a JSON claims object): {0}"
    )]
    Token(String),
    #[error("the identity token has no `{0}` claim")]
    Claim(&'static str),
    #[error("{service} answered something otters cannot read: {why}")]
    Answer { service: &'static str, why: String },
}

fn answer(service: &'static str, why: impl Into<String>) -> KeylessError {
    KeylessError::Answer {
        service,
        why: why.into(),
    }
}

/// Who the token says is signing: the subject Fulcio puts in the certificate's SAN (the `email`
/// claim when present, else `sub`) and the issuer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub subject: String,
    pub issuer: String,
}

/// Reads (never verifies: Fulcio does) the claims of an OIDC identity token.
pub fn token_identity(token: &str) -> Result<Identity, KeylessError> {
    let parts: Vec<&str> = token.trim().split('.').collect();
    if parts.len() != 3 {
        return Err(KeylessError::Token(format!("{} part(s)", parts.len())));
    }
    let claims = B64URL
        .decode(parts[1].trim_end_matches('='))
        .map_err(|e| KeylessError::Token(e.to_string()))?;
    let claims: J =
        serde_json::from_slice(&claims).map_err(|e| KeylessError::Token(e.to_string()))?;
    let text = |k: &str| claims.get(k).and_then(J::as_str).map(str::to_owned);
    let subject = text("email")
        .or_else(|| text("sub"))
        .ok_or(KeylessError::Claim("sub"))?;
    let issuer = text("iss").ok_or(KeylessError::Claim("iss"))?;
    Ok(Identity { subject, issuer })
}

/// PEM text of DER bytes, 64 base64 characters a line.
pub fn pem(label: &str, der: &[u8]) -> String {
    let b = B64.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END ");
    out.push_str(label);
    out.push_str("-----\n");
    out
}

/// The DER of the first PEM block labelled `label` in `text`.
pub fn pem_der(text: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    let body: String = text[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    B64.decode(body).ok()
}

/// Fulcio v2 `signingCert` request: the ephemeral public key, and as proof of possession its
/// signature over the subject the certificate will name.
pub fn fulcio_request(token: &str, key: &KeyPair) -> Result<Vec<u8>, KeylessError> {
    let who = token_identity(token)?;
    let public = key
        .public()
        .to_pem()
        .map_err(|e| KeylessError::Token(e.to_string()))?;
    let proof = key.sign(who.subject.as_bytes());
    let body = Value::object()
        .with(
            "credentials",
            Value::object().with("oidcIdentityToken", token.trim()),
        )
        .with(
            "publicKeyRequest",
            Value::object()
                .with(
                    "publicKey",
                    Value::object()
                        .with("algorithm", "ECDSA")
                        .with("content", public),
                )
                .with("proofOfPossession", B64.encode(proof)),
        );
    Ok(json::to_compact(&body).unwrap_or_default())
}

/// The leaf certificate (DER) of Fulcio's answer.
pub fn fulcio_leaf(answer_bytes: &[u8]) -> Result<Vec<u8>, KeylessError> {
    let v: J = serde_json::from_slice(answer_bytes).map_err(|e| answer("Fulcio", e.to_string()))?;
    let chain = [
        "signedCertificateEmbeddedSct",
        "signedCertificateDetachedSct",
    ]
    .iter()
    .find_map(|k| v.get(k))
    .and_then(|c| c.pointer("/chain/certificates"))
    .and_then(J::as_array)
    .ok_or_else(|| answer("Fulcio", "no chain.certificates"))?;
    let leaf = chain
        .first()
        .and_then(J::as_str)
        .ok_or_else(|| answer("Fulcio", "an empty certificate chain"))?;
    pem_der(leaf, "CERTIFICATE")
        .ok_or_else(|| answer("Fulcio", "the leaf is not a PEM certificate"))
}

/// A DSSE signature over `payload` (an in-toto statement) with the ephemeral key.
pub fn sign_dsse(payload: &[u8], key: &KeyPair) -> Vec<u8> {
    key.sign(&pae(PAYLOAD_TYPE, payload))
}

fn envelope(payload: &[u8], sig: &[u8]) -> Value {
    Value::object()
        .with("payload", B64.encode(payload))
        .with("payloadType", PAYLOAD_TYPE)
        .with(
            "signatures",
            vec![Value::object().with("sig", B64.encode(sig))],
        )
}

/// Rekor v1 proposed entry of kind `dsse` 0.0.1: the envelope as a JSON string and the leaf
/// certificate (base64 of its PEM) as verifier.
pub fn rekor_dsse_request(payload: &[u8], sig: &[u8], leaf_der: &[u8]) -> Vec<u8> {
    let env = String::from_utf8(json::to_compact(&envelope(payload, sig)).unwrap_or_default())
        .unwrap_or_default();
    let body = Value::object()
        .with("apiVersion", "0.0.1")
        .with("kind", "dsse")
        .with(
            "spec",
            Value::object().with(
                "proposedContent",
                Value::object().with("envelope", env).with(
                    "verifiers",
                    vec![Value::from(B64.encode(pem("CERTIFICATE", leaf_der)))],
                ),
            ),
        );
    json::to_compact(&body).unwrap_or_default()
}

fn num_text(v: &J, what: &str) -> Result<String, KeylessError> {
    match v {
        J::Number(n) if n.is_u64() => Ok(n.to_string()),
        J::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => Ok(s.clone()),
        _ => Err(answer("Rekor", format!("`{what}` is not a whole number"))),
    }
}

fn hex_to_b64(v: Option<&J>, what: &str) -> Result<String, KeylessError> {
    let s = v
        .and_then(J::as_str)
        .ok_or_else(|| answer("Rekor", format!("no `{what}`")))?;
    hex::decode(s)
        .map(|b| B64.encode(b))
        .map_err(|_| answer("Rekor", format!("`{what}` is not hex")))
}

/// The bundle's `tlogEntries[0]` from Rekor v1's answer to a new entry (see
/// `tests/harness/supply/README.md`): the entry must carry a signed entry timestamp and an
/// inclusion proof with a checkpoint, and its body must be the `dsse` entry of this signature.
pub fn rekor_entry(answer_bytes: &[u8], sig: &[u8]) -> Result<Value, KeylessError> {
    let v: J = serde_json::from_slice(answer_bytes).map_err(|e| answer("Rekor", e.to_string()))?;
    let entry = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.values().next())
        .ok_or_else(|| answer("Rekor", "not one entry keyed by its UUID"))?;
    let body_b64 = entry
        .get("body")
        .and_then(J::as_str)
        .ok_or_else(|| answer("Rekor", "no `body`"))?;
    let body: J = B64
        .decode(body_b64)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| answer("Rekor", "the body is not base64 JSON"))?;
    let kind = body.get("kind").and_then(J::as_str).unwrap_or_default();
    let version = body
        .get("apiVersion")
        .and_then(J::as_str)
        .unwrap_or_default();
    if kind != "dsse" {
        return Err(answer(
            "Rekor",
            format!("an entry of kind `{kind}`, not `dsse`"),
        ));
    }
    let logged_sig = body
        .pointer("/spec/signatures/0/signature")
        .and_then(J::as_str)
        .unwrap_or_default();
    if logged_sig != B64.encode(sig) {
        return Err(answer(
            "Rekor",
            "an entry that does not hold this signature",
        ));
    }
    let field = |k: &str| {
        entry
            .get(k)
            .ok_or_else(|| answer("Rekor", format!("no `{k}`")))
    };
    let set = entry
        .pointer("/verification/signedEntryTimestamp")
        .and_then(J::as_str)
        .ok_or_else(|| answer("Rekor", "no signed entry timestamp"))?;
    let proof = entry
        .pointer("/verification/inclusionProof")
        .ok_or_else(|| answer("Rekor", "no inclusion proof"))?;
    let checkpoint = proof
        .get("checkpoint")
        .and_then(J::as_str)
        .ok_or_else(|| answer("Rekor", "an inclusion proof without checkpoint"))?;
    let hashes = proof
        .get("hashes")
        .and_then(J::as_array)
        .map(|a| {
            a.iter()
                .map(|h| hex_to_b64(Some(h), "inclusionProof.hashes").map(Value::from))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    Ok(Value::object()
        .with("logIndex", num_text(field("logIndex")?, "logIndex")?)
        .with(
            "logId",
            Value::object().with("keyId", hex_to_b64(entry.get("logID"), "logID")?),
        )
        .with(
            "kindVersion",
            Value::object().with("kind", kind).with("version", version),
        )
        .with(
            "integratedTime",
            num_text(field("integratedTime")?, "integratedTime")?,
        )
        .with(
            "inclusionPromise",
            Value::object().with("signedEntryTimestamp", set),
        )
        .with(
            "inclusionProof",
            inclusion_proof(proof, checkpoint, hashes)?,
        )
        .with("canonicalizedBody", body_b64))
}

/// The bundle's inclusion proof. Protobuf-JSON leaves out fields at their default value (a zero
/// `logIndex`, no `hashes`), and strict readers compare against that form, so neither is written.
fn inclusion_proof(proof: &J, checkpoint: &str, hashes: Vec<Value>) -> Result<Value, KeylessError> {
    let mut out = Value::object();
    let index = num_text(
        proof.get("logIndex").unwrap_or(&J::Null),
        "inclusionProof.logIndex",
    )?;
    if index != "0" {
        out.push("logIndex", index);
    }
    out.push("rootHash", hex_to_b64(proof.get("rootHash"), "rootHash")?);
    out.push(
        "treeSize",
        num_text(proof.get("treeSize").unwrap_or(&J::Null), "treeSize")?,
    );
    if !hashes.is_empty() {
        out.push("hashes", hashes);
    }
    out.push("checkpoint", Value::object().with("envelope", checkpoint));
    Ok(out)
}

/// The timestamp authority's JSON request: the SHA-256 of the signature bytes.
pub fn tsa_request(sig: &[u8]) -> Vec<u8> {
    let body = Value::object()
        .with("artifactHash", B64.encode(Sha256::digest(sig)))
        .with("hashAlgorithm", "sha256")
        .with("certificates", true);
    json::to_compact(&body).unwrap_or_default()
}

/// The keyless bundle v0.3: the leaf certificate alone, the tlog entry, the RFC 3161 timestamp
/// (DER `TimeStampResp` bytes) if any, and the DSSE envelope. Indented JSON, final newline.
pub fn bundle(
    payload: &[u8],
    sig: &[u8],
    leaf_der: &[u8],
    tlog: Option<Value>,
    timestamp: Option<&[u8]>,
) -> Vec<u8> {
    let mut material = Value::object()
        .with(
            "certificate",
            Value::object().with("rawBytes", B64.encode(leaf_der)),
        )
        .with("tlogEntries", tlog.into_iter().collect::<Vec<_>>());
    if let Some(ts) = timestamp {
        material.push(
            "timestampVerificationData",
            Value::object().with(
                "rfc3161Timestamps",
                vec![Value::object().with("signedTimestamp", B64.encode(ts))],
            ),
        );
    }
    let b = Value::object()
        .with("mediaType", BUNDLE_V03)
        .with("verificationMaterial", material)
        .with("dsseEnvelope", envelope(payload, sig));
    let mut out = json::to_indented(&b).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: &str) -> String {
        format!("e30.{}.c2ln", B64URL.encode(claims))
    }

    #[test]
    fn identity_prefers_email_and_needs_iss() {
        let t = token(r#"{"iss":"https://i","sub":"s","email":"a@b.c"}"#);
        assert_eq!(
            token_identity(&t).unwrap(),
            Identity {
                subject: "a@b.c".into(),
                issuer: "https://i".into()
            }
        );
        assert_eq!(
            token_identity(&token(r#"{"sub":"s"}"#)),
            Err(KeylessError::Claim("iss"))
        );
        assert!(matches!(token_identity("abc"), Err(KeylessError::Token(_))));
    }

    #[test]
    fn pem_round_trip_and_proof_of_possession() {
        let der = (0u8..=200).collect::<Vec<_>>();
        assert_eq!(pem_der(&pem("CERTIFICATE", &der), "CERTIFICATE"), Some(der));
        let key = KeyPair::generate();
        let t = token(
            r#"{"iss":"https://i","sub":"https://github.com/o/r/.github/workflows/x.yml@refs/heads/main"}"#,
        );
        let req: J = serde_json::from_slice(&fulcio_request(&t, &key).unwrap()).unwrap();
        let proof = B64
            .decode(
                req["publicKeyRequest"]["proofOfPossession"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        assert!(key.public().verifies(
            b"https://github.com/o/r/.github/workflows/x.yml@refs/heads/main",
            &proof
        ));
    }

    #[test]
    fn rekor_answer_must_hold_this_signature_a_set_and_a_proof() {
        let body = B64.encode(
            r#"{"apiVersion":"0.0.1","kind":"dsse","spec":{"signatures":[{"signature":"AQI=","verifier":"x"}]}}"#,
        );
        let good = format!(
            r#"{{"u":{{"body":"{body}","integratedTime":5,"logID":"0a0b","logIndex":7,"verification":{{"signedEntryTimestamp":"c2V0","inclusionProof":{{"logIndex":0,"treeSize":1,"rootHash":"ff","hashes":[],"checkpoint":"note"}}}}}}}}"#
        );
        let e = rekor_entry(good.as_bytes(), &[1, 2]).unwrap();
        let text = String::from_utf8(json::to_compact(&e).unwrap()).unwrap();
        assert!(
            text.contains(r#""logIndex":"7","logId":{"keyId":"Cgs="}"#),
            "{text}"
        );
        assert!(text.contains(r#""rootHash":"/w==""#), "{text}");
        assert!(
            rekor_entry(good.as_bytes(), &[9]).is_err(),
            "another signature"
        );
        let no_set = good.replace(r#""signedEntryTimestamp":"c2V0","#, "");
        assert!(rekor_entry(no_set.as_bytes(), &[1, 2]).is_err());
    }
}
