//! `FROM <agent-ref>`: fetch the parent agent into the store, read its config blob, hydrate its
//! contexts and ADDs from its layers (spec §c), and check the ancestor chain for cycles and depth.
//!
//! Takes: the reference as written, a [`Registry`] (none when offline), the store and the old lock.
//! Returns: the hydrated parent model, the descriptors of its ADD layers (reused by digest, never
//! re-read), and its lock entry. Must never: merge an ancestor twice — an agent image's config is
//! already the flattened model of its whole chain, so ancestors are only walked, not merged.

// Rationale: `Diagnostic` is this stage's error value; these functions run once per reference,
// so the size of the `Err` variant costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

use super::diags::{self, OfflineHint};
use super::images::registry_diagnostic;
use super::lockfile::{Entry, Lockfile, Role};
use super::registry::Registry;
use otters_agentfile::diagnostic::{Diagnostic, Span};
use otters_agentfile::ir::Agentfile;
use otters_oci::reference::Reference;
use otters_oci::registry::RegistryError;
use otters_oci::spec::descriptor::{Descriptor, ManifestDoc, AGENT_CONFIG, ANN_TITLE};
use otters_oci::{Digest, MediaType, Platform, Store};

/// Most FROM levels above an Agentfile (spec §c).
pub const MAX_DEPTH: usize = 10;

/// A parent agent, ready to merge.
#[derive(Debug)]
pub struct Parent {
    pub model: Agentfile,
    /// One descriptor per `model.agent.adds` entry, in order.
    pub adds: Vec<Descriptor>,
    pub entry: Entry,
}

/// Reads an agent's manifest through the one manifest model; it must name a config.
fn parse_manifest(bytes: &[u8]) -> Result<(ManifestDoc, Descriptor), String> {
    let m = ManifestDoc::parse(bytes).map_err(|e| e.to_string())?;
    let config = m
        .config
        .clone()
        .ok_or_else(|| "missing field `config`".to_owned())?;
    Ok((m, config))
}

pub struct Ctx<'a> {
    /// The registry to ask; `None` offline.
    pub client: Option<&'a dyn Registry>,
    pub store: &'a Store,
    pub platform: &'a Platform,
    pub old_lock: Option<&'a Lockfile>,
    /// `--allow-unpinned` was given (only for the message: it cannot stand in for a parent).
    pub allow_unpinned: bool,
}

/// Loads and hydrates the parent `written` (the FROM value at `span`).
///
/// Online, the parent comes from its registry (a failure names the local image, when the store
/// has one, and `--offline`). Offline, its digest comes from `Agentfile.lock`, or else from the
/// local store's tag; the parent must be in the store either way.
pub fn load_parent(cx: &Ctx<'_>, written: &str, span: Span) -> Result<Parent, Diagnostic> {
    let r =
        Reference::parse(written).map_err(|e| diags::malformed_reference(span, &e.to_string()))?;
    let pinned = cx.old_lock.and_then(|l| l.get(Role::From, written));
    let digest = if let Some(client) = cx.client {
        fetch_parent(client, cx, written, &r, span)?
    } else if let Some(entry) = pinned {
        entry.digest.clone()
    } else {
        local_parent(cx.store, written, &r, cx.platform)
            .ok_or_else(|| diags::parent_not_local(span, written, cx.allow_unpinned))?
    };
    let (manifest, model) = read_agent(cx.store, written, &digest, span)?;
    let mut model = model;
    let adds = hydrate(cx.store, written, &manifest, &mut model, span)?;
    if let Some(client) = cx.client {
        walk_chain(client, cx.platform, &r, &model, span)?;
    }
    let entry = Entry {
        role: Role::From,
        reference: written.to_owned(),
        digest,
        index: None,
        platform: None,
        bin: None,
        description: None,
        usage: None,
    };
    Ok(Parent { model, adds, entry })
}

/// The digest of the agent manifest the local store holds for `written`: by digest when the
/// reference has one, else by its exact tag (never by a digest prefix); an index is followed to
/// the manifest for `platform` (or its only manifest).
pub fn local_parent(
    store: &Store,
    written: &str,
    r: &Reference,
    platform: &Platform,
) -> Option<Digest> {
    let top = if let Some(d) = &r.digest {
        store.has_blob(d).then(|| d.clone())?
    } else {
        let name = otters_oci::store::refname::tag_name(written).ok()?;
        store
            .list()
            .ok()?
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| d.digest)?
    };
    let bytes = store.read_blob(&top).ok()?;
    let doc = ManifestDoc::parse(&bytes).ok()?;
    if !doc.media_type.as_ref().is_some_and(MediaType::is_index) && doc.manifests.is_empty() {
        return Some(top);
    }
    let candidates = Platform::candidates(&doc.manifests);
    match platform.pick(&candidates) {
        Some((_, d)) => Some(d),
        None if doc.manifests.len() == 1 => Some(doc.manifests[0].digest.clone()),
        None => None,
    }
}

/// Resolves the parent's manifest digest and pulls the image into the store.
fn fetch_parent(
    client: &dyn Registry,
    cx: &Ctx<'_>,
    written: &str,
    r: &Reference,
    span: Span,
) -> Result<Digest, Diagnostic> {
    let fail = |e: RegistryError| {
        let pinned_here = cx
            .old_lock
            .and_then(|l| l.get(Role::From, written))
            .is_some_and(|e| cx.store.has_blob(&e.digest));
        let hint = if pinned_here {
            OfflineHint::Pinned
        } else if local_parent(cx.store, written, r, cx.platform).is_some() {
            OfflineHint::LocalParent
        } else {
            OfflineHint::None
        };
        registry_diagnostic(span, written, r, &e, hint)
    };
    let top = client.fetch_manifest(r).map_err(fail)?;
    let digest = if top.media_type.is_index() {
        client
            .resolve(r, cx.platform)
            .map_err(fail)?
            .manifest
            .digest
    } else {
        top.digest
    };
    client
        .pull(cx.store, &r.with_digest(&digest))
        .map_err(fail)?;
    Ok(digest)
}

fn read_agent(
    store: &Store,
    written: &str,
    digest: &Digest,
    span: Span,
) -> Result<(ManifestDoc, Agentfile), Diagnostic> {
    let bad = |why: String| diags::bad_parent(span, written, &why);
    let d = digest;
    if !store.has_blob(d) {
        return Err(bad(format!("its manifest {digest} is not in the local store; build once with pulling allowed to fetch it")));
    }
    let bytes = store.read_blob(d).map_err(|e| bad(e.to_string()))?;
    let (manifest, config) =
        parse_manifest(&bytes).map_err(|e| bad(format!("its manifest is not valid: {e}")))?;
    if config.media_type != MediaType::AgentConfig {
        return Err(bad(format!(
            "its config is {}, not an agent config ({AGENT_CONFIG})",
            otters_oci::validate::escape_text(config.media_type.as_str(), 120)
        )));
    }
    let config = store
        .read_blob(&config.digest)
        .map_err(|e| bad(e.to_string()))?;
    let model = otters_agentfile::ir::from_config_blob(&config)
        .map_err(|e| bad(format!("invalid artifact: {e}")))?;
    Ok((manifest, model))
}

/// Fills file contexts from their layers and finds each ADD's layer (spec §c "hydrated").
fn hydrate(
    store: &Store,
    written: &str,
    m: &ManifestDoc,
    model: &mut Agentfile,
    span: Span,
) -> Result<Vec<Descriptor>, Diagnostic> {
    let bad = |why: String| diags::bad_parent(span, written, &why);
    let base = |s: &str| {
        s.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(s)
            .to_owned()
    };
    for c in &mut model.agent.contexts {
        let title = format!("{}.md", c.name);
        match m
            .layers
            .iter()
            .find(|l| l.media_type == MediaType::Context && l.title() == Some(title.as_str()))
        {
            Some(layer) => {
                let bytes = store
                    .read_blob(&layer.digest)
                    .map_err(|e| bad(e.to_string()))?;
                c.content = Some(String::from_utf8_lossy(&bytes).into_owned());
                c.file = None;
                c.file_span = None;
            }
            None if c.content.is_some() => c.file = None,
            None if c.file.is_some() => {
                return Err(bad(format!("it has no layer for CONTEXT {}", c.name)))
            }
            None => {}
        }
    }
    let mut adds = Vec::new();
    for a in &model.agent.adds {
        let layer = m
            .layers
            .iter()
            .find(|l| l.title() == Some(a.name.as_str()))
            .or_else(|| {
                m.layers
                    .iter()
                    .find(|l| l.title().is_some_and(|t| base(t) == a.name))
            })
            .ok_or_else(|| bad(format!("it has no layer for ADD {}", a.name)))?;
        let mut layer = layer.clone();
        // An openotters alpha.50 parent titles a file layer with its raw `dst`
        // (`/data/x.json`); the child reuses the bytes under the name the ADD now has, which
        // is where both openotters versions and otters put it (and what the child's config
        // blob says).
        if layer.media_type == MediaType::OctetStream && layer.title() != Some(a.name.as_str()) {
            layer
                .annotations
                .insert(ANN_TITLE.to_owned(), a.name.clone());
        }
        adds.push(layer);
    }
    Ok(adds)
}

/// Walks the parent's own FROM chain: a reference seen twice is a cycle, more than
/// [`MAX_DEPTH`] levels is too deep.
fn walk_chain(
    client: &dyn Registry,
    platform: &Platform,
    parent: &Reference,
    model: &Agentfile,
    span: Span,
) -> Result<(), Diagnostic> {
    let mut chain = vec![parent.name_tag()];
    let mut next = model.agent.from_ref().map(str::to_owned);
    while let Some(from) = next.filter(|f| !f.is_empty() && f != "scratch") {
        let r = Reference::parse(&from)
            .map_err(|e| diags::bad_parent(span, &from, &format!("invalid artifact: {e}")))?;
        let key = r.name_tag();
        if chain.contains(&key) {
            chain.push(key);
            return Err(diags::inheritance_cycle(span, &chain));
        }
        chain.push(key);
        if chain.len() > MAX_DEPTH {
            return Err(diags::inheritance_too_deep(span, &chain));
        }
        let resolved = client
            .resolve(&r, platform)
            .map_err(|e| registry_diagnostic(span, &from, &r, &e, OfflineHint::None))?;
        let (_, config) = parse_manifest(&resolved.manifest.bytes).map_err(|e| {
            diags::bad_parent(span, &from, &format!("its manifest is not valid: {e}"))
        })?;
        let config = client
            .fetch_blob(&r, &config.digest, 64 << 20)
            .map_err(|e| registry_diagnostic(span, &from, &r, &e, OfflineHint::None))?;
        let ancestor = otters_agentfile::ir::from_config_blob(&config)
            .map_err(|e| diags::bad_parent(span, &from, &format!("invalid artifact: {e}")))?;
        next = ancestor.agent.from_ref().map(str::to_owned);
    }
    Ok(())
}
