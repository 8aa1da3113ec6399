//! `otters rm` and `otters tag`: the names of images in the local store.
use super::common::{not_found, open_store};
use super::{fail, fail_in, CliResult};
use otters_oci::store::refname::new_tag_name;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Images to remove: a tag (removes that tag), or a digest, `name@digest` or a unique digest
    /// prefix (removes the image's entry, untagged `<none>` ones included). Blobs stay in the
    /// store until `otters prune`
    #[arg(required = true)]
    pub references: Vec<String>,
    /// Remove an image named by digest even when several tags name it (all of them go)
    #[arg(short, long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct TagArgs {
    /// Existing image: tag, digest or digest prefix
    pub source: String,
    /// New tag
    pub target: String,
}

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
