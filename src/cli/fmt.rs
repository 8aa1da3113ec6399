//! `otters fmt [--check] [--diff] [PATH...|-]`: rewrite Agentfiles in the canonical layout
//! (docs/fmt.md). Exit 0 when done (or nothing to change), 1 when `--check` finds a file to
//! change, 2 when a file has syntax errors (left untouched, errors shown as `otters lint` shows
//! them) or cannot be read or written.
//!
//! Files are found as `otters lint -r` finds them (a directory means every Agentfile below it);
//! each is formatted and written back by `otters_pipeline::reformat`. `-` reads standard input
//! and writes the result to standard output.
use super::stderr_colour;
use super::CliResult;
use otters_agentfile::diagnostic::codes;
use otters_agentfile::diagnostic::render::Human;
use otters_cli::fmt::Args;
use otters_pipeline::project;
use otters_pipeline::reformat::{self, Outcome};
use std::process::ExitCode;

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: Args) -> CliResult {
    let inputs = match project::agentfiles(&a.paths, true, None) {
        Ok(i) => i,
        Err(e) => {
            eprint!("{}", reformat::error_line(&e.to_string()));
            return Ok(ExitCode::from(2));
        }
    };
    let mut human = Human::new(codes::RULES, stderr_colour());
    let mut worst = Outcome::Unchanged;
    for input in &inputs {
        let stdin = std::io::stdin().lock();
        let done = reformat::one(input, stdin, a.check || a.diff, &mut human, &fmt_hint);
        out!("{}", done.stdout);
        eprint!("{}", done.stderr);
        worst = worst.max(done.outcome);
    }
    eprint!("{}", human.finish());
    Ok(match worst {
        Outcome::Failed => ExitCode::from(2),
        Outcome::Changed if a.check => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// fmt's own `help:` for a file it could not write (a read-only one: `--diff`).
fn fmt_hint(e: &otters_core::rewrite::RewriteError) -> Option<String> {
    super::errors::fmt_write_hint(e)
}
