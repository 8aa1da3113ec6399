//! What follows the stored image: its tags, the oci-archive, the inputs of its SBOM and
//! provenance, `Agentfile.lock`, and the push of every tag.

use super::{facts, AgentfileText, BuildOptions, ErrorKind, LockWrite, Progress};
use crate::lower::{plan, Pins};
use crate::resolve;
use otters_oci::archive;
use otters_oci::progress::{Event, Step};
use otters_oci::reference::Reference;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::{self, TransferReport};
use otters_oci::registry::{ClientOptions, RegistryClient};
use otters_oci::spec::descriptor::Descriptor;
use otters_oci::{Platform, Store};
use std::path::Path;

/// Points every tag at the image.
pub(super) fn tag_all(
    store: &Store,
    descriptor: &Descriptor,
    tags: &[String],
) -> Result<(), ErrorKind> {
    for t in tags {
        store.tag(t, descriptor)?;
    }
    Ok(())
}

/// With `-o`: the image, under its tags, into an oci-archive.
pub(super) fn save_archive(
    opts: &BuildOptions,
    store: &Store,
    descriptor: &Descriptor,
    tags: &[String],
) -> Result<(), ErrorKind> {
    if let Some(dest) = &opts.archive {
        archive::save(store, descriptor, tags, dest)?;
    }
    Ok(())
}

/// With `--push`: [`push_tags`]; nothing otherwise.
pub(super) fn push_if_asked(
    opts: &BuildOptions,
    store: &Store,
    descriptor: &Descriptor,
    tags: &[String],
    progress: Progress<'_>,
) -> Result<Vec<TransferReport>, ErrorKind> {
    if opts.push {
        push_tags(opts, store, descriptor, tags, progress)
    } else {
        Ok(Vec::new())
    }
}

/// What [`supply_phase`] reads.
pub(super) struct SupplyPhase<'a> {
    pub(super) opts: &'a BuildOptions,
    pub(super) model: &'a otters_agentfile::ir::Agentfile,
    pub(super) pins: &'a Pins,
    pub(super) parent: Option<&'a resolve::lockfile::Entry>,
    pub(super) plan: &'a plan::Plan,
    pub(super) root: &'a Path,
    pub(super) agentfile: (Option<&'a Path>, &'a [u8]),
    pub(super) tags: &'a [String],
    pub(super) platform: &'a Platform,
    pub(super) descriptor: &'a Descriptor,
}

/// With `supply_inputs`: the build's inputs for its SBOM and provenance (see [`facts`]).
pub(super) fn supply_phase(
    p: &SupplyPhase<'_>,
) -> Result<Option<otters_supply::inputs::BuildInputs>, ErrorKind> {
    if !p.opts.supply_inputs {
        return Ok(None);
    }
    facts::collect(&facts::Facts {
        model: p.model,
        pins: p.pins,
        parent: p.parent,
        plan: p.plan,
        root: p.root,
        agentfile: p.agentfile,
        tags: p.tags,
        build_args: &p.opts.build_args,
        env_build_args: (&p.opts.env_build_args, p.opts.record_env_build_args),
        platform: p.platform,
        manifest: &p.descriptor.digest,
    })
    .map(Some)
    .map_err(|source| ErrorKind::Supply {
        digest: p.descriptor.digest.clone(),
        source,
    })
}

/// Writes `Agentfile.lock` beside the Agentfile, when something was resolved: the lock of one
/// platform ([`resolve::Lockfile::write_keeping_others`]) or of several
/// ([`resolve::Lockfile::multi_bytes`]). `--offline` reads the lock and never writes it (an
/// offline build learns nothing new); stdin has no lock.
pub(super) fn write_lock(
    opts: &BuildOptions,
    locks: Option<&[resolve::Lockfile]>,
    agentfile: &AgentfileText,
    descriptor: &Descriptor,
) -> Result<Option<LockWrite>, ErrorKind> {
    let (Some(locks), Some(p)) = (locks, &agentfile.path) else {
        return Ok(None);
    };
    if opts.offline {
        return Ok(None);
    }
    let path = resolve::lock_path_for(p);
    let written = match locks {
        [one] => one.write_keeping_others(&path),
        several => resolve::Lockfile::write_multi_if_changed(several, &path),
    };
    let changed = written.map_err(|source| ErrorKind::Lock {
        digest: descriptor.digest.clone(),
        source,
    })?;
    Ok(Some(LockWrite {
        path,
        changed,
        images: locks.iter().map(|l| l.images.len()).sum(),
    }))
}

/// Pushes `descriptor` under every tag.
fn push_tags(
    opts: &BuildOptions,
    store: &Store,
    descriptor: &Descriptor,
    tags: &[String],
    progress: Progress<'_>,
) -> Result<Vec<TransferReport>, ErrorKind> {
    let client = RegistryClient::new(ClientOptions {
        insecure: opts.insecure,
        docker_config: opts.docker_config.clone(),
        ..ClientOptions::default()
    })
    .map_err(|source| ErrorKind::Push {
        digest: descriptor.digest.clone(),
        reference: tags.join(", "),
        source,
    })?;
    let mut sources = Sources::load(store.root());
    let mut reports = Vec::new();
    for tag in tags {
        let mut dest = Reference::parse(tag).map_err(|source| ErrorKind::PushReference {
            digest: descriptor.digest.clone(),
            reference: tag.clone(),
            source,
        })?;
        if dest.tag.is_none() && dest.digest.is_none() {
            dest.tag = Some("latest".into());
        }
        let step = Step::Push { reference: tag };
        progress(Event::StepStarted(step));
        let result =
            transfer::push_image(&client, store, descriptor, &dest, &mut sources, progress);
        progress(Event::StepDone(step));
        let _ = sources.save();
        reports.push(result.map_err(|source| ErrorKind::Push {
            digest: descriptor.digest.clone(),
            reference: dest.familiar(),
            source,
        })?);
    }
    Ok(reports)
}
