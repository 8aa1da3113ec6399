//! `otters images`: the images of the local store, as a table, JSON or a template per line
//! (`otters_pipeline::view::images`).
use super::common::{esc, open_store};
use super::{fail, fail_in, CliResult};
use otters_oci::store::query;
use otters_pipeline::view::images::{render, Filter, Shape};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ImagesArgs {
    /// Output format: `text`, `json`, or a template of fields, one line per image, e.g.
    /// '{{.Reference}} {{.Digest}}' (fields `Reference`, `Repository`, `Tag`, `Digest`,
    /// `ShortDigest`, `Size`, `Created`)
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Print only the image digests, one per image (for scripts: `otters images -q | …`)
    #[arg(short, long, conflicts_with = "format")]
    pub quiet: bool,
    /// Show the full digest instead of its first 12 hex digits
    #[arg(long)]
    pub digests: bool,
    /// Show only matching images: `reference=GLOB` (e.g. `meteo:*`, `*/agents/*`; several are
    /// or-ed) or `dangling=true|false` (untagged images); different keys must all match
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
}

pub fn run_images(a: ImagesArgs) -> CliResult {
    let filter = Filter::parse(&a.filters).map_err(|e| fail_in("--filter", e))?;
    let shape = Shape::parse(&a.format).map_err(|e| fail_in("--format", e))?;
    let store = open_store()?;
    if a.quiet {
        for digest in query::digests(&store, |name| filter.keeps(name)).map_err(fail)? {
            outln!("{}", esc(digest.as_str()));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let rows = query::images(&store, |name| filter.keeps(name)).map_err(fail)?;
    out!("{}", render(&shape, rows, a.digests));
    Ok(ExitCode::SUCCESS)
}
