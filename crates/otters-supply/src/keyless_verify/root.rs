//! The trusted root (`trusted_root.json`, Sigstore's `TrustedRoot`): the certificate authorities,
//! transparency logs, certificate-transparency logs and timestamp authorities a keyless bundle is
//! checked against, each with the time the root trusts it for (`validFor`). Read once per
//! [`TrustedRoot`], however many bundles are checked against it: its JSON, each key and each
//! authority's certificates.
//!
//! Takes: the root's bytes. Returns: [`Trust`], or a [`RootError`] saying what in the root is
//! wrong. Must never: trust a key or an authority outside its `validFor` (a retired key stays in a
//! root so that old signatures still verify; it must not vouch for a new one), or read a time it
//! cannot parse as unbounded.

use super::der::{key_of, parse_cert, DerError};
use base64::Engine as _;
use otters_core::time::days_from_civil;
use p256::ecdsa::VerifyingKey;
use serde_json::Value as J;
use std::sync::OnceLock;

pub(super) const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Why a trusted root does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    #[error("the trusted root is not JSON: {0}")]
    NotJson(String),
    #[error("the trusted root names no certificate authority or no transparency log")]
    Empty,
    #[error("the trusted root's `{what}.validFor.{side}` (`{text}`) is not an RFC 3339 time")]
    NotRfc3339 {
        what: String,
        side: &'static str,
        text: String,
    },
    #[error("the trusted root's `{what}.validFor.{side}` is not a time")]
    NotATime { what: String, side: &'static str },
    #[error(transparent)]
    Field(#[from] NotBase64),
    /// A log's key.
    #[error(transparent)]
    Key(#[from] DerError),
}

/// A field of a trusted root, a bundle or a tlog entry that should hold base64 and does not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pointer}` is missing or not base64")]
pub struct NotBase64 {
    pub pointer: String,
}

/// The bytes of the base64 string at `pointer` in `v`.
pub(super) fn b64_at(v: &J, pointer: &str) -> Result<Vec<u8>, NotBase64> {
    v.pointer(pointer)
        .and_then(J::as_str)
        .and_then(|s| B64.decode(s).ok())
        .ok_or_else(|| NotBase64 {
            pointer: pointer.to_owned(),
        })
}

/// A trusted root's bytes, read (its JSON, each key, each authority's certificates) the first
/// time a bundle is checked against it and kept for every other: one reading per verification,
/// however many bundles it tries. A root that does not read says so for each bundle, as each
/// bundle is where it was needed.
pub struct TrustedRoot {
    bytes: Vec<u8>,
    read: OnceLock<Result<Trust, RootError>>,
    #[cfg(test)]
    reads: std::sync::atomic::AtomicUsize,
}

impl TrustedRoot {
    /// The root `bytes` (a `trusted_root.json`), not yet read.
    pub fn new(bytes: Vec<u8>) -> TrustedRoot {
        TrustedRoot {
            bytes,
            read: OnceLock::new(),
            #[cfg(test)]
            reads: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// What the root trusts, read on first use.
    pub(super) fn trust(&self) -> Result<&Trust, RootError> {
        self.read
            .get_or_init(|| {
                #[cfg(test)]
                self.reads
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Trust::parse(&self.bytes)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// How many times the root was read.
    #[cfg(test)]
    pub(crate) fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl std::fmt::Debug for TrustedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustedRoot")
            .field("bytes", &self.bytes.len())
            .field("read", &self.read.get().map(Result::is_ok))
            .finish_non_exhaustive()
    }
}

/// When the trusted root trusts a key or an authority (its `validFor`), in milliseconds since
/// 1970. A missing `validFor`, `start` or `end` is unbounded on that side, as `@sigstore/verify`
/// reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    start: Option<i64>,
    end: Option<i64>,
}

impl Window {
    /// Whether the time `ms` is inside the window (both ends included).
    pub(super) fn contains(self, ms: i64) -> bool {
        self.start.is_none_or(|s| s <= ms) && self.end.is_none_or(|e| ms <= e)
    }
}

/// `validFor` as a message quotes it: `from START to END`, `from START on`, `until END`.
impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.start, self.end) {
            (Some(s), Some(e)) => write!(f, "from {} to {}", rfc3339(s), rfc3339(e)),
            (Some(s), None) => write!(f, "from {} on", rfc3339(s)),
            (None, Some(e)) => write!(f, "until {}", rfc3339(e)),
            (None, None) => f.write_str("always"),
        }
    }
}

/// Several reasons, said one after the other (`A; B`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reasons<T>(pub Vec<T>);

impl<T: std::fmt::Display> std::fmt::Display for Reasons<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// A transparency log or a CT log: its log id (the key's id), key and window.
pub(super) struct Log {
    pub(super) id: Vec<u8>,
    pub(super) key: VerifyingKey,
    pub(super) window: Window,
}

/// Why [`log_key_at`] has no key.
pub(super) enum NoLogKey {
    /// The root names no such log.
    Unnamed,
    /// The root trusts that log's key only in these windows.
    Outside(Reasons<Window>),
}

/// The key of the log `id` among `logs` that the root trusts at `ms`.
pub(super) fn log_key_at<'a>(
    logs: &'a [Log],
    id: &[u8],
    ms: i64,
) -> Result<&'a VerifyingKey, NoLogKey> {
    let named: Vec<&Log> = logs.iter().filter(|l| l.id == id).collect();
    if named.is_empty() {
        return Err(NoLogKey::Unnamed);
    }
    named
        .iter()
        .find(|l| l.window.contains(ms))
        .map(|l| &l.key)
        .ok_or_else(|| NoLogKey::Outside(Reasons(named.iter().map(|l| l.window).collect())))
}

/// A certificate of an authority's chain as read with the root: what the checks use of it.
pub(super) struct RootCert {
    pub(super) subject: Vec<u8>,
    pub(super) spki: Vec<u8>,
    /// Its key, when it is ECDSA P-256 (no other key can have signed what is checked here).
    pub(super) key: Option<VerifyingKey>,
    /// Its validity, in seconds since 1970.
    pub(super) not_before: i64,
    pub(super) not_after: i64,
}

impl RootCert {
    fn read(der: &[u8]) -> Result<RootCert, DerError> {
        let c = parse_cert(der)?;
        Ok(RootCert {
            subject: c.subject.to_vec(),
            spki: c.spki.to_vec(),
            key: key_of(c.spki).ok(),
            not_before: c.not_before,
            not_after: c.not_after,
        })
    }
}

/// A certificate authority or a timestamp authority: its chain (the issuing or signing
/// certificate first; one that does not read kept as why, for a check that reaches it) and window.
pub(super) struct Authority {
    pub(super) chain: Vec<Result<RootCert, DerError>>,
    pub(super) window: Window,
}

/// What a trusted root trusts.
pub(super) struct Trust {
    pub(super) cas: Vec<Authority>,
    pub(super) logs: Vec<Log>,
    pub(super) ctlogs: Vec<Log>,
    pub(super) tsas: Vec<Authority>,
}

impl Trust {
    /// Reads a trusted root.
    fn parse(root: &[u8]) -> Result<Trust, RootError> {
        let v: J = serde_json::from_slice(root).map_err(|e| RootError::NotJson(e.to_string()))?;
        let cas = authorities(&v, "certificateAuthorities")?;
        let tlogs = logs(&v, "tlogs")?;
        let ctlogs = logs(&v, "ctlogs")?;
        if cas.is_empty() || tlogs.is_empty() {
            return Err(RootError::Empty);
        }
        Ok(Trust {
            cas,
            logs: tlogs,
            ctlogs,
            tsas: authorities(&v, "timestampAuthorities")?,
        })
    }
}

/// Each entry of a trusted root's `tlogs` or `ctlogs`: `logId.keyId`, `publicKey.rawBytes` and
/// `publicKey.validFor`.
fn logs(v: &J, field: &str) -> Result<Vec<Log>, RootError> {
    let mut out = Vec::new();
    for (i, t) in v[field].as_array().into_iter().flatten().enumerate() {
        out.push(Log {
            key: key_of(&b64_at(t, "/publicKey/rawBytes")?)?,
            id: b64_at(t, "/logId/keyId")?,
            window: window(
                &t["publicKey"]["validFor"],
                &format!("{field}[{i}].publicKey"),
            )?,
        });
    }
    Ok(out)
}

/// Each entry of `certificateAuthorities` or `timestampAuthorities` with at least one
/// certificate: `certChain.certificates[].rawBytes` and `validFor`.
fn authorities(v: &J, field: &str) -> Result<Vec<Authority>, RootError> {
    let mut out = Vec::new();
    for (i, a) in v[field].as_array().into_iter().flatten().enumerate() {
        let chain = a
            .pointer("/certChain/certificates")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .map(|c| b64_at(c, "/rawBytes"))
            .collect::<Result<Vec<_>, _>>()?;
        if !chain.is_empty() {
            let window = window(&a["validFor"], &format!("{field}[{i}]"))?;
            let chain = chain.iter().map(|der| RootCert::read(der)).collect();
            out.push(Authority { chain, window });
        }
    }
    Ok(out)
}

/// A `validFor` (`{"start": RFC 3339, "end": RFC 3339}`, both optional).
fn window(v: &J, what: &str) -> Result<Window, RootError> {
    let end = |side: &'static str| -> Result<Option<i64>, RootError> {
        match &v[side] {
            J::Null => Ok(None),
            J::String(t) => rfc3339_ms(t)
                .map(Some)
                .ok_or_else(|| RootError::NotRfc3339 {
                    what: what.to_owned(),
                    side,
                    text: t.clone(),
                }),
            _ => Err(RootError::NotATime {
                what: what.to_owned(),
                side,
            }),
        }
    };
    Ok(Window {
        start: end("start")?,
        end: end("end")?,
    })
}

/// An RFC 3339 time (`2026-11-27T21:14:53.5Z`, `…+01:00`) in milliseconds since 1970.
fn rfc3339_ms(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = t.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let mut rest = &t[19..];
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let first3 = format!("{:0<3}", &frac[..digits.min(3)]);
        millis = first3.parse::<i64>().ok()?;
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = &rest[1..];
            if hm.len() != 5 || hm.as_bytes()[2] != b':' {
                return None;
            }
            let (h, m) = (hm[..2].parse::<i64>().ok()?, hm[3..].parse::<i64>().ok()?);
            sign * (h * 3600 + m * 60)
        }
    };
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(seconds * 1000 + millis)
}

/// Milliseconds since 1970 as `YYYY-MM-DDTHH:MM:SSZ` (for messages; a time before 1970, which
/// only a hostile root or bundle can give, reads as 1970).
pub(super) fn rfc3339(ms: i64) -> String {
    otters_core::time::rfc3339(u64::try_from(ms.div_euclid(1000)).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_and_print() {
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            rfc3339_ms("2026-11-27T21:14:53.000Z"),
            Some(1_795_814_093_000)
        );
        assert_eq!(
            rfc3339_ms("2026-11-27T21:14:53.5Z"),
            Some(1_795_814_093_500)
        );
        assert_eq!(
            rfc3339_ms("2026-11-27T22:14:53+01:00"),
            Some(1_795_814_093_000)
        );
        for bad in [
            "",
            "2026-11-27",
            "2026-11-27 21:14:53Z",
            "2026-13-27T21:14:53Z",
            "2026-11-27T21:14:53",
            "2026-11-27T21:14:53.Z",
            "2026-11-27T21:14:53+0100",
            "２026-11-27T21:14:53Z",
        ] {
            assert_eq!(rfc3339_ms(bad), None, "{bad}");
        }
        assert_eq!(rfc3339(1_795_814_093_999), "2026-11-27T21:14:53Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn a_window_is_bounded_only_where_the_root_says() {
        let w = |v: serde_json::Value| window(&v, "x").unwrap();
        let both =
            w(serde_json::json!({"start": "1970-01-01T00:00:01Z", "end": "1970-01-01T00:00:02Z"}));
        assert!(!both.contains(999) && both.contains(1000) && both.contains(2000));
        assert!(!both.contains(2001));
        assert_eq!(
            both.to_string(),
            "from 1970-01-01T00:00:01Z to 1970-01-01T00:00:02Z"
        );
        let open = w(serde_json::json!({"start": "1970-01-01T00:00:01Z"}));
        assert!(open.contains(i64::MAX) && !open.contains(0));
        assert!(w(serde_json::Value::Null).contains(i64::MIN));
        let e = window(
            &serde_json::json!({"end": "yesterday"}),
            "tlogs[0].publicKey",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the trusted root's `tlogs[0].publicKey.validFor.end` (`yesterday`) is not an RFC 3339 time"
        );
        assert!(window(&serde_json::json!({"start": 5}), "x").is_err());
    }
}
