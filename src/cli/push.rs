//! `otters push`: an image of the local store to a registry, with its referrers.
//!
//! stdout carries data (the manifest digest, or a JSON report with `--format json`); status lines
//! and progress go to stderr: bars on a TTY, one line per blob with `--progress plain`.
//! What is pushed where is `otters_pipeline::transfer`.
use super::common::{client, open_store_leased, print_report};
use super::errors::fail_help;
use super::progress::TransferFlags;
use super::{fail, CliResult};
use otters_pipeline::transfer::{self, PushError};
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
    let (local, dest) = transfer::push_target(&store, &a.reference, a.destination.as_deref())
        .map_err(|e| match e {
            PushError::NotInStore(ref r) => {
                let hint = format!("build it with `otters build -t {r}` or pull it first");
                fail_help(e, hint)
            }
            PushError::OtherDigest { .. } => fail_help(e, "push by tag instead"),
            e => fail(e),
        })?;
    let client = client(a.flags.insecure)?;
    let mut ui = a.flags.bars();
    let referrers = !a.no_referrers;
    let result = transfer::push(&client, &store, &local, &dest, referrers, &mut |e| {
        ui.event(&e);
    });
    ui.finish();
    print_report(
        &result.map_err(fail)?,
        a.flags.format,
        a.flags.quiet(),
        "pushed",
    )?;
    Ok(ExitCode::SUCCESS)
}
