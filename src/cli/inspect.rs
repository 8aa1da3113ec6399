//! `otters inspect`: an image's manifest, config and layers, and an agent's own content, from
//! the local store or its registry (`--remote`, or a registry reference the store does not hold;
//! manifest and config blob only: no layer is downloaded, nothing is written to the store).
//! Where it is read is `otters_pipeline::inspect`; the views are `crate::view::inspect`.
use super::common::{client, note_remote, open_store, platform};
use super::errors::{fail_help, Failure};
use super::{fail, CliResult, Format};
use crate::view::inspect as view;
use otters_cli::inspect::InspectArgs;
use otters_oci::store::query::ImageDetails;
use otters_pipeline::inspect::{self, InspectError};
use otters_pipeline::target::{remote_details, Place};
use std::process::ExitCode;

/// The image from the local store, or from its registry: with `--remote`, or for a registry
/// reference the store does not hold (unless `--local`), with a note.
fn inspected(a: &InspectArgs) -> miette::Result<ImageDetails> {
    let platform = platform(a.platform.as_deref())?;
    let place = a.place.for_read();
    if place != Place::Remote {
        let found = inspect::local(&open_store()?, &a.reference, platform.as_ref());
        if let Some(d) = found.map_err(inspect_error)? {
            return Ok(d);
        }
    }
    let r = inspect::registry_reference(&a.reference, place).map_err(inspect_error)?;
    if place == Place::Auto {
        note_remote(&a.reference, &r.registry);
    }
    remote_details(&client(a.place.insecure)?, &r, platform.as_ref()).map_err(fail)
}

/// An [`InspectError`] with the flags and commands that help.
fn inspect_error(e: InspectError) -> miette::Report {
    match e {
        InspectError::PlatformOfLocal(_) => miette::Report::new(
            Failure::during("--platform", e).help("pass --remote to read it from its registry"),
        ),
        InspectError::NotInStore(_) => fail_help(e, "list local images with `otters images`, fetch it with `otters pull`, or read it from its registry with `otters inspect --remote`"),
        e => fail(e),
    }
}

pub fn run_inspect(a: InspectArgs) -> CliResult {
    let shown = inspected(&a)?;
    match a.format {
        Format::Json => out!("{}", view::json(&a.reference, &shown).map_err(fail)?),
        Format::Text => out!("{}", view::text(&a.reference, &shown)),
    }
    Ok(ExitCode::SUCCESS)
}
