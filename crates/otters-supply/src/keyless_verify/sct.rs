//! The certificate's embedded SCT (RFC 6962): proof that a certificate-transparency log of the
//! trusted root saw the certificate, as the precertificate its CA signed.
//!
//! Takes: the leaf certificate, its issuer's key and the trusted root's CT logs. Returns: that an
//! SCT verifies, or why none does ([`SctError`]). Must never: accept a certificate without an SCT,
//! an SCT from a log the root does not name or trusts only at other times, or one whose signature
//! does not cover this precertificate.

use super::der::{children, der, ecdsa_ok, tlv, Cert, DerError, OID_ECDSA_SHA256, OID_SCT_LIST};
use super::root::{log_key_at, rfc3339, NoLogKey, Reasons, Trust, Window};
use sha2::{Digest as _, Sha256};

/// Why the certificate's SCT does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SctError {
    #[error("the certificate has no embedded SCT: no certificate transparency log vouches for it")]
    NoSct,
    #[error("the trusted root names no certificate transparency log, so the certificate's SCT cannot be checked")]
    NoCtLog,
    #[error("the certificate has no TBS")]
    NoTbs,
    #[error("the certificate's SCT list is truncated")]
    Truncated,
    #[error("the certificate is too large")]
    TooLarge,
    #[error(transparent)]
    Certificate(#[from] DerError),
    #[error("the certificate's embedded SCT does not verify: {0}")]
    Unverified(Reasons<SctRefusal>),
}

/// Why one SCT of the list does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SctRefusal {
    #[error("an SCT of an unknown version or shape")]
    Shape,
    #[error("an SCT from a log the trusted root does not name")]
    UnknownLog,
    #[error("an SCT of {}, when the trusted root does not trust that CT log's key (its validFor: {windows})", rfc3339(*.at))]
    Outside { at: i64, windows: Reasons<Window> },
    #[error("an SCT whose signature does not verify with its log's key")]
    Signature,
    #[error("an empty SCT list")]
    Empty,
}

/// The leaf's TBS as its CA signed the precertificate: the same fields without the SCT list
/// extension (RFC 6962 §3.2); what the CT log's signature covers.
pub(super) fn precert_tbs(leaf_der: &[u8]) -> Result<Vec<u8>, SctError> {
    let (cert, _) = tlv(leaf_der)?;
    let top = children(cert.body)?;
    let tbs = top.first().ok_or(SctError::NoTbs)?;
    let mut body = Vec::new();
    for field in children(tbs.body)? {
        if field.tag != 0xa3 {
            body.extend_from_slice(field.raw);
            continue;
        }
        let (list, _) = tlv(field.body)?;
        let mut kept = Vec::new();
        for e in children(list.body)? {
            if children(e.body)?.first().map(|o| o.body) != Some(OID_SCT_LIST) {
                kept.extend_from_slice(e.raw);
            }
        }
        body.extend(der(0xa3, &der(0x30, &kept)));
    }
    Ok(der(0x30, &body))
}

/// Reads `n` bytes of a TLS structure.
fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], SctError> {
    if input.len() < n {
        return Err(SctError::Truncated);
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// A TLS `opaque<0..2^16-1>`: a 16-bit length, then that many bytes.
fn take_u16_prefixed<'a>(input: &mut &'a [u8]) -> Result<&'a [u8], SctError> {
    let len = take(input, 2)?;
    take(input, usize::from(u16::from_be_bytes([len[0], len[1]])))
}

/// The leaf (issued by the CA whose key is `issuer_spki`) must carry an SCT that a CT log of the
/// trusted root signed over this precertificate: proof the certificate was logged publicly.
pub(super) fn check_sct(
    leaf: &Cert<'_>,
    leaf_der: &[u8],
    issuer_spki: &[u8],
    trust: &Trust,
) -> Result<(), SctError> {
    let Some((_, value)) = leaf.extensions.iter().find(|(o, _)| *o == OID_SCT_LIST) else {
        return Err(SctError::NoSct);
    };
    if trust.ctlogs.is_empty() {
        return Err(SctError::NoCtLog);
    }
    let (octets, _) = tlv(value)?;
    let mut list = octets.body;
    let mut entries = take_u16_prefixed(&mut list)?;
    let tbs = precert_tbs(leaf_der)?;
    let tbs_len = u32::try_from(tbs.len())
        .ok()
        .filter(|n| *n < 1 << 24)
        .ok_or(SctError::TooLarge)?;
    let issuer_hash = Sha256::digest(issuer_spki);
    let mut reasons = Vec::new();
    while !entries.is_empty() {
        let mut sct = take_u16_prefixed(&mut entries)?;
        let version = take(&mut sct, 1)?[0];
        let log_id = take(&mut sct, 32)?;
        let timestamp = take(&mut sct, 8)?;
        let extensions = take_u16_prefixed(&mut sct)?;
        let algorithms = take(&mut sct, 2)?;
        let signature = take_u16_prefixed(&mut sct)?;
        if version != 0 || !sct.is_empty() {
            reasons.push(SctRefusal::Shape);
            continue;
        }
        // The log's key must be one the root trusts at the SCT's time (its `validFor`).
        let at = i64::from_be_bytes(timestamp.try_into().unwrap_or([0xff; 8]));
        let key = match log_key_at(&trust.ctlogs, log_id, at) {
            Ok(key) => key,
            Err(NoLogKey::Unnamed) => {
                reasons.push(SctRefusal::UnknownLog);
                continue;
            }
            Err(NoLogKey::Outside(windows)) => {
                reasons.push(SctRefusal::Outside { at, windows });
                continue;
            }
        };
        // digitally-signed struct: v1, certificate_timestamp, timestamp, precert_entry,
        // issuer_key_hash, tbs_certificate<1..2^24-1>, extensions<0..2^16-1>.
        let mut signed = vec![0u8, 0u8];
        signed.extend_from_slice(timestamp);
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&issuer_hash);
        signed.extend_from_slice(&tbs_len.to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
        signed.extend_from_slice(extensions);
        // SHA-256 (4) with ECDSA (3).
        if algorithms == [4, 3] && ecdsa_ok(key, OID_ECDSA_SHA256, &signed, signature) {
            return Ok(());
        }
        reasons.push(SctRefusal::Signature);
    }
    if reasons.is_empty() {
        reasons.push(SctRefusal::Empty);
    }
    Err(SctError::Unverified(Reasons(reasons)))
}
