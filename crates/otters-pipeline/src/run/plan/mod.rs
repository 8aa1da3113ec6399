//! The run plan: everything `otters run` will write and execute, as one pure value.
//!
//! Takes: an [`AgentImage`] and [`RunOptions`]. Returns: a [`RunPlan`] (tree entries, argv,
//! environment, mounts) that `--dry-run` prints as JSON and [`super::materialise`] /
//! [`super::exec`] carry out. Must never: do I/O, or hold a secret in a field that is serialised
//! unredacted.

use super::context_docs::{self, DocInputs};
use super::env::{self, EnvEntry, Layout};
use super::mounts::{self, MountError, UserMount};
use super::overrides::{self, OverrideError, Overrides};
use super::source::{AgentImage, Platform};
use crate::lower::agent_yaml::{self, Executor as YamlExecutor, ImageRef};
use otters_agentfile::ir::{ConfigValue, Mount};
use otters_oci::spec::descriptor::{
    Descriptor, AGENTFILE_LAYER, ANN_UNPACK, CONTEXT_LAYER, FILE_LAYER,
};
use otters_oci::{Digest, MediaType};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How the chosen executor launches the agent: on the host, or through a docker-compatible CLI
/// with its settings (the kind alone is [`crate::lower::agent_yaml::Executor`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Launcher {
    /// Replace otters with the runtime on the host.
    System,
    /// Exec a docker-compatible CLI (`docker`, `podman`) with `docker run`.
    Docker {
        cli: PathBuf,
        base_image: String,
        user: String,
    },
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
    /// A verify key is in force (`--verify-key`, `[verify] key`): the signature covers only the
    /// agent manifest and what it pins, so a RUNTIME or BIN without a pinned digest is refused
    /// ([`PlanError::Unpinned`]) instead of resolved by its tag.
    pub require_pins: bool,
    /// Model providers the user named (`--provider`): their credentials are passed like a known
    /// provider's ([`env::untrusted_provider`]).
    pub providers: Vec<String>,
}

/// One thing in the materialised tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TreeEntry {
    Dir {
        path: String,
    },
    /// A layer copied verbatim, or unpacked (tar layers of ADD directories).
    Layer {
        path: String,
        digest: Digest,
        media_type: MediaType,
        unpack: bool,
        /// The title of an unpacked layer: its entries lie under `<title>/`, which is removed.
        #[serde(skip)]
        title: Option<String>,
    },
    /// A file otters writes (AGENT.md, agent.yaml …); `content` is not printed.
    Generated {
        path: String,
        bytes: usize,
        #[serde(skip)]
        content: String,
    },
    /// A binary located in an image by the bin contract.
    Binary {
        path: String,
        reference: String,
        digest: Option<Digest>,
        name: String,
    },
    /// The usage doc of a BIN: from its image when it ships one, else the Agentfile's heredoc.
    Usage {
        path: String,
        reference: String,
        digest: Option<Digest>,
        #[serde(skip)]
        fallback: Option<String>,
    },
    /// A host mount shown inside the tree (system executor).
    Symlink {
        path: String,
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
#[derive(Clone, Debug, Serialize)]
pub struct RunPlan {
    pub name: String,
    pub id: String,
    pub image: ImageInfo,
    pub platform: Platform,
    pub executor: Launcher,
    pub root: PathBuf,
    pub tree: Vec<TreeEntry>,
    /// The program otters execs (the runtime, or the docker CLI) and its arguments.
    pub argv: Vec<String>,
    /// Working directory of the exec'd program (host path; `/workspace` inside a container).
    pub cwd: PathBuf,
    /// The runtime's environment (sorted; secrets redacted when printed).
    pub env: Vec<EnvEntry>,
    pub mounts: Vec<UserMount>,
    /// Declared MOUNT targets left unmounted (`--allow-missing-mounts`).
    pub missing_mounts: Vec<String>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ImageInfo {
    pub reference: String,
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
    #[error("{reference}: refusing to run with a verify key: {} has no pinned digest in the image, so the signature does not cover it and whoever moves that tag would choose the code that runs; pin it and sign again: `otters lock` in the agent's directory, then `otters build` (without --allow-unpinned) and `otters sign`", .unpinned.join(", "))]
    Unpinned {
        reference: String,
        /// `RUNTIME ref`, `BIN name (ref)`, each escaped.
        unpinned: Vec<String>,
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

use otters_agentfile::ir::names::{go_base, is_context_title, is_loader_key, is_safe_rel, shown};

/// Where a file layer titled `title` goes below `etc/data/`, given the image's ADD names:
/// - the title itself when an ADD has that name (otters and openotters L write `name` as the
///   title, and otters' names may nest: `docs/a.md`);
/// - else `filepath.Base(title)` when the title is absolute or an ADD has that base name: an
///   image of openotters alpha.50, which titles the layer with the raw `dst` (`/data/x.json`)
///   and writes it to `etc/data/` + `filepath.Base(title)` (`executor/system/workspace.go`,
///   `extractLayers`);
/// - else the title as it is, when it is a safe relative path.
///
/// `None` when the result would not be a safe path (`..`, `.`, `/`, hidden or odd names).
pub fn data_path(title: &str, add_names: &[&str]) -> Option<String> {
    if is_safe_rel(title) && add_names.contains(&title) {
        return Some(title.to_owned());
    }
    let base = go_base(title);
    if is_path_safe(base) && (title.starts_with('/') || add_names.contains(&base)) {
        return Some(base.to_owned());
    }
    is_safe_rel(title).then(|| title.to_owned())
}

/// A relative path that stays below the root: no empty, `.` or `..` component, no NUL.
fn is_inside(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\0')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}
pub use otters_agentfile::ir::names::{is_path_safe, RESERVED_CONTEXT_NAMES};

const DIRS: &[&str] = &[
    "etc",
    "etc/context",
    "etc/data",
    "usr/bin",
    "usr/local/bin",
    "workspace",
    "tmp",
    "var/lib",
    "home",
    "home/.config",
    "home/.cache",
    "home/.local/share",
];

/// Build the plan. `host_env` is consulted only for the model provider's credentials.
pub fn plan(
    image: &AgentImage,
    opts: &RunOptions,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunPlan, PlanError> {
    let agent = &image.model.agent;
    let runtime = runtime_of(image)?;
    if opts.require_pins {
        require_pins(image, &runtime)?;
    }
    let effective = overrides::apply(agent, &opts.overrides)?;
    let mut draft = Draft::new();
    draft.warn_loader_envs(&effective, &opts.overrides);
    let mut user_mounts = opts.mounts.clone();
    let missing =
        mounts::merge_declared(&mut user_mounts, &agent.mounts, opts.allow_missing_mounts)?;
    draft.warn_missing_mounts(&missing);
    let docker = matches!(opts.executor, Launcher::Docker { .. });
    let layout = if docker {
        Layout::Container
    } else {
        Layout::Host(&opts.root)
    };
    let model = effective_model(image, &opts.overrides, &effective, &user_mounts);

    draft.place_layers(image)?;
    let docs = DocInputs {
        agent: &model.agent,
        id: &opts.id,
        envs: &effective.envs,
        mounts: &user_mounts,
        layout,
    };
    draft.generate_docs(&docs);
    draft.generate(
        "etc/agent.yaml",
        agent_yaml_of(&model, image, &opts.id, docker),
    );
    draft.place_binaries(image, &runtime);
    if !docker {
        draft.link_mounts(&user_mounts);
    }

    if let Some(p) = effective
        .model
        .as_deref()
        .and_then(|m| env::untrusted_provider(m, &opts.providers))
    {
        let p = otters_oci::validate::escape_text(p, 80);
        let key = format!("{}_API_KEY", env::env_name(&p));
        draft.warnings.push(format!(
            "MODEL's provider {p} is not one otters knows, so {key} is not passed to the runtime (a MODEL must not pick any secret out of your environment); if {p} is your model provider, pass --provider {p}"
        ));
    }
    let env = env::spawn_env(
        layout,
        effective.model.as_deref(),
        &opts.providers,
        host_env,
        &effective.configs,
        &effective
            .envs
            .iter()
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect::<Vec<_>>(),
    );
    let (argv, cwd) = command(opts, image, &effective, &env, &user_mounts);
    let Draft { tree, warnings } = draft;
    check_inside(image, &tree)?;
    Ok(RunPlan {
        name: opts.name.clone(),
        id: opts.id.clone(),
        image: ImageInfo {
            reference: image.reference.clone(),
            digest: image.digest.clone(),
        },
        platform: opts.platform.clone(),
        executor: opts.executor.clone(),
        root: opts.root.clone(),
        tree,
        argv,
        cwd,
        env,
        mounts: user_mounts,
        missing_mounts: missing,
        warnings,
    })
}

/// The image's RUNTIME reference; an agent without one cannot run.
fn runtime_of(image: &AgentImage) -> Result<String, PlanError> {
    image
        .model
        .agent
        .runtime
        .as_ref()
        .map(|r| r.value.clone())
        .filter(|r| !r.is_empty())
        .ok_or_else(|| PlanError::NoRuntime {
            reference: image.reference.clone(),
        })
}

/// With a verify key, every executable must be pinned by the signed image: the RUNTIME and each
/// BIN without a digest in `agent.yaml` are named in one [`PlanError::Unpinned`].
fn require_pins(image: &AgentImage, runtime: &str) -> Result<(), PlanError> {
    let esc = |s: &str| otters_oci::validate::escape_text(s, 200);
    let mut unpinned = Vec::new();
    if image.pins.runtime_digest(runtime).is_none() {
        unpinned.push(format!("RUNTIME {}", esc(runtime)));
    }
    for b in &image.model.agent.bins {
        if image.pins.bin_digest(&b.name, &b.image).is_none() {
            unpinned.push(format!("BIN {} ({})", esc(&b.name), esc(&b.image)));
        }
    }
    if unpinned.is_empty() {
        return Ok(());
    }
    Err(PlanError::Unpinned {
        reference: esc(&image.reference),
        unpinned,
    })
}

/// The model after overrides (`--model`, `--config`, `-e`, mounts), for `agent.yaml` and the
/// context documents.
fn effective_model(
    image: &AgentImage,
    overrides: &Overrides,
    effective: &overrides::Effective,
    user_mounts: &[UserMount],
) -> otters_agentfile::ir::Agentfile {
    let mut model = image.model.clone();
    if let Some(m) = &effective.model {
        model.agent.model = Some(otters_agentfile::ir::Node::new(m.clone(), None));
    }
    for (k, v) in &overrides.configs {
        let mut hit = false;
        for c in model.agent.configs.iter_mut().filter(|c| c.key == *k) {
            c.value = Some(ConfigValue::String(v.clone()));
            hit = true;
        }
        if !hit {
            model.agent.configs.push(otters_agentfile::ir::Config {
                key: k.clone(),
                value: Some(ConfigValue::String(v.clone())),
                description: None,
                required: false,
                span: None,
                key_span: None,
            });
        }
    }
    model.agent.envs = effective
        .envs
        .iter()
        .map(|e| otters_agentfile::ir::Env {
            key: e.key.clone(),
            value: e.value.clone(),
            description: e.description.clone(),
            span: None,
            key_span: None,
        })
        .collect();
    model.agent.mounts = user_mounts
        .iter()
        .map(|m| Mount {
            target: m.target.clone(),
            read_only: m.read_only,
            description: m.description.clone(),
            span: None,
        })
        .collect();
    model
}

/// The tree and the warnings, as the phases of [`plan`] add to them.
struct Draft {
    tree: Vec<TreeEntry>,
    warnings: Vec<String>,
}

impl Draft {
    /// The fixed directories of every agent tree, and no warning yet.
    fn new() -> Self {
        Draft {
            tree: DIRS
                .iter()
                .map(|d| TreeEntry::Dir {
                    path: (*d).to_owned(),
                })
                .collect(),
            warnings: Vec::new(),
        }
    }

    /// Warns of every dynamic-loader variable in the environment, saying where it came from.
    fn warn_loader_envs(&mut self, effective: &overrides::Effective, overrides: &Overrides) {
        for e in effective.envs.iter().filter(|e| is_loader_key(&e.key)) {
            let from = if overrides.envs.iter().any(|(k, _)| *k == e.key) {
                "-e"
            } else {
                "the image"
            };
            self.warnings.push(format!(
                "{} (from {from}) is a dynamic-loader variable: the runtime and every BIN will load code as it says",
                e.key
            ));
        }
    }

    fn warn_missing_mounts(&mut self, missing: &[String]) {
        if !missing.is_empty() {
            self.warnings.push(format!(
                "declared mount(s) left unmounted: {}",
                missing.join(", ")
            ));
        }
    }

    /// The image's layers: the Agentfile, context documents, data files and unpacked
    /// directories, each at the path its media type and title give it.
    fn place_layers(&mut self, image: &AgentImage) -> Result<(), PlanError> {
        let names: Vec<&str> = image
            .model
            .agent
            .adds
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        // Where each data file was put, to keep the last of two layers that write the same path.
        let mut written: Vec<(String, usize)> = Vec::new();
        for (index, l) in image.layers.iter().enumerate() {
            let Some(entry) = layer_entry(image, index, l, &names)? else {
                continue;
            };
            if matches!(l.media_type.as_str(), FILE_LAYER) {
                if let Some(pos) = written.iter().position(|(p, _)| p == entry.path()) {
                    let (path, earlier) = written.remove(pos);
                    self.tree.retain(|e| e.path() != path);
                    self.warnings.push(format!(
                        "layers[{earlier}] and layers[{index}] both write {path} (openotters alpha.50 writes each `dst` as its base name); the later one is kept, as openotters keeps it"
                    ));
                }
                written.push((entry.path().to_owned(), index));
            }
            self.tree.push(entry);
        }
        Ok(())
    }

    /// A file otters writes into the tree.
    fn generate(&mut self, path: &str, content: String) {
        self.tree.push(TreeEntry::Generated {
            path: path.to_owned(),
            bytes: content.len(),
            content,
        });
    }

    /// The context documents otters writes: AGENT.md, WORKSPACE.md and, with mounts, MOUNTS.md.
    fn generate_docs(&mut self, docs: &DocInputs<'_>) {
        self.generate("etc/context/AGENT.md", context_docs::agent_md(docs));
        self.generate("etc/context/WORKSPACE.md", context_docs::workspace_md(docs));
        if let Some(m) = context_docs::mounts_md(docs.mounts) {
            self.generate("etc/context/MOUNTS.md", m);
        }
    }

    /// The runtime and every BIN (with its usage doc), pinned by the image when it can be.
    fn place_binaries(&mut self, image: &AgentImage, runtime: &str) {
        let runtime_digest = image.pins.runtime_digest(runtime).cloned();
        if runtime_digest.is_none() {
            self.warnings.push(format!(
                "runtime {runtime} has no pinned digest in the image; resolving the tag now"
            ));
        }
        self.tree.push(TreeEntry::Binary {
            path: "usr/local/bin/runtime".into(),
            reference: runtime.to_owned(),
            digest: runtime_digest,
            name: "runtime".into(),
        });
        for b in &image.model.agent.bins {
            let digest = image.pins.bin_digest(&b.name, &b.image).cloned();
            if digest.is_none() {
                self.warnings.push(format!(
                    "BIN {} ({}) has no pinned digest in the image; resolving the tag now",
                    b.name, b.image
                ));
            }
            self.tree.push(TreeEntry::Binary {
                path: format!("usr/bin/{}", b.name),
                reference: b.image.clone(),
                digest: digest.clone(),
                name: b.name.clone(),
            });
            self.tree.push(TreeEntry::Usage {
                path: format!("etc/data/bins/{}/USAGE.md", b.name),
                reference: b.image.clone(),
                digest,
                fallback: b.usage.clone(),
            });
        }
    }

    /// Host mounts shown inside the tree (system executor).
    fn link_mounts(&mut self, user_mounts: &[UserMount]) {
        for m in user_mounts {
            self.tree.push(TreeEntry::Symlink {
                path: m.target.trim_start_matches('/').to_owned(),
                target: m.host.clone(),
            });
        }
    }
}

/// Where `l`, `image.layers[index]`, goes in the tree; `None` for a layer the tree does not
/// hold (untitled, or of another media type).
fn layer_entry(
    image: &AgentImage,
    index: usize,
    l: &Descriptor,
    names: &[&str],
) -> Result<Option<TreeEntry>, PlanError> {
    let title = l.title().unwrap_or_default();
    let bad = || PlanError::BadTitle {
        reference: image.reference.clone(),
        index,
        digest: l.digest.clone(),
        title: title.to_owned(),
    };
    let layer = |path: String, unpack: Option<String>| TreeEntry::Layer {
        path,
        digest: l.digest.clone(),
        media_type: l.media_type.clone(),
        unpack: unpack.is_some(),
        title: unpack,
    };
    Ok(Some(match l.media_type.as_str() {
        AGENTFILE_LAYER => layer("etc/Agentfile".into(), None),
        CONTEXT_LAYER | FILE_LAYER if title.is_empty() => return Ok(None),
        CONTEXT_LAYER => {
            let reserved = title
                .strip_suffix(".md")
                .is_some_and(|n| RESERVED_CONTEXT_NAMES.contains(&n));
            if !is_context_title(title) || reserved {
                return Err(bad());
            }
            layer(format!("etc/context/{title}"), None)
        }
        FILE_LAYER => {
            let path = data_path(title, names).ok_or_else(bad)?;
            layer(format!("etc/data/{path}"), None)
        }
        mt if super::extract::is_tar(mt)
            && l.annotations.get(ANN_UNPACK).is_some_and(|v| v == "true") =>
        {
            if !is_safe_rel(title) {
                return Err(bad());
            }
            layer(format!("etc/data/{title}"), Some(title.to_owned()))
        }
        _ => return Ok(None),
    }))
}

/// The `agent.yaml` written into the tree: the model after overrides, pinned to the image.
fn agent_yaml_of(
    model: &otters_agentfile::ir::Agentfile,
    image: &AgentImage,
    id: &str,
    docker: bool,
) -> String {
    let image_ref = ImageRef {
        reference: image.reference.clone(),
        digest: Some(image.digest.clone()),
    };
    agent_yaml::render(
        model,
        &image.pins,
        &agent_yaml::Options {
            id: Some(id),
            image: Some(&image_ref),
            executor: if docker {
                YamlExecutor::Docker
            } else {
                YamlExecutor::System
            },
            capability_descriptions: None,
        },
    )
}

/// The program otters execs and its working directory: the runtime itself (system executor),
/// or the docker CLI (docker executor).
fn command(
    opts: &RunOptions,
    image: &AgentImage,
    effective: &overrides::Effective,
    env: &[EnvEntry],
    user_mounts: &[UserMount],
) -> (Vec<String>, PathBuf) {
    let model_name = effective.model.clone().unwrap_or_default();
    let exec = exec_args(image);
    match &opts.executor {
        Launcher::System => {
            let mut argv = vec![opts
                .root
                .join("usr/local/bin/runtime")
                .display()
                .to_string()];
            argv.extend(exec);
            argv.extend(["--root".to_owned(), opts.root.display().to_string()]);
            if !model_name.is_empty() {
                argv.extend(["--model".to_owned(), model_name]);
            }
            (argv, opts.root.join("workspace"))
        }
        Launcher::Docker {
            cli,
            base_image,
            user,
        } => {
            let argv = docker_argv(
                cli,
                base_image,
                user,
                &opts.root,
                &opts.name,
                &opts.id,
                env,
                user_mounts,
                &exec,
                &model_name,
            );
            (argv, opts.root.join("workspace"))
        }
    }
}

/// The runtime's first arguments: the image's EXEC, or `serve`.
pub fn exec_args(image: &AgentImage) -> Vec<String> {
    image
        .model
        .agent
        .exec
        .as_ref()
        .map(|e| e.value.clone())
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| vec!["serve".to_owned()])
}

/// Where the docker executor shows the runtime inside the container (its entrypoint).
pub const CONTAINER_RUNTIME: &str = "/opt/runtime/runtime";
/// The runtime's working directory inside the container.
pub const CONTAINER_WORKDIR: &str = "/workspace";
/// The port the runtime listens on inside the container.
pub const CONTAINER_PORT: u16 = 9999;

/// How the docker executor shows the tree to the container: (path in the tree, path in the
/// container, read-only). Tree paths not listed here are not visible in the container.
pub const CONTAINER_BINDS: &[(&str, &str, bool)] = &[
    ("etc/Agentfile", "/etc/Agentfile", true),
    ("etc/agent.yaml", "/etc/agent.yaml", true),
    ("etc/context", "/etc/context", true),
    ("etc/data", "/etc/data", true),
    ("usr/local/bin", "/opt/runtime", true),
    ("usr/bin", "/opt/bins", true),
    ("home", "/home", false),
    ("tmp", "/tmp", false),
    ("var/lib", "/var/lib", false),
    ("workspace", "/workspace", false),
];

/// The runtime's arguments inside a container, after its entrypoint: EXEC, then the root, the
/// model and the address it listens on.
pub fn container_args(exec: &[String], model: &str) -> Vec<String> {
    let mut a = exec.to_vec();
    a.extend([
        "--root".into(),
        "/".into(),
        "--model".into(),
        model.to_owned(),
        "--addr".into(),
        format!("0.0.0.0:{CONTAINER_PORT}"),
    ]);
    a
}

/// Every name in the tree was checked where it came from; this keeps a future entry from
/// reaching the filesystem unchecked.
fn check_inside(image: &AgentImage, tree: &[TreeEntry]) -> Result<(), PlanError> {
    match tree.iter().map(TreeEntry::path).find(|p| !is_inside(p)) {
        Some(bad) => Err(PlanError::UnsafePath {
            reference: image.reference.clone(),
            path: bad.to_owned(),
        }),
        None => Ok(()),
    }
}

/// One `--mount` value; fields holding `,` or `"` are CSV-quoted as the docker CLI expects.
fn mount_arg(kind: &str, source: &Path, target: &str, read_only: bool) -> String {
    let q = |s: String| {
        if s.contains(',') || s.contains('"') {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s
        }
    };
    let mut v = format!(
        "type={kind},{},{}",
        q(format!("source={}", source.display())),
        q(format!("target={target}"))
    );
    if read_only {
        v.push_str(",readonly");
    }
    v
}

/// The `docker run` argv of spec §g.5 (binaries extracted on the host and bind-mounted read-only).
#[allow(clippy::too_many_arguments)]
fn docker_argv(
    cli: &Path,
    base_image: &str,
    user: &str,
    root: &Path,
    name: &str,
    id: &str,
    env: &[EnvEntry],
    mounts: &[UserMount],
    exec: &[String],
    model: &str,
) -> Vec<String> {
    let mut a: Vec<String> = vec![cli.display().to_string(), "run".into(), "--rm".into()];
    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    a.extend([
        format!("--name=otters-{name}-{short}"),
        "--label=io.openotters.agent=true".into(),
        format!("--label=io.openotters.agent.id={id}"),
        format!("--user={user}"),
        "--cap-drop=ALL".into(),
        "--security-opt=no-new-privileges".into(),
        "--pids-limit=512".into(),
        "--stop-timeout=10".into(),
        format!("--publish=127.0.0.1::{CONTAINER_PORT}"),
        format!("--workdir={CONTAINER_WORKDIR}"),
        format!("--entrypoint={CONTAINER_RUNTIME}"),
    ]);
    for (src, dst, ro) in CONTAINER_BINDS {
        a.push("--mount".into());
        a.push(mount_arg("bind", &root.join(src), dst, *ro));
    }
    for m in mounts {
        a.push("--mount".into());
        a.push(mount_arg("bind", &m.host, &m.target, m.read_only));
    }
    for e in env {
        // Secrets travel through the CLI's own environment, never in argv.
        a.push("--env".into());
        a.push(if e.secret {
            e.key.clone()
        } else {
            format!("{}={}", e.key, e.value)
        });
    }
    a.push(base_image.to_owned());
    a.extend(container_args(exec, model));
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_args_quote_commas_and_quotes() {
        assert_eq!(
            mount_arg("bind", Path::new("/a"), "/b", true),
            "type=bind,source=/a,target=/b,readonly"
        );
        assert_eq!(
            mount_arg("bind", Path::new("/a,b\"c"), "/t", false),
            "type=bind,\"source=/a,b\"\"c\",target=/t"
        );
    }

    #[test]
    fn tree_paths_stay_inside() {
        assert!(is_inside("etc/data/a.txt") && is_inside("mnt/my data"));
        for bad in ["", "/etc", "a//b", "a/../b", "./a", "a/", "a\0b"] {
            assert!(!is_inside(bad), "{bad:?}");
        }
    }

    #[test]
    fn data_paths_of_file_layers() {
        let names = ["docs/a.md", "x.json", "c.csv"];
        for (title, want) in [
            ("docs/a.md", Some("docs/a.md")),     // otters: the ADD's name
            ("x.json", Some("x.json")),           // L: a flat name
            ("/data/x.json", Some("x.json")),     // alpha.50: filepath.Base(dst)
            ("/data/sub/y.json", Some("y.json")), // alpha.50, flattened even with no ADD
            ("data/c.csv", Some("c.csv")),        // alpha.50, a relative dst
            ("./c.csv", Some("c.csv")),
            ("other/z.md", Some("other/z.md")), // no ADD names it: as titled
            ("/data/..", None),
            ("/", None),
            ("../x", None),
            ("/data/.hidden", None),
        ] {
            assert_eq!(data_path(title, &names).as_deref(), want, "{title}");
        }
    }

    #[test]
    fn path_safe_names() {
        assert!(is_path_safe("SOUL.md"));
        assert!(!is_path_safe(".hidden"));
        assert!(!is_path_safe("a/b"));
        assert!(is_safe_rel("dir/file.txt"));
        assert!(!is_safe_rel("dir/../x"));
        assert!(!is_safe_rel("/abs"));
    }
}
