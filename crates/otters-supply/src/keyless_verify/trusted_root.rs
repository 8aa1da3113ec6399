//! The trusted root (`trusted_root.json`, Sigstore's `TrustedRoot`): the certificate authorities,
//! transparency logs, certificate-transparency logs and timestamp authorities a keyless bundle is
//! checked against, each with the time the root trusts it for (`validFor`).
//!
//! Takes: the root's bytes. Returns: [`Trust`], or a sentence saying what in the root is wrong.
//! Must never: trust a key or an authority outside its `validFor` (a retired key stays in a root
//! so that old signatures still verify; it must not vouch for a new one), or read a time it cannot
//! parse as unbounded.

use super::{b64_at, key_of, no, parse_cert};
use otters_core::time::days_from_civil;
use p256::ecdsa::VerifyingKey;
use serde_json::Value as J;

/// When the trusted root trusts a key or an authority (its `validFor`), in milliseconds since
/// 1970. A missing `validFor`, `start` or `end` is unbounded on that side, as `@sigstore/verify`
/// reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Window {
    start: Option<i64>,
    end: Option<i64>,
}

impl Window {
    /// Whether the time `ms` is inside the window (both ends included).
    pub(super) fn contains(self, ms: i64) -> bool {
        self.start.is_none_or(|s| s <= ms) && self.end.is_none_or(|e| ms <= e)
    }

    /// `validFor` as a message quotes it: `from START to END`, `from START on`, `until END`.
    pub(super) fn describe(self) -> String {
        match (self.start, self.end) {
            (Some(s), Some(e)) => format!("from {} to {}", rfc3339(s), rfc3339(e)),
            (Some(s), None) => format!("from {} on", rfc3339(s)),
            (None, Some(e)) => format!("until {}", rfc3339(e)),
            (None, None) => "always".to_owned(),
        }
    }
}

/// A transparency log or a CT log: its log id (the key's id), key and window.
pub(super) struct Log {
    pub(super) id: Vec<u8>,
    pub(super) key: VerifyingKey,
    pub(super) window: Window,
}

/// The key of the log `id` among `logs` that the root trusts at `ms`: `Err(None)` when the root
/// names no such log, `Err(Some(windows))` when it trusts that log's key only at other times.
pub(super) fn log_key_at<'a>(
    logs: &'a [Log],
    id: &[u8],
    ms: i64,
) -> Result<&'a VerifyingKey, Option<String>> {
    let named: Vec<&Log> = logs.iter().filter(|l| l.id == id).collect();
    if named.is_empty() {
        return Err(None);
    }
    named
        .iter()
        .find(|l| l.window.contains(ms))
        .map(|l| &l.key)
        .ok_or_else(|| {
            Some(
                named
                    .iter()
                    .map(|l| l.window.describe())
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
}

/// A certificate authority or a timestamp authority: its chain (DER, the issuing or signing
/// certificate first) and window.
pub(super) struct Authority {
    pub(super) chain: Vec<Vec<u8>>,
    pub(super) window: Window,
}

/// What a trusted root trusts.
pub(super) struct Trust {
    pub(super) cas: Vec<Authority>,
    pub(super) logs: Vec<Log>,
    pub(super) ctlogs: Vec<Log>,
    pub(super) tsas: Vec<Authority>,
}

/// Reads a trusted root.
pub(super) fn trust(root: &[u8]) -> Result<Trust, String> {
    let v: J = serde_json::from_slice(root)
        .map_err(|e| no(format!("the trusted root is not JSON: {e}")))?;
    let cas = authorities(&v, "certificateAuthorities")?;
    let tlogs = logs(&v, "tlogs")?;
    let ctlogs = logs(&v, "ctlogs")?;
    if cas.is_empty() || tlogs.is_empty() {
        return Err(no(
            "the trusted root names no certificate authority or no transparency log",
        ));
    }
    Ok(Trust {
        cas,
        logs: tlogs,
        ctlogs,
        tsas: authorities(&v, "timestampAuthorities")?,
    })
}

/// Each entry of a trusted root's `tlogs` or `ctlogs`: `logId.keyId`, `publicKey.rawBytes` and
/// `publicKey.validFor`.
fn logs(v: &J, field: &str) -> Result<Vec<Log>, String> {
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
fn authorities(v: &J, field: &str) -> Result<Vec<Authority>, String> {
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
            out.push(Authority { chain, window });
        }
    }
    Ok(out)
}

/// A `validFor` (`{"start": RFC 3339, "end": RFC 3339}`, both optional).
fn window(v: &J, what: &str) -> Result<Window, String> {
    let end = |side: &str| -> Result<Option<i64>, String> {
        match &v[side] {
            J::Null => Ok(None),
            J::String(t) => rfc3339_ms(t).map(Some).ok_or_else(|| {
                no(format!(
                    "the trusted root's `{what}.validFor.{side}` (`{t}`) is not an RFC 3339 time"
                ))
            }),
            _ => Err(no(format!(
                "the trusted root's `{what}.validFor.{side}` is not a time"
            ))),
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

/// Every certificate of `chain` is within its own validity (`notBefore`..=`notAfter`) at `ms`;
/// else a sentence naming `what` and the certificate's validity.
pub(super) fn chain_valid_at(chain: &[Vec<u8>], ms: i64, what: &str) -> Result<(), String> {
    for der in chain {
        let c = parse_cert(der)?;
        let (from, to) = (c.not_before * 1000, c.not_after * 1000);
        if !(from..=to).contains(&ms) {
            return Err(no(format!(
                "{what}'s certificate is valid from {} to {}, not at {}",
                rfc3339(from),
                rfc3339(to),
                rfc3339(ms)
            )));
        }
    }
    Ok(())
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
            both.describe(),
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
            e,
            "the trusted root's `tlogs[0].publicKey.validFor.end` (`yesterday`) is not an RFC 3339 time"
        );
        assert!(window(&serde_json::json!({"start": 5}), "x").is_err());
    }
}
