//! `otters rm`, `tag`, `save`, `load`: local store maintenance and oci-archive transport.
use super::images::open_store;
use super::CliResult;
use crate::oci::archive;
use crate::oci::refname::{new_tag_name, tag_name};
use miette::{miette, IntoDiagnostic};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Image tags to remove (blobs stay in the store)
    #[arg(required = true)]
    pub references: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct TagArgs {
    /// Existing image: tag, digest or digest prefix
    pub source: String,
    /// New tag
    pub target: String,
}

#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    /// Image to save: tag, digest or digest prefix
    pub reference: String,
    /// The oci-archive file to write
    #[arg(short, long)]
    pub output: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The oci-archive file to read
    #[arg(short, long)]
    pub input: PathBuf,
}

fn not_found(reference: &str) -> miette::Report {
    miette!(
        help = "list local images with `otters images`",
        "image `{reference}` is not in the local store"
    )
}

pub fn run_rm(a: RmArgs) -> CliResult {
    let store = open_store()?;
    let mut failed = false;
    for r in &a.references {
        match store.untag(r) {
            Ok(true) => outln!("untagged {}", tag_name(r).unwrap_or_else(|_| r.clone())),
            Ok(false) => {
                eprintln!("{:?}", not_found(r));
                failed = true;
            }
            Err(e) => {
                eprintln!("{:?}", miette!("cannot remove `{r}`: {e}"));
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
    new_tag_name(&a.target).map_err(|e| miette!("{e}"))?;
    let store = open_store()?;
    let d = store
        .resolve(&a.source)
        .into_diagnostic()?
        .ok_or_else(|| not_found(&a.source))?;
    let name = store.tag(&a.target, &d).into_diagnostic()?;
    eprintln!("tagged {name}");
    Ok(ExitCode::SUCCESS)
}

pub fn run_save(a: SaveArgs) -> CliResult {
    let store = open_store()?;
    let d = store
        .resolve(&a.reference)
        .into_diagnostic()?
        .ok_or_else(|| not_found(&a.reference))?;
    // Keep the tag inside the archive when the image was named by one.
    let tags: Vec<String> = store
        .list()
        .into_diagnostic()?
        .into_iter()
        .filter(|(n, e)| !n.is_empty() && e.digest == d.digest)
        .map(|(n, _)| n)
        .filter(|n| Some(n) == tag_name(&a.reference).ok().as_ref() || *n == a.reference)
        .collect();
    archive::save(&store, &d, &tags, &a.output).into_diagnostic()?;
    eprintln!("saved {} to {}", d.digest, a.output.display());
    Ok(ExitCode::SUCCESS)
}

pub fn run_load(a: LoadArgs) -> CliResult {
    let store = open_store()?;
    let loaded = archive::load(&store, &a.input).into_diagnostic()?;
    if loaded.is_empty() {
        return Err(miette!("{} holds no images", a.input.display()));
    }
    for (name, d) in loaded {
        if name.is_empty() {
            outln!("{}", d.digest);
            continue;
        }
        let name = store.tag(&name, &d).into_diagnostic()?;
        outln!("{name} {}", d.digest);
    }
    Ok(ExitCode::SUCCESS)
}
