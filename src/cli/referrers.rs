//! `otters attach` and `otters discover`: OCI 1.1 referrers of an image, in the local store or
//! (`--remote`) in its registry.
//!
//! stdout carries data (the new referrer's digest; the tree, or JSON with `--format json`).
//! Everything shown of a referrer comes from the image or a registry and is escaped.
use super::common::{client, esc, open_store_leased, parse_reference, WhereFlags};
use super::{fail, fail_in, CliResult, Format};
use miette::miette;
use otters_oci::reference::Reference;
use otters_oci::referrers::{walk, Node};
use otters_oci::registry::referrers::push_referrer;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::RegistryClient;
use otters_oci::{Descriptor, Digest, Store};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct AttachArgs {
    /// The image to attach to: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// The artifact type of the new referrer (a media type, e.g. application/vnd.example.report+json)
    #[arg(long, value_name = "TYPE")]
    pub artifact_type: String,
    /// Files to attach, one layer each (media type application/octet-stream, named by title)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Media type of the attached files' layers
    #[arg(long, value_name = "TYPE", default_value = otters_oci::spec::descriptor::FILE_LAYER)]
    pub layer_media_type: String,
    /// Annotation of the referrer manifest (repeatable)
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,
    #[command(flatten)]
    pub place: WhereFlags,
}

#[derive(Debug, clap::Args)]
pub struct DiscoverArgs {
    /// The image whose referrers to list: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// Only referrers of this artifact type (at the first level)
    #[arg(long, value_name = "TYPE")]
    pub artifact_type: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// With --remote: stop listing after this many registry requests (the output says it was cut)
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_requests: usize,
    #[command(flatten)]
    pub place: WhereFlags,
}

/// An image named on the command line, resolved to its manifest descriptor now.
pub(super) enum Target {
    Local(Store, Descriptor),
    Remote(Store, Box<RegistryClient>, Reference, Descriptor),
}

impl Target {
    /// The image `reference` names for a read (`verify`, `discover`): with neither `--local` nor
    /// `--remote`, a registry reference the local store does not hold is read from its registry,
    /// with a note on stderr.
    pub(super) fn resolve_for_read(reference: &str, place: &WhereFlags) -> miette::Result<Target> {
        if place.remote || place.local {
            return Target::resolve(reference, place);
        }
        let store = open_store_leased()?;
        let held = store
            .resolve(reference)
            .map_err(|e| fail_in(format!("cannot read {reference} from the local store"), e))?;
        match (held, names_registry(reference)) {
            (Some(d), _) => Ok(Target::Local(store, d)),
            (None, Some(r)) => {
                eprintln!(
                    "note: {} is not in the local store; reading it from {} (pass --local to use only the store)",
                    esc(reference),
                    esc(&r.registry)
                );
                Target::remote(store, &r, place.insecure)
            }
            (None, None) => Err(not_in_store(reference)),
        }
    }

    /// The image in the registry `r` names, resolved there now.
    fn remote(store: Store, r: &Reference, insecure: bool) -> miette::Result<Target> {
        let client = client(insecure)?;
        let d = client
            .subject_descriptor(r)
            .map_err(|e| fail_in(format!("cannot read {}", r.familiar()), e))?;
        let pinned = r.with_digest(&d.digest);
        Ok(Target::Remote(store, Box::new(client), pinned, d))
    }

    /// This local image as its registry holds it (same digest): where `verify` looks when the
    /// store has no signature of an image that came from a registry.
    pub(super) fn in_registry(&self, r: &Reference, insecure: bool) -> miette::Result<Target> {
        let d = self.descriptor().clone();
        let client = client(insecure)?;
        Ok(Target::Remote(
            self.store().clone(),
            Box::new(client),
            r.with_digest(&d.digest),
            d,
        ))
    }

    pub(super) fn resolve(reference: &str, place: &WhereFlags) -> miette::Result<Target> {
        let store = open_store_leased()?;
        if !place.remote {
            let d = store
                .resolve(reference)
                .map_err(|e| fail_in(format!("cannot read {reference} from the local store"), e))?
                .ok_or_else(|| not_in_store(reference))?;
            return Ok(Target::Local(store, d));
        }
        let r = parse_reference(reference)?;
        Target::remote(store, &r, place.insecure)
    }

    pub(super) fn descriptor(&self) -> &Descriptor {
        match self {
            Target::Local(_, d) | Target::Remote(_, _, _, d) => d,
        }
    }

    pub(super) fn store(&self) -> &Store {
        match self {
            Target::Local(s, _) | Target::Remote(s, ..) => s,
        }
    }

    /// The repository name a statement about this image names (no tag, no digest).
    pub(super) fn subject_name(&self, reference: &str) -> String {
        match self {
            Target::Remote(_, _, r, _) => r.name(),
            Target::Local(..) => {
                let name = reference.split('@').next().unwrap_or(reference);
                if name.starts_with("sha256:") {
                    return name.to_owned();
                }
                otters_oci::store::query::repository_and_tag(name).0
            }
        }
    }

    /// The referrers of `subject`, of `artifact_type` when given.
    pub(super) fn referrers(
        &self,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> miette::Result<Vec<Descriptor>> {
        match self {
            Target::Local(store, _) => {
                let list = store
                    .referrers(subject)
                    .map_err(|e| fail_in("cannot read the store's referrers", e))?;
                Ok(otters_oci::referrers::filter(list, artifact_type))
            }
            Target::Remote(_, client, r, _) => Ok(client
                .referrers(r, subject, artifact_type)
                .map_err(|e| fail_in(format!("cannot list the referrers of {}", r.familiar()), e))?
                .entries),
        }
    }

    /// The referrers of `subject` (of `artifact_type` when given) with their kind filled in, and
    /// the registry requests that took: an entry that lacks its `artifactType` (a `skopeo copy`
    /// of a tag-schema index drops it) is classified by its manifest.
    pub(super) fn listing(
        &self,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> miette::Result<(Vec<Descriptor>, usize)> {
        let Target::Remote(_, client, r, _) = self else {
            return Ok((self.referrers(subject, artifact_type)?, 0));
        };
        let mut listing = client
            .referrers(r, subject, artifact_type)
            .map_err(|e| fail_in(format!("cannot list the referrers of {}", r.familiar()), e))?;
        let mut requests = listing.requests;
        for d in listing
            .entries
            .iter_mut()
            .filter(|d| d.artifact_type.is_none())
        {
            requests += 1;
            // A manifest that cannot be read stays unclassified; `discover` still lists it.
            let _ = client.classify(r, d);
        }
        Ok((listing.entries, requests))
    }

    /// A referrer's manifest bytes (digest-checked).
    pub(super) fn manifest(&self, d: &Descriptor) -> miette::Result<Vec<u8>> {
        match self {
            Target::Local(store, _) => store.read_blob(&d.digest).map_err(fail),
            Target::Remote(_, client, r, _) => Ok(client
                .fetch_manifest(&r.with_digest(&d.digest))
                .map_err(fail)?
                .bytes),
        }
    }

    /// A small blob of a referrer (digest-checked, at most `max` bytes).
    pub(super) fn blob(&self, d: &Descriptor, max: u64) -> miette::Result<Vec<u8>> {
        if d.size > max {
            return Err(miette!(
                "blob {} is {} bytes, more than {max}",
                d.digest,
                d.size
            ));
        }
        match self {
            Target::Local(store, _) => store.read_blob(&d.digest).map_err(fail),
            Target::Remote(_, client, r, _) => client.fetch_blob(r, &d.digest, max).map_err(fail),
        }
    }

    /// Records a referrer (already in the local store) of this image: locally, and for a remote
    /// image also in its registry.
    pub(super) fn publish(&self, referrer: &Descriptor) -> miette::Result<()> {
        if let Target::Remote(store, client, r, subject) = self {
            let mut sources = Sources::load(store.root());
            let mut report = TransferReport::new(
                r.to_string(),
                subject.digest.clone(),
                subject.media_type.clone(),
            );
            let result = push_referrer(
                client,
                store,
                &subject.digest,
                referrer,
                r,
                &mut sources,
                &mut |_| {},
                &mut report,
            );
            let _ = sources.save();
            result
                .map_err(|e| fail_in(format!("cannot push the referrer to {}", r.familiar()), e))?;
        }
        Ok(())
    }
}

fn not_in_store(reference: &str) -> miette::Report {
    miette!(
        "no image {} in the local store: build or pull it, or pass --remote to use its registry",
        esc(reference)
    )
}

/// The registry reference `reference` spells out (`HOST/…`), if it names one: never an implied
/// Docker Hub for a local tag such as `agents/demo:1`.
pub(super) fn names_registry(reference: &str) -> Option<Reference> {
    Reference::parse(reference)
        .ok()
        .filter(|r| reference.starts_with(&format!("{}/", r.registry)))
}

pub fn run_attach(a: AttachArgs) -> CliResult {
    for (flag, value) in [
        ("--artifact-type", &a.artifact_type),
        ("--layer-media-type", &a.layer_media_type),
    ] {
        if !otters_oci::referrers::plain_media_type(value) {
            return Err(miette!(
                "{flag} {}: write a media type, e.g. application/vnd.example.report+json",
                esc(value)
            ));
        }
    }
    let mut annotations = BTreeMap::new();
    for kv in &a.annotations {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| miette!("--annotation {kv}: write KEY=VALUE"))?;
        annotations.insert(k.to_owned(), v.to_owned());
    }
    let target = Target::resolve(&a.reference, &a.place)?;
    let store = target.store();
    let mut layers = Vec::new();
    for path in &a.files {
        let file = std::fs::File::open(path)
            .map_err(|e| miette!("cannot read {}: {e}", path.display()))?;
        let (digest, size) = store
            .put_blob_from_reader(file, &mut |_| {})
            .map_err(|e| fail_in(format!("cannot store {}", path.display()), e))?;
        let title = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        layers.push(
            Descriptor::new(a.layer_media_type.as_str(), digest, size)
                .with_annotation(otters_oci::spec::descriptor::ANN_TITLE, title),
        );
    }
    let d = store
        .attach(target.descriptor(), &a.artifact_type, &layers, &annotations)
        .map_err(|e| fail_in("cannot store the referrer", e))?;
    target.publish(&d)?;
    outln!("{}", d.digest);
    Ok(ExitCode::SUCCESS)
}

pub fn run_discover(a: DiscoverArgs) -> CliResult {
    let target = Target::resolve_for_read(&a.reference, &a.place)?;
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
    )?;
    let nodes = json_nodes(&tree.referrers);
    match a.format {
        Format::Json => {
            let mut v = json!({
                "reference": a.reference,
                "digest": root.digest,
                "mediaType": root.media_type,
                "referrers": nodes,
            });
            if tree.cut {
                v["truncated"] = json!(true);
                v["requests"] = json!(tree.requests);
            }
            outln!("{}", serde_json::to_string_pretty(&v).map_err(fail)?);
        }
        Format::Text => {
            outln!("{}@{}", esc(&a.reference), root.digest);
            print_tree(&nodes, "");
        }
    }
    if tree.cut {
        eprintln!(
            "warning: the output was cut after {} registry requests (--max-requests {}): deeper referrers are not listed; pass a larger --max-requests, or discover a referrer by its digest",
            tree.requests, a.max_requests
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The discovered tree as JSON nodes, each with its kind (signature, SBOM, …) when known.
fn json_nodes(nodes: &[Node]) -> Vec<serde_json::Value> {
    nodes
        .iter()
        .map(|n| {
            let d = &n.descriptor;
            let mut v = json!({
                "digest": d.digest,
                "mediaType": d.media_type,
                "size": d.size,
                "artifactType": d.artifact_type,
                "annotations": d.annotations,
                "referrers": json_nodes(&n.referrers),
            });
            if let Some(k) =
                otters_supply::referrer::kind(d.artifact_type.as_deref(), &d.annotations)
            {
                v["kind"] = json!(k);
            }
            v
        })
        .collect()
}

fn print_tree(nodes: &[serde_json::Value], prefix: &str) {
    for (i, n) in nodes.iter().enumerate() {
        let last = i + 1 == nodes.len();
        let at = n["artifactType"].as_str().unwrap_or("(no artifact type)");
        let digest = n["digest"].as_str().unwrap_or_default();
        let kind = n["kind"]
            .as_str()
            .map(|k| format!(" ({k})"))
            .unwrap_or_default();
        outln!(
            "{prefix}{} {} {}{kind}",
            if last { "└──" } else { "├──" },
            esc(at),
            esc(digest)
        );
        if let Some(below) = n["referrers"].as_array() {
            let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
            print_tree(below, &deeper);
        }
    }
}
