//! `otters build`: a short dispatcher over [`otters_pipeline::build::build`].
//!
//! Human output (diagnostics, progress, "tagged"/"pushed" lines) goes to stderr; stdout carries the
//! digest (or, with `--format json`, `{"digest","tags","size","pushed"}`).
use super::common::{
    build_error, build_failure, human_size, open_store_leased, parse_build_args, print_diagnostics,
};
use super::progress::{BuildBars, ProgressMode};
use super::{fail, fail_in, CliResult, Format};
use miette::miette;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::Store;
use otters_pipeline::build::{self as lib, AgentfileSource, BuildOptions, BuildOutput};
use otters_pipeline::lower::epoch;
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
    /// Set a build argument (repeatable); a bare KEY takes its value from the environment
    #[arg(long = "build-arg", value_name = "K=V")]
    pub build_args: Vec<String>,
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
    /// Take every pin from Agentfile.lock; never contact a registry
    #[arg(long)]
    pub offline: bool,
    /// Build references that have no pin without a digest (with a warning)
    #[arg(long)]
    pub allow_unpinned: bool,
    /// Fail when resolution would change Agentfile.lock
    #[arg(long)]
    pub locked: bool,
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

/// `--label` / `--annotation` values: `K=V` with a non-empty key. An annotation may carry buildx's
/// `manifest:` prefix (the only level an otters image has).
fn parse_pairs(flag: &str, items: &[String]) -> miette::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|kv| {
            let text = if flag == "--annotation" {
                kv.strip_prefix("manifest:").unwrap_or(kv)
            } else {
                kv
            };
            match text.split_once('=') {
                Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
                    Ok((k.to_owned(), v.to_owned()))
                }
                _ => Err(miette!(
                    "{flag} `{kv}` is not KEY=VALUE; write it as {flag} org.example.key=value"
                )),
            }
        })
        .collect()
}

/// `--output` destinations.
enum Output {
    Layout(PathBuf),
    Archive(PathBuf),
}

const OUTPUT_FORMS: &str = "use type=oci,dest=FILE (a tarball), type=oci,tar=false,dest=DIR or type=oci-layout,dest=DIR (a directory)";

/// `-o`/`--output` with buildx's meanings: `type=oci` is an oci-archive tarball, `type=oci,tar=false`
/// and `type=oci-layout` a layout directory; `type=oci-archive` is kept as otters' first name for
/// the tarball.
fn parse_output(spec: &str) -> miette::Result<Output> {
    let mut kind = None;
    let mut dest = None;
    let mut tar = None;
    for part in spec.split(',') {
        match part.split_once('=') {
            Some(("type", t)) => kind = Some(t.to_owned()),
            Some(("dest", d)) => dest = Some(PathBuf::from(d)),
            Some(("tar", t)) => {
                tar = Some(match t {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(miette!(
                            "--output `{spec}`: tar={t} is not true or false; {OUTPUT_FORMS}"
                        ))
                    }
                });
            }
            _ => {
                return Err(miette!(
                    "--output `{spec}`: unknown part `{part}`; {OUTPUT_FORMS}"
                ))
            }
        }
    }
    let Some(dest) = dest.filter(|d| !d.as_os_str().is_empty()) else {
        return Err(miette!("--output `{spec}` has no dest=; {OUTPUT_FORMS}"));
    };
    if dest.as_os_str() == "-" {
        return Err(miette!(
            "--output `{spec}`: writing to standard output is not supported; {OUTPUT_FORMS}"
        ));
    }
    match (kind.as_deref(), tar) {
        (Some("oci"), Some(false)) | (Some("oci-layout"), None) => Ok(Output::Layout(dest)),
        (Some("oci"), None | Some(true)) | (Some("oci-archive"), None) => Ok(Output::Archive(dest)),
        (Some(t), Some(_)) if t != "oci" => Err(miette!(
            "--output `{spec}`: tar= applies to type=oci only; {OUTPUT_FORMS}"
        )),
        (other, _) => Err(miette!(
            "--output type `{}` is not supported; {OUTPUT_FORMS}",
            other.unwrap_or("")
        )),
    }
}

fn read_stdin() -> miette::Result<Vec<u8>> {
    otters_pipeline::project::read_agentfile_stream(std::io::stdin().lock()).map_err(fail)
}

pub fn run(mut a: Args) -> CliResult {
    a.quiet |= a.progress == ProgressMode::Quiet;
    // Before anything is read or written (not even the store directory).
    lib::check_tags(&a.tags).map_err(build_error)?;
    let output = a.output.as_deref().map(parse_output).transpose()?;
    let build_args = parse_build_args(&a.build_args, a.quiet)?;
    let labels = parse_pairs("--label", &a.labels)?;
    let annotations = parse_pairs("--annotation", &a.annotations)?;
    let ci_annotations = if a.annotations_from_ci {
        otters_pipeline::build::ci::annotations(|k| std::env::var(k).ok()).map_err(fail)?
    } else {
        BTreeMap::new()
    };
    let (context, agentfile) = agentfile(&a)?;
    let epoch = match a.source_date_epoch.as_deref() {
        Some("git") => Some(lib::git_epoch::last_commit_time(&context).map_err(fail)?),
        Some(n) => match epoch::parse(Some(n)) {
            Ok(Some(seconds)) => Some(seconds),
            _ => {
                return Err(miette!(
                "--source-date-epoch is `{}`, not a whole number of seconds since 1970 or `git`",
                otters_core::escape::escape(n)
            ))
            }
        },
        None => epoch::parse(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref()).map_err(fail)?,
    };
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
        offline: a.offline,
        locked: a.locked,
        allow_unpinned: a.allow_unpinned,
        platform: a.platform.clone(),
        insecure: a.insecure,
        push: a.push,
        hash_cache: (!a.no_cache).then(|| home.join("cache/blobs.json")),
        source_date_epoch: epoch,
        supply_inputs: a.attest.wanted(),
        ..BuildOptions::new(context, agentfile)
    };
    let mut sign = a.attest.signer()?;
    remove_result_files(&a)?;
    let mut bars = BuildBars::for_mode(a.progress, a.quiet);
    let out = lib::build(&opts, &store, &mut |e| bars.event(&e))
        .map_err(|e| build_error(build_failure(e)))?;
    if bars.plain() {
        print_layers(&store, &out);
    }
    let attached = super::attest::attach(&store, &out, &a.attest, sign.as_deref_mut(), a.insecure)?;
    if let (false, Some(Output::Archive(dest))) = (attached.is_empty(), &output) {
        // Written by the build before the referrers existed: again, with them.
        otters_oci::archive::save(&store, &out.descriptor, &out.tags, dest)
            .map_err(|e| fail_in(format!("cannot write {}", dest.display()), e))?;
    }
    if let Some(Output::Layout(dir)) = &output {
        let images = [(out.descriptor.clone(), out.tags.clone())];
        otters_oci::archive::layout_dir::export_layout(&store, &images, dir).map_err(|e| {
            let what = format!(
                "the image was built ({}) but not written",
                out.descriptor.digest
            );
            fail_in(what, e)
        })?;
    }
    if !a.quiet && a.format == Format::Text {
        for (what, d) in &attached {
            eprintln!("attached {what} {d}");
        }
    }
    write_result_files(&a, &out)?;
    report(&a, &out)?;
    Ok(ExitCode::SUCCESS)
}

/// The context and where the Agentfile comes from: standard input for `-` (as the context or
/// `-f -`), else the one rule of [`lib::locate`].
fn agentfile(a: &Args) -> miette::Result<(PathBuf, AgentfileSource)> {
    Ok(if a.context == "-" {
        (PathBuf::from("."), AgentfileSource::Stdin(read_stdin()?))
    } else if a.file.as_deref().is_some_and(|f| f.as_os_str() == "-") {
        (
            PathBuf::from(&a.context),
            AgentfileSource::Stdin(read_stdin()?),
        )
    } else {
        let (context, path) = lib::locate(Path::new(&a.context), a.file.as_deref());
        (context, AgentfileSource::Path(path))
    })
}

/// As docker does: a stale `--iidfile` or `--metadata-file` from an earlier build must not pass
/// for this one's result.
fn remove_result_files(a: &Args) -> miette::Result<()> {
    for f in [&a.iidfile, &a.metadata_file].into_iter().flatten() {
        match std::fs::remove_file(f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(fail_in(format!("cannot remove the old {}", f.display()), e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `--progress plain`: one line per layer of the built manifest (title, digest, size).
fn print_layers(store: &Store, out: &BuildOutput) {
    let Some(doc) = store
        .read_blob(&out.descriptor.digest)
        .ok()
        .and_then(|b| ManifestDoc::parse(&b).ok())
    else {
        return;
    };
    for l in &doc.layers {
        eprintln!(
            "layer {} {} ({})",
            l.title().unwrap_or("-"),
            l.digest,
            human_size(l.size)
        );
    }
}

/// `--iidfile` (the digest, no newline, as docker writes it) and `--metadata-file` (buildx's
/// `containerimage.digest`, `containerimage.descriptor` and `image.name` — the tags joined by `,` —
/// plus `otters.tags` and `otters.pushed` as arrays).
fn write_result_files(a: &Args, out: &BuildOutput) -> miette::Result<()> {
    use otters_core::json::Value;
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes).map_err(|e| {
            let context = format!(
                "the image was built ({}) but {} cannot be written",
                out.descriptor.digest,
                path.display()
            );
            fail_in(context, e)
        })
    };
    if let Some(path) = &a.iidfile {
        write(path, out.descriptor.digest.as_str().as_bytes())?;
    }
    if let Some(path) = &a.metadata_file {
        let d = &out.descriptor;
        let strings =
            |v: &mut dyn Iterator<Item = String>| Value::Array(v.map(Value::from).collect());
        let v = Value::object()
            .with("containerimage.digest", d.digest.as_str())
            .with(
                "containerimage.descriptor",
                Value::object()
                    .with("mediaType", d.media_type.as_str())
                    .with("digest", d.digest.as_str())
                    .with("size", d.size),
            )
            .with("image.name", out.tags.join(","))
            .with("otters.tags", strings(&mut out.tags.iter().cloned()))
            .with(
                "otters.pushed",
                strings(
                    &mut out
                        .pushed
                        .iter()
                        .map(|r| format!("{}@{}", r.reference, r.digest)),
                ),
            );
        let mut bytes = otters_core::json::to_indented(&v).map_err(fail)?;
        bytes.push(b'\n');
        write(path, &bytes)?;
    }
    Ok(())
}

/// In GitHub Actions (`GITHUB_STEP_SUMMARY` names a file), appends the build's digest, tags and
/// pushes to the job summary; a summary that cannot be written is a warning, not a failure.
fn write_job_summary(out: &BuildOutput) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let pushed: Vec<String> = out
        .pushed
        .iter()
        .map(|r| format!("{}@{}", r.reference, r.digest))
        .collect();
    let text =
        otters_pipeline::build::ci::summary(out.descriptor.digest.as_str(), &out.tags, &pushed);
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "warning: cannot append to the job summary {}: {e}",
            otters_core::escape::escape(&std::path::Path::new(&path).display().to_string())
        );
    }
}

fn report(a: &Args, out: &BuildOutput) -> miette::Result<()> {
    let text = !a.quiet && a.format == Format::Text;
    if !a.quiet {
        print_diagnostics(&out.file, &out.diagnostics);
        for k in &out.unused_build_args {
            eprintln!("warning: --build-arg {k} is not used: the Agentfile declares no ARG {k}");
        }
    }
    if text {
        for t in &out.tags {
            eprintln!("tagged {t}");
        }
        if let Some(Output::Archive(dest) | Output::Layout(dest)) =
            a.output.as_deref().map(parse_output).transpose()?
        {
            eprintln!("wrote {}", dest.display());
        }
        if let Some(l) = out.lock.as_ref().filter(|l| l.changed) {
            eprintln!("wrote {} ({} image(s) pinned)", l.path.display(), l.images);
        }
        for r in &out.pushed {
            eprintln!("pushed {}@{}", r.reference, r.digest);
        }
    }
    write_job_summary(out);
    if a.format == Format::Json {
        use otters_core::json::Value;
        let mut v = Value::object()
            .with("digest", out.descriptor.digest.as_str())
            .with(
                "tags",
                Value::Array(out.tags.iter().map(Value::from).collect()),
            )
            .with("size", out.descriptor.size);
        if !out.pushed.is_empty() {
            let pushed = out
                .pushed
                .iter()
                .map(|r| Value::from(format!("{}@{}", r.reference, r.digest).as_str()))
                .collect();
            v.push("pushed", Value::Array(pushed));
        }
        outln!(
            "{}",
            String::from_utf8_lossy(&otters_core::json::to_compact(&v).unwrap_or_default())
        );
    } else {
        outln!("{}", out.descriptor.digest);
    }
    Ok(())
}
