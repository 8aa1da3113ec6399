//! `otters rm`, `tag`, `prune`, `save`, `load`: local store maintenance and oci-archive
//! transport.
use super::common::{human_size, open_store, open_store_leased};
use super::{fail, fail_in, CliResult, Format};
use miette::{miette, IntoDiagnostic};
use otters_oci::archive::{self, local};
use otters_oci::store::prune::{prune, PruneOptions, PruneReport};
use otters_oci::store::query::{self, QueryError};
use otters_oci::store::refname::new_tag_name;
use otters_oci::StoreError;
use std::path::{Path, PathBuf};
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

#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// List what would be removed; remove nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Also keep unreferenced blobs written or reused less than this long ago (`0`, `90s`, `30m`,
    /// `1h`, `2d`). Blobs a running build, pull or load has not tagged yet are always kept (it
    /// holds a lease on them), so the default `0` frees everything else at once
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = parse_age)]
    pub min_age: std::time::Duration,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `90s`, `30m`, `1h`, `2d`, or a plain number of seconds.
fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    let (digits, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, ""), |i| text.split_at(i));
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => 0,
    };
    match digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
    {
        Some(secs) if scale > 0 => Ok(std::time::Duration::from_secs(secs)),
        _ => Err(format!(
            "`{text}` is not a duration: give a number with s, m, h or d (e.g. 30m, 1h)"
        )),
    }
}

/// `1h`, `90s`: a duration as `--min-age` accepts it.
fn show_age(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => "0s".to_owned(),
        _ if s.is_multiple_of(86400) => format!("{}d", s / 86400),
        _ if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        _ if s.is_multiple_of(60) => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

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
        .into_diagnostic()?
        .ok_or_else(|| not_found(&a.source))?;
    let name = store.tag(&a.target, &d).into_diagnostic()?;
    eprintln!("tagged {name}");
    Ok(ExitCode::SUCCESS)
}

pub fn run_prune(a: PruneArgs) -> CliResult {
    let store = open_store()?;
    let opts = PruneOptions {
        dry_run: a.dry_run,
        grace: a.min_age,
        // A tagged agent's RUNTIME and BIN images are reachable only through its agent.yaml.
        pins: Some(&otters_pipeline::run::source::pinned_images),
    };
    let report = prune(&store, opts).map_err(|e| fail_in("cannot prune the store", e))?;
    if a.format == Format::Json {
        let blobs = |v: &[otters_oci::store::prune::PrunedBlob]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|b| serde_json::json!({"digest": b.digest, "size": b.size}))
                .collect()
        };
        let v = serde_json::json!({
            "dryRun": a.dry_run,
            "removed": blobs(&report.removed),
            "freedBytes": report.freed(),
            "keptRecent": blobs(&report.kept_recent),
            "keptRecentBytes": report.kept_recent_bytes(),
            "keptInUse": blobs(&report.kept_in_use),
            "minAgeSeconds": a.min_age.as_secs(),
            "reachable": report.reachable,
        });
        outln!("{}", serde_json::to_string_pretty(&v).into_diagnostic()?);
        return Ok(ExitCode::SUCCESS);
    }
    print_prune(&report, a.dry_run, a.min_age);
    Ok(ExitCode::SUCCESS)
}

fn print_prune(report: &PruneReport, dry_run: bool, min_age: std::time::Duration) {
    let verb = if dry_run { "would remove" } else { "removed" };
    for b in &report.removed {
        outln!("{verb} {} ({})", b.digest, human_size(b.size));
    }
    let n = report.removed.len();
    outln!(
        "{} {} in {n} blob{}",
        if dry_run { "would free" } else { "freed" },
        human_size(report.freed()),
        if n == 1 { "" } else { "s" }
    );
    if !report.kept_in_use.is_empty() {
        let k = report.kept_in_use.len();
        eprintln!(
            "{} {k} untagged blob{} in use by a running build, pull or load (it holds a lease on {})",
            if dry_run { "would keep" } else { "kept" },
            if k == 1 { "" } else { "s" },
            if k == 1 { "it" } else { "them" },
        );
    }
    if !report.kept_recent.is_empty() {
        let k = report.kept_recent.len();
        eprintln!(
            "{} {k} untagged blob{} ({}) written or used less than {} ago: a build may be about to tag {}; `--min-age 0` removes them when nothing else uses the store",
            if dry_run { "would keep" } else { "kept" },
            if k == 1 { "" } else { "s" },
            human_size(report.kept_recent_bytes()),
            show_age(min_age),
            if k == 1 { "it" } else { "them" },
        );
    }
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
