//! Verifying a keyless Sigstore bundle offline, against a `trusted_root.json` (Sigstore's
//! `TrustedRoot`): the leaf certificate chains to a trusted certificate authority, its SAN equals
//! the expected identity and its issuer extension the expected issuer, the certificate carries an
//! embedded SCT signed by a trusted certificate-transparency log, the transparency-log entry
//! is signed (SET) and included (inclusion proof + signed checkpoint) by a trusted log, its
//! `integratedTime` lies within the certificate's validity, and every key and authority used is
//! one the trusted root trusts at its time (`validFor` of the CA, the log, the CT log at the SCT's
//! time, the TSA; and the CA's and TSA's certificates within their own validity then), the logged body is this signature
//! over this payload, the DSSE signature holds with the certificate's key, and the statement is
//! about the expected digest.
//!
//! Takes: bundle bytes, trusted-root bytes, the expected identity, issuer and sha256. Returns:
//! the verified statement's predicate type and the SAN. Must never: accept a prefix or substring
//! of the identity, a certificate no trusted authority signed, a bundle without a tlog entry, or
//! read the statement before its signature held, or a certificate without an SCT that a CT log of
//! the trusted root signed over its precertificate (RFC 6962), or an RFC 3161 timestamp that does not
//! verify against a timestamp authority of the trusted root. The tlog entry stays required: a
//! timestamp is a second trusted time, not a replacement (a TSA-only bundle is refused).

mod trusted_root;
#[cfg(test)]
mod validity_tests;

use crate::bundle::pae;
use crate::statement::PAYLOAD_TYPE;
use base64::Engine as _;
use otters_core::time::days_from_civil;
use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey as _;
use serde_json::Value as J;
use sha2::{Digest as _, Sha256, Sha384};
use trusted_root::{chain_valid_at, log_key_at, rfc3339, trust, Authority, Trust};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];
/// 1.3.6.1.4.1.57264.1.8 (issuer, `UTF8String`) and 1.3.6.1.4.1.57264.1.1 (issuer, raw; deprecated).
const OID_ISSUER_V2: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x08];
const OID_ISSUER_V1: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x01];
/// 1.3.6.1.4.1.11129.2.4.2: the embedded signed certificate timestamp list (RFC 6962 §3.3).
const OID_SCT_LIST: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02];
const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const OID_ECDSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03];

/// The identity a certificate must name.
#[derive(Clone, Debug)]
pub enum Identity<'a> {
    /// The SAN, exactly.
    Exact(&'a str),
    /// A regular expression the whole SAN must match: see [`Identity::regexp`].
    Regexp(Pattern),
}

/// `--certificate-identity-regexp RE`: the expression as given, and the same anchored at both ends.
#[derive(Clone, Debug)]
pub struct Pattern {
    given: String,
    whole: regex::Regex,
}

impl Identity<'_> {
    /// `--certificate-identity-regexp RE`, which must match the whole SAN.
    ///
    /// The expression is compiled on its own first, so it is one well-formed expression: wrapped
    /// in `\A(?:…)\z`, it can close no group but its own (`…/agents/.*)|(.*`, which escaped
    /// `^(?:RE)$` into "or anything", is refused as the unbalanced expression it is).
    ///
    /// # Errors
    /// `RE` is not a regular expression on its own: a sentence naming the flag and why.
    pub fn regexp(re: &str) -> Result<Identity<'static>, String> {
        let bad = |e: regex::Error| {
            // The parser's report draws a caret under the expression; its last line says why.
            let text = e.to_string();
            let why = text.lines().last().unwrap_or_default();
            format!(
                "--certificate-identity-regexp `{re}` is not a regular expression on its own ({}); give one expression, its parentheses balanced, for the whole certificate identity: it must match from the first character to the last",
                why.trim().trim_start_matches("error: ")
            )
        };
        regex::Regex::new(re).map_err(bad)?;
        let whole = regex::Regex::new(&format!("\\A(?:{re})\\z")).map_err(bad)?;
        Ok(Identity::Regexp(Pattern {
            given: re.to_owned(),
            whole,
        }))
    }

    fn matches(&self, san: &str) -> bool {
        match self {
            Identity::Exact(id) => san == *id,
            // The match must span the SAN from its first byte to its last.
            Identity::Regexp(p) => p
                .whole
                .find(san)
                .is_some_and(|m| m.start() == 0 && m.end() == san.len()),
        }
    }

    /// The identity as a report names it: the SAN, or `/RE/` (as given).
    pub fn describe(&self) -> String {
        match self {
            Identity::Exact(id) => (*id).to_owned(),
            Identity::Regexp(p) => format!("/{}/", p.given),
        }
    }
}

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

fn no(why: impl Into<String>) -> String {
    why.into()
}

// ---- a minimal DER reader: enough of X.509 for the fields checked here ----

/// One TLV: tag, contents, and the whole encoding.
#[derive(Clone, Copy)]
struct Tlv<'a> {
    tag: u8,
    body: &'a [u8],
    raw: &'a [u8],
}

fn tlv(input: &[u8]) -> Result<(Tlv<'_>, &[u8]), String> {
    let bad = || no("the certificate is not valid DER");
    let (&tag, rest) = input.split_first().ok_or_else(bad)?;
    let (&first, mut rest) = rest.split_first().ok_or_else(bad)?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return Err(bad());
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, b| (a << 8) | usize::from(*b));
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return Err(bad());
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

fn children(body: &[u8]) -> Result<Vec<Tlv<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (t, r) = tlv(rest)?;
        out.push(t);
        rest = r;
    }
    Ok(out)
}

/// The parts of a certificate verification uses.
struct Cert<'a> {
    tbs: &'a [u8],
    sig_alg: &'a [u8],
    signature: &'a [u8],
    issuer: &'a [u8],
    subject: &'a [u8],
    not_before: i64,
    not_after: i64,
    spki: &'a [u8],
    extensions: Vec<(&'a [u8], &'a [u8])>,
}

fn der_time(t: Tlv<'_>) -> Result<i64, String> {
    let text = std::str::from_utf8(t.body).map_err(|_| no("a certificate time is not text"))?;
    let digits = |r: std::ops::Range<usize>| -> Result<i64, String> {
        text.get(r)
            .and_then(|d| d.parse::<i64>().ok())
            .ok_or_else(|| no("a certificate time does not parse"))
    };
    let (year, at) = match t.tag {
        0x17 => {
            let yy = digits(0..2)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, 2)
        }
        0x18 => (digits(0..4)?, 4),
        _ => return Err(no("a certificate time of an unknown type")),
    };
    let month = digits(at..at + 2)?;
    let day = digits(at + 2..at + 4)?;
    let seconds =
        digits(at + 4..at + 6)? * 3600 + digits(at + 6..at + 8)? * 60 + digits(at + 8..at + 10)?;
    Ok(days_from_civil(year, month, day) * 86_400 + seconds)
}

fn parse_cert(der: &[u8]) -> Result<Cert<'_>, String> {
    let (cert, _) = tlv(der)?;
    let top = children(cert.body)?;
    if top.len() != 3 || top[2].tag != 0x03 || top[2].body.is_empty() {
        return Err(no("the certificate is not an X.509 certificate"));
    }
    let alg = children(top[1].body)?;
    let tbs = children(top[0].body)?;
    // version [0] is present in v3 certificates; skip it.
    let f: Vec<Tlv<'_>> = tbs.into_iter().skip_while(|t| t.tag == 0xa0).collect();
    if f.len() < 6 {
        return Err(no("the certificate's TBS is too short"));
    }
    let validity = children(f[3].body)?;
    if validity.len() != 2 {
        return Err(no("the certificate's validity does not parse"));
    }
    let mut extensions = Vec::new();
    if let Some(ext) = f.iter().find(|t| t.tag == 0xa3) {
        let (list, _) = tlv(ext.body)?;
        for e in children(list.body)? {
            let parts = children(e.body)?;
            let oid = parts
                .first()
                .filter(|p| p.tag == 0x06)
                .ok_or("an extension without OID")?;
            let value = parts
                .last()
                .filter(|p| p.tag == 0x04)
                .ok_or("an extension without value")?;
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

fn key_of(spki: &[u8]) -> Result<VerifyingKey, String> {
    VerifyingKey::from_public_key_der(spki).map_err(|_| no("a key that is not ECDSA P-256"))
}

/// ECDSA over `message` with SHA-256 or SHA-384, as `alg` names.
fn ecdsa_ok(key: &VerifyingKey, alg: &[u8], message: &[u8], sig_der: &[u8]) -> bool {
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
fn sans(cert: &Cert<'_>) -> Result<Vec<String>, String> {
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

fn issuer_of(cert: &Cert<'_>) -> Result<Option<String>, String> {
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

// ---- the trusted root ----

fn b64_at(v: &J, pointer: &str) -> Result<Vec<u8>, String> {
    v.pointer(pointer)
        .and_then(J::as_str)
        .and_then(|s| B64.decode(s).ok())
        .ok_or_else(|| no(format!("`{pointer}` is missing or not base64")))
}

// ---- the certificate's embedded SCT (RFC 6962) ----

/// A DER encoding: `tag`, the definite length, `body`.
fn der(tag: u8, body: &[u8]) -> Vec<u8> {
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

/// The leaf's TBS as its CA signed the precertificate: the same fields without the SCT list
/// extension (RFC 6962 §3.2); what the CT log's signature covers.
fn precert_tbs(leaf_der: &[u8]) -> Result<Vec<u8>, String> {
    let (cert, _) = tlv(leaf_der)?;
    let top = children(cert.body)?;
    let tbs = top.first().ok_or("the certificate has no TBS")?;
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
fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if input.len() < n {
        return Err(no("the certificate's SCT list is truncated"));
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// A TLS `opaque<0..2^16-1>`: a 16-bit length, then that many bytes.
fn take_u16_prefixed<'a>(input: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = take(input, 2)?;
    take(input, usize::from(u16::from_be_bytes([len[0], len[1]])))
}

/// The leaf (issued by the CA whose key is `issuer_spki`) must carry an SCT that a CT log of the
/// trusted root signed over this precertificate: proof the certificate was logged publicly.
fn check_sct(
    leaf: &Cert<'_>,
    leaf_der: &[u8],
    issuer_spki: &[u8],
    trust: &Trust,
) -> Result<(), String> {
    let Some((_, value)) = leaf.extensions.iter().find(|(o, _)| *o == OID_SCT_LIST) else {
        return Err(no(
            "the certificate has no embedded SCT: no certificate transparency log vouches for it",
        ));
    };
    if trust.ctlogs.is_empty() {
        return Err(no(
            "the trusted root names no certificate transparency log, so the certificate's SCT cannot be checked",
        ));
    }
    let (octets, _) = tlv(value)?;
    let mut list = octets.body;
    let mut entries = take_u16_prefixed(&mut list)?;
    let tbs = precert_tbs(leaf_der)?;
    let tbs_len = u32::try_from(tbs.len())
        .ok()
        .filter(|n| *n < 1 << 24)
        .ok_or("the certificate is too large")?;
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
            reasons.push("an SCT of an unknown version or shape".to_owned());
            continue;
        }
        // The log's key must be one the root trusts at the SCT's time (its `validFor`).
        let at = i64::from_be_bytes(timestamp.try_into().unwrap_or([0xff; 8]));
        let key = match log_key_at(&trust.ctlogs, log_id, at) {
            Ok(key) => key,
            Err(None) => {
                reasons.push("an SCT from a log the trusted root does not name".to_owned());
                continue;
            }
            Err(Some(windows)) => {
                reasons.push(format!(
                    "an SCT of {}, when the trusted root does not trust that CT log's key (its validFor: {windows})",
                    rfc3339(at)
                ));
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
        reasons.push("an SCT whose signature does not verify with its log's key".to_owned());
    }
    if reasons.is_empty() {
        reasons.push("an empty SCT list".to_owned());
    }
    Err(no(format!(
        "the certificate's embedded SCT does not verify: {}",
        reasons.join("; ")
    )))
}

// ---- an RFC 3161 timestamp (CMS SignedData over a TSTInfo) ----

/// 1.2.840.113549.1.9.4: the CMS `messageDigest` signed attribute.
const OID_MESSAGE_DIGEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04];

/// A `GeneralizedTime` (`YYYYMMDDHHMMSS[.fff]Z`) as seconds since the epoch.
fn generalized_time(t: Tlv<'_>) -> Result<i64, String> {
    let text = std::str::from_utf8(t.body).map_err(|_| no("the timestamp's time is not text"))?;
    let whole = text.split(['.', 'Z']).next().unwrap_or_default();
    der_time(Tlv {
        tag: 0x18,
        body: whole.as_bytes(),
        raw: t.raw,
    })
}

/// Checks an RFC 3161 timestamp (a `TimeStampResp` or its token) over the signature `sig`: the
/// `TSTInfo`'s message imprint is the SHA-256 of `sig`, its CMS signature holds with the key of the
/// signing certificate of a timestamp authority of the trusted root, and the signed attributes
/// carry the `TSTInfo`'s digest. Returns the timestamp's time.
fn check_timestamp(der_bytes: &[u8], sig: &[u8], tsas: &[Authority]) -> Result<i64, String> {
    let bad = |what: &str| no(format!("the RFC 3161 timestamp does not verify: {what}"));
    let (top, _) = tlv(der_bytes).map_err(|_| bad("not DER"))?;
    let parts = children(top.body).map_err(|_| bad("not DER"))?;
    // A TimeStampResp is { PKIStatusInfo, token }; a token is a ContentInfo { OID, [0] SignedData }.
    let token = match parts.as_slice() {
        [status, token, ..] if status.tag == 0x30 => {
            children(token.body).map_err(|_| bad("not DER"))?
        }
        _ => parts,
    };
    let signed_data = token
        .get(1)
        .filter(|t| t.tag == 0xa0)
        .and_then(|t| tlv(t.body).ok())
        .map(|(t, _)| t)
        .ok_or_else(|| bad("no SignedData"))?;
    let sd = children(signed_data.body).map_err(|_| bad("not DER"))?;
    let encap = sd
        .get(2)
        .and_then(|e| children(e.body).ok())
        .ok_or_else(|| bad("no encapsulated TSTInfo"))?;
    let tst_der = encap
        .get(1)
        .filter(|t| t.tag == 0xa0)
        .and_then(|t| tlv(t.body).ok())
        .map(|(t, _)| t.body)
        .ok_or_else(|| bad("no TSTInfo"))?;
    let (tst, _) = tlv(tst_der).map_err(|_| bad("the TSTInfo is not DER"))?;
    let tst = children(tst.body).map_err(|_| bad("the TSTInfo is not DER"))?;
    let imprint = tst
        .get(2)
        .and_then(|m| children(m.body).ok())
        .and_then(|m| m.get(1).map(|h| h.body))
        .ok_or_else(|| bad("no message imprint"))?;
    if imprint != Sha256::digest(sig).as_slice() {
        return Err(bad("it timestamps another signature"));
    }
    let time = tst
        .get(4)
        .filter(|t| t.tag == 0x18)
        .ok_or_else(|| bad("no time"))
        .and_then(|t| generalized_time(*t).map_err(|_| bad("its time does not parse")))?;
    let signer = sd
        .iter()
        .rev()
        .find(|t| t.tag == 0x31)
        .and_then(|set| children(set.body).ok())
        .and_then(|infos| infos.first().and_then(|i| children(i.body).ok()))
        .ok_or_else(|| bad("no signer"))?;
    let attrs = signer
        .iter()
        .find(|t| t.tag == 0xa0)
        .ok_or_else(|| bad("no signed attributes"))?;
    let digest_ok = children(attrs.body)
        .map_err(|_| bad("not DER"))?
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
        return Err(bad(
            "its signed attributes do not carry the TSTInfo's digest",
        ));
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
        _ => return Err(bad("no signature")),
    };
    // The authorities whose signing certificate's key made this signature; one of them must be
    // trusted at the timestamp's time (`validFor`) with its whole chain valid then.
    let signers: Vec<&Authority> = tsas
        .iter()
        .filter(|a| {
            a.chain.first().is_some_and(|cert| {
                parse_cert(cert).is_ok_and(|c| {
                    key_of(c.spki).is_ok_and(|k| ecdsa_ok(&k, alg, &attrs_set, signature))
                })
            })
        })
        .collect();
    if signers.is_empty() {
        return Err(bad(
            "its signature does not verify with a timestamp authority of the trusted root",
        ));
    }
    let ms = time.saturating_mul(1000);
    let mut why = Vec::new();
    for a in &signers {
        if !a.window.contains(ms) {
            why.push(format!(
                "the trusted root trusts its timestamp authority {}, not at {}",
                a.window.describe(),
                rfc3339(ms)
            ));
        } else if let Err(e) = chain_valid_at(&a.chain, ms, "its timestamp authority") {
            why.push(e);
        } else {
            return Ok(time);
        }
    }
    Err(bad(&why.join("; ")))
}

// ---- the transparency-log entry ----

/// RFC 6962 root from a leaf hash and its audit path.
fn merkle_root(index: u64, size: u64, leaf: [u8; 32], path: &[Vec<u8>]) -> Option<[u8; 32]> {
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

fn num(v: &J, pointer: &str) -> Result<u64, String> {
    v.pointer(pointer)
        .and_then(|n| {
            n.as_str()
                .and_then(|s| s.parse().ok())
                .or_else(|| n.as_u64())
        })
        .ok_or_else(|| no(format!("the tlog entry's `{pointer}` is missing")))
}

/// Checks the entry against the trusted logs; returns its verified integrated time.
fn check_tlog(
    entry: &J,
    trust: &Trust,
    payload: &[u8],
    sig: &[u8],
    leaf: &[u8],
) -> Result<i64, String> {
    let key_id = b64_at(entry, "/logId/keyId")?;
    let time = num(entry, "/integratedTime")?;
    // The log's key must be one the root trusts at the entry's time (its `validFor`); the SET
    // below proves the log signed that time.
    let ms = i64::try_from(time)
        .ok()
        .and_then(|t| t.checked_mul(1000))
        .ok_or("the tlog entry's time is out of range")?;
    let key = log_key_at(&trust.logs, &key_id, ms).map_err(|windows| match windows {
        None => no("the tlog entry is from a log the trusted root does not name"),
        Some(windows) => no(format!(
            "the tlog entry was integrated at {}, when the trusted root does not trust that log's key (its validFor: {windows})",
            rfc3339(ms)
        )),
    })?;
    let body_b64 = entry
        .get("canonicalizedBody")
        .and_then(J::as_str)
        .ok_or("the tlog entry has no body")?;
    let body = B64
        .decode(body_b64)
        .map_err(|_| no("the tlog body is not base64"))?;
    let index = num(entry, "/logIndex")?;
    // The signed entry timestamp: the log's signature over the canonical JSON of the entry.
    let set = b64_at(entry, "/inclusionPromise/signedEntryTimestamp")?;
    let canonical = format!(
        "{{\"body\":\"{body_b64}\",\"integratedTime\":{time},\"logID\":\"{}\",\"logIndex\":{index}}}",
        hex::encode(&key_id)
    );
    if !ecdsa_ok(key, OID_ECDSA_SHA256, canonical.as_bytes(), &set) {
        return Err(no(
            "the tlog entry's signed entry timestamp does not verify with the log's key",
        ));
    }
    // The inclusion proof, and the checkpoint that signs its root.
    let proof = entry
        .get("inclusionProof")
        .ok_or("the tlog entry has no inclusion proof")?;
    let root = b64_at(proof, "/rootHash")?;
    let hashes = proof
        .get("hashes")
        .and_then(J::as_array)
        .map(|a| {
            a.iter()
                .map(|h| {
                    h.as_str()
                        .and_then(|s| B64.decode(s).ok())
                        .ok_or("a bad proof hash")
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
        return Err(no(
            "the tlog entry's inclusion proof does not lead to its root hash",
        ));
    }
    let note = proof
        .pointer("/checkpoint/envelope")
        .and_then(J::as_str)
        .ok_or("the inclusion proof has no checkpoint")?;
    let (text, sigs) = note
        .split_once("\n\n")
        .ok_or("the checkpoint is not a signed note")?;
    let text = format!("{text}\n");
    let signed = sigs.lines().any(|line| {
        line.rsplit(' ')
            .next()
            .and_then(|s| B64.decode(s).ok())
            .filter(|s| s.len() > 4)
            .is_some_and(|s| ecdsa_ok(key, OID_ECDSA_SHA256, text.as_bytes(), &s[4..]))
    });
    if !signed {
        return Err(no("the checkpoint is not signed by the log's key"));
    }
    if text.lines().nth(2) != Some(B64.encode(&root).as_str()) {
        return Err(no(
            "the checkpoint names another root hash than the inclusion proof",
        ));
    }
    // The logged body is this signature, by this certificate, over this payload.
    let b: J = serde_json::from_slice(&body).map_err(|_| no("the tlog body is not JSON"))?;
    if b["kind"] != "dsse" {
        return Err(no(format!(
            "the tlog entry is of kind {}, not dsse",
            b["kind"]
        )));
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
        return Err(no(
            "the tlog entry logs another signature, certificate or payload than the bundle's",
        ));
    }
    i64::try_from(time).map_err(|_| no("the tlog entry's time is out of range"))
}

/// The certificate authorities of the trusted root whose certificate signed `leaf`, each with the
/// position of that certificate in its chain.
fn issuers_of<'t>(leaf: &Cert<'_>, cas: &'t [Authority]) -> Vec<(&'t Authority, usize)> {
    let mut out = Vec::new();
    for ca in cas {
        for (at, der) in ca.chain.iter().enumerate() {
            let signed = parse_cert(der).is_ok_and(|c| {
                c.subject == leaf.issuer
                    && key_of(c.spki)
                        .is_ok_and(|k| ecdsa_ok(&k, leaf.sig_alg, leaf.tbs, leaf.signature))
            });
            if signed {
                out.push((ca, at));
            }
        }
    }
    out
}

/// At the signing time `secs` (a verified log or timestamp time), one of `issuers` is trusted
/// (its `validFor`) and its certificate and those above it in its chain are within their
/// validity; else why not.
fn issued_by_a_trusted_authority_at(
    issuers: &[(&Authority, usize)],
    secs: i64,
) -> Result<(), String> {
    let ms = secs.saturating_mul(1000);
    let mut why = Vec::new();
    for (ca, at) in issuers {
        if !ca.window.contains(ms) {
            why.push(format!(
                "the trusted root trusts the certificate authority that issued the certificate {}, not at the signing time {}",
                ca.window.describe(),
                rfc3339(ms)
            ));
        } else if let Err(e) = chain_valid_at(&ca.chain[*at..], ms, "the certificate authority") {
            why.push(e);
        } else {
            return Ok(());
        }
    }
    Err(why.join("; "))
}

/// Verifies a keyless bundle against `trusted_root` and `expected`.
pub fn verify(
    bundle: &[u8],
    trusted_root: &[u8],
    expected: &Expected<'_>,
) -> Result<KeylessVerified, String> {
    if bundle.len() > crate::bundle::MAX_BUNDLE {
        return Err(no("the bundle is too large"));
    }
    let b: J =
        serde_json::from_slice(bundle).map_err(|e| no(format!("the bundle is not JSON: {e}")))?;
    let trust = trust(trusted_root)?;
    let leaf_der = b64_at(&b, "/verificationMaterial/certificate/rawBytes").map_err(|_| {
        no("the bundle has no certificate: it is not keyless (verify it with the signer's public key)")
    })?;
    let leaf = parse_cert(&leaf_der)?;
    // 1. The leaf chains to a trusted certificate authority, and a trusted CT log saw it. Which
    // authority's window holds is known once the signing time is (step 4).
    let issuers = issuers_of(&leaf, &trust.cas);
    let Some(&(ca, at)) = issuers.first() else {
        return Err(no(
            "the certificate was not issued by a certificate authority of the trusted root",
        ));
    };
    let spki = parse_cert(&ca.chain[at])?.spki;
    check_sct(&leaf, &leaf_der, spki, &trust)?;
    // 2. Identity and issuer, exactly.
    let names = sans(&leaf)?;
    let Some(san) = names.iter().find(|n| expected.identity.matches(n)) else {
        return Err(no(format!(
            "the certificate is for {}, not {}",
            names.join(", "),
            expected.identity.describe()
        )));
    };
    let issuer = issuer_of(&leaf)?.unwrap_or_default();
    if issuer != expected.issuer {
        return Err(no(format!(
            "the certificate's issuer is {issuer}, not {}",
            expected.issuer
        )));
    }
    // 3. The DSSE signature holds with the certificate's key.
    let env = b
        .get("dsseEnvelope")
        .ok_or("the bundle has no DSSE envelope")?;
    if env["payloadType"] != PAYLOAD_TYPE {
        return Err(no("the DSSE payload is not an in-toto statement"));
    }
    let payload = b64_at(env, "/payload")?;
    let sigs = env["signatures"].as_array().map_or(0, Vec::len);
    if sigs != 1 {
        return Err(no(format!(
            "the DSSE envelope has {sigs} signatures, not one"
        )));
    }
    let sig = b64_at(env, "/signatures/0/sig")?;
    if !ecdsa_ok(
        &key_of(leaf.spki)?,
        OID_ECDSA_SHA256,
        &pae(PAYLOAD_TYPE, &payload),
        &sig,
    ) {
        return Err(no("the signature does not verify with the certificate's key: the payload was changed after signing"));
    }
    // 4. A tlog entry, verified, gives the time; it must lie within the certificate's validity.
    let entries = b
        .pointer("/verificationMaterial/tlogEntries")
        .and_then(J::as_array);
    let Some(entry) = entries.and_then(|e| e.first()) else {
        return Err(no(
            "the bundle has no transparency-log entry, so no trusted signing time",
        ));
    };
    let time = check_tlog(entry, &trust, &payload, &sig, &leaf_der)?;
    if time < leaf.not_before || time > leaf.not_after {
        return Err(no(
            "the signature was logged outside the certificate's validity",
        ));
    }
    issued_by_a_trusted_authority_at(&issuers, time)?;
    // An RFC 3161 timestamp, when there is one, is a second trusted time: it must verify too.
    let stamps = b
        .pointer("/verificationMaterial/timestampVerificationData/rfc3161Timestamps")
        .and_then(J::as_array);
    for stamp in stamps.into_iter().flatten() {
        let at = check_timestamp(&b64_at(stamp, "/signedTimestamp")?, &sig, &trust.tsas)?;
        if at < leaf.not_before || at > leaf.not_after {
            return Err(no(
                "the signature was timestamped outside the certificate's validity",
            ));
        }
        issued_by_a_trusted_authority_at(&issuers, at)?;
    }
    // 5. Only now is the statement read.
    let st: J = serde_json::from_slice(&payload).map_err(|_| no("the payload is not JSON"))?;
    let about = st["subject"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| s.pointer("/digest/sha256").and_then(J::as_str) == Some(expected.sha256));
    if !about {
        return Err(no(format!(
            "the signed statement is not about sha256:{}",
            expected.sha256
        )));
    }
    Ok(KeylessVerified {
        predicate_type: st["predicateType"].as_str().unwrap_or_default().to_owned(),
        identity: san.clone(),
        issuer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_regexp_is_anchored() {
        let re = Identity::regexp("https://github\\.com/acme/.*@refs/tags/v[0-9.]+").unwrap();
        assert!(re.matches("https://github.com/acme/a/.github/workflows/r.yml@refs/tags/v1.2"));
        assert!(
            !re.matches("https://github.com/acme/a/.github/workflows/r.yml@refs/tags/v1.2-evil")
        );
        assert!(!re.matches("xhttps://github.com/acme/a@refs/tags/v1"));
        assert!(
            Identity::Exact("a@b.c").matches("a@b.c")
                && !Identity::Exact("a@b.c").matches("a@b.co")
        );
        assert!(Identity::regexp("(").is_err());
        assert_eq!(
            re.describe(),
            "/https://github\\.com/acme/.*@refs/tags/v[0-9.]+/"
        );
    }

    #[test]
    fn identity_regexp_cannot_close_its_anchoring_group() {
        // Wrapped as `^(?:RE)$`, this was `^(?:…/agents/.*)|(.*)$`: any SAN at all.
        let escape = r"https://github\.com/acme/agents/.*)|(.*";
        let e = Identity::regexp(escape).unwrap_err();
        assert_eq!(
            e,
            "--certificate-identity-regexp `https://github\\.com/acme/agents/.*)|(.*` is not a regular expression on its own (unopened group); give one expression, its parentheses balanced, for the whole certificate identity: it must match from the first character to the last"
        );
        for re in [r"a)|(b", r"a)(?:b", r"(?x)a #"] {
            if let Ok(id) = Identity::regexp(re) {
                assert!(!id.matches("zzz"), "{re} matched anything");
            }
        }
        // Alternatives are whole-SAN too: the first alternative does not win a partial match.
        let alt = Identity::regexp("a|ab").unwrap();
        assert!(alt.matches("ab") && alt.matches("a") && !alt.matches("abc"));
        // A newline does not end the SAN (`$` could match before a final newline in some
        // engines; `\z` cannot).
        let id = Identity::regexp("https://x/.*").unwrap();
        assert!(!id.matches("https://x/y\nhttps://evil/"));
        assert!(id.matches("https://x/y"));
    }

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
