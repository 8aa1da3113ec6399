//! `otters fmt [--check] [--diff] [PATH...|-]`: rewrite Agentfiles in the canonical layout
//! (docs/fmt.md). Exit 0 when done (or nothing to change), 1 when `--check` finds a file to
//! change, 2 when a file has syntax errors (left untouched, errors shown as `otters lint` shows
//! them) or cannot be read or written.
//!
//! Files are found as `otters lint -r` finds them (a directory means every Agentfile below it)
//! and written atomically: a temporary file beside the real one, synced, given the file's mode,
//! renamed over it. `-` reads standard input and writes the result to standard output.
use super::stderr_colour;
use super::CliResult;
use otters_agentfile::diagnostic::codes;
use otters_agentfile::diagnostic::render::Human;
use otters_agentfile::fmt;
use otters_core::escape::escape;
use otters_pipeline::project::{self, Input};
use std::io::Write as _;
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
            if let Err(e) = write_atomic(path, formatted.as_bytes()) {
                fatal(&format!("cannot write {name}: {e}"));
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

/// Replaces the file `path` leads to (through a symlink, the link's target) with `bytes`,
/// keeping its permissions: written to a temporary file beside it, synced, renamed over it,
/// then the directory synced, so a crash leaves the old file or the new one, never half of one.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let real = std::fs::canonicalize(path)?;
    let dir = real.parent().unwrap_or(Path::new("."));
    let permissions = std::fs::metadata(&real)?.permissions();
    let mut tmp = tempfile::Builder::new()
        .prefix(".otters-fmt-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().set_permissions(permissions)?;
    tmp.as_file().sync_all()?;
    tmp.persist(&real).map_err(|e| e.error)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
