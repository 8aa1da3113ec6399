//! The `resolve` stage: FROM parents merged (spec §c); RUNTIME and every BIN pinned to the digest
//! of their manifest for the target platform; bin annotations fill descriptions and usage the
//! Agentfile leaves empty; `Agentfile.lock` computed (and checked with `--locked`).
//!
//! Takes: a checked model and [`Options`]. Returns: a [`Resolution`] (merged model, [`Pins`], the
//! new lock, the parent's reusable ADD layers, warnings) or every diagnostic (AF401–AF412) with
//! spans on the Agentfile lines. Must never: print, contact a registry with `--offline`, or write
//! the lock itself (the caller writes it after a successful build, see [`Lockfile::write_if_changed`]).

// Rationale: `Diagnostic` is this stage's error value; these functions run once per reference,
// so the size of the `Err` variant costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

pub(crate) mod diags;
#[cfg(test)]
mod fake;
pub(crate) mod images;
pub mod lockfile;
pub(crate) mod merge;
pub(crate) mod parent;
pub mod registry;

pub use lockfile::{lock_path_for, Entry, LockError, Lockfile, Role, LOCK_NAME};
pub use registry::Registry;

use crate::lower::{Pin, Pins};
use otters_agentfile::diagnostic::{Code, Diagnostic, Span};
use otters_agentfile::ir::Agentfile;
use otters_oci::reference::Reference;
use otters_oci::registry::{ClientOptions, RegistryClient};
use otters_oci::spec::descriptor::Descriptor;
use otters_oci::Platform;
use otters_oci::Store;
use std::path::PathBuf;

/// How to resolve.
// Rationale: the flags mirror `otters build`'s command-line switches one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Debug)]
pub struct Options {
    /// Take every pin from the lock; never contact a registry.
    pub offline: bool,
    /// Fail (AF406) when the new lock differs from the one on disk.
    pub locked: bool,
    /// With `offline`: build references the lock does not pin without a digest (warning).
    pub allow_unpinned: bool,
    pub platform: Platform,
    pub insecure: bool,
    /// `Agentfile.lock` (see [`lock_path_for`]).
    pub lock_path: PathBuf,
    /// Where FROM parents are pulled to (the local store).
    pub store: Store,
    /// Where `config.json` is read from (default `$DOCKER_CONFIG` or `~/.docker`).
    pub docker_config: Option<PathBuf>,
}

/// The result of resolution.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// The model to lower: FROM merged, bin descriptions and usage filled from annotations.
    pub model: Agentfile,
    pub pins: Pins,
    pub lock: Lockfile,
    /// The parent's ADD layers, one per entry of `model.agent.adds[..inherited_adds.len()]`:
    /// lowering reuses these blobs by digest instead of reading files.
    pub inherited_adds: Vec<Descriptor>,
    /// The parent's manifest digest, when FROM names an agent.
    pub parent: Option<Entry>,
    /// Warnings (unpinned references under `--allow-unpinned`).
    pub warnings: Vec<Diagnostic>,
}

/// Resolves `model` (see the module docs), asking the registries over HTTP.
pub fn resolve(model: &Agentfile, opts: &Options) -> Result<Resolution, Vec<Diagnostic>> {
    let from_span = from_span(model);
    let old_lock = Lockfile::read_for(&opts.lock_path, &opts.platform.to_string())
        .map_err(|e| vec![diags::lock_unreadable(from_span, &e.to_string())])?;
    let client = client(opts, from_span, old_lock.is_some())?;
    resolve_with(
        model,
        opts,
        old_lock.as_ref(),
        client.as_ref().map(|c| c as &dyn Registry),
    )
}

/// Resolves `model` once for each of `platforms` (a multi-platform build; `opts.platform` is
/// ignored), asking the registries over HTTP. Returns one [`Resolution`] per platform, in order.
pub fn resolve_each(
    model: &Agentfile,
    opts: &Options,
    platforms: &[Platform],
) -> Result<Vec<Resolution>, Vec<Diagnostic>> {
    let from_span = from_span(model);
    let old_locks = Lockfile::read_all(&opts.lock_path)
        .map_err(|e| vec![diags::lock_unreadable(from_span, &e.to_string())])?;
    let client = client(opts, from_span, !old_locks.is_empty())?;
    resolve_each_with(
        model,
        opts,
        platforms,
        &old_locks,
        client.as_ref().map(|c| c as &dyn Registry),
    )
}

/// [`resolve_each`] with the locks already read (`old_locks`: one per platform, see
/// [`Lockfile::read_all`]) and the [`Registry`] to ask. Each platform resolves against the lock
/// of that platform; the diagnostics of every platform are returned together.
pub fn resolve_each_with(
    model: &Agentfile,
    opts: &Options,
    platforms: &[Platform],
    old_locks: &[Lockfile],
    registry: Option<&dyn Registry>,
) -> Result<Vec<Resolution>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut errors: Vec<Diagnostic> = Vec::new();
    for p in platforms {
        let name = p.to_string();
        let old = old_locks.iter().find(|l| l.platform == name);
        let popts = Options {
            platform: p.clone(),
            ..opts.clone()
        };
        match resolve_with(model, &popts, old, registry) {
            Ok(r) => out.push(r),
            Err(d) => {
                for d in d {
                    // A reference every platform fails alike is reported once.
                    if !errors.contains(&d) {
                        errors.push(d);
                    }
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        errors.sort_by_key(Diagnostic::start);
        Err(errors)
    }
}

/// The registry client, or `None` offline.
fn client(
    opts: &Options,
    from_span: Span,
    has_lock: bool,
) -> Result<Option<RegistryClient>, Vec<Diagnostic>> {
    if opts.offline {
        return Ok(None);
    }
    RegistryClient::new(ClientOptions {
        insecure: opts.insecure,
        docker_config: opts.docker_config.clone(),
        ..ClientOptions::default()
    })
    .map(Some)
    .map_err(|e| vec![diags::client_failed(from_span, &e.to_string(), has_lock)])
}

/// Where a diagnostic with no line of its own points: the FROM line, else the file's start.
fn from_span(model: &Agentfile) -> Span {
    model
        .agent
        .from
        .as_ref()
        .and_then(|n| n.span)
        .unwrap_or(Span::point(0))
}

/// [`resolve`] with the lock already read (`old_lock`, `None` when there is no file) and the
/// [`Registry`] to ask. With `opts.offline` the registry is never asked, whatever is passed.
pub fn resolve_with(
    model: &Agentfile,
    opts: &Options,
    old_lock: Option<&Lockfile>,
    registry: Option<&dyn Registry>,
) -> Result<Resolution, Vec<Diagnostic>> {
    let from_span = from_span(model);
    let client = registry.filter(|_| !opts.offline);
    let mut lock = Lockfile::new(&opts.platform.to_string());
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    // 1. FROM: merge the parent.
    let mut merged = model.clone();
    let mut inherited_adds = Vec::new();
    let mut parent_entry = None;
    if let Some(from) = model
        .agent
        .from
        .as_ref()
        .filter(|_| !model.agent.is_scratch())
    {
        let cx = parent::Ctx {
            client,
            store: &opts.store,
            platform: &opts.platform,
            old_lock,
            allow_unpinned: opts.allow_unpinned,
        };
        match parent::load_parent(&cx, &from.value, from_span) {
            Ok(p) => {
                merged = merge::merge(&p.model, model);
                inherited_adds = p.adds;
                lock.insert(p.entry.clone());
                parent_entry = Some(p.entry);
            }
            Err(d) => errors.push(d),
        }
    }

    // 2. RUNTIME and BINs (inherited ones point at the FROM line).
    let at = |s: Option<Span>| s.unwrap_or(from_span);
    let mut pins = Pins::default();
    if let Some(rt) = merged.agent.runtime.clone().filter(|n| !n.value.is_empty()) {
        match pin_one(
            client,
            old_lock,
            opts,
            Role::Runtime,
            &rt.value,
            at(rt.span),
            &mut warnings,
        ) {
            Ok(Some(e)) => {
                pins.runtime = Some(Pin {
                    reference: rt.value.clone(),
                    digest: e.digest.clone(),
                });
                lock.insert(e);
            }
            Ok(None) => {}
            Err(d) => errors.push(d),
        }
    }
    for bin in &mut merged.agent.bins {
        match pin_one(
            client,
            old_lock,
            opts,
            Role::Bin,
            &bin.image,
            at(bin.image_span),
            &mut warnings,
        ) {
            Ok(Some(e)) => {
                if bin.description.as_deref().is_none_or(str::is_empty) {
                    bin.description.clone_from(&e.description);
                }
                if bin.usage.as_deref().is_none_or(str::is_empty) {
                    bin.usage.clone_from(&e.usage);
                }
                pins.bins.insert(
                    bin.name.clone(),
                    Pin {
                        reference: bin.image.clone(),
                        digest: e.digest.clone(),
                    },
                );
                lock.insert(e);
            }
            Ok(None) => {}
            Err(d) => errors.push(d),
        }
    }

    // 3. --locked: the lock on disk must already say exactly this.
    if opts.locked && errors.is_empty() {
        errors.extend(lock_drift(old_lock, &lock, &merged, from_span));
    }
    if !errors.is_empty() {
        errors.sort_by_key(Diagnostic::start);
        return Err(errors);
    }
    Ok(Resolution {
        model: merged,
        pins,
        lock,
        inherited_adds,
        parent: parent_entry,
        warnings,
    })
}

/// Pins one reference, from the registry or (offline) from the lock. `Ok(None)`: built unpinned.
fn pin_one(
    client: Option<&dyn Registry>,
    old_lock: Option<&Lockfile>,
    opts: &Options,
    role: Role,
    written: &str,
    span: Span,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Entry>, Diagnostic> {
    let r =
        Reference::parse(written).map_err(|e| diags::malformed_reference(span, &e.to_string()))?;
    let wanted = opts.platform.to_string();
    // A lock made for another platform pins other binaries: it is no pin for this build.
    let lock_platform = old_lock
        .map(|l| l.platform.as_str())
        .filter(|p| !p.is_empty() && *p != wanted);
    let pinned = old_lock
        .and_then(|l| l.get(role, written))
        .filter(|_| lock_platform.is_none());
    match client {
        Some(c) => {
            let hint = if pinned.is_some() {
                diags::OfflineHint::Pinned
            } else {
                diags::OfflineHint::None
            };
            images::resolve_image(c, written, &r, role, &opts.platform, span, hint).map(Some)
        }
        None => match pinned {
            // The same contract as a registry's answer (images::resolve_image): a RUNTIME or BIN
            // pin whose lock entry records no bin name (a lock written before RUNTIME was
            // checked, or edited) is no bin image, and the run would find no binary in it.
            Some(e) if e.bin.is_none() && matches!(role, Role::Bin | Role::Runtime) => Err(
                diags::missing_bin_annotation(span, written, role, Some(&lockfile::no_bin_name(e))),
            ),
            Some(e) => Ok(Some(e.clone())),
            None if opts.allow_unpinned => {
                warnings.push(diags::built_unpinned(span, written));
                Ok(None)
            }
            None => match lock_platform {
                Some(lp) if old_lock.and_then(|l| l.get(role, written)).is_some() => {
                    Err(diags::lock_platform_offline(span, lp, &wanted))
                }
                _ => Err(diags::unpinned_offline(span, written)),
            },
        },
    }
}

/// AF406 for every entry that differs from the lock on disk, and for stale entries.
fn lock_drift(
    old: Option<&Lockfile>,
    new: &Lockfile,
    model: &Agentfile,
    from_span: Span,
) -> Vec<Diagnostic> {
    let span_of = |e: &Entry| -> Span {
        let a = &model.agent;
        let s = match e.role {
            Role::From => a.from.as_ref().map(|n| n.span),
            Role::Runtime => a.runtime.as_ref().map(|n| n.span),
            Role::Bin => a
                .bins
                .iter()
                .find(|b| b.image == e.reference)
                .map(|b| b.image_span),
        };
        s.flatten().unwrap_or(from_span)
    };
    let mut out = Vec::new();
    for e in &new.images {
        let before = old.and_then(|l| l.get(e.role, &e.reference));
        if before != Some(e) {
            out.push(diags::lock_out_of_date(
                span_of(e),
                &e.reference,
                before.map(|b| b.digest.as_str()),
                e.digest.as_str(),
            ));
        }
    }
    if let Some(old) = old {
        for e in &old.images {
            if new.get(e.role, &e.reference).is_none() {
                out.push(diags::lock_has_extra(from_span, &e.reference));
            }
        }
        if old.platform != new.platform && out.is_empty() {
            out.push(Diagnostic::new(
                Code::LockOutOfDate,
                from_span,
                format!(
                    "--locked, but Agentfile.lock was made for {}, not {}",
                    old.platform, new.platform
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
