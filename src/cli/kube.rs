//! `otters kube REF`: the Kubernetes objects that run an agent's runnable export (see
//! docs/kubernetes.md). The YAML goes to stdout, or to `-o FILE`.
use super::{fail, fail_in, CliResult};
use otters_cli::kube::Args;
use otters_oci::Platform;
use otters_pipeline::export;
use otters_pipeline::kube::agent::{agent_objects, Fetch};
use otters_pipeline::kube::{self, Options, Resources};
use otters_pipeline::run::fetch::RegistryFetcher;
use otters_pipeline::run::overrides::parse_config;
use otters_pipeline::run::prepare::Pull;
use std::process::ExitCode;

pub fn run(a: Args) -> CliResult {
    let platform = match &a.platform {
        Some(p) => Platform::parse(p).map_err(fail)?,
        None => export::linux_host(),
    };
    let opts = Options {
        kind: a.kind.into(),
        name: a.name,
        namespace: a.namespace,
        // Set by `agent_objects`: --image, else the agent's runnable export.
        image: String::new(),
        secret: a.secret,
        configs: parse_all(&a.configs, parse_config)?,
        config_from: parse_all(&a.config_from, kube::parse_config_from)?,
        mounts: parse_all(&a.mounts, kube::parse_mount)?,
        allow_missing_mounts: a.allow_missing_mounts,
        var_lib_pvc: a.var_lib_pvc,
        resources: Resources {
            cpu_request: a.cpu_request,
            memory_request: a.memory_request,
            cpu_limit: a.cpu_limit,
            memory_limit: a.memory_limit,
        },
        image_pull_secrets: a.image_pull_secrets,
        network_policy: a.network_policy,
        service: a.service,
        replicas: a.replicas,
    };
    // It may pull the agent, its runtime and BINs, and writes the export: leased, so a
    // concurrent `prune` keeps what it wrote before it is reachable.
    let store = super::common::open_store_leased()?;
    let fetch = Fetch {
        offline: a.offline,
        client: super::common::client_options(a.insecure),
    };
    // Held to the gate `run` has (`--verify-key`, `[verify]`) before anything is made of it.
    let gate = a.gate.gate(a.insecure, !a.offline);
    let registry = RegistryFetcher::new(fetch.client.clone());
    let pull = Pull::missing_unless(a.offline);
    gate.fetch(&store, &registry, &a.reference, pull, "deploy")
        .map_err(fail)?;
    let image = a.image.as_deref();
    let text = agent_objects(&store, &a.reference, &platform, &fetch, image, opts).map_err(fail)?;
    match &a.output {
        Some(path) => otters_oci::archive::write_output(path, text.as_bytes())
            .map_err(|e| fail_in(format!("cannot write {}", path.display()), e))?,
        None => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Each value of a repeatable flag, parsed.
fn parse_all<T, E: std::error::Error + Send + Sync + 'static>(
    items: &[String],
    parse: impl Fn(&str) -> Result<T, E>,
) -> miette::Result<Vec<T>> {
    items.iter().map(|s| parse(s).map_err(fail)).collect()
}
