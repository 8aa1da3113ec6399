//! `otters prune` (and `otters image prune`): the blobs no image in the local store uses.
use super::common::{human_size, open_store};
use super::{fail_in, CliResult, Format};
use miette::IntoDiagnostic;
use otters_oci::store::prune::{prune, PruneOptions, PruneReport};
use std::process::ExitCode;

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

/// `90s`, `30m`, `1h`, `2d`, or a plain number of seconds.
fn parse_age(text: &str) -> Result<std::time::Duration, String> {
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
        Some(secs) if scale > 0 => Ok(std::time::Duration::from_secs(secs)),
        _ => Err(format!(
            "`{text}` is not a duration: give a number with s, m, h or d (e.g. 30m, 1h)"
        )),
    }
}

/// `1h`, `90s`: a duration as `--min-age` accepts it.
fn show_age(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => "0s".to_owned(),
        _ if s.is_multiple_of(86400) => format!("{}d", s / 86400),
        _ if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        _ if s.is_multiple_of(60) => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

pub fn run_prune(a: PruneArgs) -> CliResult {
    let store = open_store()?;
    let opts = PruneOptions {
        dry_run: a.dry_run,
        grace: a.min_age,
        // A tagged agent's RUNTIME and BIN images are reachable only through its agent.yaml.
        pins: Some(&otters_pipeline::run::source::pinned_images),
    };
    let report = prune(&store, opts).map_err(|e| fail_in("cannot prune the store", e))?;
    if a.format == Format::Json {
        let blobs = |v: &[otters_oci::store::prune::PrunedBlob]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|b| serde_json::json!({"digest": b.digest, "size": b.size}))
                .collect()
        };
        let v = serde_json::json!({
            "dryRun": a.dry_run,
            "removed": blobs(&report.removed),
            "freedBytes": report.freed(),
            "keptRecent": blobs(&report.kept_recent),
            "keptRecentBytes": report.kept_recent_bytes(),
            "keptInUse": blobs(&report.kept_in_use),
            "minAgeSeconds": a.min_age.as_secs(),
            "reachable": report.reachable,
        });
        outln!("{}", serde_json::to_string_pretty(&v).into_diagnostic()?);
        return Ok(ExitCode::SUCCESS);
    }
    print_prune(&report, a.dry_run, a.min_age);
    Ok(ExitCode::SUCCESS)
}

fn print_prune(report: &PruneReport, dry_run: bool, min_age: std::time::Duration) {
    let verb = if dry_run { "would remove" } else { "removed" };
    for b in &report.removed {
        outln!("{verb} {} ({})", b.digest, human_size(b.size));
    }
    let n = report.removed.len();
    outln!(
        "{} {} in {n} blob{}",
        if dry_run { "would free" } else { "freed" },
        human_size(report.freed()),
        if n == 1 { "" } else { "s" }
    );
    if !report.kept_in_use.is_empty() {
        let k = report.kept_in_use.len();
        eprintln!(
            "{} {k} untagged blob{} in use by a running build, pull or load (it holds a lease on {})",
            if dry_run { "would keep" } else { "kept" },
            if k == 1 { "" } else { "s" },
            if k == 1 { "it" } else { "them" },
        );
    }
    if !report.kept_recent.is_empty() {
        let k = report.kept_recent.len();
        eprintln!(
            "{} {k} untagged blob{} ({}) written or used less than {} ago: a build may be about to tag {}; `--min-age 0` removes them when nothing else uses the store",
            if dry_run { "would keep" } else { "kept" },
            if k == 1 { "" } else { "s" },
            human_size(report.kept_recent_bytes()),
            show_age(min_age),
            if k == 1 { "it" } else { "them" },
        );
    }
}
