//! Verifying a keyless Sigstore bundle offline, against a `trusted_root.json` (Sigstore's
//! `TrustedRoot`): the leaf certificate chains to a trusted certificate authority, its SAN equals
//! the expected identity and its issuer extension the expected issuer, the certificate carries an
//! embedded SCT signed by a trusted certificate-transparency log, the transparency-log entry is
//! signed (SET) and included (inclusion proof + signed checkpoint) by a trusted log, its
//! `integratedTime` lies within the certificate's validity, and every key and authority used is
//! one the trusted root trusts at its time (`validFor` of the CA, the log, the CT log at the SCT's
//! time, the TSA; and the CA's and TSA's certificates within their own validity then), the logged
//! body is this signature over this payload, the DSSE signature holds with the certificate's key,
//! and the statement is about the expected digest.
//!
//! One file per stage, each with its own error: `der` (the DER reader and ECDSA), `root` (the
//! trusted root, read once per [`TrustedRoot`]), `authority` (which authority issued the leaf,
//! and whether it vouches at a time), `sct`, `tlog`, `timestamp`, `identity` (the SAN, exact or a
//! whole-SAN pattern); this file runs them in order. `named` reads who a bundle names, unverified,
//! for a report (`otters diff`). Each file uses only those before it.
//!
//! Takes: bundle bytes, a [`TrustedRoot`], the expected identity, issuer and sha256. Returns: the
//! verified statement's predicate type and the SAN, or a [`KeylessVerifyError`] (its text is the
//! reason a report gives). Must never: accept a prefix or substring of the identity, a
//! certificate no trusted authority signed, a bundle without a tlog entry, or read the statement
//! before its signature held, or a certificate without an SCT that a CT log of the trusted root
//! signed over its precertificate (RFC 6962), or an RFC 3161 timestamp that does not verify
//! against a timestamp authority of the trusted root. The tlog entry stays required: a timestamp
//! is a second trusted time, not a replacement (a TSA-only bundle is refused).

mod authority;
mod der;
mod identity;
mod named;
#[cfg(test)]
mod refusal_tests;
mod root;
mod sct;
mod timestamp;
mod tlog;
#[cfg(test)]
mod validity_tests;

pub use authority::Untrusted;
pub use der::DerError;
pub use identity::{Identity, Pattern, PatternError};
pub use named::{named, Named};
pub use root::{NotBase64, Reasons, RootError, TrustedRoot, Window};
pub use sct::{SctError, SctRefusal};
pub use timestamp::{Stamp, TimestampError};
pub use tlog::TlogError;

use crate::bundle::pae;
use crate::statement::PAYLOAD_TYPE;
use authority::{issued_by_a_trusted_authority_at, issuers_of};
use der::{ecdsa_ok, issuer_of, key_of, parse_cert, sans, OID_ECDSA_SHA256};
use root::b64_at;
use serde_json::Value as J;

/// What keyless verification expects.
pub struct Expected<'a> {
    pub identity: &'a Identity<'a>,
    pub issuer: &'a str,
    /// The sha256 (64 hex digits) a statement subject must carry.
    pub sha256: &'a str,
}

/// A bundle whose every check held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeylessVerified {
    pub predicate_type: String,
    pub identity: String,
    pub issuer: String,
}

/// Why a keyless bundle does not verify: each stage's error as it says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeylessVerifyError {
    #[error("the bundle is too large")]
    TooLarge,
    #[error("the bundle is not JSON: {0}")]
    NotJson(String),
    #[error(transparent)]
    Root(#[from] RootError),
    #[error(
        "the bundle has no certificate: it is not keyless (verify it with the signer's public key)"
    )]
    NoCertificate,
    #[error(transparent)]
    Certificate(#[from] DerError),
    #[error("the certificate was not issued by a certificate authority of the trusted root")]
    NotIssuedByRoot,
    #[error(transparent)]
    Sct(#[from] SctError),
    /// `names`: the certificate's SANs; `wanted`: the identity as a report names it.
    #[error("the certificate is for {}, not {wanted}", .names.join(", "))]
    OtherIdentity { names: Vec<String>, wanted: String },
    #[error("the certificate's issuer is {issuer}, not {wanted}")]
    OtherIssuer { issuer: String, wanted: String },
    #[error("the bundle has no DSSE envelope")]
    NoEnvelope,
    #[error("the DSSE payload is not an in-toto statement")]
    NotInToto,
    #[error(transparent)]
    Field(#[from] NotBase64),
    #[error("the DSSE envelope has {0} signatures, not one")]
    Signatures(usize),
    #[error("the signature does not verify with the certificate's key: the payload was changed after signing")]
    Signature,
    #[error("the bundle has no transparency-log entry, so no trusted signing time")]
    NoTlogEntry,
    #[error(transparent)]
    Tlog(#[from] TlogError),
    #[error("the signature was logged outside the certificate's validity")]
    LoggedOutsideValidity,
    /// Each certificate authority that issued the certificate, and why it does not vouch then.
    #[error("{0}")]
    Untrusted(Reasons<Untrusted>),
    #[error(transparent)]
    Timestamp(#[from] TimestampError),
    #[error("the signature was timestamped outside the certificate's validity")]
    TimestampedOutsideValidity,
    #[error("the payload is not JSON")]
    PayloadNotJson,
    #[error("the signed statement is not about sha256:{0}")]
    OtherSubject(String),
}

/// Verifies a keyless bundle against `trusted_root` (read on the first bundle, kept for the
/// others) and `expected`.
///
/// # Errors
/// The first check that does not hold, as [`KeylessVerifyError`] says it.
pub fn verify(
    bundle: &[u8],
    trusted_root: &TrustedRoot,
    expected: &Expected<'_>,
) -> Result<KeylessVerified, KeylessVerifyError> {
    use KeylessVerifyError as E;
    if bundle.len() > crate::bundle::MAX_BUNDLE {
        return Err(E::TooLarge);
    }
    let b: J = serde_json::from_slice(bundle).map_err(|e| E::NotJson(e.to_string()))?;
    let trust = trusted_root.trust()?;
    let leaf_der =
        b64_at(&b, "/verificationMaterial/certificate/rawBytes").map_err(|_| E::NoCertificate)?;
    let leaf = parse_cert(&leaf_der)?;
    // 1. The leaf chains to a trusted certificate authority, and a trusted CT log saw it. Which
    // authority's window holds is known once the signing time is (step 4).
    let issuers = issuers_of(&leaf, &trust.cas);
    let Some(&(ca, at)) = issuers.first() else {
        return Err(E::NotIssuedByRoot);
    };
    let spki = &ca.chain[at].as_ref().map_err(Clone::clone)?.spki;
    sct::check_sct(&leaf, &leaf_der, spki, trust)?;
    // 2. Identity and issuer, exactly.
    let names = sans(&leaf)?;
    let Some(san) = names.iter().find(|n| expected.identity.matches(n)) else {
        return Err(E::OtherIdentity {
            wanted: expected.identity.describe(),
            names,
        });
    };
    let issuer = issuer_of(&leaf)?.unwrap_or_default();
    if issuer != expected.issuer {
        return Err(E::OtherIssuer {
            issuer,
            wanted: expected.issuer.to_owned(),
        });
    }
    // 3. The DSSE signature holds with the certificate's key.
    let env = b.get("dsseEnvelope").ok_or(E::NoEnvelope)?;
    if env["payloadType"] != PAYLOAD_TYPE {
        return Err(E::NotInToto);
    }
    let payload = b64_at(env, "/payload")?;
    let sigs = env["signatures"].as_array().map_or(0, Vec::len);
    if sigs != 1 {
        return Err(E::Signatures(sigs));
    }
    let sig = b64_at(env, "/signatures/0/sig")?;
    if !ecdsa_ok(
        &key_of(leaf.spki)?,
        OID_ECDSA_SHA256,
        &pae(PAYLOAD_TYPE, &payload),
        &sig,
    ) {
        return Err(E::Signature);
    }
    // 4. A tlog entry, verified, gives the time; it must lie within the certificate's validity.
    let entries = b
        .pointer("/verificationMaterial/tlogEntries")
        .and_then(J::as_array);
    let Some(entry) = entries.and_then(|e| e.first()) else {
        return Err(E::NoTlogEntry);
    };
    let time = tlog::check_tlog(entry, trust, &payload, &sig, &leaf_der)?;
    if time < leaf.not_before || time > leaf.not_after {
        return Err(E::LoggedOutsideValidity);
    }
    issued_by_a_trusted_authority_at(&issuers, time).map_err(E::Untrusted)?;
    // An RFC 3161 timestamp, when there is one, is a second trusted time: it must verify too.
    let stamps = b
        .pointer("/verificationMaterial/timestampVerificationData/rfc3161Timestamps")
        .and_then(J::as_array);
    for stamp in stamps.into_iter().flatten() {
        let signed = b64_at(stamp, "/signedTimestamp")?;
        let at = timestamp::check_timestamp(&signed, &sig, &trust.tsas)?;
        if at < leaf.not_before || at > leaf.not_after {
            return Err(E::TimestampedOutsideValidity);
        }
        issued_by_a_trusted_authority_at(&issuers, at).map_err(E::Untrusted)?;
    }
    // 5. Only now is the statement read.
    let st: J = serde_json::from_slice(&payload).map_err(|_| E::PayloadNotJson)?;
    let about = st["subject"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| s.pointer("/digest/sha256").and_then(J::as_str) == Some(expected.sha256));
    if !about {
        return Err(E::OtherSubject(expected.sha256.to_owned()));
    }
    Ok(KeylessVerified {
        predicate_type: st["predicateType"].as_str().unwrap_or_default().to_owned(),
        identity: san.clone(),
        issuer,
    })
}

#[cfg(test)]
mod tests {
    use super::der::{der, der_time, Tlv, OID_SAN, OID_SCT_LIST};
    use super::sct::precert_tbs;
    use super::tlog::merkle_root;

    #[test]
    fn the_precertificate_is_the_tbs_without_the_sct_list() {
        let ext =
            |oid: &[u8], value: &[u8]| der(0x30, &[der(0x06, oid), der(0x04, value)].concat());
        let san = ext(OID_SAN, b"x");
        let long = vec![7u8; 300];
        let tbs = |exts: &[u8]| {
            der(
                0x30,
                &[
                    der(0x02, &[1]),
                    der(0x04, &long),
                    der(0xa3, &der(0x30, exts)),
                ]
                .concat(),
            )
        };
        let with = tbs(&[ext(OID_SCT_LIST, b"scts"), san.clone()].concat());
        let cert = der(0x30, &[with, der(0x30, &[]), der(0x03, &[0, 1])].concat());
        assert_eq!(precert_tbs(&cert).unwrap(), tbs(&san));
        // Long forms: 300 bytes is 0x82 0x01 0x2c.
        assert_eq!(&der(0x04, &long)[..4], &[0x04, 0x82, 0x01, 0x2c]);
    }

    #[test]
    fn merkle_one_leaf_and_times() {
        let leaf = [7u8; 32];
        assert_eq!(merkle_root(0, 1, leaf, &[]), Some(leaf));
        assert_eq!(merkle_root(1, 1, leaf, &[]), None);
        let t = |s: &str| {
            der_time(Tlv {
                tag: 0x17,
                body: s.as_bytes(),
                raw: &[],
            })
            .unwrap()
        };
        assert_eq!(t("700101000000Z"), 0);
        assert_eq!(t("261125182653Z"), 1_795_631_213);
    }
}
