//! `otters export --as runnable`: an agent image → an ordinary OCI image that any container
//! runtime runs with no otters on the host.
//!
//! Takes: the store, an agent image (a manifest, or an index of one per platform) and a
//! [`Fetcher`] for its pinned runtime and BIN images. Returns: the image (or index) stored as a
//! referrer of the agent, its manifest's `subject` the agent, so `discover` lists it and `kube`
//! finds it. Its filesystem is the agent tree exactly as the docker executor shows it to the agent:
//! the tree is planned by [`crate::plan::plan`] and written by
//! [`crate::materialise::materialise`] (docker layout, the same code `otters run` uses), then
//! each [`CONTAINER_BINDS`] entry lands at its container path. Layers: the runtime, one per BIN,
//! the agent's own files, so agents sharing a runtime or BIN share those layers. Entrypoint, Cmd,
//! `WorkingDir` and `Env` are the docker executor's; the user is [`USER`].
//!
//! The image config ([`config`]) carries the agent's time, LABELs and a history per layer. A
//! RUNTIME or BIN that could not start in the image (a script whose interpreter, or a dynamic
//! program whose loader, is not in it: [`loader`]) is refused. The working copy is private
//! ([`private_workdir`]).
//!
//! Must never: put a credential in the image (the environment is built with no host lookup), read
//! a tag for the runtime or BINs when the agent pins them, or depend on the clock, host, user,
//! umask or directory order (same agent, same digest).

pub mod config;
#[cfg(test)]
mod export_tests;
pub mod layers;
pub mod loader;
pub mod push;
pub mod tree;

use crate::extract::Limits;
use crate::materialise::{self, MaterialiseError};
use crate::mounts::UserMount;
use crate::overrides::Overrides;
use crate::plan::{
    self, Launcher, Pins, PlanError, RunOptions, CONTAINER_BINDS, CONTAINER_RUNTIME,
};
use crate::source::{self, AgentImage, Fetcher, SourceError};
use layers::{Group, LayerError};
use otters_core::json::{to_compact, Value};
use otters_oci::referrers::descriptor_of;
use otters_oci::spec::annotations::{EXPORT, EXPORT_PLATFORM};
use otters_oci::spec::descriptor::{string_map, Descriptor, ManifestDoc, INDEX_V1, MANIFEST_V1};
use otters_oci::spec::media_type::CONFIG_V1;
use otters_oci::{Digest, MediaType, Platform, Store, StoreError};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The numeric user (and group) the image runs as: not root, and the owner of the agent's
/// writable directories.
pub const USER_ID: u32 = 65532;
/// [`USER_ID`] as the image config's `User`.
pub const USER: &str = "65532:65532";
/// The value of the export annotation ([`EXPORT`]) for `--as runnable`.
pub const RUNNABLE: &str = "runnable";

/// What an export makes of the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum As {
    /// An image any container runtime runs: the runtime, its BINs and the agent tree.
    Runnable,
    /// The agent's `etc/` tree alone, image-shaped, to mount as an image volume ([`tree`]).
    Tree,
}

impl As {
    /// The value of the export annotation ([`EXPORT`]) that marks this kind of export.
    pub fn annotation(self) -> &'static str {
        match self {
            As::Runnable => RUNNABLE,
            As::Tree => tree::TREE,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Materialise(#[from] MaterialiseError),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot create a temporary directory for the export: {0}")]
    Temp(std::io::Error),
    #[error("the {what} is {kind} that needs {needed} to start, and the image has no {needed}: an export holds only the runtime, its BINs and the agent's files, so a container would fail with `exec {at}: no such file or directory`; {fix}")]
    MissingLoader {
        what: String,
        kind: &'static str,
        needed: String,
        at: String,
        fix: &'static str,
    },
    #[error("cannot read {}: {source}", .path.display())]
    ReadProgram {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{reference}: the index has no image for {wanted} (it has: {available})")]
    NoPlatform {
        reference: String,
        wanted: String,
        available: String,
    },
}

/// One exported image.
#[derive(Clone, Debug)]
pub struct Image {
    pub platform: Platform,
    /// The image manifest (with its platform when part of an index).
    pub manifest: Descriptor,
    /// The agent manifest it was made from (its `subject`).
    pub agent: Digest,
    pub layers: Vec<Descriptor>,
}

/// What an export stored.
#[derive(Clone, Debug)]
pub struct Exported {
    /// The image manifest, or the index over one image per platform.
    pub descriptor: Descriptor,
    pub images: Vec<Image>,
}

/// Exports the agent `top` (a manifest, or an index of one agent per platform) named
/// `reference`. For a manifest, `platform` is the image's platform (the runtime and BINs are
/// taken for it); for an index, `Some` exports that platform's image only and `None` all of
/// them, as an index.
pub fn export(
    store: &Store,
    fetcher: &dyn Fetcher,
    reference: &str,
    top: &Digest,
    platform: Option<&Platform>,
    limits: &Limits,
) -> Result<Exported, ExportError> {
    export_as(
        store,
        fetcher,
        reference,
        top,
        platform,
        limits,
        As::Runnable,
    )
}

/// [`export`] as `what`: the runnable image, or the agent's tree alone ([`tree`]).
pub fn export_as(
    store: &Store,
    fetcher: &dyn Fetcher,
    reference: &str,
    top: &Digest,
    platform: Option<&Platform>,
    limits: &Limits,
    what: As,
) -> Result<Exported, ExportError> {
    make(
        store,
        fetcher,
        reference,
        top,
        platform,
        limits,
        (what, true),
    )
}

/// The export [`export`] would make of the agent `top` (same bytes, same digest: an export is
/// reproducible), stored but not recorded as the agent's referrer: what `kube` compares a listed
/// export with before it points a cluster at it.
pub fn derive(
    store: &Store,
    fetcher: &dyn Fetcher,
    reference: &str,
    top: &Digest,
    platform: Option<&Platform>,
    limits: &Limits,
) -> Result<Exported, ExportError> {
    derive_as(
        store,
        fetcher,
        reference,
        top,
        platform,
        limits,
        As::Runnable,
    )
}

/// [`derive()`] as `what`.
pub fn derive_as(
    store: &Store,
    fetcher: &dyn Fetcher,
    reference: &str,
    top: &Digest,
    platform: Option<&Platform>,
    limits: &Limits,
    what: As,
) -> Result<Exported, ExportError> {
    make(
        store,
        fetcher,
        reference,
        top,
        platform,
        limits,
        (what, false),
    )
}

fn make(
    store: &Store,
    fetcher: &dyn Fetcher,
    reference: &str,
    top: &Digest,
    platform: Option<&Platform>,
    limits: &Limits,
    (what, record): (As, bool),
) -> Result<Exported, ExportError> {
    let bytes = store.read_blob(top)?;
    let doc: ManifestDoc = serde_json::from_slice(&bytes).unwrap_or_default();
    if doc.media_type != Some(MediaType::OciIndex) && doc.manifests.is_empty() {
        let host = linux_host();
        let platform = platform.unwrap_or(&host);
        let image = export_one(
            store,
            fetcher,
            reference,
            top,
            platform,
            limits,
            (what, record),
        )?;
        return Ok(Exported {
            descriptor: image.manifest.clone(),
            images: vec![image],
        });
    }
    let candidates = Platform::candidates(&doc.manifests);
    let chosen: Vec<(Platform, Digest)> = match platform {
        Some(p) => match p.pick(&candidates) {
            Some(hit) => vec![hit],
            None => {
                return Err(ExportError::NoPlatform {
                    reference: reference.to_owned(),
                    wanted: p.to_string(),
                    available: candidates
                        .iter()
                        .map(|(p, _)| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        },
        None => candidates,
    };
    let mut images = Vec::new();
    for (p, d) in &chosen {
        let mut image = export_one(store, fetcher, reference, d, p, limits, (what, record))?;
        image.manifest.platform = Some(p.clone());
        image.manifest.annotations.clear();
        image.manifest.artifact_type = None;
        images.push(image);
    }
    if platform.is_some() {
        let image = images.remove(0);
        return Ok(Exported {
            descriptor: image.manifest.clone(),
            images: vec![image],
        });
    }
    let subject = Descriptor::new(MediaType::OciIndex, top.clone(), bytes.len() as u64);
    let index = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", INDEX_V1)
        .with(
            "manifests",
            Value::Array(images.iter().map(|i| i.manifest.to_json()).collect()),
        )
        .with("subject", subject.to_json())
        .with("annotations", string_map(&export_annotations(what, None)));
    let index = to_compact(&index).unwrap_or_default();
    let stored = store.put_manifest(&index, INDEX_V1)?;
    let listed = descriptor_of(&index, &stored.media_type);
    if record {
        store.add_referrer(top, &listed)?;
    }
    Ok(Exported {
        descriptor: listed,
        images,
    })
}

/// `linux` on this machine's architecture: the platform of an image exported from an agent
/// manifest when `--platform` is not given (a container runs Linux).
pub fn linux_host() -> Platform {
    Platform {
        os: "linux".into(),
        ..Platform::host()
    }
}

fn export_annotations(what: As, platform: Option<&Platform>) -> BTreeMap<String, String> {
    let mut a = BTreeMap::from([(EXPORT.to_owned(), what.annotation().to_owned())]);
    if let Some(p) = platform {
        a.insert(EXPORT_PLATFORM.to_owned(), p.to_string());
    }
    a
}

/// The export's working copy of the agent: a directory in the system's temporary directory (a
/// place other users share) that only this user may enter (0700 whatever the umask), so nobody
/// else reads the agent's files, or races a link into the tree, while the layers are written.
pub fn private_workdir() -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("otters-export-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// The agent id written into an exported tree: derived from the agent's digest, so the same
/// agent always gets the same id (a run's id is random, and kept from run to run).
pub fn agent_id(digest: &Digest) -> String {
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&digest.hex()[2 * i..2 * i + 2], 16).unwrap_or(0);
    }
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// The reference written into the exported `agent.yaml`: the repository without tag or digest
/// (the digest is written beside it), so a retag does not change the image.
fn canonical_reference(reference: &str) -> String {
    otters_oci::reference::Reference::parse(reference)
        .map_or_else(|_| reference.to_owned(), |r| r.name())
}

/// Every MOUNT the agent declares, present at its target (the container's engine mounts it
/// there; in the container layout no host path is shown).
pub(crate) fn declared_mounts(image: &AgentImage) -> Vec<UserMount> {
    image
        .model
        .agent
        .mounts
        .iter()
        .map(|m| UserMount {
            host: PathBuf::from(&m.target),
            target: m.target.clone(),
            description: m.description.clone(),
            read_only: m.read_only,
        })
        .collect()
}

/// The environment the runnable export's image config sets for `image` on `platform` (`PATH`,
/// `HOME`, …, CONFIG values and ENVs; built with no host variable, so no credential).
pub fn export_env(
    image: &AgentImage,
    platform: &Platform,
) -> Result<Vec<crate::env::EnvEntry>, PlanError> {
    let root = std::env::temp_dir().join("otters-export-plan");
    Ok(plan_for_export(image, root, platform)?
        .env
        .into_iter()
        .filter(|e| !e.secret)
        .collect())
}

/// The plan of the exported tree: `otters run --executor docker` of the image, with every
/// declared MOUNT present (at its target), no required-CONFIG gate (values come from the
/// container's environment) and no host environment at all.
fn plan_for_export(
    image: &AgentImage,
    root: PathBuf,
    platform: &Platform,
) -> Result<plan::RunPlan, PlanError> {
    let mut planned = image.clone();
    planned.reference = canonical_reference(&image.reference);
    for c in &mut planned.model.agent.configs {
        c.required = false;
    }
    let mounts = declared_mounts(image);
    let name = image
        .model
        .agent
        .name_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("agent")
        .to_owned();
    let opts = RunOptions {
        root,
        name,
        id: agent_id(&image.digest),
        executor: Launcher::Docker {
            cli: PathBuf::from("docker"),
            base_image: String::new(),
            user: USER.to_owned(),
        },
        overrides: Overrides::default(),
        mounts,
        allow_missing_mounts: false,
        platform: platform.clone(),
        // An export copies the pinned RUNTIME and BIN images, never a tag's current content.
        pins: Pins::Export,
        // No credential enters the image: providers only matter for host lookups, and there are none.
        providers: Vec::new(),
    };
    plan::plan(&planned, &opts, &|_| None)
}

fn export_one(
    store: &Store,
    fetcher: &dyn Fetcher,
    reference: &str,
    digest: &Digest,
    platform: &Platform,
    limits: &Limits,
    (what, record): (As, bool),
) -> Result<Image, ExportError> {
    let image = source::load_agent(store, reference, digest)?;
    let tmp = private_workdir().map_err(ExportError::Temp)?;
    let root = tmp.path().join("agent");
    let plan = plan_for_export(&image, root.clone(), platform)?;
    materialise::materialise(&plan, store, fetcher, limits, None)?;
    if what == As::Tree {
        let layer = layers::write(store, &tree::group(&root)?)?;
        drop(tmp);
        let config = tree::image_config(&image, platform, &layer);
        let stored = (what, platform, record);
        return store_image(store, digest, &config, vec![layer.descriptor], stored);
    }

    let mut runtime = Group::new("runtime");
    let mut agent = Group::new("agent");
    let mut bins: Vec<Group> = Vec::new();
    for (src, dst, read_only) in CONTAINER_BINDS {
        let dst = dst.trim_start_matches('/');
        let from = root.join(src);
        match *src {
            "usr/local/bin" => runtime.add(&from, dst.as_bytes(), 0)?,
            "usr/bin" => {
                agent.dir(dst.as_bytes(), 0);
                let mut seen = std::collections::BTreeSet::new();
                for b in &image.model.agent.bins {
                    if seen.insert(b.name.as_str()) {
                        let mut g = Group::new(format!("bin/{}", b.name));
                        let at = format!("{dst}/{}", b.name);
                        g.add(&from.join(&b.name), at.as_bytes(), 0)?;
                        bins.push(g);
                    }
                }
            }
            _ => agent.add(&from, dst.as_bytes(), if *read_only { 0 } else { USER_ID })?,
        }
    }
    let groups: Vec<&Group> = std::iter::once(&runtime)
        .chain(&bins)
        .chain([&agent])
        .collect();
    check_loaders(&image, &root, &groups)?;
    let mut written = Vec::new();
    for g in &groups {
        written.push(layers::write(store, g)?);
    }
    drop(tmp);

    let model = image
        .model
        .agent
        .model
        .as_ref()
        .map(|m| m.value.clone())
        .unwrap_or_default();
    let agent_bytes = store.read_blob(digest)?;
    let agent_doc: ManifestDoc = serde_json::from_slice(&agent_bytes).unwrap_or_default();
    let layers: Vec<config::Layer> = written
        .iter()
        .zip(&groups)
        .map(|(w, g)| config::Layer {
            diff_id: &w.diff_id,
            created_by: config::created_by(&image, &plan, &g.title),
        })
        .collect();
    let config = config::image_config(
        &image,
        &agent_doc.annotations,
        platform,
        &plan.env,
        &plan::container_args(&plan::exec_args(&image), &model),
        &layers,
    );
    let layer_descs: Vec<Descriptor> = written.into_iter().map(|w| w.descriptor).collect();
    store_image(
        store,
        digest,
        &config,
        layer_descs,
        (As::Runnable, platform, record),
    )
}

/// Stores the image manifest over `config` and `layers`, its `subject` the agent manifest
/// `digest`, marked as `what` for `platform`; recorded as the agent's referrer when `record`.
fn store_image(
    store: &Store,
    digest: &Digest,
    config: &[u8],
    layer_descs: Vec<Descriptor>,
    (what, platform, record): (As, &Platform, bool),
) -> Result<Image, ExportError> {
    let agent_bytes = store.read_blob(digest)?;
    let (config_digest, config_size) = store.put_blob_bytes(config)?;
    let subject = Descriptor::new(MANIFEST_V1, digest.clone(), agent_bytes.len() as u64);
    let manifest = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", MANIFEST_V1)
        .with(
            "config",
            Descriptor::new(CONFIG_V1, config_digest, config_size).to_json(),
        )
        .with(
            "layers",
            Value::Array(layer_descs.iter().map(Descriptor::to_json).collect()),
        )
        .with("subject", subject.to_json())
        .with(
            "annotations",
            string_map(&export_annotations(what, Some(platform))),
        );
    let manifest = to_compact(&manifest).unwrap_or_default();
    let stored = store.put_manifest(&manifest, MANIFEST_V1)?;
    // As a referrers index lists it: with its annotations, which `kube` looks for.
    let listed = descriptor_of(&manifest, &stored.media_type);
    if record {
        store.add_referrer(digest, &listed)?;
    }
    Ok(Image {
        platform: platform.clone(),
        manifest: listed,
        agent: digest.clone(),
        layers: layer_descs,
    })
}

/// Refuses a RUNTIME or BIN that cannot start in the image: a script whose `#!` interpreter, or a
/// dynamically linked program whose loader, is not a file among the image's layers `groups`.
fn check_loaders(
    image: &AgentImage,
    root: &std::path::Path,
    groups: &[&Group],
) -> Result<(), ExportError> {
    let runtime = image
        .model
        .agent
        .runtime
        .as_ref()
        .map(|r| r.value.clone())
        .unwrap_or_default();
    let mut programs = vec![(
        format!("RUNTIME {runtime}"),
        "usr/local/bin/runtime".to_owned(),
        CONTAINER_RUNTIME.to_owned(),
    )];
    for b in &image.model.agent.bins {
        programs.push((
            format!("BIN {} ({})", b.name, b.image),
            format!("usr/bin/{}", b.name),
            format!("/opt/bins/{}", b.name),
        ));
    }
    for (what, tree_path, at) in programs {
        let path = root.join(&tree_path);
        let needs = loader::needs(&path).map_err(|source| ExportError::ReadProgram {
            path: path.clone(),
            source,
        })?;
        let Some(needs) = needs else { continue };
        let inside = needs
            .path()
            .strip_prefix(b"/")
            .is_some_and(|p| groups.iter().any(|g| g.has_file(p)));
        if inside {
            continue;
        }
        let needed =
            otters_core::escape::escape(&String::from_utf8_lossy(needs.path())).into_owned();
        let (kind, fix) = match needs {
            loader::Needs::Interpreter(_) => (
                "a script",
                "make it a static binary, or a script whose `#!` names one of the agent's BINs (`#!/opt/bins/NAME`); `otters run` (which has the host's or the base image's interpreters) runs it as it is",
            ),
            loader::Needs::Loader(_) => (
                "a dynamically linked program",
                "build it as a static binary (for example with musl, `-static`, or `CGO_ENABLED=0` for Go); `otters run` (which has the host's or the base image's libraries) runs it as it is",
            ),
        };
        return Err(ExportError::MissingLoader {
            what: otters_core::escape::escape(&what).into_owned(),
            kind,
            needed,
            at,
            fix,
        });
    }
    Ok(())
}

/// The runnable exports the store records for the agent `digest` (a manifest or an index): the
/// referrers marked [`EXPORT`] = [`RUNNABLE`], in digest order.
pub fn exports_of(store: &Store, digest: &Digest) -> Result<Vec<Descriptor>, StoreError> {
    exports_as(store, digest, As::Runnable)
}

/// The exports of kind `what` the store records for the agent `digest`: a tree export is never
/// taken for the runnable one, nor the other way round.
pub fn exports_as(store: &Store, digest: &Digest, what: As) -> Result<Vec<Descriptor>, StoreError> {
    Ok(store
        .referrers(digest)?
        .into_iter()
        .filter(|d| is_export(d, what))
        .collect())
}

/// Whether the referrer `d` is marked as an export of kind `what`.
pub fn is_export(d: &Descriptor, what: As) -> bool {
    d.annotations.get(EXPORT).map(String::as_str) == Some(what.annotation())
}

/// The runnable export to deploy for the agent `top`: among `exports` (its referrers marked
/// [`EXPORT`]), the one for `platform`, else an index over several platforms.
pub fn pick_export(exports: &[Descriptor], platform: &Platform) -> Option<Digest> {
    let wanted = platform.to_string();
    exports
        .iter()
        .find(|d| d.annotations.get(EXPORT_PLATFORM) == Some(&wanted))
        .or_else(|| exports.iter().find(|d| d.media_type.is_index()))
        .map(|d| d.digest.clone())
}

/// The runnable exports a registry lists for the agent `top` in `r`'s repository.
pub fn remote_exports(
    client: &otters_oci::registry::RegistryClient,
    r: &otters_oci::reference::Reference,
    top: &Digest,
    what: As,
) -> Result<Vec<Descriptor>, otters_oci::registry::RegistryError> {
    Ok(client
        .referrers(r, top, None)?
        .entries
        .into_iter()
        .filter(|d| is_export(d, what))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_id_is_a_uuid_of_the_digest() {
        let d = Digest::of(b"agent");
        let id = agent_id(&d);
        assert_eq!(id, agent_id(&d));
        assert_ne!(id, agent_id(&Digest::of(b"other")));
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    }

    #[test]
    fn the_working_copy_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = private_workdir().unwrap();
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn canonical_reference_drops_tag_and_digest() {
        assert_eq!(
            canonical_reference("127.0.0.1:5000/team/a:1"),
            "127.0.0.1:5000/team/a"
        );
        assert_eq!(canonical_reference("not a ref"), "not a ref");
    }
}
