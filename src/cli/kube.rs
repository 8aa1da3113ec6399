//! `otters kube REF`: the Kubernetes objects that run an agent's runnable export (see
//! docs/kubernetes.md). The YAML goes to stdout, or to `-o FILE`.
use super::{fail, fail_in, CliResult};
use miette::miette;
use otters_core::escape::escape;
use otters_oci::reference::Reference;
use otters_oci::registry::{ClientOptions, RegistryClient};
use otters_oci::{Platform, Store};
use otters_pipeline::export;
use otters_pipeline::kube::{self, Kind, Options, Resources};
use otters_pipeline::run::fetch::RegistryFetcher;
use otters_pipeline::run::overrides::parse_config;
use otters_pipeline::run::prepare::{self, Pull};
use otters_pipeline::run::source;
use std::path::PathBuf;
use std::process::ExitCode;

/// The workload kind, as a flag value.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum KindArg {
    Pod,
    Job,
    Deployment,
}

// Rationale: the flags are the switches of the generated objects, one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent: a local tag or digest, or a registry reference (pulled when missing)
    pub reference: String,
    /// The workload: a Deployment (default: the runtime is a server), a Pod, or a Job (one run,
    /// restartPolicy Never)
    #[arg(long, value_enum, default_value = "deployment")]
    pub kind: KindArg,
    /// Object name (default: the agent's NAME made DNS-1123)
    #[arg(long)]
    pub name: Option<String>,
    /// Namespace of every object
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The runnable image by digest (default: the agent's export, found through its referrers)
    #[arg(long, value_name = "REPO@sha256:…")]
    pub image: Option<String>,
    /// The Secret holding MODEL's provider credential (default: <name>-credentials)
    #[arg(long, value_name = "NAME")]
    pub secret: Option<String>,
    /// Set a CONFIG value (repeatable)
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub configs: Vec<String>,
    /// Take CONFIG values (`RUNTIME_*` keys) from a `Secret` or `ConfigMap` (repeatable)
    #[arg(long = "config-from", value_name = "secret:NAME|configmap:NAME")]
    pub config_from: Vec<String>,
    /// Back a declared MOUNT: TARGET=pvc:NAME, TARGET=emptydir or TARGET=hostpath:/PATH (repeatable)
    #[arg(long = "mount", value_name = "TARGET=SOURCE")]
    pub mounts: Vec<String>,
    /// Leave declared MOUNTs without --mount out instead of refusing
    #[arg(long)]
    pub allow_missing_mounts: bool,
    /// A `PersistentVolumeClaim` for /var/lib (default: an `emptyDir`)
    #[arg(long, value_name = "CLAIM")]
    pub var_lib_pvc: Option<String>,
    /// CPU request
    #[arg(long, default_value = "100m")]
    pub cpu_request: String,
    /// Memory request
    #[arg(long, default_value = "128Mi")]
    pub memory_request: String,
    /// CPU limit
    #[arg(long, default_value = "1")]
    pub cpu_limit: String,
    /// Memory limit
    #[arg(long, default_value = "512Mi")]
    pub memory_limit: String,
    /// An imagePullSecret for the pod (repeatable)
    #[arg(long = "image-pull-secret", value_name = "NAME")]
    pub image_pull_secrets: Vec<String>,
    /// Also a `NetworkPolicy` admitting only the runtime's port
    #[arg(long)]
    pub network_policy: bool,
    /// Also a Service for the runtime's port (9999)
    #[arg(long)]
    pub service: bool,
    /// Replicas of a Deployment
    #[arg(long)]
    pub replicas: Option<i64>,
    /// Platform of the export to deploy (default: linux on this machine's architecture)
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Use only the local store
    #[arg(long)]
    pub offline: bool,
    /// Allow plain HTTP and unverified TLS for a registry that is not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Write the YAML to FILE instead of standard output
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(a: Args) -> CliResult {
    let platform = match &a.platform {
        Some(p) => Platform::parse(p).map_err(fail)?,
        None => export::linux_host(),
    };
    let configs = a
        .configs
        .iter()
        .map(|c| parse_config(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    let config_from = a
        .config_from
        .iter()
        .map(|c| kube::parse_config_from(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    let mounts = a
        .mounts
        .iter()
        .map(|m| kube::parse_mount(m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    let store = Store::open(super::otters_home().join("store")).map_err(fail)?;
    let client_options = ClientOptions {
        insecure: a.insecure,
        ..ClientOptions::default()
    };
    let registry = RegistryFetcher::new(client_options.clone());
    let pull = if a.offline {
        Pull::Never
    } else {
        Pull::Missing
    };
    let top = prepare::fetch_image(&store, &registry, &a.reference, pull)
        .map_err(fail)?
        .digest;
    let manifest = source::agent_manifest(&store, &a.reference, &top, &platform).map_err(fail)?;
    let image = source::load_agent(&store, &a.reference, &manifest).map_err(fail)?;
    let image_ref = match &a.image {
        Some(i) => i.clone(),
        None => find_image(&a, &store, &top, &platform, client_options)?,
    };
    let opts = Options {
        kind: match a.kind {
            KindArg::Pod => Kind::Pod,
            KindArg::Job => Kind::Job,
            KindArg::Deployment => Kind::Deployment,
        },
        name: a.name.clone(),
        namespace: a.namespace.clone(),
        image: image_ref,
        secret: a.secret.clone(),
        configs,
        config_from,
        mounts,
        allow_missing_mounts: a.allow_missing_mounts,
        var_lib_pvc: a.var_lib_pvc.clone(),
        resources: Resources {
            cpu_request: a.cpu_request.clone(),
            memory_request: a.memory_request.clone(),
            cpu_limit: a.cpu_limit.clone(),
            memory_limit: a.memory_limit.clone(),
        },
        image_pull_secrets: a.image_pull_secrets.clone(),
        network_policy: a.network_policy,
        service: a.service,
        replicas: a.replicas,
    };
    let text = kube::manifests(&image, &opts).map_err(|e| {
        fail_in(
            format!("cannot make Kubernetes objects for {}", a.reference),
            e,
        )
    })?;
    match &a.output {
        Some(path) => otters_oci::archive::write_output(path, text.as_bytes())
            .map_err(|e| fail_in(format!("cannot write {}", path.display()), e))?,
        None => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The agent's runnable export as `REPO@sha256:…`: from the store's referrers, else from the
/// registry's (unless offline).
fn find_image(
    a: &Args,
    store: &Store,
    top: &otters_oci::Digest,
    platform: &Platform,
    client_options: ClientOptions,
) -> miette::Result<String> {
    let none = || {
        miette!(
            "{} has no runnable export for {platform}; run `otters export {} --as runnable --push` first, or pass --image REPO@sha256:…",
            escape(&a.reference),
            escape(&a.reference)
        )
    };
    let reference = Reference::parse(&a.reference).ok();
    let local = export::exports_of(store, top).map_err(fail)?;
    let mut found = export::pick_export(&local, platform);
    if found.is_none() && !a.offline {
        if let Some(r) = &reference {
            let client = RegistryClient::new(client_options).map_err(fail)?;
            let remote = export::remote_exports(&client, r, top).map_err(fail)?;
            found = export::pick_export(&remote, platform);
        }
    }
    let digest = found.ok_or_else(none)?;
    let r = reference.ok_or_else(|| {
        miette!(
            "{} names no registry, so a cluster cannot pull its export; push the agent and run `otters export REF --as runnable --push`, or pass --image REPO@sha256:…",
            escape(&a.reference)
        )
    })?;
    Ok(format!("{}@{digest}", r.name()))
}
