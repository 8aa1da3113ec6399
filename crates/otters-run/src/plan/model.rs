//! The plan's types: what the user asked for ([`RunOptions`]), what `otters run` will do
//! ([`RunPlan`], [`TreeEntry`]), and why it cannot ([`PlanError`]).

use crate::env::EnvEntry;
use crate::mounts::{MountError, UserMount};
use crate::overrides::{OverrideError, Overrides};
use crate::source::Platform;
use otters_agentfile::ir::names::shown;
use otters_oci::{Digest, MediaType};
use serde::Serialize;
use std::path::PathBuf;

/// How the chosen executor launches the agent: on the host, or through a docker-compatible CLI
/// with its settings (the kind alone is [`otters_pipeline::lower::agent_yaml::Executor`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub enum Launcher {
    /// Replace otters with the runtime on the host.
    System,
    /// Exec a docker-compatible CLI (`docker`, `podman`) with `docker run`.
    Docker {
        /// The docker-compatible CLI that is executed.
        cli: PathBuf,
        /// The container image the agent tree is mounted into.
        base_image: String,
        /// The container user (`UID:GID`).
        user: String,
    },
}

/// What a run will do that its user should know, said in values; `otters run` prints each on
/// stderr and may add the flag that changes it. In the plan's JSON, each is its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// A dynamic-loader variable in the runtime's environment: set for this run (`given`), or by
    /// the image.
    LoaderEnv { key: String, given: bool },
    /// Declared MOUNT targets no mount backs.
    Unmounted(Vec<String>),
    /// Two data layers write one path; the later (`later`, an index of the layers) is kept.
    SamePath {
        earlier: usize,
        later: usize,
        path: String,
    },
    /// The RUNTIME the image names has no pinned digest.
    UnpinnedRuntime(String),
    /// A BIN (name, image) has no pinned digest.
    UnpinnedBin { name: String, image: String },
    /// MODEL's provider is not one otters knows, so its key (`key`) is not passed; both escaped.
    UnknownProvider { provider: String, key: String },
    /// MODEL needs `key`, which the environment does not set; both escaped.
    KeyUnset { model: String, key: String },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::LoaderEnv { key, given } => {
                let from = if *given { "set for this run" } else { "from the image" };
                write!(f, "{key} ({from}) is a dynamic-loader variable: the runtime and every BIN will load code as it says")
            }
            Warning::Unmounted(targets) => {
                write!(f, "declared mount(s) left unmounted: {}", targets.join(", "))
            }
            Warning::SamePath { earlier, later, path } => write!(
                f,
                "layers[{earlier}] and layers[{later}] both write {path} (openotters alpha.50 writes each `dst` as its base name); the later one is kept, as openotters keeps it"
            ),
            Warning::UnpinnedRuntime(r) => write!(
                f,
                "runtime {r} has no pinned digest in the image; resolving the tag now"
            ),
            Warning::UnpinnedBin { name, image } => write!(
                f,
                "BIN {name} ({image}) has no pinned digest in the image; resolving the tag now"
            ),
            Warning::UnknownProvider { provider, key } => write!(
                f,
                "MODEL's provider {provider} is not one otters knows, so {key} is not passed to the runtime (a MODEL must not pick any secret out of your environment)"
            ),
            Warning::KeyUnset { model, key } => write!(
                f,
                "MODEL {model} needs {key}, which is not set in this environment: the runtime starts without it and its first model call will fail; export {key} before `otters run`"
            ),
        }
    }
}

/// In the plan's JSON a warning is its text.
impl schemars::JsonSchema for Warning {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Warning".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "What the run will do that its user should know, as the text `otters run` prints."
        })
    }
}

impl Serialize for Warning {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The default base image of the docker executor (spec §g.5).
pub const DEFAULT_BASE_IMAGE: &str = "gcr.io/distroless/static-debian12:nonroot";

/// The container user of the docker executor when otters runs as root.
pub const CONTAINER_USER: &str = "65532:65532";

/// What the user asked for.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Absolute agent root.
    pub root: PathBuf,
    pub name: String,
    pub id: String,
    pub executor: Launcher,
    pub overrides: Overrides,
    pub mounts: Vec<UserMount>,
    pub allow_missing_mounts: bool,
    pub platform: Platform,
    /// Whether a RUNTIME or BIN without a pinned digest in the image is resolved by its tag or
    /// refused ([`PlanError::Unpinned`]), and why.
    pub pins: Pins,
    /// Model providers the user named (`--provider`): their credentials are passed like a known
    /// provider's ([`crate::env::untrusted_provider`]).
    pub providers: Vec<String>,
}

/// Whether a plan takes a RUNTIME or BIN that the image does not pin by digest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pins {
    /// It is resolved by its tag, with a warning ([`Warning::UnpinnedRuntime`]).
    #[default]
    Optional,
    /// A verify key is in force (`--verify-key`, `[verify] key`): the signature covers only the
    /// agent manifest and what it pins, so whoever moves the tag would choose the code that runs.
    Signed,
    /// An export: the image copies what the agent pins, never what a tag means today (the same
    /// agent gives the same image on any day).
    Export,
}

/// One thing in the materialised tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub enum TreeEntry {
    /// A directory otters creates.
    Dir {
        /// Its path inside the agent tree.
        path: String,
    },
    /// A layer copied verbatim, or unpacked (tar layers of ADD directories).
    Layer {
        /// Its path inside the agent tree.
        path: String,
        /// The layer's digest.
        digest: Digest,
        /// The layer's media type.
        media_type: MediaType,
        /// Whether the layer is unpacked (a directory) rather than copied (a file).
        unpack: bool,
        /// The title of an unpacked layer: its entries lie under `<title>/`, which is removed.
        #[serde(skip)]
        title: Option<String>,
    },
    /// A file otters writes (AGENT.md, agent.yaml …); `content` is not printed.
    Generated {
        /// Its path inside the agent tree.
        path: String,
        /// Its size in bytes.
        bytes: usize,
        #[serde(skip)]
        content: String,
    },
    /// A binary located in an image by the bin contract.
    Binary {
        /// Its path inside the agent tree.
        path: String,
        /// The image it comes from.
        reference: String,
        /// That image's pinned digest, when it has one.
        digest: Option<Digest>,
        /// The tool's name (the runtime is `runtime`).
        name: String,
    },
    /// The usage doc of a BIN: from its image when it ships one, else the Agentfile's heredoc.
    Usage {
        /// Its path inside the agent tree.
        path: String,
        /// The BIN's image.
        reference: String,
        /// That image's pinned digest, when it has one.
        digest: Option<Digest>,
        #[serde(skip)]
        fallback: Option<String>,
    },
    /// A host mount shown inside the tree (system executor).
    Symlink {
        /// Its path inside the agent tree.
        path: String,
        /// The host path it points to.
        target: PathBuf,
    },
}

impl TreeEntry {
    pub fn path(&self) -> &str {
        match self {
            TreeEntry::Dir { path }
            | TreeEntry::Layer { path, .. }
            | TreeEntry::Generated { path, .. }
            | TreeEntry::Binary { path, .. }
            | TreeEntry::Usage { path, .. }
            | TreeEntry::Symlink { path, .. } => path,
        }
    }
}

/// Everything `otters run` does, in order.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunPlan {
    /// The agent's name.
    pub name: String,
    /// The agent's id (its root's name under the agents directory).
    pub id: String,
    /// The agent image.
    pub image: ImageInfo,
    /// The platform whose pins are used.
    pub platform: Platform,
    /// How the runtime is launched.
    pub executor: Launcher,
    /// The agent root on the host (absolute).
    pub root: PathBuf,
    /// What the materialised tree holds, in the order it is written.
    pub tree: Vec<TreeEntry>,
    /// The program otters execs (the runtime, or the docker CLI) and its arguments.
    pub argv: Vec<String>,
    /// Working directory of the exec'd program (host path; `/workspace` inside a container).
    pub cwd: PathBuf,
    /// The runtime's environment (sorted; secrets redacted when printed).
    pub env: Vec<EnvEntry>,
    /// The host paths mounted into the agent (`-v`).
    pub mounts: Vec<UserMount>,
    /// Declared MOUNT targets left unmounted (`--allow-missing-mounts`).
    pub missing_mounts: Vec<String>,
    /// What the run will do that its user should know.
    pub warnings: Vec<Warning>,
}

/// The agent image a run starts from.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ImageInfo {
    /// The reference as given.
    pub reference: String,
    /// The digest of its manifest.
    pub digest: Digest,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Mount(#[from] MountError),
    #[error(transparent)]
    Override(#[from] OverrideError),
    #[error("{reference}: the agent has no RUNTIME, so there is nothing to run; add a RUNTIME line to its Agentfile")]
    NoRuntime { reference: String },
    #[error("{reference}: {}", unpinned_text(*.why, .unpinned))]
    Unpinned {
        reference: String,
        /// `RUNTIME ref`, `BIN name (ref)`, each escaped.
        unpinned: Vec<String>,
        /// The rule that refused them: [`Pins::Signed`] or [`Pins::Export`].
        why: Pins,
    },
    #[error("{reference}: invalid artifact: it would write {} outside the agent tree", shown(.path))]
    UnsafePath { reference: String, path: String },
    #[error("{reference}: invalid artifact: layers[{index}] title {} is not a safe file name (names are 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit); layer {digest}", shown(.title))]
    BadTitle {
        reference: String,
        index: usize,
        digest: Digest,
        title: String,
    },
}

/// What [`PlanError::Unpinned`] says after the reference: what is unpinned, why that is refused
/// here, and how to pin it.
fn unpinned_text(why: Pins, unpinned: &[String]) -> String {
    let what = unpinned.join(", ");
    let rebuild = "`otters lock` in the agent's directory, then `otters build` (not `otters build --allow-unpinned`)";
    match why {
        Pins::Export => format!(
            "{what} has no pinned digest in the image, and an export copies what the agent pins, \
             never what a tag means today; pin it: {rebuild}, then export again"
        ),
        Pins::Signed | Pins::Optional => format!(
            "refusing to run with a verify key: {what} has no pinned digest in the image, so the \
             signature does not cover it and whoever moves that tag would choose the code that \
             runs; pin it and sign again: {rebuild} and `otters sign`"
        ),
    }
}
