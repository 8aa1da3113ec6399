//! An RFC 3161 timestamp (CMS `SignedData` over a `TSTInfo`): a second trusted time for the
//! signature, from a timestamp authority of the trusted root.
//!
//! Takes: the timestamp's DER (a `TimeStampResp` or its token), the bundle's signature and the
//! root's timestamp authorities. Returns: the timestamp's time, or why it does not verify
//! ([`TimestampError`]). Must never: accept a timestamp over another signature, one whose signed
//! attributes do not carry the `TSTInfo`'s digest, or one no authority of the root, trusted then
//! and within its certificates' validity, signed.

use super::authority::{chain_valid_at, Untrusted};
use super::der::{children, der, der_time, ecdsa_ok, tlv, Tlv};
use super::root::{Authority, Reasons};
use sha2::{Digest as _, Sha256, Sha384};

/// 1.2.840.113549.1.9.4: the CMS `messageDigest` signed attribute.
const OID_MESSAGE_DIGEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04];

/// Why an RFC 3161 timestamp does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the RFC 3161 timestamp does not verify: {0}")]
pub struct TimestampError(pub Stamp);

/// What is wrong with the timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stamp {
    #[error("not DER")]
    NotDer,
    #[error("no SignedData")]
    NoSignedData,
    #[error("no encapsulated TSTInfo")]
    NoEncapsulated,
    #[error("no TSTInfo")]
    NoTstInfo,
    #[error("the TSTInfo is not DER")]
    TstInfoNotDer,
    #[error("no message imprint")]
    NoImprint,
    #[error("it timestamps another signature")]
    OtherSignature,
    #[error("no time")]
    NoTime,
    #[error("its time does not parse")]
    Time,
    #[error("no signer")]
    NoSigner,
    #[error("no signed attributes")]
    NoSignedAttributes,
    #[error("its signed attributes do not carry the TSTInfo's digest")]
    NoDigest,
    #[error("no signature")]
    NoSignature,
    #[error("its signature does not verify with a timestamp authority of the trusted root")]
    UnknownAuthority,
    /// Each authority that signed it, and why it does not vouch then.
    #[error("{0}")]
    Untrusted(Reasons<Untrusted>),
}

/// A `GeneralizedTime` (`YYYYMMDDHHMMSS[.fff]Z`) as seconds since the epoch.
fn generalized_time(t: Tlv<'_>) -> Option<i64> {
    let text = std::str::from_utf8(t.body).ok()?;
    let whole = text.split(['.', 'Z']).next().unwrap_or_default();
    der_time(Tlv {
        tag: 0x18,
        body: whole.as_bytes(),
        raw: t.raw,
    })
    .ok()
}

/// Checks an RFC 3161 timestamp (a `TimeStampResp` or its token) over the signature `sig`: the
/// `TSTInfo`'s message imprint is the SHA-256 of `sig`, its CMS signature holds with the key of the
/// signing certificate of a timestamp authority of the trusted root, and the signed attributes
/// carry the `TSTInfo`'s digest. Returns the timestamp's time.
pub(super) fn check_timestamp(
    der_bytes: &[u8],
    sig: &[u8],
    tsas: &[Authority],
) -> Result<i64, TimestampError> {
    check(der_bytes, sig, tsas).map_err(TimestampError)
}

fn check(der_bytes: &[u8], sig: &[u8], tsas: &[Authority]) -> Result<i64, Stamp> {
    let (top, _) = tlv(der_bytes).map_err(|_| Stamp::NotDer)?;
    let parts = children(top.body).map_err(|_| Stamp::NotDer)?;
    // A TimeStampResp is { PKIStatusInfo, token }; a token is a ContentInfo { OID, [0] SignedData }.
    let token = match parts.as_slice() {
        [status, token, ..] if status.tag == 0x30 => {
            children(token.body).map_err(|_| Stamp::NotDer)?
        }
        _ => parts,
    };
    let signed_data = token
        .get(1)
        .filter(|t| t.tag == 0xa0)
        .and_then(|t| tlv(t.body).ok())
        .map(|(t, _)| t)
        .ok_or(Stamp::NoSignedData)?;
    let sd = children(signed_data.body).map_err(|_| Stamp::NotDer)?;
    let encap = sd
        .get(2)
        .and_then(|e| children(e.body).ok())
        .ok_or(Stamp::NoEncapsulated)?;
    let tst_der = encap
        .get(1)
        .filter(|t| t.tag == 0xa0)
        .and_then(|t| tlv(t.body).ok())
        .map(|(t, _)| t.body)
        .ok_or(Stamp::NoTstInfo)?;
    let (tst, _) = tlv(tst_der).map_err(|_| Stamp::TstInfoNotDer)?;
    let tst = children(tst.body).map_err(|_| Stamp::TstInfoNotDer)?;
    let imprint = tst
        .get(2)
        .and_then(|m| children(m.body).ok())
        .and_then(|m| m.get(1).map(|h| h.body))
        .ok_or(Stamp::NoImprint)?;
    if imprint != Sha256::digest(sig).as_slice() {
        return Err(Stamp::OtherSignature);
    }
    let time = tst
        .get(4)
        .filter(|t| t.tag == 0x18)
        .ok_or(Stamp::NoTime)
        .and_then(|t| generalized_time(*t).ok_or(Stamp::Time))?;
    let signer = sd
        .iter()
        .rev()
        .find(|t| t.tag == 0x31)
        .and_then(|set| children(set.body).ok())
        .and_then(|infos| infos.first().and_then(|i| children(i.body).ok()))
        .ok_or(Stamp::NoSigner)?;
    let attrs = signer
        .iter()
        .find(|t| t.tag == 0xa0)
        .ok_or(Stamp::NoSignedAttributes)?;
    let digest_ok = children(attrs.body)
        .map_err(|_| Stamp::NotDer)?
        .iter()
        .filter_map(|a| children(a.body).ok())
        .any(|a| {
            a.first().map(|o| o.body) == Some(OID_MESSAGE_DIGEST)
                && a.get(1)
                    .and_then(|set| children(set.body).ok())
                    .and_then(|v| v.first().map(|d| d.body))
                    .is_some_and(|d| {
                        d == Sha256::digest(tst_der).as_slice()
                            || d == Sha384::digest(tst_der).as_slice()
                    })
        });
    if !digest_ok {
        return Err(Stamp::NoDigest);
    }
    // What was signed: the signed attributes as a SET (RFC 5652 §5.4).
    let attrs_set = der(0x31, attrs.body);
    let (alg, signature) = match signer
        .iter()
        .skip_while(|t| t.tag != 0xa0)
        .collect::<Vec<_>>()[..]
    {
        [_, alg, signature, ..] => (
            children(alg.body)
                .ok()
                .and_then(|a| a.first().map(|o| o.body))
                .unwrap_or_default(),
            signature.body,
        ),
        _ => return Err(Stamp::NoSignature),
    };
    // The authorities whose signing certificate's key made this signature; one of them must be
    // trusted at the timestamp's time (`validFor`) with its whole chain valid then.
    let signers: Vec<&Authority> = tsas
        .iter()
        .filter(|a| {
            a.chain.first().is_some_and(|cert| {
                cert.as_ref().is_ok_and(|c| {
                    c.key
                        .as_ref()
                        .is_some_and(|k| ecdsa_ok(k, alg, &attrs_set, signature))
                })
            })
        })
        .collect();
    if signers.is_empty() {
        return Err(Stamp::UnknownAuthority);
    }
    let ms = time.saturating_mul(1000);
    let mut why = Vec::new();
    for a in &signers {
        if !a.window.contains(ms) {
            why.push(Untrusted::TimestampAuthority {
                window: a.window,
                at: ms,
            });
        } else if let Err(e) = chain_valid_at(&a.chain, ms, "its timestamp authority") {
            why.push(e);
        } else {
            return Ok(time);
        }
    }
    Err(Stamp::Untrusted(Reasons(why)))
}
