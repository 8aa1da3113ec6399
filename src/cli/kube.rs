//! `otters kube REF`: the Kubernetes objects that run an agent's runnable export (see
//! docs/kubernetes.md). The YAML goes to stdout, or to `-o FILE`.
use super::{fail, fail_in, CliResult};
use otters_oci::{Platform, Store};
use otters_pipeline::export;
use otters_pipeline::kube::agent::{agent_objects, Fetch};
use otters_pipeline::kube::{self, Kind, Options, Resources};
use otters_pipeline::run::overrides::parse_config;
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
    let opts = Options {
        kind: match a.kind {
            KindArg::Pod => Kind::Pod,
            KindArg::Job => Kind::Job,
            KindArg::Deployment => Kind::Deployment,
        },
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
    let store = Store::open(super::otters_home().join("store")).map_err(fail)?;
    let fetch = Fetch {
        offline: a.offline,
        client: super::common::client_options(a.insecure),
    };
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
