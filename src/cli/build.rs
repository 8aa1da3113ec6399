//! `otters build`: a short dispatcher over [`otters_pipeline::build::build`].
//!
//! Human output (diagnostics, progress, "tagged"/"pushed" lines) goes to stderr; stdout carries the
//! digest (or, with `--format json`, `{"digest","tags","size","pushed"}`).
use super::common::{build_error, build_failure, open_store_leased, print_diagnostics};
use super::progress::{Bars, ProgressMode};
use super::{fail, CliResult, Format};
use miette::miette;
use otters_pipeline::build::results::{self, Output};
use otters_pipeline::build::{self as lib, AgentfileSource, BuildOptions, BuildOutput};
use otters_pipeline::view::build as view;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// Rationale: the flags mirror `docker build`; a bool per switch is what clap parses them into.
#[allow(clippy::struct_excessive_bools, clippy::struct_field_names)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Build context directory, an Agentfile, or `-` to read the Agentfile from standard input
    #[arg(default_value = ".")]
    pub context: String,
    /// The Agentfile, relative to the context (default: <CONTEXT>/Agentfile)
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// Tag the image (repeatable); default <NAME>:latest, or agent:latest without NAME
    #[arg(short = 't', long = "tag")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub build_args: super::flags::BuildArgFlags,
    /// Also write the image to `type=oci,dest=FILE` (a tarball), or build it into
    /// `type=oci,tar=false,dest=DIR` / `type=oci-layout,dest=DIR` (a directory)
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    /// Print only the digest
    #[arg(short, long)]
    pub quiet: bool,
    /// Progress output on stderr: `auto` (bars on a terminal, nothing elsewhere), `plain` (one
    /// line per large input written and per blob pushed, with size and time, then one per layer:
    /// for CI logs), `tty` (bars even when stderr is not a terminal), `quiet` (same as `-q`)
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub pins: super::flags::PinFlags,
    /// Push the tags to their registries after building
    #[arg(long)]
    pub push: bool,
    #[command(flatten)]
    pub attest: super::attest::AttestFlags,
    /// Platform to resolve RUNTIME and BIN images for (e.g. linux/amd64); several, separated by
    /// commas (linux/amd64,linux/arm64), build an image index with one manifest per platform
    #[arg(long)]
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Re-read and re-hash every input, ignoring the file-hash cache
    #[arg(long)]
    pub no_cache: bool,
    /// Add a label, as a LABEL line would (config and manifest annotations; repeatable)
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// Add a manifest annotation (repeatable; overrides LABELs of the same key)
    #[arg(long = "annotation", value_name = "K=V")]
    pub annotations: Vec<String>,
    /// Annotate the image (and a multi-platform index) with org.opencontainers.image.source,
    /// .revision and .url from GitHub Actions' or GitLab CI's variables
    #[arg(long)]
    pub annotations_from_ci: bool,
    /// The time stamped into the image (created, file mtimes), overriding `SOURCE_DATE_EPOCH`:
    /// seconds since 1970, or `git` for the committer time of the last commit of the context's
    /// git work tree (uncommitted changes do not count)
    #[arg(long, value_name = "SECONDS|git")]
    pub source_date_epoch: Option<String>,
    /// Write the image digest to FILE (removed first, so a failed build leaves none)
    #[arg(long, value_name = "FILE")]
    pub iidfile: Option<PathBuf>,
    /// Write build results as JSON to FILE (buildx's keys, plus otters.*)
    #[arg(long, value_name = "FILE")]
    pub metadata_file: Option<PathBuf>,
}

/// `--label` / `--annotation` values (an annotation may carry buildx's `manifest:` prefix, the
/// only level an otters image has).
fn pairs(flag: &str, items: &[String]) -> miette::Result<BTreeMap<String, String>> {
    let prefix = (flag == "--annotation").then_some("manifest:");
    results::parse_pairs(items, prefix).map_err(|kv| {
        miette!("{flag} `{kv}` is not KEY=VALUE; write it as {flag} org.example.key=value")
    })
}

fn output(a: &Args) -> miette::Result<Option<Output>> {
    let parse = |s: &str| Output::parse(s).map_err(|e| miette!("--output {e}"));
    a.output.as_deref().map(parse).transpose()
}

fn read_stdin() -> miette::Result<Vec<u8>> {
    otters_pipeline::project::read_agentfile_stream(std::io::stdin().lock()).map_err(fail)
}

pub fn run(mut a: Args) -> CliResult {
    a.quiet |= a.progress == ProgressMode::Quiet;
    // Before anything is read or written (not even the store directory).
    lib::check_tags(&a.tags).map_err(build_error)?;
    let output = output(&a)?;
    let build_args = a.build_args.values(a.quiet)?;
    let labels = pairs("--label", &a.labels)?;
    let annotations = pairs("--annotation", &a.annotations)?;
    let ci_annotations = if a.annotations_from_ci {
        otters_pipeline::build::ci::annotations(|k| std::env::var(k).ok()).map_err(fail)?
    } else {
        BTreeMap::new()
    };
    let (context, agentfile) = agentfile(&a)?;
    let env_epoch = std::env::var("SOURCE_DATE_EPOCH").ok();
    let epoch = results::source_date_epoch(
        a.source_date_epoch.as_deref(),
        env_epoch.as_deref(),
        &context,
    )
    .map_err(fail)?;
    let home = super::otters_home();
    // A layout destination is not the store: the image is built in the store, then written
    // there through directory handles (it may hold links planted by whoever shipped the tree).
    let store = open_store_leased()?;
    let opts = BuildOptions {
        tags: a.tags.clone(),
        build_args,
        labels,
        annotations,
        ci_annotations,
        archive: match &output {
            Some(Output::Archive(dest)) => Some(dest.clone()),
            _ => None,
        },
        offline: a.pins.offline,
        locked: a.pins.locked,
        allow_unpinned: a.pins.allow_unpinned,
        platform: a.platform.clone(),
        insecure: a.insecure,
        push: a.push,
        hash_cache: (!a.no_cache).then(|| home.join("cache/blobs.json")),
        source_date_epoch: epoch,
        supply_inputs: a.attest.wanted(),
        ..BuildOptions::new(context, agentfile)
    };
    let mut sign = a.attest.signer()?;
    let result_files: Vec<&Path> = [&a.iidfile, &a.metadata_file]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    results::remove_result_files(&result_files).map_err(fail)?;
    let mut bars = Bars::for_build(a.progress, a.quiet);
    let out = lib::build(&opts, &store, &mut |e| bars.event(&e))
        .map_err(|e| build_error(build_failure(e)))?;
    if bars.plain() {
        eprint!("{}", view::layers(&results::layers(&store, &out)));
    }
    let attached = super::attest::attach(&store, &out, &a.attest, sign.as_deref_mut(), a.insecure)?;
    if let Some(o) = &output {
        results::write_output(&store, &out, o, !attached.is_empty()).map_err(fail)?;
    }
    if !a.quiet && a.format == Format::Text {
        eprint!("{}", view::attached(&attached));
    }
    results::write_result_files(&out, a.iidfile.as_deref(), a.metadata_file.as_deref())
        .map_err(fail)?;
    report(&a, output.as_ref(), &out);
    Ok(ExitCode::SUCCESS)
}

/// The context and where the Agentfile comes from: standard input for `-` (as the context or
/// `-f -`), else the one rule of [`lib::locate`].
fn agentfile(a: &Args) -> miette::Result<(PathBuf, AgentfileSource)> {
    let stdin_file = a.file.as_deref().is_some_and(|f| f.as_os_str() == "-");
    Ok(if a.context == "-" || stdin_file {
        let context = if a.context == "-" { "." } else { &a.context };
        (
            PathBuf::from(context),
            AgentfileSource::Stdin(read_stdin()?),
        )
    } else {
        let (context, path) = lib::locate(Path::new(&a.context), a.file.as_deref());
        (context, AgentfileSource::Path(path))
    })
}

fn report(a: &Args, output: Option<&Output>, out: &BuildOutput) {
    if !a.quiet {
        print_diagnostics(&out.file, &out.diagnostics);
        eprint!("{}", view::unused_build_args(out));
    }
    if !a.quiet && a.format == Format::Text {
        eprint!("{}", view::status(out, output.map(Output::dest)));
    }
    // In GitHub Actions; a summary that cannot be written is a warning, not a failure.
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        if let Err(e) = results::append_job_summary(Path::new(&path), out) {
            let path = Path::new(&path).display().to_string();
            eprintln!(
                "warning: cannot append to the job summary {}: {e}",
                otters_core::escape::escape(&path)
            );
        }
    }
    if a.format == Format::Json {
        super::common::print_compact(&results::summary_json(out));
    } else {
        outln!("{}", out.descriptor.digest);
    }
}
