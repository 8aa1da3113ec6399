//! `otters kube`.
use std::path::PathBuf;
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
    #[command(flatten)]
    pub gate: crate::flags::GateFlags,
}

impl From<KindArg> for otters_pipeline::kube::Kind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Pod => Self::Pod,
            KindArg::Job => Self::Job,
            KindArg::Deployment => Self::Deployment,
        }
    }
}
