//! `otters prune` (and `otters image prune`): the blobs no image in the local store uses
//! (`otters_oci::store::prune`; the views are `crate::view::prune`).
use super::common::open_store;
use super::{fail_in, CliResult, Format};
use crate::view::prune::{self as view};
use otters_cli::prune::PruneArgs;
use otters_oci::store::prune::{prune, PruneOptions};
use std::process::ExitCode;

pub fn run_prune(a: PruneArgs) -> CliResult {
    let store = open_store()?;
    let opts = PruneOptions {
        dry_run: a.dry_run,
        grace: a.min_age,
        // A tagged agent's RUNTIME and BIN images are reachable only through its agent.yaml.
        pins: Some(&otters_run::source::pinned_images),
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
