//! The transparency-log entry of a keyless bundle: signed by a log of the trusted root (its SET,
//! by a key trusted at the entry's time), included in the log (an RFC 6962 inclusion proof up to a
//! root hash, and a checkpoint that the log's key signed over that root), and logging this
//! signature, by this certificate, over this payload.
//!
//! Takes: the bundle's tlog entry, the trusted root's logs, the payload, the signature and the
//! leaf certificate. Returns: the verified integrated time, or why not ([`TlogError`]). Must
//! never: return a time the log did not sign, or accept an entry that logs anything else.

use super::der::{ecdsa_ok, OID_ECDSA_SHA256};
use super::root::{b64_at, log_key_at, rfc3339, NoLogKey, NotBase64, Reasons, Trust, Window, B64};
use base64::Engine as _;
use serde_json::Value as J;
use sha2::{Digest as _, Sha256};

/// Why the transparency-log entry does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlogError {
    #[error(transparent)]
    Field(#[from] NotBase64),
    #[error("the tlog entry's `{pointer}` is missing")]
    Missing { pointer: String },
    #[error("the tlog entry's time is out of range")]
    TimeOutOfRange,
    #[error("the tlog entry is from a log the trusted root does not name")]
    UnknownLog,
    #[error("the tlog entry was integrated at {}, when the trusted root does not trust that log's key (its validFor: {windows})", rfc3339(*.at))]
    Outside { at: i64, windows: Reasons<Window> },
    #[error("the tlog entry has no body")]
    NoBody,
    #[error("the tlog body is not base64")]
    BodyNotBase64,
    #[error("the tlog entry's signed entry timestamp does not verify with the log's key")]
    Set,
    #[error("the tlog entry has no inclusion proof")]
    NoInclusionProof,
    #[error("a bad proof hash")]
    ProofHash,
    #[error("the tlog entry's inclusion proof does not lead to its root hash")]
    InclusionProof,
    #[error("the inclusion proof has no checkpoint")]
    NoCheckpoint,
    #[error("the checkpoint is not a signed note")]
    NotASignedNote,
    #[error("the checkpoint is not signed by the log's key")]
    CheckpointSignature,
    #[error("the checkpoint names another root hash than the inclusion proof")]
    CheckpointRoot,
    #[error("the tlog body is not JSON")]
    BodyNotJson,
    /// `kind`: as the body has it, in JSON (`"hashedrekord"`, `null`).
    #[error("the tlog entry is of kind {kind}, not dsse")]
    NotDsse { kind: String },
    #[error("the tlog entry logs another signature, certificate or payload than the bundle's")]
    OtherEntry,
}

/// RFC 6962 root from a leaf hash and its audit path.
pub(super) fn merkle_root(
    index: u64,
    size: u64,
    leaf: [u8; 32],
    path: &[Vec<u8>],
) -> Option<[u8; 32]> {
    if index >= size {
        return None;
    }
    let node = |l: &[u8], r: &[u8]| -> [u8; 32] {
        let mut h = Sha256::new();
        h.update([1u8]);
        h.update(l);
        h.update(r);
        h.finalize().into()
    };
    let (mut fnode, mut snode) = (index, size - 1);
    let mut r = leaf;
    for p in path {
        if snode == 0 {
            return None;
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node(p, &r);
            if fnode & 1 == 0 {
                while fnode & 1 == 0 && fnode != 0 {
                    fnode >>= 1;
                    snode >>= 1;
                }
            }
        } else {
            r = node(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    (snode == 0).then_some(r)
}

fn num(v: &J, pointer: &str) -> Result<u64, TlogError> {
    v.pointer(pointer)
        .and_then(|n| {
            n.as_str()
                .and_then(|s| s.parse().ok())
                .or_else(|| n.as_u64())
        })
        .ok_or_else(|| TlogError::Missing {
            pointer: pointer.to_owned(),
        })
}

/// Checks the entry against the trusted logs; returns its verified integrated time.
pub(super) fn check_tlog(
    entry: &J,
    trust: &Trust,
    payload: &[u8],
    sig: &[u8],
    leaf: &[u8],
) -> Result<i64, TlogError> {
    let key_id = b64_at(entry, "/logId/keyId")?;
    let time = num(entry, "/integratedTime")?;
    // The log's key must be one the root trusts at the entry's time (its `validFor`); the SET
    // below proves the log signed that time.
    let ms = i64::try_from(time)
        .ok()
        .and_then(|t| t.checked_mul(1000))
        .ok_or(TlogError::TimeOutOfRange)?;
    let key = log_key_at(&trust.logs, &key_id, ms).map_err(|miss| match miss {
        NoLogKey::Unnamed => TlogError::UnknownLog,
        NoLogKey::Outside(windows) => TlogError::Outside { at: ms, windows },
    })?;
    let body_b64 = entry
        .get("canonicalizedBody")
        .and_then(J::as_str)
        .ok_or(TlogError::NoBody)?;
    let body = B64.decode(body_b64).map_err(|_| TlogError::BodyNotBase64)?;
    let index = num(entry, "/logIndex")?;
    // The signed entry timestamp: the log's signature over the canonical JSON of the entry.
    let set = b64_at(entry, "/inclusionPromise/signedEntryTimestamp")?;
    let canonical = format!(
        "{{\"body\":\"{body_b64}\",\"integratedTime\":{time},\"logID\":\"{}\",\"logIndex\":{index}}}",
        hex::encode(&key_id)
    );
    if !ecdsa_ok(key, OID_ECDSA_SHA256, canonical.as_bytes(), &set) {
        return Err(TlogError::Set);
    }
    // The inclusion proof, and the checkpoint that signs its root.
    let proof = entry
        .get("inclusionProof")
        .ok_or(TlogError::NoInclusionProof)?;
    let root = b64_at(proof, "/rootHash")?;
    let hashes = proof
        .get("hashes")
        .and_then(J::as_array)
        .map(|a| {
            a.iter()
                .map(|h| {
                    h.as_str()
                        .and_then(|s| B64.decode(s).ok())
                        .ok_or(TlogError::ProofHash)
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(&body);
    let leaf_hash: [u8; 32] = h.finalize().into();
    let proof_index = num(proof, "/logIndex").unwrap_or(0);
    let computed = merkle_root(proof_index, num(proof, "/treeSize")?, leaf_hash, &hashes);
    if computed.as_ref().map(<[u8; 32]>::as_slice) != Some(root.as_slice()) {
        return Err(TlogError::InclusionProof);
    }
    let note = proof
        .pointer("/checkpoint/envelope")
        .and_then(J::as_str)
        .ok_or(TlogError::NoCheckpoint)?;
    let (text, sigs) = note.split_once("\n\n").ok_or(TlogError::NotASignedNote)?;
    let text = format!("{text}\n");
    let signed = sigs.lines().any(|line| {
        line.rsplit(' ')
            .next()
            .and_then(|s| B64.decode(s).ok())
            .filter(|s| s.len() > 4)
            .is_some_and(|s| ecdsa_ok(key, OID_ECDSA_SHA256, text.as_bytes(), &s[4..]))
    });
    if !signed {
        return Err(TlogError::CheckpointSignature);
    }
    if text.lines().nth(2) != Some(B64.encode(&root).as_str()) {
        return Err(TlogError::CheckpointRoot);
    }
    // The logged body is this signature, by this certificate, over this payload.
    let b: J = serde_json::from_slice(&body).map_err(|_| TlogError::BodyNotJson)?;
    if b["kind"] != "dsse" {
        return Err(TlogError::NotDsse {
            kind: b["kind"].to_string(),
        });
    }
    let logged = b
        .pointer("/spec/signatures/0/signature")
        .and_then(J::as_str);
    let verifier = b.pointer("/spec/signatures/0/verifier").and_then(J::as_str);
    let payload_hash = b.pointer("/spec/payloadHash/value").and_then(J::as_str);
    if logged != Some(B64.encode(sig).as_str())
        || verifier
            .and_then(|v| B64.decode(v).ok())
            .and_then(|v| String::from_utf8(v).ok())
            .and_then(|p| crate::keyless::pem_der(&p, "CERTIFICATE"))
            .as_deref()
            != Some(leaf)
        || payload_hash != Some(hex::encode(Sha256::digest(payload)).as_str())
    {
        return Err(TlogError::OtherEntry);
    }
    i64::try_from(time).map_err(|_| TlogError::TimeOutOfRange)
}
