//! `otters copy [-r] SRC DST` and `otters save --with-deps`: an agent and, with `-r`, everything
//! it pins (RUNTIME, BINs, FROM parents, recursively, each as the whole index it was pinned from)
//! moved as one thing, with every referrer (signatures, SBOMs, attestations) of each manifest.
//!
//! Takes: a [`CopyRequest`] (places as `otters copy` reads them), the local store (the staging
//! area for layouts and archives: a registry source is pulled into it when the destination is a
//! layout or archive, a layout or archive source is loaded into it; registry to registry, blobs
//! stream across and only referrers are staged) and a progress callback. Returns: a
//! [`CopyReport`].
//! Must never: print, push an image before its blobs and child manifests (the transfer layer
//! orders that), or stop without saying which images were copied (a failure after the first is
//! [`CopyError::Partial`]).
//!
//! Where images go in a registry destination: the named image to `DST`; each pinned image to
//! `DST`'s registry under its own repository path and tag (`reg1/tools/jq:1` →
//! `reg2/tools/jq:1`), or by digest alone when its tag no longer names the pinned content or
//! names other content at the destination (never moved without `--force`: `copy::tags`). In an
//! OCI layout or archive each pinned image is named by its reference as written, so `otters load`
//! puts it back under that name.

pub mod closure;
mod dry;
mod tags;

pub use dry::ListedReferrer;
pub use tags::KeptTag;

use closure::{walk, Found, Lookup, Node, PinnedBy, Registries, Role, View, WalkError, Want};
use otters_core::escape::escape;
use otters_oci::archive::local::{load_layout, LocalSource};
use otters_oci::archive::{self, ArchiveError};
use otters_oci::copy::{deliver, fetch, relay, write_layout, Place};
use otters_oci::progress::{Event, Progress, Step};
use otters_oci::reference::Reference;
use otters_oci::registry::referrers::pull_referrers;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::{ClientOptions, RegistryClient, RegistryError};
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, MediaType, Store, StoreError};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What to copy where.
#[derive(Clone, Debug)]
#[allow(clippy::struct_excessive_bools)]
pub struct CopyRequest {
    pub source: String,
    pub destination: String,
    /// Also everything the image pins (`-r`).
    pub recursive: bool,
    /// Only list what would move.
    pub dry_run: bool,
    pub insecure: bool,
    /// Registries other than the source's whose pins `-r` may read (`--from-registry`).
    pub from_registries: Vec<String>,
    /// Move destination tags of pinned images that name other content (`--force`).
    pub force: bool,
}

/// One image of a copy.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CopiedImage {
    pub role: Role,
    /// The reference as written (command line, Agentfile, `agent.yaml`).
    pub reference: String,
    /// Where it was read: `repository[:tag]@digest`, or the layout/archive.
    pub source: String,
    /// Where it went (or would go): a reference, or the names it has in a layout/archive.
    pub destination: String,
    pub digest: Digest,
    pub media_type: MediaType,
    /// The platforms of an index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_by: Option<PinnedBy>,
    /// What the destination tag named before this copy moved it (the image named as `DST`, or
    /// a pinned image with `--force`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// The destination tag this pinned image did not take, because it names other content
    /// there: the image went by digest alone and the tag was left as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_tag: Option<KeptTag>,
    /// A dry run: the referrers that would go along (of the image's every manifest, and theirs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub referrers: Vec<ListedReferrer>,
}

/// What a copy did (or, with `dry_run`, would do).
#[derive(Clone, Debug, serde::Serialize)]
pub struct CopyReport {
    pub source: String,
    pub destination: String,
    pub dry_run: bool,
    pub images: Vec<CopiedImage>,
    /// Blobs sent to the destination registry.
    pub uploaded: usize,
    /// Blobs the destination already had.
    pub skipped: usize,
    /// Blobs mounted from another repository of the destination registry.
    pub mounted: usize,
    /// Blobs downloaded from the source registry into the local store (the rest were staged
    /// already): an image's blobs for a layout or archive destination, and referrers' blobs.
    /// Registry to registry, an image's blobs stream across and count as `uploaded` only.
    pub downloaded: usize,
    /// Bytes moved (downloaded plus uploaded; a streamed blob counts once).
    pub bytes: u64,
    /// Referrers copied (a dry run: listed, as they would be copied).
    pub referrers: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{text}: {source}")]
    Place {
        text: String,
        source: otters_oci::reference::ReferenceError,
    },
    #[error(transparent)]
    Walk(#[from] WalkError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("{} holds no image named `{want}` (it holds: {holds})", path.display())]
    NoSuchImage {
        path: std::path::PathBuf,
        want: String,
        holds: String,
    },
    #[error("{} holds {count} images (named: {holds}); name one: `oci:{}:NAME` or `oci-archive:{}:NAME`", path.display(), path.display(), path.display())]
    Several {
        path: std::path::PathBuf,
        count: usize,
        holds: String,
    },
    #[error(
        "{destination} names digest {wanted}, but the image is {actual}; copy to a tag instead"
    )]
    DigestDiffers {
        destination: String,
        wanted: String,
        actual: Digest,
    },
    /// `save --with-deps`: the referrers of an image in the store could not be asked of its
    /// registry, and the store has none.
    #[error("cannot ask the registry of {} for its signatures and other referrers, and the store has none: the archive could not be verified offline; run `otters pull --referrers {}` where the registry is reachable, then save again", escape(.reference), escape(.reference))]
    Referrers {
        reference: String,
        #[source]
        source: Box<RegistryError>,
    },
    /// A failure after some images arrived: what arrived stays, and a rerun sends only the rest.
    #[error("copied {} of {total} image(s){}; {failed} failed: run the same command again to copy the rest (what arrived is skipped)", copied.len(), if copied.is_empty() { String::new() } else { format!(" ({})", copied.join(", ")) })]
    Partial {
        copied: Vec<String>,
        total: usize,
        failed: String,
        #[source]
        source: Box<CopyError>,
    },
}

/// Copies `req.source` (and with `req.recursive` its closure) to `req.destination`.
pub fn copy(
    req: &CopyRequest,
    store: &Store,
    progress: Progress<'_>,
) -> Result<CopyReport, CopyError> {
    let place = |text: &str| {
        Place::parse(text).map_err(|source| CopyError::Place {
            text: text.to_owned(),
            source,
        })
    };
    let (source, dest) = (place(&req.source)?, place(&req.destination)?);
    let needs_client = matches!(source, Place::Registry(_)) || matches!(dest, Place::Registry(_));
    let client = if needs_client {
        Some(RegistryClient::new(ClientOptions {
            insecure: req.insecure,
            ..ClientOptions::default()
        })?)
    } else {
        None
    };
    let nodes = match &source {
        Place::Registry(src) => {
            let view = RegistryView(client.as_ref().expect("a registry source has a client"));
            let root = Want {
                reference: req.source.clone(),
                pinned: None,
                role: Role::Image,
                by: None,
            };
            let from = Registries::only([src.registry.as_str()], &req.from_registries);
            walk(&view, vec![root.into()], req.recursive, &from)?
        }
        Place::Local(l) => {
            let entries = load_local(store, l)?;
            let root = local_root(l, &entries)?;
            let view = LoadedView { store, entries };
            // Read from the layout or archive only: no registry is asked.
            walk(&view, vec![root.into()], req.recursive, &Registries::Any)?
        }
    };
    let mut images = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| planned(n, i == 0, &source, &dest, &req.source))
        .collect::<Result<Vec<_>, _>>()?;
    if let (Place::Registry(_), Some(c)) = (&dest, &client) {
        tags::guard(c, &mut images, req.force)?;
    }
    let mut report = CopyReport {
        source: req.source.clone(),
        destination: req.destination.clone(),
        dry_run: req.dry_run,
        images: images.iter().map(|(c, _)| c.clone()).collect(),
        uploaded: 0,
        skipped: 0,
        mounted: 0,
        downloaded: 0,
        bytes: 0,
        referrers: 0,
    };
    if req.dry_run {
        let from = match source {
            Place::Registry(_) => client.as_ref(),
            Place::Local(_) => None,
        };
        for (image, node) in report.images.iter_mut().zip(&nodes) {
            image.referrers = dry::referrers(from, store, node)?;
            report.referrers += image.referrers.len();
        }
        return Ok(report);
    }
    let client = client.as_ref();
    let mut sources = Sources::load(store.root());
    let mut local_out: Vec<(Descriptor, Vec<String>)> = Vec::new();
    let total = images.len();
    let mut copied = Vec::new();
    for (i, ((image, to), node)) in images.iter().zip(&nodes).enumerate() {
        let step = Step::Copy {
            n: i + 1,
            total,
            source: &image.source,
            destination: &image.destination,
        };
        progress(Event::StepStarted(step));
        let moved = move_one(
            client,
            store,
            node,
            to,
            &source,
            &mut sources,
            progress,
            &mut report,
        );
        progress(Event::StepDone(step));
        match moved {
            Ok(Some(local)) => local_out.push(local),
            Ok(None) => {}
            Err(e) => {
                let _ = sources.save();
                return Err(partial(copied, total, image, e));
            }
        }
        copied.push(image.reference.clone());
    }
    let _ = sources.save();
    if let Place::Local(l) = &dest {
        let written = if l.is_archive {
            archive::save_many(store, &local_out, &l.path)
        } else {
            write_layout(store, &local_out, &l.path)
        };
        written.map_err(|e| partial(Vec::new(), total, &images[0].0, e.into()))?;
    }
    Ok(report)
}

/// A failure at `image`, after `copied` arrived.
fn partial(copied: Vec<String>, total: usize, image: &CopiedImage, e: CopyError) -> CopyError {
    if copied.is_empty() && total == 1 {
        return e;
    }
    CopyError::Partial {
        copied,
        total,
        failed: image.reference.clone(),
        source: Box::new(e),
    }
}

/// Where one image goes.
enum Target {
    Registry(Reference),
    /// The names it gets in a layout or archive.
    Local(Vec<String>),
}

/// Streams one image from a registry to a registry; otherwise stages it in the store (from a
/// registry source) and sends it (to a registry), or returns it with its names for the layout or
/// archive written at the end.
#[allow(clippy::too_many_arguments)]
fn move_one(
    client: Option<&RegistryClient>,
    store: &Store,
    node: &Node,
    to: &Target,
    source: &Place,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut CopyReport,
) -> Result<Option<(Descriptor, Vec<String>)>, CopyError> {
    if let (Place::Registry(_), Target::Registry(dest), Some(c)) = (source, to, client) {
        // Registry to registry: the image's blobs stream across without touching the store.
        let (pushed, staged) = relay(c, store, &node.source, dest, sources, progress)?;
        report.downloaded += staged.downloaded.len();
        report.bytes += staged.bytes;
        count(report, &pushed);
        report.referrers += pushed.referrers.len();
        return Ok(None);
    }
    let staged = match (source, client) {
        (Place::Registry(_), Some(c)) => {
            let (staged, pulled) = fetch(c, store, &node.source, sources, progress)?;
            // What was staged already counts for nothing: `skipped` is the destination's.
            report.downloaded += pulled.downloaded.len();
            report.bytes += pulled.bytes;
            staged
        }
        _ => node.descriptor.clone(),
    };
    match (to, client) {
        (Target::Registry(dest), Some(c)) => {
            let pushed = deliver(c, store, &staged, dest, sources, progress)?;
            count(report, &pushed);
            report.referrers += pushed.referrers.len();
            Ok(None)
        }
        (Target::Local(names), _) => {
            report.referrers += otters_oci::copy::manifests(store, &staged)?
                .iter()
                .map(|m| store.referrers(m).map(|r| r.len()))
                .sum::<Result<usize, _>>()?;
            Ok(Some((staged, names.clone())))
        }
        (Target::Registry(_), None) => unreachable!("a registry destination has a client"),
    }
}

/// What a push did, added to the report.
fn count(report: &mut CopyReport, t: &TransferReport) {
    report.uploaded += t.uploaded.len();
    report.skipped += t.skipped.len();
    report.mounted += t.mounted.len();
    report.bytes += t.bytes;
}

/// The report line of `node` and where it goes.
fn planned(
    node: &Node,
    root: bool,
    source: &Place,
    dest: &Place,
    source_text: &str,
) -> Result<(CopiedImage, Target), CopyError> {
    let target = match dest {
        Place::Registry(d) if root => {
            let mut to = d.clone();
            if let Some(want) = &d.digest {
                if *want != node.descriptor.digest.as_str() {
                    return Err(CopyError::DigestDiffers {
                        destination: d.familiar(),
                        wanted: want.clone(),
                        actual: node.descriptor.digest.clone(),
                    });
                }
            } else if d.tag.is_none() {
                to.tag.clone_from(&node.source.tag);
            }
            Target::Registry(to)
        }
        Place::Registry(d) => Target::Registry(Reference {
            registry: d.registry.clone(),
            repository: node.source.repository.clone(),
            tag: node.source.tag.clone(),
            digest: None,
        }),
        Place::Local(l) if root => Target::Local(match (&l.want, source) {
            (Some(w), _) => vec![w.clone()],
            (None, Place::Registry(_)) => vec![source_text.to_owned()],
            (None, Place::Local(_)) => names_of(node),
        }),
        Place::Local(_) => Target::Local(names_of(node)),
    };
    let destination = match &target {
        Target::Registry(r) => match &r.tag {
            Some(_) => r.familiar(),
            None => r.with_digest(&node.descriptor.digest).familiar(),
        },
        Target::Local(names) => {
            let place = match dest {
                Place::Local(l) => l.path.display().to_string(),
                Place::Registry(_) => String::new(),
            };
            if names.is_empty() {
                format!("{place} (untagged)")
            } else {
                format!("{place}:{}", names.join(","))
            }
        }
    };
    let source_shown = match source {
        Place::Registry(_) => node.source.familiar(),
        Place::Local(l) => format!("{}@{}", l.path.display(), node.descriptor.digest),
    };
    Ok((
        CopiedImage {
            role: node.role.clone(),
            reference: node.written.clone(),
            source: source_shown,
            destination,
            digest: node.descriptor.digest.clone(),
            media_type: node.descriptor.media_type.clone(),
            platforms: node.platforms.clone(),
            pinned_by: node.by.clone(),
            replaces: None,
            kept_tag: None,
            referrers: Vec::new(),
        },
        target,
    ))
}

/// The name a pinned image keeps in a layout or archive: its reference as written when its tag
/// still names it, none when it was taken by digest.
fn names_of(node: &Node) -> Vec<String> {
    if node.source.tag.is_some() && !node.written.contains('@') {
        vec![node.written.clone()]
    } else {
        Vec::new()
    }
}

/// Every image of a layout or archive, loaded into the store (referrers recorded as such).
fn load_local(store: &Store, l: &LocalSource) -> Result<Vec<(String, Descriptor)>, CopyError> {
    Ok(if l.is_archive {
        archive::load(store, &l.path)?
    } else {
        load_layout(store, &l.path)?
    }
    .images)
}

/// The `org.opencontainers.image.ref.name` a layout or archive entry carries, as written.
fn raw_name(d: &Descriptor) -> Option<&str> {
    d.annotations
        .get(otters_oci::spec::descriptor::ANN_REF_NAME)
        .map(String::as_str)
}

/// The image of a layout or archive a copy starts from: the one named, or the only one.
fn local_root(l: &LocalSource, entries: &[(String, Descriptor)]) -> Result<Node, CopyError> {
    let holds = || {
        entries
            .iter()
            .map(|(n, d)| match (n.is_empty(), raw_name(d)) {
                (false, _) => n.as_str(),
                (true, Some(raw)) => raw,
                (true, None) => "<none>",
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let picked: Vec<&(String, Descriptor)> = match &l.want {
        // The layout's own ref name counts too: a bare tag (`child`, as skopeo names images)
        // loads untagged, but `oci:DIR:child` still selects it.
        Some(w) => entries
            .iter()
            .filter(|(n, d)| n == w || raw_name(d) == Some(w.as_str()))
            .collect(),
        None => entries.iter().collect(),
    };
    let (name, d) = match (picked.as_slice(), &l.want) {
        ([one], _) => (*one).clone(),
        ([], Some(w)) => {
            return Err(CopyError::NoSuchImage {
                path: l.path.clone(),
                want: w.clone(),
                holds: holds(),
            })
        }
        _ => {
            return Err(CopyError::Several {
                path: l.path.clone(),
                count: picked.len(),
                holds: holds(),
            })
        }
    };
    // A bare tag (as skopeo names images) is not a reference: the image is named by digest.
    let source = Reference::parse(&name)
        .ok()
        .filter(|r| r.digest.is_none())
        .unwrap_or_else(|| Reference {
            registry: "localhost".into(),
            repository: "image".into(),
            tag: None,
            digest: None,
        })
        .with_digest(&d.digest);
    Ok(node_of(Role::Image, name, source, d, None))
}

fn node_of(
    role: Role,
    written: String,
    source: Reference,
    d: Descriptor,
    by: Option<PinnedBy>,
) -> Node {
    let mut descriptor = d;
    descriptor
        .annotations
        .remove(otters_oci::spec::descriptor::ANN_REF_NAME);
    Node {
        role,
        written,
        source,
        platforms: Vec::new(),
        descriptor,
        by,
    }
}

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

/// A registry's documents.
struct RegistryView<'c>(&'c RegistryClient);

impl View for RegistryView<'_> {
    fn manifest(&self, r: &Reference, _: &str) -> Result<Lookup, BoxError> {
        match self.0.fetch_manifest(r) {
            Ok(f) => Ok(Lookup::Found(Box::new(Found {
                descriptor: Descriptor::new(f.media_type, f.digest, f.bytes.len() as u64),
                bytes: f.bytes,
            }))),
            Err(e @ RegistryError::NotFound { .. }) => Ok(Lookup::Missing(Some(Box::new(e)))),
            Err(e) => Err(Box::new(e)),
        }
    }

    fn blob(&self, r: &Reference, digest: &Digest, max: u64) -> Result<Vec<u8>, BoxError> {
        Ok(self.0.fetch_blob(r, digest, max)?)
    }
}

/// A manifest or index the store holds by digest.
fn stored(store: &Store, digest: &Digest) -> Result<Lookup, BoxError> {
    if !store.has_blob(digest) {
        return Ok(Lookup::Missing(None));
    }
    let bytes = store.read_blob(digest)?;
    let doc: ManifestDoc = serde_json::from_slice(&bytes)?;
    let media_type = match doc.media_type {
        Some(m) => m,
        None if !doc.manifests.is_empty() => MediaType::OciIndex,
        None => MediaType::OciManifest,
    };
    Ok(Lookup::Found(Box::new(Found {
        descriptor: Descriptor::new(media_type, digest.clone(), bytes.len() as u64),
        bytes,
    })))
}

/// The images of a loaded layout or archive, by the names they had there or by digest.
struct LoadedView<'s> {
    store: &'s Store,
    entries: Vec<(String, Descriptor)>,
}

impl View for LoadedView<'_> {
    fn manifest(&self, r: &Reference, written: &str) -> Result<Lookup, BoxError> {
        if let Some(d) = r.digest.as_deref().and_then(|d| Digest::parse(d).ok()) {
            return stored(self.store, &d);
        }
        match self.entries.iter().find(|(n, _)| n == written) {
            Some((_, d)) => stored(self.store, &d.digest),
            None => Ok(Lookup::Missing(None)),
        }
    }

    fn blob(&self, _: &Reference, digest: &Digest, _: u64) -> Result<Vec<u8>, BoxError> {
        Ok(self.store.read_blob(digest)?)
    }
}

/// The local store first (by digest, or by the tag as written), then the registry.
struct StoreFirst<'s> {
    store: &'s Store,
    client: &'s RegistryClient,
}

impl View for StoreFirst<'_> {
    fn manifest(&self, r: &Reference, written: &str) -> Result<Lookup, BoxError> {
        let local = match r.digest.as_deref().and_then(|d| Digest::parse(d).ok()) {
            Some(d) => stored(self.store, &d)?,
            None => match self.store.resolve(written) {
                Ok(Some(d)) => stored(self.store, &d.digest)?,
                _ => Lookup::Missing(None),
            },
        };
        match local {
            Lookup::Found(f) => Ok(Lookup::Found(f)),
            Lookup::Missing(_) => RegistryView(self.client).manifest(r, written),
        }
    }

    fn blob(&self, r: &Reference, digest: &Digest, max: u64) -> Result<Vec<u8>, BoxError> {
        if self.store.has_blob(digest) {
            return Ok(self.store.read_blob(digest)?);
        }
        RegistryView(self.client).blob(r, digest, max)
    }
}

impl From<Want> for closure::Start {
    fn from(w: Want) -> Self {
        closure::Start::Want(w)
    }
}

impl From<Node> for closure::Start {
    fn from(n: Node) -> Self {
        closure::Start::Known(Box::new(n))
    }
}
