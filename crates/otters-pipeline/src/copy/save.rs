//! `otters save --with-deps`: the images saved and everything they pin, read from the store first
//! and from their registries for what it lacks, each with the referrers `verify` needs offline.
//!
//! Takes: the store, the images named (with the names each is saved under), and the registries
//! whose pins may be read. Returns: every image with its names, for [`archive::save_many`]. Must
//! never: read a pin on a registry other than the named images' and `from_registries`, or write the
//! archive (the caller does).

use super::closure::{walk, Node, Registries, Role, WalkError};
use super::local::{names_of, node_of};
use super::views::StoreFirst;
use super::CopyError;
use otters_oci::archive;
use otters_oci::copy::fetch;
use otters_oci::reference::Reference;
use otters_oci::registry::referrers::pull_referrers;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::{ClientOptions, RegistryClient};
use otters_oci::{Descriptor, Store};

/// `otters save --with-deps`: the images `roots` (already in the store, each with the names it is
/// saved under) and everything they pin, recursively; a pinned image the store lacks is fetched
/// from its registry (with its referrers). Returns every image with its names, for
/// [`archive::save_many`].
///
/// Pins are read only on the registries of the images named (by the reference each is saved
/// under; one named by digest alone has none) and on `from_registries` (`--from-registry`).
pub fn with_deps(
    store: &Store,
    roots: &[(Descriptor, Vec<String>)],
    insecure: bool,
    from_registries: &[String],
    policy: &otters_policy::Policy,
) -> Result<Vec<(Descriptor, Vec<String>)>, CopyError> {
    let client = RegistryClient::new(ClientOptions {
        insecure,
        ..ClientOptions::default()
    })?;
    let view = StoreFirst {
        store,
        client: &client,
    };
    let homes: Vec<String> = roots
        .iter()
        .filter_map(|(_, names)| names.first())
        .filter_map(|n| Reference::parse(n).ok())
        .map(|r| r.registry)
        .collect();
    let from = Registries::only(homes.iter().map(String::as_str), from_registries);
    let starts = roots
        .iter()
        .map(|(d, names)| {
            let name = names.first().cloned().unwrap_or_default();
            let source = Reference::parse(&name)
                .unwrap_or_else(|_| Reference {
                    registry: "localhost".into(),
                    repository: "image".into(),
                    tag: None,
                    digest: None,
                })
                .with_digest(&d.digest);
            node_of(Role::Image, name, source, d.clone(), None).into()
        })
        .collect();
    let nodes = walk(&view, starts, true, &from)?;
    // Each image named is held (every agent of the walk once, each named image's signature)
    // before a pin is fetched.
    for (i, (d, _)) in roots.iter().enumerate() {
        let mine = match i {
            0 => nodes.clone(),
            _ => nodes.get(i).cloned().into_iter().collect(),
        };
        let root = crate::target::Target::Local(store.clone(), d.clone());
        super::hold::hold(&view, &mine, Some(&root), policy)?;
    }
    let mut out: Vec<(Descriptor, Vec<String>)> = roots.to_vec();
    let mut sources = Sources::load(store.root());
    for (i, node) in nodes.iter().enumerate() {
        if i < roots.len() || archive::reachable(store, &node.descriptor).is_ok() {
            // In the store already (a plain pull or a run brings no referrer): its referrers
            // are asked of its registry, so the archive carries what `verify` needs offline.
            let fetched = stored_referrers(&client, store, node, &mut sources);
            if i >= roots.len() {
                out.push((node.descriptor.clone(), names_of(node)));
            }
            fetched?;
            continue;
        }
        let desc = fetch(&client, store, &node.source, &mut sources, &mut |_| {})
            .map_err(|e| WalkError::Source {
                reference: node.written.clone(),
                by: node.by.clone(),
                source: Box::new(e),
            })?
            .0;
        out.push((desc, names_of(node)));
    }
    let _ = sources.save();
    Ok(out)
}

/// Brings the referrers the registry of `node` (an image already in the store) lists for each of
/// its manifests. A local name (no registry in it) has none to ask. A registry that cannot be
/// asked is an error only when the store has no referrer of the image at all: an archive made in
/// an air gap from loaded images keeps the referrers they came with.
fn stored_referrers(
    client: &RegistryClient,
    store: &Store,
    node: &Node,
    sources: &mut Sources,
) -> Result<(), CopyError> {
    if crate::target::names_registry(&node.written).is_none() {
        return Ok(());
    }
    let manifests = otters_oci::copy::manifests(store, &node.descriptor)?;
    let mut report = TransferReport::new(
        node.written.clone(),
        node.descriptor.digest.clone(),
        node.descriptor.media_type.clone(),
    );
    for m in &manifests {
        let asked = pull_referrers(
            client,
            store,
            &node.source.with_digest(m),
            m,
            sources,
            &mut |_| {},
            &mut report,
        );
        if let Err(e) = asked {
            let mut has = false;
            for m in &manifests {
                has |= !store.referrers(m)?.is_empty();
            }
            if has {
                return Ok(());
            }
            return Err(CopyError::Referrers {
                reference: node.written.clone(),
                source: Box::new(e),
            });
        }
    }
    Ok(())
}

/// `otters save --with-deps`: each of `references` that the store lacks and that names a registry
/// is pulled (with its referrers) and tagged as `otters pull` would, so an image copied registry
/// to registry (`copy -r`, which stages nothing) is saved as the guide's recipe says.
pub fn pull_missing(store: &Store, references: &[String], insecure: bool) -> Result<(), CopyError> {
    let missing: Vec<(&String, Reference)> = references
        .iter()
        .filter(|r| matches!(store.resolve(r), Ok(None)))
        .filter_map(|r| Some((r, crate::target::names_registry(r)?)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let client = RegistryClient::new(ClientOptions {
        insecure,
        ..ClientOptions::default()
    })?;
    let mut sources = Sources::load(store.root());
    for (text, r) in &missing {
        let (desc, _) = fetch(&client, store, r, &mut sources, &mut |_| {})?;
        if r.digest.is_none() {
            store.tag(text, &desc)?;
        }
    }
    let _ = sources.save();
    Ok(())
}
