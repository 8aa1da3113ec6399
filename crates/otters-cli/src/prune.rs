//! `otters prune` (and `otters image prune`).
use crate::Format;
use std::time::Duration;
#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// List what would be removed; remove nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Also keep unreferenced blobs written or reused less than this long ago (`0`, `90s`, `30m`,
    /// `1h`, `2d`). Blobs a running build, pull or load has not tagged yet are always kept (it
    /// holds a lease on them), so the default `0` frees everything else at once
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = parse_age)]
    pub min_age: std::time::Duration,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Why a `--min-age` value is not a duration.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a duration: give a number with s, m, h or d (e.g. 30m, 1h)")]
pub struct AgeError(String);

/// `90s`, `30m`, `1h`, `2d`, or a plain number of seconds.
pub fn parse_age(text: &str) -> Result<Duration, AgeError> {
    let (digits, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, ""), |i| text.split_at(i));
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => 0,
    };
    match digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(secs) if scale > 0 => Ok(Duration::from_secs(secs)),
        _ => Err(AgeError(otters_core::escape::escape(text).into_owned())),
    }
}
