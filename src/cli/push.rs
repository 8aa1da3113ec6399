//! `otters push`: an image of the local store to a registry, with its referrers.
//!
//! stdout carries data (the manifest digest, or a JSON report with `--format json`); status lines
//! and progress go to stderr: bars on a TTY, one line per blob with `--progress plain`.
//! What is pushed where is `otters_pipeline::transfer`.
use super::common::{client, open_store_leased, print_report};
use super::errors::fail_help;
use super::{fail, CliResult};
use otters_cli::push::PushArgs;
use otters_pipeline::transfer::{self, PushError};
use std::process::ExitCode;

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
    let mut ui = super::progress::bars(&a.flags);
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
