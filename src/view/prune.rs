//! `otters prune`: `--min-age` durations, and what a prune removed and kept.
use super::{human_size, line, plural};
use otters_oci::store::prune::{PruneReport, PrunedBlob};
use std::time::Duration;

/// A duration that is not `90s`, `30m`, `1h`, `2d` or a plain number of seconds.
/// `1h`, `90s`: a duration as [`otters_cli::prune::parse_age`] accepts it, in its largest whole unit.
pub fn show_age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => "0s".to_owned(),
        _ if s.is_multiple_of(86400) => format!("{}d", s / 86400),
        _ if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        _ if s.is_multiple_of(60) => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

/// The JSON view of a prune.
pub fn json(report: &PruneReport, dry_run: bool, min_age: Duration) -> String {
    let blobs = |v: &[PrunedBlob]| -> Vec<serde_json::Value> {
        v.iter()
            .map(|b| serde_json::json!({"digest": b.digest, "size": b.size}))
            .collect()
    };
    let v = serde_json::json!({
        "dryRun": dry_run,
        "removed": blobs(&report.removed),
        "freedBytes": report.freed(),
        "keptRecent": blobs(&report.kept_recent),
        "keptRecentBytes": report.kept_recent_bytes(),
        "keptInUse": blobs(&report.kept_in_use),
        "minAgeSeconds": min_age.as_secs(),
        "reachable": report.reachable,
    });
    // A `Value` of string keys always prints.
    format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
}

/// What was removed (or would be), one line a blob, and the total: the data of a prune.
pub fn removed(report: &PruneReport, dry_run: bool) -> String {
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut out = String::new();
    for b in &report.removed {
        line!(out, "{verb} {} ({})", b.digest, human_size(b.size));
    }
    let n = report.removed.len();
    let freed = if dry_run { "would free" } else { "freed" };
    line!(
        out,
        "{freed} {} in {n} blob{}",
        human_size(report.freed()),
        plural(n)
    );
    out
}

/// What was kept although nothing tags it, and why: notes for people.
pub fn kept(report: &PruneReport, dry_run: bool, min_age: Duration) -> String {
    let verb = if dry_run { "would keep" } else { "kept" };
    let them = |k: usize| if k == 1 { "it" } else { "them" };
    let mut out = String::new();
    if !report.kept_in_use.is_empty() {
        let k = report.kept_in_use.len();
        line!(
            out,
            "{verb} {k} untagged blob{} in use by a running build, pull or load (it holds a lease on {})",
            plural(k),
            them(k),
        );
    }
    if !report.kept_recent.is_empty() {
        let k = report.kept_recent.len();
        line!(
            out,
            "{verb} {k} untagged blob{} ({}) written or used less than {} ago: a build may be about to tag {}; `--min-age 0` removes them when nothing else uses the store",
            plural(k),
            human_size(report.kept_recent_bytes()),
            show_age(min_age),
            them(k),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_cli::prune::parse_age;
    use otters_oci::Digest;

    #[test]
    fn ages_parse_and_show_in_their_largest_unit() {
        for (text, secs, shown) in [
            ("0", 0, "0s"),
            ("90", 90, "90s"),
            ("90s", 90, "90s"),
            ("30m", 1800, "30m"),
            ("120m", 7200, "2h"),
            ("1h", 3600, "1h"),
            ("2d", 172_800, "2d"),
        ] {
            let d = parse_age(text).unwrap();
            assert_eq!(d.as_secs(), secs, "{text}");
            assert_eq!(show_age(d), shown, "{text}");
        }
        for bad in ["", "h", "1w", "-1s", "1.5h", "99999999999999999999d"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_age("1w").unwrap_err().to_string(),
            "`1w` is not a duration: give a number with s, m, h or d (e.g. 30m, 1h)"
        );
    }

    #[test]
    fn a_report_says_what_went_and_what_stayed() {
        let blob = |n: u8, size| PrunedBlob {
            digest: Digest::of(&[n]),
            size,
        };
        let report = PruneReport {
            removed: vec![blob(1, 2048)],
            kept_recent: vec![blob(2, 10), blob(3, 10)],
            kept_in_use: vec![blob(4, 1)],
            reachable: 3,
        };
        let out = removed(&report, true);
        assert!(out.starts_with("would remove sha256:"), "{out}");
        assert!(out.ends_with("would free 2.0 KiB in 1 blob\n"), "{out}");
        let notes = kept(&report, false, Duration::from_secs(3600));
        assert!(
            notes.starts_with("kept 1 untagged blob in use by"),
            "{notes}"
        );
        assert!(
            notes.contains("kept 2 untagged blobs (20 B) written or used less than 1h ago"),
            "{notes}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&json(&report, true, Duration::ZERO)).unwrap();
        assert_eq!(v["freedBytes"], 2048);
        assert_eq!(v["keptRecentBytes"], 20);
        assert!(kept(&PruneReport::default(), true, Duration::ZERO).is_empty());
    }
}
