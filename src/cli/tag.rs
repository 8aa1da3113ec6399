//! `otters rm` and `otters tag`: the names of images in the local store.
use super::common::{not_found, open_store};
use super::{fail, fail_in, CliResult};
use otters_cli::tag::{RmArgs, TagArgs};
use otters_oci::store::refname::new_tag_name;
use std::process::ExitCode;

pub fn run_rm(a: RmArgs) -> CliResult {
    let store = open_store()?;
    let mut failed = false;
    for r in &a.references {
        match store.remove(r, a.force) {
            Ok(Some(removed)) => {
                for t in &removed.tags {
                    outln!("untagged {t}");
                }
                if let Some(d) = &removed.digest {
                    outln!("removed {d}");
                }
            }
            Ok(None) => {
                eprintln!("{}", super::render(&not_found(r)));
                failed = true;
            }
            Err(e) => {
                let report = fail_in(format!("cannot remove `{r}`"), e);
                eprintln!("{}", super::render(&report));
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn run_tag(a: TagArgs) -> CliResult {
    new_tag_name(&a.target).map_err(fail)?;
    let store = open_store()?;
    let d = store
        .resolve(&a.source)
        .map_err(fail)?
        .ok_or_else(|| not_found(&a.source))?;
    let name = store.tag(&a.target, &d).map_err(fail)?;
    eprintln!("tagged {name}");
    Ok(ExitCode::SUCCESS)
}
