//! `otters push`: an image of the local store to a registry, with its referrers.
//!
//! stdout carries data (the manifest digest, or a JSON report with `--format json`); status lines
//! and progress go to stderr: bars on a TTY, one line per blob with `--progress plain`.
use super::common::{client, open_store_leased, parse_reference, print_report};
use super::progress::TransferFlags;
use super::{fail_in, CliResult};
use miette::{miette, IntoDiagnostic};
use otters_oci::reference::Reference;
use otters_oci::registry::referrers;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer;
use otters_oci::registry::RegistryError;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The local image to push, named by its registry reference (e.g. 127.0.0.1:5000/team/agent:1)
    pub reference: String,
    /// Push to this reference instead of REFERENCE
    pub destination: Option<String>,
    /// Push the image only, not its referrers (signatures, SBOMs, attestations), which go by default
    #[arg(long)]
    pub no_referrers: bool,
    #[command(flatten)]
    pub flags: TransferFlags,
}

pub fn run_push(a: PushArgs) -> CliResult {
    let store = open_store_leased()?;
    let local = store
        .resolve(&a.reference)
        .into_diagnostic()?
        .ok_or_else(|| miette!("no image {} in the local store: build it with `otters build -t {}` or pull it first", a.reference, a.reference))?;
    let dest_text = a.destination.as_deref().unwrap_or(&a.reference);
    let mut dest = parse_reference(dest_text)?;
    if dest.tag.is_none() && dest.digest.is_none() {
        dest.tag = Some("latest".into());
    }
    if let Some(d) = &dest.digest {
        if *d != local.digest.as_str() {
            return Err(miette!(
                "{dest_text} names digest {d}, but the local image is {}; push by tag instead",
                local.digest
            ));
        }
    }
    let client = client(a.flags.insecure)?;
    let mut sources = Sources::load(store.root());
    let mut ui = a.flags.bars();
    let result = transfer::push_image(&client, &store, &local, &dest, &mut sources, &mut |e| {
        ui.event(&e);
    })
    .and_then(|mut report| {
        if !a.no_referrers {
            let pinned = dest.with_digest(&local.digest);
            referrers::push_referrers(
                &client,
                &store,
                &local.digest,
                &pinned,
                &mut sources,
                &mut |e| ui.event(&e),
                &mut report,
            )?;
        }
        Ok(report)
    });
    ui.finish();
    let _ = sources.save();
    let report = result.map_err(|e| push_error(e, &dest))?;
    print_report(&report, a.flags.format, a.flags.quiet(), "pushed")?;
    Ok(ExitCode::SUCCESS)
}

fn push_error(e: RegistryError, dest: &Reference) -> miette::Report {
    match e {
        RegistryError::Interrupted { .. } | RegistryError::Unreachable { .. } => {
            fail_in(format!("push to {} did not finish", dest.familiar()), e)
        }
        _ => fail_in(format!("cannot push to {}", dest.familiar()), e),
    }
}
