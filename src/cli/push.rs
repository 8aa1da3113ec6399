//! `otters push`: an image of the local store to a registry, with its referrers.
//!
//! stdout carries data (the manifest digest, or a JSON report with `--format json`); status lines
//! and progress go to stderr: bars on a TTY, one line per blob with `--progress plain`.
//! What is pushed where is `otters_pipeline::transfer`; `bin pack` packs with `binpack`, then pushes.
use super::common::{client, open_store_leased, print_report};
use super::errors::fail_help;
use super::{fail, CliResult};
use otters_cli::bin::BinCommand;
use otters_cli::push::PushArgs;
use otters_pipeline::binpack::{pack_tagged, summary};
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

pub fn run_bin(BinCommand::Pack(a): BinCommand) -> CliResult {
    let (epoch, store) = (
        std::env::var("SOURCE_DATE_EPOCH").ok(),
        open_store_leased()?,
    );
    let packed = a
        .request(epoch.as_deref())
        .and_then(|r| pack_tagged(&store, &r, &a.tag));
    let (packed, tag) = packed.map_err(|e| super::fail_in("cannot pack the bin image", e))?;
    eprint!("{}", summary(&a.name, &packed, &tag, a.flags.quiet()));
    if a.push {
        return run_push(a.push_args());
    }
    outln!("{}", packed.index.digest);
    Ok(ExitCode::SUCCESS)
}
