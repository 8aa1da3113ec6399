//! `otters explain CODE` prints a code's documentation page (exactly `docs/rules/CODE.md`);
//! `otters explain --list` prints the table of every code.
use super::CliResult;
use crate::view::explain as view;
use otters_agentfile::diagnostic::codes;
use otters_cli::explain::{Args, ListFormat};
use std::process::ExitCode;

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: Args) -> CliResult {
    let query = a.code.unwrap_or_default();
    match codes::lookup(&query).or_else(|| codes::by_name(&query)) {
        _ if a.list && a.format == ListFormat::Json => out!("{}", view::list_json()),
        _ if a.list => out!("{}", view::list_text()),
        Some(rule) => out!("{}", rule.doc),
        None => {
            eprint!("{}", view::unknown(&query));
            return Ok(ExitCode::from(2));
        }
    }
    Ok(ExitCode::SUCCESS)
}
