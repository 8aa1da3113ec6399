//! `SOURCE_DATE_EPOCH`: parsing it strictly and printing it as RFC 3339.
//!
//! Takes: the variable's text. Returns: seconds since 1970 and `YYYY-MM-DDTHH:MM:SSZ`. Must never:
//! read the wall clock (a build's bytes depend only on its inputs).

/// `SOURCE_DATE_EPOCH` is set but is not a non-negative integer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("SOURCE_DATE_EPOCH is `{0}`, not a whole number of seconds since 1970; set it to an integer such as `$(git log -1 --format=%ct)` or unset it")]
pub struct BadEpoch(pub String);

/// Parses the variable's value; `None` (unset) and `Some("")` both mean "not set".
pub fn parse(value: Option<&str>) -> Result<Option<u64>, BadEpoch> {
    match value {
        None | Some("") => Ok(None),
        Some(s) if s.bytes().all(|b| b.is_ascii_digit()) && s.len() <= 12 => {
            s.parse().map(Some).map_err(|_| BadEpoch(s.to_owned()))
        }
        Some(s) => Err(BadEpoch(s.to_owned())),
    }
}

/// UTC RFC 3339 with second precision, as Go's `time.RFC3339` prints UTC times.
pub fn rfc3339(epoch: u64) -> String {
    let days = epoch / 86_400;
    let secs = epoch % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm, restricted to non-negative days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn accepts_only_integers() {
        assert_eq!(parse(None), Ok(None));
        assert_eq!(parse(Some("")), Ok(None));
        assert_eq!(parse(Some("1700000000")), Ok(Some(1_700_000_000)));
        for bad in ["-1", "1.5", "abc", " 1", "1e9", "9999999999999"] {
            assert!(parse(Some(bad)).is_err(), "{bad}");
        }
    }
}
