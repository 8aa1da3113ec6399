//! The run plan: everything `otters run` will write and execute, as one pure value.
//!
//! Takes: an [`AgentImage`] and [`RunOptions`]. Returns: a [`RunPlan`] (tree entries, argv,
//! environment, mounts) that `--dry-run` prints as JSON and the run's later steps (materialise,
//! exec) carry out: they depend on the plan, never the other way. Must never: do I/O, or hold a secret in a field that is serialised
//! unredacted.
//!
//! The plan's types are in `model`; the tree it lays out (fixed directories, layers, generated
//! files, binaries) in `draft`; the docker executor's `docker run` argv in `docker`.

mod docker;
mod draft;
mod egress;
mod model;

pub use docker::{
    container_args, CONTAINER_BINDS, CONTAINER_PORT, CONTAINER_RUNTIME, CONTAINER_WORKDIR,
};
pub use draft::{data_path, is_path_safe, RESERVED_CONTEXT_NAMES};
pub use egress::{plan as egress_plan, EgressPlan, PROVIDER_HOSTS};
pub use model::{
    ImageInfo, Launcher, Pins, PlanError, RunOptions, RunPlan, TreeEntry, Warning, CONTAINER_USER,
    DEFAULT_BASE_IMAGE,
};

use super::context_docs::DocInputs;
use super::env::{self, Layout};
use super::mounts::{self, UserMount};
use super::overrides::{self, Overrides};
use super::source::AgentImage;
use docker::docker_argv;
use draft::{check_inside, Draft};
use otters_agentfile::ir::{ConfigValue, Mount};
use otters_pipeline::lower::agent_yaml::{self, Executor as YamlExecutor, ImageRef};

/// Build the plan. `host_env` is consulted only for the model provider's credentials.
pub fn plan(
    image: &AgentImage,
    opts: &RunOptions,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunPlan, PlanError> {
    let agent = &image.model.agent;
    let runtime = runtime_of(image)?;
    if opts.pins != Pins::Optional {
        require_pins(image, &runtime, opts.pins)?;
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
        let provider = otters_oci::validate::escape_text(p, 80);
        let key = format!("{}_API_KEY", env::env_name(&provider));
        draft
            .warnings
            .push(Warning::UnknownProvider { provider, key });
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
    let Draft { tree, warnings } = draft;
    check_inside(image, &tree)?;
    let mut run = RunPlan {
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
        argv: Vec::new(),
        cwd: opts.root.join("workspace"),
        env,
        mounts: user_mounts,
        missing_mounts: missing,
        warnings,
        egress: None,
    };
    run.egress = egress::plan(agent, effective.model.as_deref(), &run.env);
    run.argv = command(&run, exec_args(image), effective.model.unwrap_or_default());
    Ok(run)
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

/// With a verify key, or for an export, every executable must be pinned by the image: the RUNTIME
/// and each BIN without a digest in `agent.yaml` are named in one [`PlanError::Unpinned`].
fn require_pins(image: &AgentImage, runtime: &str, why: Pins) -> Result<(), PlanError> {
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
        why,
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

/// The program otters execs, from the plan's executor, root, names, environment and mounts: the
/// runtime itself (system executor), or the docker CLI (docker executor). `exec` and `model` are
/// the runtime's first arguments and its model.
fn command(plan: &RunPlan, exec: Vec<String>, model: String) -> Vec<String> {
    match &plan.executor {
        Launcher::System => {
            let mut argv = vec![plan
                .root
                .join("usr/local/bin/runtime")
                .display()
                .to_string()];
            argv.extend(exec);
            argv.extend(["--root".to_owned(), plan.root.display().to_string()]);
            if !model.is_empty() {
                argv.extend(["--model".to_owned(), model]);
            }
            argv
        }
        Launcher::Docker {
            cli,
            base_image,
            user,
        } => docker_argv(plan, cli, base_image, user, container_args(&exec, &model)),
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
