//! `otters images`: the images of the local store, as a table, JSON or a template per line
//! (`crate::view::images`).
use super::common::{esc, open_store};
use super::{fail, fail_in, CliResult};
use crate::view::images::{render, Filter, Shape};
use otters_cli::images::ImagesArgs;
use otters_oci::store::query;
use std::process::ExitCode;

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
