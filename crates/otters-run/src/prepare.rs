//! Run preparation: from what the user named to the [`RunOptions`] a plan is made from.
//!
//! Takes: the image reference (or the path of an Agentfile to build first), the pull policy, the
//! user's name, root and executor choices, and the local store. Returns: the image in the store
//! (pulled and tagged when missing and allowed), the agent's name, root and id (kept from an earlier
//! run of the same agent), the executor and the owner of the tree. Must never: contact a registry
//! under [`Pull::Never`], trust a file the agent's tree holds beyond its `id` (read bounded, never
//! through a symlink), or print.

use super::env::{provider_prefix, untrusted_provider, EnvEntry, KEYLESS_PROVIDERS};
use super::fetch::RegistryFetcher;
use super::marker::{self, ClaimError};
use super::mounts::UserMount;
use super::overrides::Overrides;
use super::plan::{is_path_safe, Launcher, Pins, RunOptions, CONTAINER_USER};
use super::source::{self, AgentImage, Platform, SourceError};
use otters_oci::{Digest, Store, StoreError};
use otters_pipeline::lower::agent_yaml::Executor as ExecutorKind;
use std::path::{Path, PathBuf};

/// Whether `otters run` may pull what the store lacks (`--pull`; the flag's help describes the
/// values, not these comments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Pull {
    /// Never contact a registry.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Never,
    /// Pull images missing from the store.
    #[default]
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Missing,
    /// Ask the registry a reference names (`HOST/…`) what it names now, and pull when that is
    /// not the local copy; a digest reference the store holds, or a local tag, is used as it is.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Always,
}

impl Pull {
    /// The policy of a command whose only choice is `--offline`: never, else what is missing.
    pub fn missing_unless(offline: bool) -> Pull {
        if offline {
            Pull::Never
        } else {
            Pull::Missing
        }
    }
}

/// What the argument of `otters run` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// An existing Agentfile or build context: build it first.
    Path,
    /// Written as a path (`./x`, `../x`, `/x`, `~/x`, `.`, `..`) that does not exist: never
    /// parsed as a reference, so a typo reads as a missing path.
    MissingPath,
    /// An image reference.
    Image,
}

impl Target {
    pub fn of(arg: &str) -> Target {
        if Path::new(arg).exists() {
            Target::Path
        } else if arg == "."
            || arg == ".."
            || ["./", "../", "/", "~/"].iter().any(|p| arg.starts_with(p))
        {
            Target::MissingPath
        } else {
            Target::Image
        }
    }
}

/// The local tag `otters run PATH` builds the Agentfile at `path` into: one per absolute path.
pub fn build_tag(path: &Path) -> std::io::Result<String> {
    use sha2::Digest as _;
    let abs = std::fs::canonicalize(path)?;
    let slug = hex::encode(&sha2::Sha256::digest(abs.as_os_str().as_encoded_bytes())[..6]);
    Ok(format!("localhost/otters-run/{slug}:latest"))
}

/// The platform to run for when none is given: this host, with `linux` for a container.
pub fn default_platform(executor: ExecutorKind) -> Platform {
    match executor {
        ExecutorKind::Docker => Platform {
            os: "linux".into(),
            ..Platform::host()
        },
        ExecutorKind::System => Platform::host(),
    }
}

/// Why a run cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error("agent name {0:?} must match [A-Za-z0-9][A-Za-z0-9._-]{{0,62}}")]
    BadName(String),
}

/// An image found in the store, or pulled into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// Digest of its manifest or index.
    pub digest: Digest,
    /// True when blobs of it were pulled just now (not when the store already held them, as
    /// another name or digest reference).
    pub pulled: bool,
    /// The local tag a pull gave it (see `pulled_tag`) or moved; none when found in the store,
    /// pulled by digest alone, or its tag already named it.
    pub tag: Option<String>,
    /// What that tag named before it moved (`Pull::Always` after the registry's tag moved).
    pub previous: Option<Digest>,
}

/// The image `reference` names: from the store, or pulled and tagged when missing and `pull`
/// allows it.
pub fn fetch_image(
    store: &Store,
    registry: &RegistryFetcher,
    reference: &str,
    pull: Pull,
) -> Result<Fetched, PrepareError> {
    let held = store.resolve(reference)?.map(|d| d.digest);
    let pinned = reference.contains('@');
    let ask = pull == Pull::Always
        && !pinned
        && otters_pipeline::target::names_registry(reference).is_some();
    if let Some(digest) = held.clone().filter(|_| !ask) {
        return Ok(Fetched {
            digest,
            pulled: false,
            tag: None,
            previous: None,
        });
    }
    if pull == Pull::Never {
        return Err(SourceError::NotLocal {
            reference: reference.to_owned(),
        }
        .into());
    }
    let (digest, pulled) = registry.pull_counted(store, reference, None)?;
    let tag = pulled_tag(reference);
    if let (Some(tag), Some(desc)) = (&tag, store.resolve(digest.as_str())?) {
        store.tag(tag, &desc)?;
    }
    let moved = held.as_ref() != Some(&digest);
    Ok(Fetched {
        pulled,
        tag: tag.filter(|_| moved),
        previous: held.filter(|_| moved),
        digest,
    })
}

/// The local tag an image pulled as `reference` gets: the reference itself, or for a digest
/// reference its `name:tag` part (`reg/x:1@sha256:…` → `reg/x:1`); none for `reg/x@sha256:…`,
/// which names no tag (a tag cannot hold a digest).
fn pulled_tag(reference: &str) -> Option<String> {
    let Some((name, _)) = reference.split_once('@') else {
        return Some(reference.to_owned());
    };
    otters_oci::reference::Reference::parse(reference)
        .ok()
        .and_then(|r| r.tag)
        .map(|_| name.to_owned())
}

/// What the user chose for a run.
#[derive(Clone, Debug)]
pub struct Request {
    /// `--name`; default the image's NAME, else `agent`.
    pub name: Option<String>,
    /// `--root`, relative to `cwd`; default `<agents>/<name>`.
    pub root: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Where agents live (`$OTTERS_HOME/agents`).
    pub agents: PathBuf,
    pub executor: ExecutorKind,
    /// The docker-compatible CLI and base image of [`ExecutorKind::Docker`].
    pub docker: PathBuf,
    pub base_image: String,
    pub overrides: Overrides,
    pub mounts: Vec<UserMount>,
    pub allow_missing_mounts: bool,
    pub platform: Platform,
    /// A verify key is in force: refuse an unpinned RUNTIME or BIN ([`Pins::Signed`]).
    pub require_pins: bool,
    /// `--provider`: model providers beyond [`super::env::KNOWN_PROVIDERS`] whose credentials
    /// may be passed.
    pub providers: Vec<String>,
}

/// A run ready to plan.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub image: AgentImage,
    pub options: RunOptions,
    /// Who should own the tree (uid, gid), when not the current user.
    pub owner: Option<(u32, u32)>,
}

/// Loads the image and chooses the agent's name, root, id and executor.
pub fn prepare(
    store: &Store,
    reference: &str,
    digest: &Digest,
    req: Request,
) -> Result<Prepared, PrepareError> {
    let manifest = source::agent_manifest(store, reference, digest, &req.platform)?;
    let image = source::load_agent(store, reference, &manifest)?;
    // The user chose the tree (`--root`, `--name`): it may be handed from another repository.
    let chosen = req.root.is_some() || req.name.is_some();
    // Only `$OTTERS_HOME/agents` may hold trees of releases before the marker.
    let legacy_ok = req.root.is_none();
    let name = agent_name(req.name, &image)?;
    let root = req
        .root
        .map_or_else(|| req.agents.join(&name), |r| req.cwd.join(r))
        // `--root .` names the directory, not a `.` entry in it.
        .components()
        .collect::<PathBuf>();
    marker::claim(&root, &name, reference, digest, chosen, legacy_ok)?;
    let id = previous_id(&root).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let (executor, owner) = executor(req.executor, req.docker, req.base_image, process_ids());
    let options = RunOptions {
        root,
        name,
        id,
        executor,
        overrides: req.overrides,
        mounts: req.mounts,
        allow_missing_mounts: req.allow_missing_mounts,
        platform: req.platform,
        pins: if req.require_pins {
            Pins::Signed
        } else {
            Pins::Optional
        },
        providers: req.providers,
    };
    Ok(Prepared {
        image,
        options,
        owner,
    })
}

/// `--name`, else the image's NAME, else `agent`; refused unless safe as a directory name.
fn agent_name(flag: Option<String>, image: &AgentImage) -> Result<String, PrepareError> {
    let name = flag
        .or_else(|| {
            image
                .model
                .agent
                .name_str()
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "agent".into());
    if is_path_safe(&name) {
        Ok(name)
    } else {
        Err(PrepareError::BadName(name))
    }
}

/// This process's uid and gid (root's when unknown).
fn process_ids() -> (u32, u32) {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").map_or((0, 0), |m| (m.uid(), m.gid()))
}

/// The executor, and who should own the tree: a container run by root runs as
/// [`CONTAINER_USER`], which must own the tree; anyone else runs as themselves.
fn executor(
    kind: ExecutorKind,
    cli: PathBuf,
    base_image: String,
    (uid, gid): (u32, u32),
) -> (Launcher, Option<(u32, u32)>) {
    match kind {
        ExecutorKind::System => (Launcher::System, None),
        ExecutorKind::Docker => {
            let (user, owner) = if uid == 0 {
                (CONTAINER_USER.to_owned(), Some((65532, 65532)))
            } else {
                (format!("{uid}:{gid}"), None)
            };
            let executor = Launcher::Docker {
                cli,
                base_image,
                user,
            };
            (executor, owner)
        }
    }
}

/// The id recorded by a previous run of the same agent, so it keeps its identity.
pub fn previous_id(root: &Path) -> Option<String> {
    let text = marker::read_tree_file(&root.join("etc/agent.yaml"))?;
    let id = otters_pipeline::lower::agent_yaml::parse(text.as_bytes())
        .ok()?
        .id?;
    uuid::Uuid::parse_str(&id).ok().map(|u| u.to_string())
}

/// The credential MODEL's provider needs (`anthropic/…` → `ANTHROPIC_API_KEY`); `None` for a
/// model without a provider or a local one (`ollama/…`, …).
pub fn provider_key(model: &str) -> Option<String> {
    let provider = model.split_once('/')?.0;
    if KEYLESS_PROVIDERS.contains(&provider.to_ascii_lowercase().as_str()) {
        return None;
    }
    Some(format!("{}_API_KEY", provider_prefix(model)?))
}

/// A warning when MODEL's provider key (`anthropic/…` → `ANTHROPIC_API_KEY`) is not among the
/// variables the runtime gets, i.e. unset or empty where otters runs: the agent would start and
/// fail on its first model call. Nothing for a provider whose credentials are not passed (the
/// plan warns about that).
pub fn missing_provider_key(
    model: Option<&str>,
    named: &[String],
    env: &[EnvEntry],
) -> Option<crate::plan::Warning> {
    let model = model.filter(|m| !m.is_empty())?;
    if untrusted_provider(model, named).is_some() {
        return None;
    }
    let key = provider_key(model)?;
    if env.iter().any(|e| e.key == key) {
        return None;
    }
    // MODEL comes from the image: shown escaped and bounded.
    let model = otters_oci::validate::escape_text(model, 120);
    let key = otters_oci::validate::escape_text(&key, 80);
    Some(crate::plan::Warning::KeyUnset { model, key })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn targets_are_paths_only_when_written_as_paths_or_existing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Target::of(dir.path().to_str().unwrap()), Target::Path);
        assert_eq!(Target::of("./no-such-dir-here"), Target::MissingPath);
        assert_eq!(Target::of("~/agent"), Target::MissingPath);
        assert_eq!(Target::of("ghcr.io/org/agent:1"), Target::Image);
        assert_eq!(Target::of("agent"), Target::Image);
    }

    #[test]
    fn build_tags_are_stable_per_path() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let tag = build_tag(a.path()).unwrap();
        assert!(tag.starts_with("localhost/otters-run/") && tag.ends_with(":latest"));
        assert_eq!(tag, build_tag(a.path()).unwrap());
        assert_ne!(tag, build_tag(b.path()).unwrap());
        assert!(build_tag(&a.path().join("missing")).is_err());
    }

    #[test]
    fn docker_runs_linux_and_root_hands_the_tree_to_the_container_user() {
        assert_eq!(default_platform(ExecutorKind::Docker).os, "linux");
        assert_eq!(default_platform(ExecutorKind::System), Platform::host());
        let docker = |ids| executor(ExecutorKind::Docker, "podman".into(), "img".into(), ids);
        let (e, owner) = docker((0, 0));
        assert_eq!(owner, Some((65532, 65532)));
        assert!(matches!(e, Launcher::Docker { user, .. } if user == CONTAINER_USER));
        let (e, owner) = docker((1000, 100));
        assert_eq!(owner, None);
        assert!(matches!(e, Launcher::Docker { user, .. } if user == "1000:100"));
        let (e, owner) = executor(ExecutorKind::System, "docker".into(), "img".into(), (0, 0));
        assert_eq!((e, owner), (Launcher::System, None));
    }

    #[test]
    fn an_agent_keeps_its_id_but_not_through_a_symlink_or_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("agent");
        fs::create_dir_all(root.join("etc")).unwrap();
        let id = "0b0e5f0e-8a61-4c43-9d1c-3f4f3c8c2b1a";
        fs::write(root.join("etc/agent.yaml"), format!("id: \"{id}\"\n")).unwrap();
        assert_eq!(previous_id(&root).as_deref(), Some(id));
        fs::write(root.join("etc/agent.yaml"), "id: not-a-uuid\n").unwrap();
        assert_eq!(previous_id(&root), None);
        let real = dir.path().join("real.yaml");
        fs::write(&real, format!("id: \"{id}\"\n")).unwrap();
        fs::remove_file(root.join("etc/agent.yaml")).unwrap();
        std::os::unix::fs::symlink(&real, root.join("etc/agent.yaml")).unwrap();
        assert_eq!(previous_id(&root), None);
        assert_eq!(previous_id(&dir.path().join("none")), None);
    }

    #[test]
    fn digest_references_are_tagged_by_their_tag_part_only() {
        let d = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
        assert_eq!(
            pulled_tag("reg.example/x:1").as_deref(),
            Some("reg.example/x:1")
        );
        assert_eq!(
            pulled_tag(&format!("reg.example/x:1@{d}")).as_deref(),
            Some("reg.example/x:1")
        );
        assert_eq!(pulled_tag(&format!("reg.example/x@{d}")), None);
    }

    #[test]
    fn pull_always_asks_no_registry_for_a_digest_or_a_local_tag() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let bytes = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}"#;
        let d = store
            .put_manifest(bytes, otters_oci::spec::media_type::MANIFEST_V1)
            .unwrap();
        store.tag("demo:1", &d).unwrap();
        store.tag("example.invalid/a:1", &d).unwrap();
        // Nothing listens at example.invalid: asking it would fail.
        let registry = RegistryFetcher::new(otters_oci::registry::ClientOptions::default());
        for local in ["demo:1", &format!("example.invalid/a@{}", d.digest)] {
            let got = fetch_image(&store, &registry, local, Pull::Always).unwrap();
            assert_eq!(
                (got.digest, got.pulled),
                (d.digest.clone(), false),
                "{local}"
            );
        }
        assert!(fetch_image(&store, &registry, "example.invalid/a:1", Pull::Always).is_err());
        assert!(fetch_image(&store, &registry, "example.invalid/a:1", Pull::Missing).is_ok());
    }

    #[test]
    fn a_missing_image_is_not_pulled_under_pull_never() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let registry = RegistryFetcher::new(otters_oci::registry::ClientOptions::default());
        let err = fetch_image(&store, &registry, "example.invalid/a:1", Pull::Never).unwrap_err();
        assert!(
            matches!(err, PrepareError::Source(SourceError::NotLocal { .. })),
            "{err}"
        );
    }

    #[test]
    fn provider_keys_are_asked_for_unless_set_or_local() {
        let entry = |key: &str| EnvEntry {
            key: key.into(),
            value: "x".into(),
            secret: true,
        };
        let w = missing_provider_key(Some("anthropic/claude"), &[], &[]).unwrap();
        assert!(w.to_string().contains("export ANTHROPIC_API_KEY"), "{w}");
        assert_eq!(
            missing_provider_key(Some("anthropic/claude"), &[], &[entry("ANTHROPIC_API_KEY")]),
            None
        );
        assert_eq!(missing_provider_key(Some("ollama/llama3"), &[], &[]), None);
        assert_eq!(missing_provider_key(Some("claude"), &[], &[]), None);
        assert_eq!(missing_provider_key(None, &[], &[]), None);
        assert_eq!(missing_provider_key(Some("stripe/x"), &[], &[]), None);
        let named = ["stripe".to_owned()];
        assert!(missing_provider_key(Some("stripe/x"), &named, &[]).is_some());
    }
}
