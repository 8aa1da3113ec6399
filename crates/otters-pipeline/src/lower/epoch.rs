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
pub use otters_core::time::rfc3339;

#[cfg(test)]
mod tests {
    use super::*;

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
