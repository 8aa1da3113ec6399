//! Calendar arithmetic for the times otters writes and reads: seconds since 1970 as RFC 3339
//! (an image's `created`, times quoted in messages) and a civil date as days since 1970 (a
//! certificate's validity, a trusted root's `validFor`).
//!
//! Takes: numbers. Returns: numbers and text. Must never: read the wall clock (a build's bytes
//! depend only on its inputs).

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

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm; negative
/// before 1970).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let shifted = if month <= 2 { year - 1 } else { year };
    let era = shifted.div_euclid(400);
    let year_of_era = shifted - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
    fn days_and_dates_agree() {
        for days in [0u16, 59, 60, 11_016, 19_675, 47_481] {
            let (y, m, d) = civil_from_days(u64::from(days));
            let signed = |n: u64| i64::try_from(n).unwrap();
            let back = days_from_civil(signed(y), signed(m), signed(d));
            assert_eq!(back, i64::from(days), "{y}-{m}-{d}");
        }
        assert_eq!(days_from_civil(1969, 12, 31), -1);
    }
}
