//! `otters prune` (and `otters image prune`): the blobs no image in the local store uses
//! (`otters_oci::store::prune`; the views are `otters_pipeline::view::prune`).
use super::common::open_store;
use super::{fail_in, CliResult, Format};
use otters_oci::store::prune::{prune, PruneOptions};
use otters_pipeline::view::prune::{self as view, parse_age};
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
        out!("{}", view::json(&report, a.dry_run, a.min_age));
    } else {
        out!("{}", view::removed(&report, a.dry_run));
        eprint!("{}", view::kept(&report, a.dry_run, a.min_age));
    }
    Ok(ExitCode::SUCCESS)
}
