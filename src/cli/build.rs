//! `otters build`: Agentfile → checked model → plan → blobs + manifest in the local store → tags.
//!
//! Human output (diagnostics, progress, "tagged" lines) goes to stderr; stdout carries the digest
//! (or, with `--format json`, `{"digest","tags","size"}`).
use super::CliResult;
use crate::check;
use crate::diagnostic::render::{human, ColorChoice};
use crate::diagnostic::{Diagnostic, SourceFile};
use crate::lower::{self, epoch, plan, Pins};
use crate::oci::hash_cache::HashCache;
use crate::oci::ignore::Ignore;
use crate::oci::inputs::FsInputs;
use crate::oci::refname::tag_name;
use crate::oci::write::{write_plan, Progress, WriteError, WriteOptions};
use crate::oci::{archive, Store};
use miette::{miette, IntoDiagnostic};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
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
    /// Set a build argument (repeatable)
    #[arg(long = "build-arg", value_name = "K=V")]
    pub build_args: Vec<String>,
    /// Also write the image to `type=oci-layout,dest=DIR` or `type=oci-archive,dest=FILE`
    #[arg(long)]
    pub output: Option<String>,
    /// Print only the digest
    #[arg(short, long)]
    pub quiet: bool,
    /// Output format
    #[arg(long, value_parser = ["text", "json"], default_value = "text")]
    pub format: String,
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
    /// Platform to resolve RUNTIME and BIN images for (e.g. linux/amd64)
    #[arg(long)]
    pub platform: Option<String>,
    /// Re-read and re-hash every input, ignoring the file-hash cache
    #[arg(long)]
    pub no_cache: bool,
}

/// Where the Agentfile comes from and what the context is.
struct Located {
    context: PathBuf,
    name: String,
    bytes: Vec<u8>,
}

fn locate(a: &Args) -> miette::Result<Located> {
    if a.context == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| miette!("cannot read the Agentfile from standard input: {e}"))?;
        return Ok(Located {
            context: PathBuf::from("."),
            name: "<stdin>".into(),
            bytes,
        });
    }
    let given = Path::new(&a.context);
    let (context, path) = match &a.file {
        Some(f) if f.as_os_str() == "-" => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| miette!("cannot read the Agentfile from standard input: {e}"))?;
            return Ok(Located {
                context: given.to_owned(),
                name: "<stdin>".into(),
                bytes,
            });
        }
        Some(f) => (given.to_owned(), given.join(f)),
        None if given.is_file() => (
            given
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_owned(),
            given.to_owned(),
        ),
        None => (given.to_owned(), given.join("Agentfile")),
    };
    if !context.is_dir() {
        return Err(miette!(
            help = "give a directory that holds the Agentfile and the files it adds",
            "build context {} is not a directory",
            context.display()
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| {
        miette!(
            help = "pass the Agentfile with -f, relative to the context",
            "cannot read Agentfile {}: {e}",
            path.display()
        )
    })?;
    Ok(Located {
        context,
        name: path.display().to_string(),
        bytes,
    })
}

fn parse_build_args(items: &[String]) -> miette::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| {
                    miette!(
                        "--build-arg `{kv}` is not KEY=VALUE; write it as --build-arg NAME=value"
                    )
                })
        })
        .collect()
}

/// `--output` destinations.
enum Output {
    Layout(PathBuf),
    Archive(PathBuf),
}

fn parse_output(spec: &str) -> miette::Result<Output> {
    let mut kind = None;
    let mut dest = None;
    for part in spec.split(',') {
        match part.split_once('=') {
            Some(("type", t)) => kind = Some(t.to_owned()),
            Some(("dest", d)) => dest = Some(PathBuf::from(d)),
            _ => return Err(miette!("--output `{spec}`: unknown part `{part}`; use type=oci-layout,dest=DIR or type=oci-archive,dest=FILE")),
        }
    }
    let Some(dest) = dest.filter(|d| !d.as_os_str().is_empty()) else {
        return Err(miette!("--output `{spec}` has no dest=; use type=oci-layout,dest=DIR or type=oci-archive,dest=FILE"));
    };
    match kind.as_deref() {
        Some("oci-layout" | "oci") => Ok(Output::Layout(dest)),
        Some("oci-archive" | "tar") => Ok(Output::Archive(dest)),
        other => Err(miette!(
            "--output type `{}` is not supported; use oci-layout or oci-archive",
            other.unwrap_or("")
        )),
    }
}

fn color() -> ColorChoice {
    if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        ColorChoice::Always
    } else {
        ColorChoice::Never
    }
}

fn print_diagnostics(file: &SourceFile, diags: &[Diagnostic]) {
    if !diags.is_empty() {
        eprint!(
            "{}",
            human(
                &[(file.clone(), diags.to_vec())],
                check::registry::RULES,
                color()
            )
        );
    }
}

/// Progress bars on a TTY, nothing elsewhere.
struct Bars(Option<indicatif::ProgressBar>, bool);

impl Progress for Bars {
    fn begin(&mut self, title: &str, total: u64) {
        if self.1 {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:20!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            ) {
                bar.set_style(style);
            }
            bar.set_message(title.to_owned());
            self.0 = Some(bar);
        }
    }
    fn advance(&mut self, bytes: u64) {
        if let Some(b) = &self.0 {
            b.inc(bytes);
        }
    }
    fn end(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
}

pub fn run(a: Args) -> CliResult {
    let output = a.output.as_deref().map(parse_output).transpose()?;
    let build_args = parse_build_args(&a.build_args)?;
    let epoch =
        epoch::parse(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref()).into_diagnostic()?;
    let located = locate(&a)?;

    let opts = check::Options {
        build_args,
        ..check::Options::default()
    };
    let (file, analysis) = check::analyze_bytes(&located.name, &located.bytes, &opts);
    let show = !a.quiet || analysis.has_errors();
    if show {
        print_diagnostics(&file, &analysis.diagnostics);
    }
    if analysis.has_errors() {
        return Err(miette!("{} has errors; nothing was built", located.name));
    }

    let name = analysis
        .model
        .agent
        .name_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("agent");
    let wanted = if a.tags.is_empty() {
        vec![format!("{name}:latest")]
    } else {
        a.tags.clone()
    };
    let tags: Vec<String> = wanted
        .iter()
        .map(|t| tag_name(t).map_err(|e| miette!("-t {t}: {e}")))
        .collect::<Result<_, _>>()?;

    // Registry resolution (RUNTIME/BIN pins, --offline/--locked/--platform/--push) belongs to the
    // resolve stage; until it lands every reference is built unpinned.
    let pins = Pins::default();
    let inputs = FsInputs::new(&located.context).map_err(|e| {
        miette!(
            "cannot open build context {}: {e}",
            located.context.display()
        )
    })?;
    let plan = match lower::lower(
        &analysis.model,
        &located.bytes,
        &pins,
        &inputs,
        &plan::Options {
            source_date_epoch: epoch,
        },
    ) {
        Ok(p) => p,
        Err(lower::LowerError::Inputs(diags)) => {
            print_diagnostics(&file, &diags);
            return Err(miette!(
                "{} names build inputs that cannot be used; nothing was built",
                located.name
            ));
        }
        Err(e) => return Err(miette!("cannot lower {}: {e}", located.name)),
    };
    let ignore_path = inputs.root().join(".agentignore");
    let ignore = match std::fs::read_to_string(&ignore_path) {
        Ok(text) => Ignore::parse(&text).map_err(|e| miette!("{}: {e}", ignore_path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ignore::default(),
        Err(e) => return Err(miette!("cannot read {}: {e}", ignore_path.display())),
    };

    let home = super::otters_home();
    let store_root = match &output {
        Some(Output::Layout(dir)) => dir.clone(),
        _ => home.join("store"),
    };
    let store = Store::open(&store_root).into_diagnostic()?;
    let mut cache = (!a.no_cache).then(|| HashCache::load(home.join("cache/blobs.json")));
    let mut bars = Bars(None, !a.quiet && std::io::stderr().is_terminal());
    let written = write_plan(
        &store,
        &plan,
        WriteOptions {
            ignore: &ignore,
            cache: cache.as_mut(),
            progress: &mut bars,
        },
    );
    let descriptor = match written {
        Ok(d) => d,
        Err(
            e @ WriteError::Input {
                span: Some(span), ..
            },
        ) => {
            let code = if e.is_escape() { "AF302" } else { "AF303" };
            let d = Diagnostic::error(code, span, e.to_string()).with_help(
                "directory ADDs may hold only regular files, directories and symlinks that stay inside them",
            );
            print_diagnostics(&file, &[d]);
            return Err(miette!(
                "{} names build inputs that cannot be used",
                located.name
            ));
        }
        Err(e) => {
            return Err(miette!(
                "cannot write the image into {}: {e}",
                store_root.display()
            ))
        }
    };
    if let Some(c) = &cache {
        // The cache only speeds builds up; failing to save it is not a build failure.
        let _ = c.save();
    }
    for t in &tags {
        store.tag(t, &descriptor).into_diagnostic()?;
        if !a.quiet && a.format == "text" {
            eprintln!("tagged {t}");
        }
    }
    if let Some(Output::Archive(dest)) = &output {
        archive::save(&store, &descriptor, &tags, dest).into_diagnostic()?;
        if !a.quiet && a.format == "text" {
            eprintln!("wrote {}", dest.display());
        }
    }
    if a.format == "json" {
        let v = crate::json::Value::object()
            .with("digest", descriptor.digest.as_str())
            .with(
                "tags",
                crate::json::Value::Array(tags.iter().map(crate::json::Value::from).collect()),
            )
            .with("size", descriptor.size);
        println!(
            "{}",
            String::from_utf8_lossy(&crate::json::to_compact(&v).unwrap_or_default())
        );
    } else {
        println!("{}", descriptor.digest);
    }
    Ok(ExitCode::SUCCESS)
}
