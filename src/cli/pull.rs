//! `otters pull`: an image from a registry, or from an OCI layout or archive another tool wrote,
//! into the local store.
//!
//! stdout carries data (the manifest digest, or a JSON report with `--format json`); status lines
//! and progress go to stderr: bars on a TTY, one line per blob with `--progress plain`.
//! What is pulled and how it is named is `otters_pipeline::transfer`.
use super::common::{client, open_store_leased, platform, print_json, print_report};
use super::errors::fail_help;
use super::{fail, fail_in, CliResult, Format};
use crate::view::status;
use otters_cli::pull::PullArgs;
use otters_oci::archive::local::{LocalError, LocalSource};
use otters_oci::store::refname::new_tag_name;
use otters_pipeline::transfer::{self, PullError};
use std::process::ExitCode;

pub fn run_pull(a: PullArgs) -> CliResult {
    let text = a.flags.format == Format::Text && !a.flags.quiet();
    if let Some(src) = LocalSource::parse(&a.reference) {
        return pull_local(&src, &a);
    }
    let store = open_store_leased()?;
    let platform = platform(a.platform.as_deref())?;
    let client = client(a.flags.insecure)?;
    let r = transfer::pull_reference(&client, &a.reference, platform.as_ref()).map_err(fail)?;
    let mut ui = super::progress::bars(&a.flags);
    let result = transfer::pull(&client, &store, &r, a.referrers, &mut |e| ui.event(&e));
    ui.finish();
    if text {
        eprint!("{}", status::mirrors_skipped(&client.mirror_failures()));
    }
    let (desc, report) = result.map_err(fail)?;
    let name = transfer::record(&store, &desc, &a.reference, a.tag.as_deref()).map_err(fail)?;
    if let Some(name) = name.filter(|_| text) {
        eprintln!("tagged {name}");
    }
    print_report(&report, a.flags.format, a.flags.quiet(), "pulled")?;
    Ok(ExitCode::SUCCESS)
}

/// `otters pull oci:DIR[:tag]` / `oci-archive:FILE[:tag]`: an OCI layout or archive written by
/// another tool, copied into the store with the checks a registry pull applies.
fn pull_local(src: &LocalSource, a: &PullArgs) -> CliResult {
    if let Some(t) = &a.tag {
        new_tag_name(t).map_err(fail)?;
    }
    let store = open_store_leased()?;
    let (root, name) =
        transfer::pull_local(&store, src, a.tag.as_deref()).map_err(|e| match e {
            PullError::Local(LocalError::Archive(e)) => fail_in("cannot pull", e),
            PullError::Local(LocalError::NoSuchImage { ref holds, .. }) => {
                let hint = format!("it holds: {holds}");
                fail_help(e, hint)
            }
            PullError::Local(LocalError::Several { ref holds, .. }) => {
                let hint = format!("name one after a `:` (it holds: {holds})");
                fail_help(e, hint)
            }
            e => fail(e),
        })?;
    if a.flags.format == Format::Json {
        let path = src.path.display().to_string();
        return print_json(
            &serde_json::json!({"source": path, "digest": root.digest, "tag": name}),
        )
        .map(|()| ExitCode::SUCCESS);
    }
    if !a.flags.quiet() {
        eprint!("{}", status::pulled_local(name.as_deref(), &root.digest));
    }
    outln!("{}", root.digest);
    Ok(ExitCode::SUCCESS)
}
