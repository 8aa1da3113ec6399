//! `otters lint`.
use otters_agentfile::diagnostic::Severity;
use std::path::PathBuf;
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
    pub fn severity(self) -> Severity {
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
    #[command(flatten)]
    pub build_flags: super::flags::BuildArgFlags,
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
    #[command(flatten)]
    pub policy: super::flags::PolicyFlags,
}
