//! `otters fmt [--check] [--diff] [PATH...|-]`: rewrite Agentfiles in the canonical layout
//! (docs/fmt.md). Exit 0 when done (or nothing to change), 1 when `--check` finds a file to
//! change, 2 when a file has syntax errors (left untouched, errors shown as `otters lint` shows
//! them) or cannot be read or written.
//!
//! Files are found as `otters lint -r` finds them (a directory means every Agentfile below it)
//! and written back by `otters_core::rewrite`: atomically (a temporary file renamed over the
//! real one), in place for a file with other hard links, never when it is read-only. `-` reads
//! standard input and writes the result to standard output.
use super::stderr_colour;
use super::CliResult;
use otters_agentfile::diagnostic::codes;
use otters_agentfile::diagnostic::render::Human;
use otters_agentfile::fmt;
use otters_core::escape::escape;
use otters_core::files::reason;
use otters_core::rewrite::rewrite;
use otters_pipeline::project::{self, Input};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agentfiles, directories (every Agentfile below them) or `-` (standard input to standard output)
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Write nothing; show the diff and exit 1 when a file is not in the canonical layout
    #[arg(long)]
    pub check: bool,
    /// Write nothing; show the diff of what formatting would change
    #[arg(long)]
    pub diff: bool,
}

/// What became of one file.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Unchanged,
    Changed,
    /// Syntax errors, or a file that could not be read or written.
    Failed,
}

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: Args) -> CliResult {
    let inputs = match project::agentfiles(&a.paths, true, None) {
        Ok(i) => i,
        Err(e) => return Ok(fatal(&e.to_string())),
    };
    let mut human = Human::new(codes::RULES, stderr_colour());
    let mut worst = Outcome::Unchanged;
    for input in &inputs {
        worst = worst.max(one(&a, input, &mut human));
    }
    eprint!("{}", human.finish());
    Ok(match worst {
        Outcome::Failed => ExitCode::from(2),
        Outcome::Changed if a.check => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

fn fatal(message: &str) -> ExitCode {
    eprintln!("error: {}", escape(message));
    ExitCode::from(2)
}

/// Formats one input: writes it back, or prints it (stdin), or shows its diff.
fn one(a: &Args, input: &Input, human: &mut Human<'_>) -> Outcome {
    let name = input.name();
    let bytes = match input.read(std::io::stdin().lock()) {
        Ok(b) => b,
        Err(e) => {
            fatal(&e.to_string());
            return Outcome::Failed;
        }
    };
    let formatted = match fmt::format_bytes(&name, &bytes) {
        Ok(f) => f,
        Err(refused) => {
            eprint!("{}", human.file(&refused.file, &refused.diagnostics));
            eprintln!(
                "error: {} was not formatted: fix its syntax errors first",
                escape(&name)
            );
            return Outcome::Failed;
        }
    };
    let changed = formatted.as_bytes() != bytes.as_slice();
    if a.check || a.diff {
        if changed {
            // The input is UTF-8: it was formatted.
            let old = String::from_utf8_lossy(&bytes);
            out!("{}", escape(&fmt::unified(&name, &old, &formatted)));
        }
    } else if let Input::Stdin(_) = input {
        out!("{formatted}");
    } else if let Input::File { path, .. } = input {
        if changed {
            if let Err(e) = write_back(path, formatted.as_bytes()) {
                fatal(&e);
                return Outcome::Failed;
            }
        }
    }
    if changed {
        Outcome::Changed
    } else {
        Outcome::Unchanged
    }
}

/// Writes `bytes` to the file `path` leads to (through a symlink, the link's target):
/// `otters_core::rewrite` refuses a read-only file and writes a hard-linked one in place.
fn write_back(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let real = std::fs::canonicalize(path)
        .map_err(|e| format!("cannot write {}: {}", path.display(), reason(&e)))?;
    rewrite(&real, bytes)
        .map(drop)
        .map_err(|e| super::errors::fmt_write_failure(&e))
}
