//! `otters schema NAME` prints one published JSON Schema (exactly `schemas/v1/NAME.json`);
//! `otters schema --list` names them. The schemas are `otters_schema`'s.
use super::CliResult;
use crate::view::schema as view;
use otters_cli::schema::Args;
use std::process::ExitCode;

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: Args) -> CliResult {
    if a.list {
        out!("{}", view::list());
        return Ok(ExitCode::SUCCESS);
    }
    let name = a.name.unwrap_or_default();
    let Some(entry) = otters_schema::find(&name) else {
        eprint!("{}", view::unknown(&name));
        return Ok(ExitCode::from(2));
    };
    out!("{}", entry.text());
    Ok(ExitCode::SUCCESS)
}
