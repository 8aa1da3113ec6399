//! `otters save` and `otters load`: images of the local store to and from an oci-archive (a
//! file, or a stream).
//! Selection, the archive and the naming are `otters_pipeline::archive`.
use super::common::{not_found, open_store, open_store_leased};
use super::errors::fail_help;
use super::{fail, CliResult};
use miette::miette;
use otters_cli::archive::{LoadArgs, SaveArgs};
use otters_oci::store::query::QueryError;
use otters_pipeline::archive::{self as lib, LoadError, SaveError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `None` for standard input or output (no path, or `-`).
fn file_arg(p: Option<&PathBuf>) -> Option<&PathBuf> {
    p.filter(|p| p.as_os_str() != "-")
}

pub fn run_save(a: SaveArgs) -> CliResult {
    use std::io::IsTerminal as _;
    let dest = file_arg(a.output.as_ref());
    if dest.is_none() && std::io::stdout().is_terminal() {
        return Err(miette!(
            help = "write to a file with `-o FILE`, or pipe it: `otters save IMAGE | otters load`",
            "refusing to write an oci-archive to a terminal"
        ));
    }
    // `--with-deps` pulls what the store lacks: leased, so a concurrent `prune` keeps it.
    let store = if a.with_deps {
        open_store_leased()?
    } else {
        open_store()?
    };
    let deps = (a.insecure, &a.from_registries[..]);
    let policy = if a.with_deps {
        otters_policy::Policy::user(&a.policy).map_err(fail)?
    } else {
        otters_policy::Policy::default()
    };
    let images =
        lib::select(&store, &a.references, a.with_deps, deps, &policy).map_err(|e| match e {
            SaveError::Query(QueryError::NotFound(r)) => not_found(&r),
            e => fail(e),
        })?;
    let to = dest.map_or_else(|| "standard output".to_owned(), |p| p.display().to_string());
    let out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    lib::save(
        &store,
        &images,
        dest.map(PathBuf::as_path),
        out,
        Path::new(&to),
    )
    .map_err(fail)?;
    for (d, _) in &images {
        eprintln!("saved {} to {to}", d.digest);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_load(a: LoadArgs) -> CliResult {
    let store = open_store_leased()?;
    let path = file_arg(a.input.as_ref()).map(PathBuf::as_path);
    let from = path.map_or_else(|| "standard input".to_owned(), |p| p.display().to_string());
    let loaded = lib::load(&store, path, std::io::stdin().lock(), &from, a.force).map_err(|e| match e {
        LoadError::WouldMove { .. } => fail_help(e, "pass --force to move them, or `otters tag`/`otters rm` the local ones first; the loaded blobs stay in the store untagged"),
        e => fail(e),
    })?;
    let (said, out) = crate::view::status::loaded(&loaded, &from);
    eprint!("{said}");
    out!("{out}");
    Ok(ExitCode::SUCCESS)
}
