//! `otters save` and `otters load`: images of the local store to and from an oci-archive (a
//! file, or a stream).
use super::common::{not_found, open_store, open_store_leased};
use super::{fail, fail_in, CliResult};
use miette::{miette, IntoDiagnostic};
use otters_oci::archive::{self, local};
use otters_oci::store::query::{self, QueryError};
use otters_oci::StoreError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    /// Images to save, all into one archive: tag, digest or digest prefix
    #[arg(required = true, value_name = "IMAGE")]
    pub references: Vec<String>,
    /// The oci-archive file to write (default, or `-`: standard output, which must not be a
    /// terminal)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also save everything the images pin (RUNTIME, BINs, FROM parents, recursively, with their
    /// referrers), fetching what the store lacks; `otters load` names each as it was pinned
    #[arg(long)]
    pub with_deps: bool,
    /// With --with-deps: allow plain HTTP and unverified TLS for registries not on this machine
    #[arg(long, requires = "with_deps")]
    pub insecure: bool,
}

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The oci-archive file (or OCI layout directory) to read (default, or `-`: standard input)
    #[arg(short, long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Move local tags that already name other images to the loaded ones (without it, `load`
    /// refuses and changes no tag)
    #[arg(long)]
    pub force: bool,
}

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
    let images = query::select(&store, &a.references).map_err(|e| match e {
        QueryError::NotFound(r) => not_found(&r),
        e => fail(e),
    })?;
    let images = if a.with_deps {
        otters_pipeline::copy::with_deps(&store, &images, a.insecure)
            .map_err(|e| fail_in("cannot gather the images they pin", e))?
    } else {
        images
    };
    if let Some(path) = dest {
        archive::save_many(&store, &images, path).into_diagnostic()?;
    } else {
        let out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        archive::save_stream(&store, &images, out, Path::new("standard output"))
            .into_diagnostic()?;
    }
    let to = dest.map_or_else(|| "standard output".to_owned(), |p| p.display().to_string());
    for (d, _) in &images {
        eprintln!("saved {} to {to}", d.digest);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_load(a: LoadArgs) -> CliResult {
    let store = open_store_leased()?;
    let (loaded, from) = if let Some(path) = file_arg(a.input.as_ref()) {
        let loaded = if path.is_dir() {
            local::load_layout(&store, path).into_diagnostic()?
        } else {
            archive::load(&store, path).into_diagnostic()?
        };
        (loaded, path.display().to_string())
    } else {
        let label = Path::new("standard input");
        let loaded = archive::load_stream(&store, std::io::stdin().lock(), label);
        (loaded.into_diagnostic()?, "standard input".to_owned())
    };
    if loaded.is_empty() {
        return Err(miette!("{from} holds no images"));
    }
    // One index update for every name, however many (the blobs are in; nothing is tagged yet).
    let (names, moved) = match store.tag_all(&loaded, a.force) {
        Err(StoreError::WouldMove(moved)) => {
            let list: Vec<String> = moved.iter().map(ToString::to_string).collect();
            return Err(miette!(
                help = "pass --force to move them, or `otters tag`/`otters rm` the local ones first; the loaded blobs stay in the store untagged",
                "{from} would move {} local tag(s): {}",
                moved.len(),
                list.join(", ")
            ));
        }
        other => other.map_err(|e| fail_in("cannot tag the loaded images", e))?,
    };
    for m in &moved {
        eprintln!("moved tag {} from {} to {}", m.name, m.from, m.to);
    }
    for (name, (_, d)) in names.iter().zip(&loaded) {
        if name.is_empty() {
            if let Some(bare) = d.ref_name() {
                eprintln!(
                    "{} is named only `{}` in {from} (a tag without a repository): stored untagged; name it with `otters tag {} NAME:TAG`",
                    d.digest,
                    otters_oci::validate::escape_text(bare, 80),
                    d.digest.short()
                );
            }
            outln!("{}", d.digest);
        } else {
            outln!("{name} {}", d.digest);
        }
    }
    Ok(ExitCode::SUCCESS)
}
