//! `otters lint [PATH...|-]`: check Agentfiles and report every finding, for people, editors and
//! CI. Exit 0 when nothing reaches `--fail-on`, 1 when something does, 2 on usage or I/O errors.
//!
//! Machine formats (concise, json, sarif, github) go to stdout; the human format and the summary
//! line go to stderr.
use super::CliResult;
use otters_agentfile::check::{self, config, registry, Options};
use otters_agentfile::diagnostic::render::{self, ColorChoice, FileReport};
use otters_agentfile::diagnostic::{apply_safe_fixes, Severity};
use otters_core::files;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Concise,
    Json,
    Sarif,
    Github,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Info => Severity::Info,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agentfiles or directories to check (a directory means its Agentfile; `-` reads standard input)
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Check every file named Agentfile below each directory
    #[arg(short = 'r', long)]
    pub recursive: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Set an ARG value, as `otters build --build-arg` would (repeatable)
    #[arg(long = "build-arg", value_name = "KEY=VALUE", value_parser = parse_build_arg)]
    pub build_arg: Vec<(String, String)>,
    /// Exit 1 when a finding has at least this severity [default: error, or `fail-on` in otters.toml]
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// Use this config file instead of looking for otters.toml next to each Agentfile and above it
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Check CAPABILITY names against this list (one name per line) instead of the built-in catalogue
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Check portability to this openotters version: `alpha.50` or `L` (repeatable; `none` turns the
    /// portability lints off) [default: `[portability] targets` in otters.toml, else both]
    #[arg(long = "target", value_name = "VERSION")]
    pub targets: Vec<String>,
    /// Do not print the summary line
    #[arg(short, long)]
    pub quiet: bool,
    /// Apply the safe fixes to the files (each rewritten atomically), then report what is left
    #[arg(long)]
    pub fix: bool,
}

fn parse_build_arg(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!(
            "`{s}` is not KEY=VALUE (for example `--build-arg VERSION=1.2`)"
        )),
    }
}

/// A usage or I/O problem: printed to stderr, exit 2.
pub(super) struct Fatal(pub(super) String);

/// One input to lint: where to read it and the name to show.
enum Input {
    Stdin,
    /// `root/rel`: a symlinked Agentfile is followed only while it stays inside `root`, the
    /// directory the user named (for a file, its own directory), so a repository cannot make
    /// `otters lint` print `/proc/self/environ` or a key file in its snippets.
    File {
        path: PathBuf,
        root: PathBuf,
        rel: PathBuf,
        name: String,
    },
}

impl Input {
    fn file(path: PathBuf, root: PathBuf, rel: PathBuf) -> Input {
        Input::File {
            name: display(&path),
            path,
            root,
            rel,
        }
    }
}

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: Args) -> CliResult {
    match lint(&a) {
        Ok(code) => Ok(code),
        Err(Fatal(message)) => {
            eprintln!("error: {}", otters_core::escape::escape(&message));
            Ok(ExitCode::from(2))
        }
    }
}

fn lint(a: &Args) -> Result<ExitCode, Fatal> {
    let inputs = collect_inputs(&a.paths, a.recursive)?;
    if a.fix && inputs.iter().any(|i| matches!(i, Input::Stdin)) {
        return Err(Fatal(
            "--fix rewrites files; it cannot fix standard input".to_owned(),
        ));
    }
    let catalogue = match &a.capabilities {
        Some(p) => Some(read_capabilities(p)?),
        None => None,
    };
    let fixed_config = match &a.config {
        Some(p) => Some(load_config(p, false)?),
        None => None,
    };
    let flag_targets = if a.targets.is_empty() {
        None
    } else {
        Some(config::parse_targets(&a.targets).map_err(|t| {
            Fatal(format!(
                "--target {t:?} is not an openotters version otters knows; use alpha.50, L or none"
            ))
        })?)
    };
    let mut found_configs: BTreeMap<PathBuf, Option<config::LintConfig>> = BTreeMap::new();
    // Every input is read (and its config found) before anything is printed, so a file that
    // cannot be read stops the run with no partial output; then each file is checked, printed
    // and dropped in turn, so memory holds one file's findings, not every file's (json and sarif
    // are one document and keep them all).
    let mut loaded = Vec::with_capacity(inputs.len());
    for input in &inputs {
        let (name, bytes, dir) = read_input(input)?;
        let cfg = match &fixed_config {
            Some(c) => c.clone(),
            None => find_config(&dir, &mut found_configs)?.unwrap_or_default(),
        };
        let sources: Option<std::sync::Arc<dyn check::SourceKinds>> = match input {
            Input::File { .. } => Some(std::sync::Arc::new(ContextDir(dir.clone()))),
            Input::Stdin => None,
        };
        let locked = locked_references(input);
        let path = match input {
            Input::File { path, .. } if a.fix => Some(path.clone()),
            _ => None,
        };
        loaded.push((name, bytes, cfg, sources, locked, path));
    }
    let rules = registry::RULES;
    let stderr = std::io::stderr();
    let colour =
        if stderr.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) {
            ColorChoice::Always
        } else {
            ColorChoice::Never
        };
    let mut human = render::Human::new(rules, colour);
    let mut counts = Counts::default();
    let mut documents: Vec<FileReport> = Vec::new();
    let mut failed = false;
    for (name, bytes, cfg, sources, locked, fix_path) in loaded {
        let opts = Options {
            build_args: a.build_arg.iter().cloned().collect(),
            capability_catalogue: catalogue.clone(),
            severity_overrides: cfg.severity.clone(),
            locked,
            portability: flag_targets.clone().or_else(|| cfg.portability.clone()),
            sources,
        };
        let (mut file, mut analysis) = check::analyze_bytes(&name, &bytes, &opts);
        drop(bytes);
        if let Some(path) = fix_path {
            if let Some(fixed) = apply_safe_fixes(&file.text, &analysis.diagnostics) {
                write_fixed(&path, &fixed)?;
                (file, analysis) = check::analyze_bytes(&name, fixed.as_bytes(), &opts);
            }
        }
        let threshold = a
            .fail_on
            .map(FailOn::severity)
            .or(cfg.fail_on)
            .unwrap_or(Severity::Error);
        let diags = analysis.diagnostics;
        failed |= diags.iter().any(|d| d.severity >= threshold);
        counts.add(&diags);
        match a.format {
            Format::Human => eprint!("{}", human.file(&file, &diags)),
            Format::Concise => out!("{}", render::concise(&[(file, diags)])),
            Format::Github => out!("{}", render::github(&[(file, diags)], rules)),
            Format::Json | Format::Sarif => documents.push((file, diags)),
        }
    }
    match a.format {
        Format::Human => {
            eprint!("{}", human.finish());
            if !a.quiet {
                eprintln!("{}", counts.summary());
            }
        }
        Format::Json => out!("{}", render::json(&documents)),
        Format::Sarif => out!("{}", render::sarif(&documents, rules)),
        Format::Concise | Format::Github => {}
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Replaces the file at `path` with `text`: a temporary file beside it, synced, with the old
/// file's permissions, renamed over it. A symbolic link is not rewritten (the rename would
/// replace the link, not the file it points to).
fn write_fixed(path: &Path, text: &str) -> Result<(), Fatal> {
    use std::io::Write as _;
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        Fatal(format!("cannot {what} {}: {e}", path.display()))
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| fail("fix", &e))?;
    if meta.file_type().is_symlink() {
        return Err(fail(
            "fix",
            &"it is a symbolic link; fix the file it points to",
        ));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".Agentfile.fix.")
        .tempfile_in(dir)
        .map_err(|e| fail("write a temporary file beside", &e))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().set_permissions(meta.permissions()))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| fail("write a temporary file beside", &e))?;
    tmp.persist(path).map_err(|e| fail("replace", &e.error))?;
    Ok(())
}

/// The Agentfile's directory, standing for the build context of `otters build DIR`: AF230 asks it
/// whether an ADD source is a directory. Sources that are absolute or climb out with `..` are
/// not looked up (the build refuses them with AF302), and a symlink named as the source is not
/// followed (the build refuses that too).
#[derive(Debug)]
pub(super) struct ContextDir(pub(super) PathBuf);

impl check::SourceKinds for ContextDir {
    fn is_dir(&self, src: &str) -> bool {
        let rel = Path::new(src);
        let inside = rel.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        inside && std::fs::symlink_metadata(self.0.join(rel)).is_ok_and(|m| m.file_type().is_dir())
    }
}

/// Findings by severity, and files checked, for the summary line.
#[derive(Default)]
struct Counts {
    files: usize,
    errors: usize,
    warnings: usize,
    info: usize,
}

impl Counts {
    fn add(&mut self, diags: &[otters_agentfile::diagnostic::Diagnostic]) {
        self.files += 1;
        for d in diags {
            match d.severity {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
                Severity::Info => self.info += 1,
            }
        }
    }

    /// "2 errors, 1 warning in 3 files", or "no problems in 1 file".
    fn summary(&self) -> String {
        let files = plural(self.files, "file", "files");
        let mut parts = Vec::new();
        for (n, one, many) in [
            (self.errors, "error", "errors"),
            (self.warnings, "warning", "warnings"),
            (self.info, "info", "info"),
        ] {
            if n > 0 {
                parts.push(plural(n, one, many));
            }
        }
        if parts.is_empty() {
            format!("no problems in {files}")
        } else {
            format!("{} in {files}", parts.join(", "))
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Shows `./x` as `x`, as people type it.
fn display(p: &Path) -> String {
    let s = p.to_string_lossy().into_owned();
    s.strip_prefix("./").map(str::to_owned).unwrap_or(s)
}

fn collect_inputs(paths: &[PathBuf], recursive: bool) -> Result<Vec<Input>, Fatal> {
    let mut inputs = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            inputs.push(Input::Stdin);
        } else if p.is_dir() && recursive {
            let mut found = Vec::new();
            walk(p, &mut found)?;
            if found.is_empty() {
                return Err(Fatal(format!(
                    "no file named Agentfile under {}",
                    p.display()
                )));
            }
            found.sort();
            inputs.extend(found.into_iter().map(|path| {
                let rel = path.strip_prefix(p).unwrap_or(&path).to_owned();
                Input::file(path, p.clone(), rel)
            }));
        } else if p.is_dir() {
            inputs.push(Input::file(
                p.join("Agentfile"),
                p.clone(),
                PathBuf::from("Agentfile"),
            ));
        } else {
            let (root, rel) = files::parent_and_name(p);
            inputs.push(Input::file(p.clone(), root, rel));
        }
    }
    Ok(inputs)
}

/// Every file named `Agentfile` below `dir`, skipping hidden directories and `target`.
fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), Fatal> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Fatal(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries {
        let entry = entry.map_err(|e| Fatal(format!("cannot read {}: {e}", dir.display())))?;
        let path = entry.path();
        let name = entry.file_name();
        let hidden = name.to_string_lossy().starts_with('.');
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !hidden && name != "target" {
                walk(&path, found)?;
            }
        } else if name == "Agentfile" {
            found.push(path);
        }
    }
    Ok(())
}

/// The display name, bytes, and the directory to look for otters.toml from.
/// The references `Agentfile.lock` beside a file input pins (none for standard input).
fn locked_references(input: &Input) -> std::collections::BTreeSet<String> {
    match input {
        Input::File { path, .. } => otters_pipeline::resolve::lockfile::pinned_beside(path),
        Input::Stdin => std::collections::BTreeSet::new(),
    }
}

fn read_input(input: &Input) -> Result<(String, Vec<u8>, PathBuf), Fatal> {
    match input {
        Input::Stdin => {
            let bytes = files::read_stream(
                std::io::stdin().lock(),
                Path::new("standard input"),
                "Agentfile",
                files::MAX_AGENTFILE,
            )
            .map_err(|e| Fatal(e.to_string()))?;
            Ok(("<stdin>".to_owned(), bytes, PathBuf::from(".")))
        }
        Input::File {
            path,
            root,
            rel,
            name,
        } => {
            let bytes = files::read_confined(
                root,
                rel,
                Path::new(name),
                "Agentfile",
                files::MAX_AGENTFILE,
            )
            .map_err(|e| Fatal(e.to_string()))?;
            let dir = path.parent().map_or_else(
                || PathBuf::from("."),
                |d| {
                    if d.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        d.to_path_buf()
                    }
                },
            );
            Ok((name.clone(), bytes, dir))
        }
    }
}

/// Reads a config file: one named with `--config` as given, one found by the search only inside
/// its own directory (a repository's `otters.toml` linked elsewhere is refused, since a parse
/// error would quote the file it points to).
fn load_config(path: &Path, found: bool) -> Result<config::LintConfig, Fatal> {
    let what = "config file";
    let bytes = if found {
        let (root, rel) = files::parent_and_name(path);
        files::read_confined(&root, &rel, path, what, files::MAX_SMALL_FILE)
    } else {
        files::read_named(path, what, files::MAX_SMALL_FILE)
    }
    .map_err(|e| Fatal(e.to_string()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Fatal(format!("invalid config {}: not UTF-8", path.display())))?;
    config::parse(&text).map_err(|e| Fatal(format!("invalid config {}: {e}", path.display())))
}

/// The nearest otters.toml (or .otters.toml) in `dir` or above it, memoised per directory.
pub(super) fn find_config(
    dir: &Path,
    cache: &mut BTreeMap<PathBuf, Option<config::LintConfig>>,
) -> Result<Option<config::LintConfig>, Fatal> {
    let start = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if let Some(hit) = cache.get(&start) {
        return Ok(hit.clone());
    }
    let mut result = None;
    'up: for d in start.ancestors() {
        for name in config::FILE_NAMES {
            let candidate = d.join(name);
            if candidate.is_file() {
                result = Some(load_config(&candidate, true)?);
                break 'up;
            }
        }
    }
    cache.insert(start, result.clone());
    Ok(result)
}

fn read_capabilities(path: &Path) -> Result<Vec<String>, Fatal> {
    let bytes = files::read_named(path, "capability list", files::MAX_SMALL_FILE)
        .map_err(|e| Fatal(e.to_string()))?;
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}
