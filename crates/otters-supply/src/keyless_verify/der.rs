//! A minimal DER reader, enough of X.509 for the fields keyless verification checks (the TBS,
//! the signature, issuer and subject, the validity, the key, the extensions), the one DER writer
//! the precertificate and a CMS signature need, and ECDSA over SHA-256 or SHA-384.
//!
//! Takes: DER bytes (a bundle's leaf certificate, a trusted root's certificates, an RFC 3161
//! timestamp). Returns: views into them, or a [`DerError`]. Must never: read past a TLV's length,
//! accept a length it cannot hold (more than four length bytes), or panic on any input.

use otters_core::time::days_from_civil;
use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey as _;
use sha2::{Digest as _, Sha256, Sha384};

pub(super) const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];
/// 1.3.6.1.4.1.57264.1.8 (issuer, `UTF8String`) and 1.3.6.1.4.1.57264.1.1 (issuer, raw; deprecated).
const OID_ISSUER_V2: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x08];
const OID_ISSUER_V1: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x01];
/// 1.3.6.1.4.1.11129.2.4.2: the embedded signed certificate timestamp list (RFC 6962 §3.3).
pub(super) const OID_SCT_LIST: &[u8] =
    &[0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02];
pub(super) const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const OID_ECDSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03];

/// Why a certificate (or a key) does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DerError {
    #[error("the certificate is not valid DER")]
    NotDer,
    #[error("a certificate time is not text")]
    TimeNotText,
    #[error("a certificate time does not parse")]
    TimeUnparsed,
    #[error("a certificate time of an unknown type")]
    TimeOfUnknownType,
    #[error("the certificate is not an X.509 certificate")]
    NotX509,
    #[error("the certificate's TBS is too short")]
    TbsTooShort,
    #[error("the certificate's validity does not parse")]
    Validity,
    #[error("an extension without OID")]
    ExtensionWithoutOid,
    #[error("an extension without value")]
    ExtensionWithoutValue,
    #[error("a key that is not ECDSA P-256")]
    NotP256,
}

/// One TLV: tag, contents, and the whole encoding.
#[derive(Clone, Copy)]
pub(super) struct Tlv<'a> {
    pub(super) tag: u8,
    pub(super) body: &'a [u8],
    pub(super) raw: &'a [u8],
}

/// The first TLV of `input`, and what follows it.
pub(super) fn tlv(input: &[u8]) -> Result<(Tlv<'_>, &[u8]), DerError> {
    let (&tag, rest) = input.split_first().ok_or(DerError::NotDer)?;
    let (&first, mut rest) = rest.split_first().ok_or(DerError::NotDer)?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return Err(DerError::NotDer);
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, b| (a << 8) | usize::from(*b));
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return Err(DerError::NotDer);
    }
    let header = input.len() - rest.len();
    Ok((
        Tlv {
            tag,
            body: &rest[..len],
            raw: &input[..header + len],
        },
        &rest[len..],
    ))
}

/// Every TLV of a constructed value's contents.
pub(super) fn children(body: &[u8]) -> Result<Vec<Tlv<'_>>, DerError> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (t, r) = tlv(rest)?;
        out.push(t);
        rest = r;
    }
    Ok(out)
}

/// A DER encoding: `tag`, the definite length, `body`.
pub(super) fn der(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(body);
    out
}

/// The parts of a certificate verification uses.
pub(super) struct Cert<'a> {
    pub(super) tbs: &'a [u8],
    pub(super) sig_alg: &'a [u8],
    pub(super) signature: &'a [u8],
    pub(super) issuer: &'a [u8],
    pub(super) subject: &'a [u8],
    pub(super) not_before: i64,
    pub(super) not_after: i64,
    pub(super) spki: &'a [u8],
    pub(super) extensions: Vec<(&'a [u8], &'a [u8])>,
}

/// A `UTCTime` or `GeneralizedTime` (`…HHMMSSZ`) as seconds since 1970.
pub(super) fn der_time(t: Tlv<'_>) -> Result<i64, DerError> {
    let text = std::str::from_utf8(t.body).map_err(|_| DerError::TimeNotText)?;
    let digits = |r: std::ops::Range<usize>| -> Result<i64, DerError> {
        text.get(r)
            .and_then(|d| d.parse::<i64>().ok())
            .ok_or(DerError::TimeUnparsed)
    };
    let (year, at) = match t.tag {
        0x17 => {
            let yy = digits(0..2)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, 2)
        }
        0x18 => (digits(0..4)?, 4),
        _ => return Err(DerError::TimeOfUnknownType),
    };
    let month = digits(at..at + 2)?;
    let day = digits(at + 2..at + 4)?;
    let seconds =
        digits(at + 4..at + 6)? * 3600 + digits(at + 6..at + 8)? * 60 + digits(at + 8..at + 10)?;
    Ok(days_from_civil(year, month, day) * 86_400 + seconds)
}

/// Reads an X.509 certificate.
pub(super) fn parse_cert(der: &[u8]) -> Result<Cert<'_>, DerError> {
    let (cert, _) = tlv(der)?;
    let top = children(cert.body)?;
    if top.len() != 3 || top[2].tag != 0x03 || top[2].body.is_empty() {
        return Err(DerError::NotX509);
    }
    let alg = children(top[1].body)?;
    let tbs = children(top[0].body)?;
    // version [0] is present in v3 certificates; skip it.
    let f: Vec<Tlv<'_>> = tbs.into_iter().skip_while(|t| t.tag == 0xa0).collect();
    if f.len() < 6 {
        return Err(DerError::TbsTooShort);
    }
    let validity = children(f[3].body)?;
    if validity.len() != 2 {
        return Err(DerError::Validity);
    }
    let mut extensions = Vec::new();
    if let Some(ext) = f.iter().find(|t| t.tag == 0xa3) {
        let (list, _) = tlv(ext.body)?;
        for e in children(list.body)? {
            let parts = children(e.body)?;
            let oid = parts
                .first()
                .filter(|p| p.tag == 0x06)
                .ok_or(DerError::ExtensionWithoutOid)?;
            let value = parts
                .last()
                .filter(|p| p.tag == 0x04)
                .ok_or(DerError::ExtensionWithoutValue)?;
            extensions.push((oid.body, value.body));
        }
    }
    Ok(Cert {
        tbs: top[0].raw,
        sig_alg: alg.first().map_or(&[][..], |a| a.body),
        signature: &top[2].body[1..],
        issuer: f[2].raw,
        subject: f[4].raw,
        not_before: der_time(validity[0])?,
        not_after: der_time(validity[1])?,
        spki: f[5].raw,
        extensions,
    })
}

/// The ECDSA P-256 key of a `SubjectPublicKeyInfo`.
pub(super) fn key_of(spki: &[u8]) -> Result<VerifyingKey, DerError> {
    VerifyingKey::from_public_key_der(spki).map_err(|_| DerError::NotP256)
}

/// ECDSA over `message` with SHA-256 or SHA-384, as `alg` names.
pub(super) fn ecdsa_ok(key: &VerifyingKey, alg: &[u8], message: &[u8], sig_der: &[u8]) -> bool {
    let Ok(sig) = Signature::from_der(sig_der) else {
        return false;
    };
    let prehash: Vec<u8> = if alg == OID_ECDSA_SHA384 {
        Sha384::digest(message).to_vec()
    } else if alg == OID_ECDSA_SHA256 {
        Sha256::digest(message).to_vec()
    } else {
        return false;
    };
    key.verify_prehash(&prehash, &sig).is_ok()
}

/// The SAN values (rfc822Name and URI) of a certificate.
pub(super) fn sans(cert: &Cert<'_>) -> Result<Vec<String>, DerError> {
    let Some((_, value)) = cert.extensions.iter().find(|(oid, _)| *oid == OID_SAN) else {
        return Ok(Vec::new());
    };
    let (seq, _) = tlv(value)?;
    Ok(children(seq.body)?
        .into_iter()
        .filter(|n| n.tag == 0x81 || n.tag == 0x86)
        .map(|n| String::from_utf8_lossy(n.body).into_owned())
        .collect())
}

/// The OIDC issuer a Fulcio certificate names (its v2 extension, else the deprecated v1).
pub(super) fn issuer_of(cert: &Cert<'_>) -> Result<Option<String>, DerError> {
    if let Some((_, v)) = cert.extensions.iter().find(|(o, _)| *o == OID_ISSUER_V2) {
        let (s, _) = tlv(v)?;
        return Ok(Some(String::from_utf8_lossy(s.body).into_owned()));
    }
    Ok(cert
        .extensions
        .iter()
        .find(|(o, _)| *o == OID_ISSUER_V1)
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_past_the_input_or_of_five_bytes_is_not_der() {
        assert_eq!(tlv(&[0x30, 0x05, 0]).err(), Some(DerError::NotDer));
        assert_eq!(
            tlv(&[0x30, 0x85, 0, 0, 0, 0, 1, 0]).err(),
            Some(DerError::NotDer)
        );
        assert_eq!(tlv(&[]).err(), Some(DerError::NotDer));
        let (t, rest) = tlv(&[0x04, 0x01, 9, 0xff]).unwrap();
        assert_eq!(
            (t.tag, t.body, t.raw, rest),
            (4, &[9u8][..], &[4u8, 1, 9][..], &[0xffu8][..])
        );
        assert_eq!(parse_cert(&der(0x30, &[])).err(), Some(DerError::NotX509));
        assert_eq!(
            DerError::NotP256.to_string(),
            "a key that is not ECDSA P-256"
        );
    }
}
