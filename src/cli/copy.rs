//! `otters copy [-r] SRC DST`: flags, progress and the report; the closure walk and the transfer
//! are `otters_pipeline::copy`.
//! stdout carries data (each copied image's destination and digest, or the JSON report with
//! `--format json`); status lines and progress go to stderr.
use super::common::{esc, open_store_leased, print_json};
use super::{fail_in, CliResult, Format};
use crate::view::transfer as view;
use otters_cli::copy::CopyArgs;
use otters_pipeline::copy::{copy, CopyRequest};
use std::process::ExitCode;

pub fn run(a: CopyArgs) -> CliResult {
    // Leased, as build and pull are: a concurrent `prune` keeps the blobs a copy stages.
    let store = open_store_leased()?;
    let req = CopyRequest {
        source: a.source.clone(),
        destination: a.destination.clone(),
        recursive: a.recursive,
        dry_run: a.dry_run,
        insecure: a.transfer.insecure,
        from_registries: a.from_registries,
        force: a.force,
        policy: a.policy.load().map_err(super::fail)?,
    };
    let mut ui = super::progress::bars(&a.transfer);
    let result = copy(&req, &store, &mut |e| ui.event(&e));
    ui.finish();
    let what = format!("cannot copy {} to {}", esc(&a.source), esc(&a.destination));
    let report = result.map_err(|e| fail_in(what, e))?;
    match a.transfer.format {
        Format::Json => print_json(&otters_schema::outputs::WithSchema::new("copy", &report))?,
        Format::Text => out!("{}", view::copied(&report)),
    }
    if !a.transfer.quiet() {
        eprint!(
            "{}",
            view::copy_summary(&report, a.transfer.format == Format::Text)
        );
    }
    Ok(ExitCode::SUCCESS)
}
