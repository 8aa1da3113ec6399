//! `otters attach` and `otters discover`: OCI 1.1 referrers of an image, in the local store or
//! (`--remote`) in its registry.
//!
//! stdout carries data (the new referrer's digest; the tree, or JSON with `--format json`).
//! Everything shown of a referrer comes from the image or a registry and is escaped.
use super::common::{print_json, target, target_error, target_for_read};
use super::{fail, fail_in, CliResult, Format};
use crate::view::transfer as view;
use otters_cli::referrers::{AttachArgs, DiscoverArgs};
use otters_oci::referrers::walk;
use otters_pipeline::attach::{attach, AttachError, Attachment};
use otters_pipeline::target::Target;
use std::process::ExitCode;

pub fn run_attach(a: AttachArgs) -> CliResult {
    let attachment = Attachment::new(
        &a.artifact_type,
        &a.layer_media_type,
        &a.files,
        &a.annotations,
    )
    .map_err(attach_error)?;
    let target = target(&a.reference, &a.place)?;
    let d = attach(&target, &attachment).map_err(attach_error)?;
    outln!("{}", d.digest);
    Ok(ExitCode::SUCCESS)
}

/// An [`AttachError`] with the flag it is about.
fn attach_error(e: AttachError) -> miette::Report {
    match e {
        AttachError::ArtifactType(_) => fail_in("--artifact-type", e),
        AttachError::LayerMediaType(_) => fail_in("--layer-media-type", e),
        AttachError::Annotation(_) => fail_in("--annotation", e),
        AttachError::Publish(e) => target_error(e),
        e => fail(e),
    }
}

pub fn run_discover(a: DiscoverArgs) -> CliResult {
    let target = target_for_read(&a.reference, &a.place)?;
    let root = target.descriptor().clone();
    let budget = if matches!(target, Target::Remote(..)) {
        a.max_requests
    } else {
        usize::MAX
    };
    let tree = walk(
        &root.digest,
        a.artifact_type.as_deref(),
        budget,
        &mut |s, at| target.listing(s, at),
    )
    .map_err(target_error)?;
    match a.format {
        Format::Json => print_json(&view::referrers_json(&a.reference, &root, &tree))?,
        Format::Text => out!("{}", view::referrers_text(&a.reference, &root, &tree)),
    }
    if tree.cut {
        eprintln!(
            "warning: the output was cut after {} registry requests (--max-requests {}): deeper referrers are not listed; pass a larger --max-requests, or discover a referrer by its digest",
            tree.requests, a.max_requests
        );
    }
    Ok(ExitCode::SUCCESS)
}
