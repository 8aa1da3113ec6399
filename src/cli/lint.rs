//! `otters lint [PATH...|-]`: check Agentfiles and report every finding, for people, editors and
//! CI. Exit 0 when nothing reaches `--fail-on`, 1 when something does, 2 on usage or I/O errors.
//!
//! Machine formats (concise, json, sarif, github, gitlab, junit, checkstyle) go to stdout; the human format and the summary
//! line go to stderr.
use super::CliResult;
use otters_agentfile::check::{self, config, Options};
use otters_agentfile::diagnostic::codes;
use otters_agentfile::diagnostic::render::{self, FileReport};
use otters_agentfile::diagnostic::{apply_safe_fixes, Severity};
use otters_pipeline::project::{self, ConfigFinder, Input, LintFlags, ProjectError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Concise,
    Json,
    Sarif,
    Github,
    /// GitLab Code Quality (Code Climate issues), for `artifacts: reports: codequality`
    Gitlab,
    /// `JUnit` XML: a test suite per file, a failed test case per finding
    Junit,
    /// Checkstyle XML
    Checkstyle,
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
    /// Lint standard input (`-`) as if it were this file: otters.toml is looked for from its
    /// directory (as are Agentfile.lock and ADD sources), and findings name it
    #[arg(long, value_name = "PATH")]
    pub stdin_filename: Option<PathBuf>,
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

impl From<ProjectError> for Fatal {
    fn from(e: ProjectError) -> Fatal {
        Fatal(e.to_string())
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

/// One Agentfile read, with what checking it needs.
struct Loaded {
    name: String,
    bytes: Vec<u8>,
    config: config::LintConfig,
    /// What the file is checked with ([`project::lint_options`]).
    opts: Options,
    /// The file to rewrite with the safe fixes (`--fix`).
    fix: Option<PathBuf>,
}

/// The flags that apply to every file.
struct Settings {
    flags: LintFlags,
    config: Option<config::LintConfig>,
    fix: bool,
}

fn lint(a: &Args) -> Result<ExitCode, Fatal> {
    if a.stdin_filename.is_some() && !a.paths.iter().any(|p| p.as_os_str() == "-") {
        return Err(Fatal(
            "--stdin-filename names standard input: pass `-` to read it".to_owned(),
        ));
    }
    let inputs = project::agentfiles(&a.paths, a.recursive, a.stdin_filename.as_deref())?;
    if a.fix && inputs.iter().any(|i| matches!(i, Input::Stdin(_))) {
        return Err(Fatal(
            "--fix rewrites files; it cannot fix standard input".to_owned(),
        ));
    }
    let settings = settings(a)?;
    let loaded = load(&inputs, &settings)?;
    Ok(check_and_print(a, loaded))
}

fn settings(a: &Args) -> Result<Settings, Fatal> {
    let catalogue = a
        .capabilities
        .as_deref()
        .map(project::read_capabilities)
        .transpose()?;
    let config = a
        .config
        .as_deref()
        .map(|p| project::load_config(p, false))
        .transpose()?;
    let targets = if a.targets.is_empty() {
        None
    } else {
        Some(config::parse_targets(&a.targets).map_err(|t| {
            Fatal(format!(
                "--target {t:?} is not an openotters version otters knows; use alpha.50, L or none"
            ))
        })?)
    };
    Ok(Settings {
        flags: LintFlags {
            build_args: a.build_arg.iter().cloned().collect(),
            catalogue,
            targets,
        },
        config,
        fix: a.fix,
    })
}

/// Every input is read (and its config found) before anything is printed, so a file that cannot
/// be read stops the run with no partial output.
fn load(inputs: &[Input], settings: &Settings) -> Result<Vec<Loaded>, Fatal> {
    let mut configs = ConfigFinder::default();
    let store = super::otters_home().join("store");
    let mut loaded = Vec::with_capacity(inputs.len());
    for input in inputs {
        let bytes = input
            .read(std::io::stdin().lock())
            .map_err(|e| Fatal(e.to_string()))?;
        let config = match &settings.config {
            Some(c) => c.clone(),
            None => configs.find(&input.dir())?.unwrap_or_default(),
        };
        loaded.push(Loaded {
            name: input.name(),
            bytes,
            opts: project::lint_options(input, &config, &settings.flags, &store),
            config,
            fix: match input {
                Input::File { path, .. } if settings.fix => Some(path.clone()),
                _ => None,
            },
        });
    }
    Ok(loaded)
}

/// Each file is checked, printed and dropped in turn, so memory holds one file's findings, not
/// every file's (json, sarif, gitlab, junit and checkstyle are one document and keep them all).
fn check_and_print(a: &Args, loaded: Vec<Loaded>) -> ExitCode {
    let rules = codes::RULES;
    let mut human = render::Human::new(rules, super::stderr_colour());
    let mut counts = Counts::default();
    let mut documents: Vec<FileReport> = Vec::new();
    let mut failed = false;
    // A fixed file that could not be written: exit 2, as for any I/O error.
    let mut unwritten = false;
    for f in loaded {
        let opts = f.opts;
        let (mut file, mut analysis) = check::analyze_bytes(&f.name, &f.bytes, &opts);
        drop(f.bytes);
        if let Some(path) = &f.fix {
            if let Some(fixed) = apply_safe_fixes(&file.text, &analysis.diagnostics) {
                if let Err(Fatal(e)) = write_fixed(path, &fixed) {
                    eprintln!("error: {}", otters_core::escape::escape(&e));
                    unwritten = true;
                } else {
                    (file, analysis) = check::analyze_bytes(&f.name, fixed.as_bytes(), &opts);
                }
            }
        }
        let threshold = a
            .fail_on
            .map(FailOn::severity)
            .or(f.config.fail_on)
            .unwrap_or(Severity::Error);
        let diags = analysis.diagnostics;
        failed |= diags.iter().any(|d| d.severity >= threshold);
        counts.add(&diags);
        match a.format {
            Format::Human => eprint!("{}", human.file(&file, &diags)),
            Format::Concise => out!("{}", render::concise(&[(file, diags)])),
            Format::Github => out!("{}", render::github(&[(file, diags)], rules)),
            Format::Json | Format::Sarif | Format::Gitlab | Format::Junit | Format::Checkstyle => {
                documents.push((file, diags));
            }
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
        Format::Gitlab => out!("{}", render::gitlab(&documents)),
        Format::Junit => out!("{}", render::junit(&documents, rules)),
        Format::Checkstyle => out!("{}", render::checkstyle(&documents)),
        Format::Concise | Format::Github => {}
    }
    if unwritten {
        ExitCode::from(2)
    } else if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes `text` to the file at `path` through `otters_core::rewrite` (atomic replace, in place
/// for a hard-linked file, never a read-only one). A symbolic link is not rewritten: fix the file
/// it points to.
fn write_fixed(path: &Path, text: &str) -> Result<(), Fatal> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| Fatal(format!("cannot fix {}: {e}", path.display())))?;
    if meta.file_type().is_symlink() {
        return Err(Fatal(format!(
            "cannot fix {}: it is a symbolic link; fix the file it points to",
            path.display()
        )));
    }
    otters_core::rewrite::rewrite(path, text.as_bytes())
        .map(drop)
        .map_err(|e| Fatal(e.to_string()))
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
