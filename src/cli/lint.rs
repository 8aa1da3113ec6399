//! `otters lint [PATH...|-]`: check Agentfiles and report every finding, for people, editors and
//! CI. Exit 0 when nothing reaches `--fail-on`, 1 when something does, 2 on usage or I/O errors.
//!
//! Machine formats (concise, json, sarif, github, gitlab, junit, checkstyle) go to stdout; the human format and the summary
//! line go to stderr.
use super::CliResult;
use crate::view::lint::{Out, Printer};
use otters_agentfile::diagnostic::Severity;
use otters_cli::lint::{Args, FailOn};
use otters_pipeline::lint::{self, LintError, Loaded, Request};
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: Args) -> CliResult {
    // A usage error, as clap's own: exit 2.
    let build_args = match super::flags::build_arg_values(&a.build_flags, a.quiet) {
        Ok(args) => args.values,
        Err(report) => {
            eprintln!("{}", super::render(&report));
            return Ok(ExitCode::from(2));
        }
    };
    let policy = match a.policy.load() {
        Ok(p) => p,
        Err(e) => return Ok(fatal(&LintError::Policy(e))),
    };
    let req = Request {
        paths: &a.paths,
        recursive: a.recursive,
        stdin_filename: a.stdin_filename.as_deref(),
        config: a.config.as_deref(),
        capabilities: a.capabilities.as_deref(),
        targets: &a.targets,
        build_args,
        fix: a.fix,
        policy,
    };
    let store = super::otters_home().join("store");
    match lint::load(&req, &store, std::io::stdin().lock()) {
        Ok(loaded) => Ok(check_and_print(&a, &req.build_args, loaded)),
        Err(e) => Ok(fatal(&e)),
    }
}

/// A usage or I/O problem: printed to stderr, exit 2.
fn fatal(e: &LintError) -> ExitCode {
    eprintln!("error: {}", otters_core::escape::escape(&e.to_string()));
    if let Some(help) = super::errors::hint_of(e) {
        eprintln!("help: {}", otters_core::escape::escape(&help));
    }
    ExitCode::from(2)
}

/// Each file is checked, printed and dropped in turn, so memory holds one file's findings, not
/// every file's (`crate::view::lint`).
fn check_and_print(
    a: &Args,
    build_args: &BTreeMap<String, String>,
    loaded: Vec<Loaded>,
) -> ExitCode {
    let mut printer = Printer::new(a.format, super::stderr_colour());
    let mut failed = false;
    let mut declared = BTreeSet::new();
    // A fixed file that could not be written: exit 2, as for any I/O error.
    let mut unwritten = false;
    for f in loaded {
        let checked = f.check();
        if let Some(e) = &checked.unwritten {
            fatal(e);
            unwritten = true;
        }
        let threshold = a
            .fail_on
            .map(FailOn::severity)
            .or(checked.fail_on)
            .unwrap_or(Severity::Error);
        failed |= checked.diagnostics.iter().any(|d| d.severity >= threshold);
        declared.extend(checked.args);
        print(printer.file(checked.file, checked.diagnostics));
    }
    if !a.quiet {
        let unused = lint::unused_build_args(build_args, |k| declared.contains(k));
        eprint!("{}", crate::view::build::unused_build_args(&unused));
    }
    print(printer.finish(!a.quiet));
    if unwritten {
        ExitCode::from(2)
    } else if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print(o: Out) {
    out!("{}", o.stdout);
    eprint!("{}", o.stderr);
}
