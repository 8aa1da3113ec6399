//! `otters diff A B`: two agents read (local store, registry, or an Agentfile directory built
//! into a temporary store) and their classified changes printed as text, JSON or Markdown.
//! Exits 0 (or 1 with `--exit-code` / `--fail-on` when asked), and 2 on any error.
//! The reading and classifying is `otters_diff`; the views are `crate::view::diff`.
use super::common::{
    build_error, build_failure, esc, open_store, platform, print_diagnostics,
    target_and_manifest_for_read,
};
use super::{fail, render, CliResult};
use crate::view::diff as view;
use miette::miette;
use otters_cli::diff::{DiffArgs, DiffFormat, FailOn};
use otters_diff::build::{build_dir, BuildDirError, Built, How, Pins};
use otters_diff::chain::follow;
use otters_diff::change::at_or_above;
use otters_diff::sbom::Open;
use otters_diff::{Change, Class, Side};
use otters_oci::{Platform, Store};
use otters_run::prepare::Target as Given;
use std::path::Path;
use std::process::ExitCode;

/// Exits 2, not 1, on an error: 1 is a gate's answer.
// Rationale: every dispatcher returns a `CliResult`; this one answers all of its errors itself.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: DiffArgs) -> CliResult {
    match compare(&a) {
        Ok(code) => Ok(code),
        Err(report) => {
            eprintln!("{}", render(&report));
            Ok(ExitCode::from(2))
        }
    }
}

fn compare(a: &DiffArgs) -> CliResult {
    let chosen = platform(a.platform.as_deref())?;
    let wanted = chosen.clone().unwrap_or_else(Platform::host);
    let store = open_store()?;
    let open = otters_diff::sbom::opener(store.clone(), a.place.for_read(), a.place.insecure);
    let (before, _kept_a) = side(&a.a, a, &wanted, &open, &store)?;
    let (after, _kept_b) = side(&a.b, a, &wanted, &open, &store)?;
    let opts = otters_diff::Options {
        show_values: a.show_values,
    };
    let mut changes = otters_diff::changes(&before, &after, opts);
    otters_diff::sbom::compare_pins(&mut changes, &open);
    match a.format {
        DiffFormat::Text => out!("{}", view::text(&before, &after, &changes)),
        DiffFormat::Json => out!("{}", view::json(&before, &after, &changes)),
        DiffFormat::Markdown => out!("{}", view::markdown(&before, &after, &changes)),
    }
    Ok(if fails(a, &changes) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Whether the gates asked for (`--exit-code`, `--fail-on`) fail on `changes`.
fn fails(a: &DiffArgs, changes: &[Change]) -> bool {
    let worst = a.fail_on.map(|f| match f {
        FailOn::Escalation => Class::Escalation,
        FailOn::Behaviour => Class::Behaviour,
        FailOn::Any => Class::Provenance,
    });
    worst.is_some_and(|c| at_or_above(changes, c)) || (a.exit_code && !changes.is_empty())
}

/// One side: an Agentfile directory built into a temporary store (kept alive by the returned
/// [`Built`]), or an image read where `--local`/`--remote` say.
fn side(
    reference: &str,
    a: &DiffArgs,
    platform: &Platform,
    open: &Open<'_>,
    store: &Store,
) -> miette::Result<(Side, Option<Built>)> {
    match Given::of(reference) {
        Given::Path => {
            let how = How {
                pins: if a.offline {
                    Pins::Offline
                } else if a.locked {
                    Pins::Locked
                } else {
                    Pins::Resolve
                },
                allow_unpinned: a.allow_unpinned,
                platform: a.platform.clone(),
                insecure: a.place.insecure,
            };
            // The user's store lends a FROM parent the lock pins; nothing is written to it.
            let built = build_dir(Path::new(reference), &how, store).map_err(|e| match e {
                BuildDirError::Build(e) => {
                    let kind = build_failure(*e);
                    build_error(kind).wrap_err(format!("cannot build {}", esc(reference)))
                }
                e @ BuildDirError::Store { .. } => fail(e),
            })?;
            print_diagnostics(&built.file, &built.warnings);
            let mut s =
                otters_diff::side::read(&built.target, reference, platform).map_err(fail)?;
            s.chain = follow(&built.target, &s, built.parent.clone(), open);
            Ok((s, Some(built)))
        }
        Given::MissingPath => Err(miette!(
            help = "give an existing Agentfile directory, or an image reference such as registry.example/agents/name:tag",
            "{}: no such file or directory",
            esc(reference)
        )),
        Given::Image => {
            let (target, top) = target_and_manifest_for_read(reference, &a.place)?;
            let mut s = otters_diff::side::read_with(&target, reference, platform, top)
                .map_err(fail)?;
            s.chain = follow(&target, &s, None, open);
            Ok((s, None))
        }
    }
}
