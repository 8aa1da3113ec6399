//! The build entry point: Agentfile → checked model → resolved model and pins → plan → blobs and
//! manifest in a store → tags (→ oci-archive, `Agentfile.lock`, pushes).
//!
//! Takes: [`BuildOptions`], the target [`Store`] and a [`Progress`] sink. Returns: a
//! [`BuildOutput`] (descriptor, tags, warnings to show, lock and push results) or a [`BuildError`]
//! that carries the diagnostics and the [`SourceFile`](otters_agentfile::diagnostic::SourceFile) to render them against. Must never: print,
//! write `Agentfile.lock` before the image is in the store, write a lock for an Agentfile read from
//! stdin or in an `offline` build, or contact a registry with `offline` (resolution reads pins
//! from the lock alone).
//!
//! The driver is here ([`build`]); the rest is one file per concern: `options` (what to build,
//! the tags), `outcome` (the output and the errors), `agentfile` (reading and checking the
//! Agentfile), `image` (resolution, lowering and writing the image), `publish` (what follows
//! the stored image: tags, archive, SBOM inputs, lock, push).

// Rationale: `BuildError` carries the diagnostics and source file a failed build must show; one
// build returns it once, so its size costs nothing worth boxing for.
#![allow(clippy::result_large_err)]
mod agentfile;
pub mod ci;
pub mod facts;
pub mod git_epoch;
pub(crate) mod hash_cache;
pub(crate) mod ignore;
mod image;
pub(crate) mod inputs;
pub(crate) mod multi;
pub(crate) mod nofollow;
mod options;
mod outcome;
pub mod pgzip;
mod publish;
pub mod results;
pub(crate) mod tarball;
pub mod write;

pub use options::{check_tags, AgentfileSource, BuildOptions};
pub use outcome::{BuildError, BuildOutput, ErrorKind, LockWrite};

use crate::build::inputs::FsInputs;
use crate::lower::Pins;
use agentfile::{add_warnings, analyze, read_source, unused_build_args, AgentfileText};
use image::{
    lower_plan, read_ignore, resolve_images, with_labels, with_resolve_options, write_image,
};
use options::tags_for;
use otters_agentfile::diagnostic::Diagnostic;
use otters_agentfile::ir::Agentfile;
use otters_oci::progress::Progress;
use otters_oci::Store;
use outcome::{Failed, Stored};
use publish::{push_if_asked, save_archive, supply_phase, tag_all, write_lock, SupplyPhase};

pub use crate::project::locate;
pub use inputs::source_path;

/// Builds (see the module docs).
pub fn build(
    opts: &BuildOptions,
    store: &Store,
    progress: Progress<'_>,
) -> Result<BuildOutput, BuildError> {
    check_tags(&opts.tags)?;
    if !opts.context.is_dir() {
        return Err(ErrorKind::NotADirectory(opts.context.clone()).into());
    }
    let agentfile = read_source(opts)?;
    let (file, analysis) = analyze(opts, &agentfile).map_err(ErrorKind::Policy)?;
    if analysis.has_errors() {
        return Err(BuildError {
            kind: ErrorKind::Invalid(agentfile.name),
            file: Some(file),
            diagnostics: analysis.diagnostics,
        });
    }
    let unused_build_args = unused_build_args(opts, &analysis.model);
    let mut shown = analysis.diagnostics;
    match resolve_and_store(
        opts,
        store,
        progress,
        &agentfile,
        &analysis.model,
        &mut shown,
    ) {
        Ok(stored) => Ok(BuildOutput {
            descriptor: stored.descriptor,
            tags: stored.tags,
            file,
            diagnostics: shown,
            lock: stored.lock,
            pushed: stored.pushed,
            unused_build_args,
            supply: stored.supply,
        }),
        Err(failed) => Err(failed.into_error(file, shown)),
    }
}

/// The phases after a clean analysis: resolve, label, lower, write the image, tag it, save the
/// archive, write the lock, push. Warnings of resolution are added to `shown`.
fn resolve_and_store(
    opts: &BuildOptions,
    store: &Store,
    progress: Progress<'_>,
    agentfile: &AgentfileText,
    analyzed: &Agentfile,
    shown: &mut Vec<Diagnostic>,
) -> Result<Stored, Failed> {
    let mut platforms = multi::platforms(opts.platform.as_deref())?;
    if platforms.len() > 1 {
        return multi::resolve_and_store_each(
            opts, store, progress, agentfile, analyzed, &platforms, shown,
        );
    }
    let platform = platforms.remove(0);
    let resolution = resolve_images(opts, store, agentfile, analyzed, platform.clone())?;
    let (model, pins, inherited_adds) = match &resolution {
        Some(r) => {
            add_warnings(shown, &r.warnings);
            (&r.model, r.pins.clone(), r.inherited_adds.clone())
        }
        None => (analyzed, Pins::default(), Vec::new()),
    };
    let model = with_labels(model, &opts.labels);
    let tags = tags_for(&opts.tags, model.agent.name_str())?;
    let inputs = FsInputs::new(&opts.context).map_err(|source| ErrorKind::Context {
        path: opts.context.clone(),
        source,
    })?;
    let mut plan = lower_plan(opts, agentfile, &model, &pins, inherited_adds, &inputs)?;
    plan.annotations.extend(opts.ci_annotations.clone());
    plan.annotations.extend(opts.annotations.clone());
    let ignore = read_ignore(&inputs)?;
    // The image's blobs are written without a per-blob fsync and made durable in one pass
    // before any tag (or a user's `otters tag` of the printed digest) can point at them.
    let batch = store.batched();
    let descriptor = write_image(opts, &batch, &plan, &ignore, progress, &agentfile.name)?;
    batch.sync_batch().map_err(ErrorKind::from)?;
    tag_all(store, &descriptor, &tags)?;
    let supply = supply_phase(&SupplyPhase {
        opts,
        model: &model,
        pins: &pins,
        parent: resolution.as_ref().and_then(|r| r.parent.as_ref()),
        plan: &plan,
        root: inputs.root(),
        agentfile: (agentfile.path.as_deref(), &agentfile.bytes),
        tags: &tags,
        platform: &platform,
        descriptor: &descriptor,
    })?;
    save_archive(opts, store, &descriptor, &tags)?;
    let lock = write_lock(
        opts,
        resolution.as_ref().map(|r| std::slice::from_ref(&r.lock)),
        agentfile,
        &descriptor,
    )?;
    let pushed = push_if_asked(opts, store, &descriptor, &tags, progress)?;
    Ok(Stored {
        descriptor,
        tags,
        lock,
        pushed,
        supply,
    })
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn locate_context_and_file() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = tmp.path().join("ctx");
        std::fs::create_dir_all(&ctx).unwrap();
        std::fs::write(ctx.join("Agentfile"), "FROM scratch\n").unwrap();
        assert_eq!(locate(&ctx, None), (ctx.clone(), ctx.join("Agentfile")));
        assert_eq!(
            locate(&ctx.join("Agentfile"), None),
            (ctx.clone(), ctx.join("Agentfile"))
        );
        assert_eq!(
            locate(&ctx, Some(Path::new("Agentfile"))),
            (ctx.clone(), ctx.join("Agentfile"))
        );
        // An -f that is not inside the context.
        let outside = tmp.path().join("Other");
        std::fs::write(&outside, "FROM scratch\n").unwrap();
        assert_eq!(locate(&ctx, Some(&outside)), (ctx.clone(), outside.clone()));
    }
}
