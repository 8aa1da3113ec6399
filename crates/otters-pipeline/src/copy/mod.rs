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
#[cfg(test)]
mod closure_tests;
mod dry;
mod hold;
mod local;
mod save;
mod tags;
mod views;

pub use dry::ListedReferrer;
pub use save::{pull_missing, with_deps};
pub use tags::KeptTag;

use closure::{walk, Node, PinnedBy, Registries, Role, WalkError, Want};
use local::{load_local, local_root, names_of};
use otters_core::escape::escape;
use otters_oci::archive::{self, ArchiveError};
use otters_oci::copy::{deliver, fetch, relay, write_layout, Place};
use otters_oci::progress::{Event, Progress, Step};
use otters_oci::reference::Reference;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::{ClientOptions, RegistryClient, RegistryError};
use otters_oci::{Descriptor, Digest, MediaType, Store, StoreError};
use views::{LoadedView, RegistryView};

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
    /// The organisation policy every agent copied must keep (checked before anything moves).
    pub policy: otters_policy::Policy,
}

/// One image of a copy.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CopiedImage {
    /// Why the image is in the copy.
    pub role: Role,
    /// The reference as written (command line, Agentfile, `agent.yaml`).
    pub reference: String,
    /// Where it was read: `repository[:tag]@digest`, or the layout/archive.
    pub source: String,
    /// Where it went (or would go): a reference, or the names it has in a layout/archive.
    pub destination: String,
    /// The digest of its manifest or index.
    pub digest: Digest,
    /// The media type of its manifest or index.
    pub media_type: MediaType,
    /// The platforms of an index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    /// Where the pin of a FROM, RUNTIME or BIN image was written.
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
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CopyReport {
    /// The source as given (`SRC`).
    pub source: String,
    /// The destination as given (`DST`).
    pub destination: String,
    /// Whether nothing was moved (`--dry-run`): the report says what a copy would do.
    pub dry_run: bool,
    /// Every image of the copy, in the order they were moved.
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
    /// The organisation policy refuses the image: every violation, nothing moved.
    #[error("{} breaks the organisation policy: {}; nothing was copied or saved", escape(.reference), violations.iter().map(|v| format!("{} (rule `{}` at {})", v.message, v.rule, v.origin)).collect::<Vec<_>>().join("; "))]
    Policy {
        reference: String,
        violations: Vec<otters_policy::Violation>,
    },
    /// What the policy needs of the image (its recorded Agentfile, a signer) cannot be read.
    #[error("cannot hold {} to the organisation policy: {message}", escape(.reference))]
    PolicyUnreadable { reference: String, message: String },
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
        wanted: Digest,
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
            let nodes = walk(&view, vec![root.into()], req.recursive, &from)?;
            hold::hold_remote(&view, &nodes, store, req.insecure, &req.policy)?;
            nodes
        }
        Place::Local(l) => {
            let entries = load_local(store, l)?;
            let root = local_root(l, &entries)?;
            let view = LoadedView { store, entries };
            // Read from the layout or archive only: no registry is asked.
            let nodes = walk(&view, vec![root.into()], req.recursive, &Registries::Any)?;
            let root = nodes
                .first()
                .map(|n| crate::target::Target::Local(store.clone(), n.descriptor.clone()));
            hold::hold(&view, &nodes, root.as_ref(), &req.policy)?;
            nodes
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
                if *want != node.descriptor.digest {
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
