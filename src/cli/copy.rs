//! `otters copy [-r] SRC DST`: flags, progress and the report; the closure walk and the transfer
//! are `otters_pipeline::copy`.
//!
//! stdout carries data (each copied image's destination and digest, or the JSON report with
//! `--format json`); status lines and progress go to stderr.
use super::common::esc;
use super::progress::TransferFlags;
use super::{fail_in, CliResult, Format};
use otters_pipeline::copy::{copy, CopyReport, CopyRequest};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    /// What to copy: a registry reference (by tag or digest), `oci:DIR[:name]` or
    /// `oci-archive:FILE[:name]`
    pub source: String,
    /// Where to: a registry reference (without a tag: the source's tag), `oci:DIR[:name]` or
    /// `oci-archive:FILE[:name]`
    pub destination: String,
    /// Also copy everything the agent pins: RUNTIME, each BIN and the FROM parent (recursively),
    /// each as the whole index it was pinned from, with their referrers
    #[arg(short, long)]
    pub recursive: bool,
    /// List what would be copied; move nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub transfer: TransferFlags,
}

pub fn run(a: CopyArgs) -> CliResult {
    let home = super::otters_home().join("store");
    // Leased, as build and pull are: a concurrent `prune` keeps the blobs a copy stages.
    let store = otters_oci::Store::open(&home)
        .and_then(|s| s.leased())
        .map_err(|e| fail_in(format!("cannot open the local store {}", home.display()), e))?;
    let req = CopyRequest {
        source: a.source.clone(),
        destination: a.destination.clone(),
        recursive: a.recursive,
        dry_run: a.dry_run,
        insecure: a.transfer.insecure,
    };
    let quiet = a.transfer.quiet();
    let mut ui = a.transfer.bars();
    let result = copy(&req, &store, &mut |e| ui.event(&e));
    ui.finish();
    let report = result.map_err(|e| {
        fail_in(
            format!("cannot copy {} to {}", esc(&a.source), esc(&a.destination)),
            e,
        )
    })?;
    print(&report, a.transfer.format, quiet)?;
    Ok(ExitCode::SUCCESS)
}

fn print(report: &CopyReport, format: Format, quiet: bool) -> miette::Result<()> {
    if format == Format::Json {
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| fail_in("cannot write the report", e))?;
        outln!("{text}");
        return Ok(());
    }
    for i in &report.images {
        let platforms = if i.platforms.is_empty() {
            String::new()
        } else {
            format!(" [{}]", i.platforms.join(", "))
        };
        let role = serde_json::to_value(&i.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        if report.dry_run {
            outln!(
                "{role:<8} {} -> {}{platforms}",
                esc(&i.source),
                esc(&i.destination)
            );
        } else {
            outln!("{} {}", esc(&i.destination), i.digest);
        }
    }
    if !quiet {
        let verb = if report.dry_run {
            "would copy"
        } else {
            "copied"
        };
        eprintln!(
            "{verb} {} image(s) and {} referrer(s) to {}{}",
            report.images.len(),
            report.referrers,
            esc(&report.destination),
            if report.dry_run {
                String::new()
            } else {
                format!(
                    ": {} blob(s) downloaded, {} uploaded, {} mounted, {} already present ({} bytes moved)",
                    report.downloaded, report.uploaded, report.mounted, report.skipped, report.bytes
                )
            }
        );
    }
    Ok(())
}
