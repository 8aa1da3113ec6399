//! `otters kube`.
use otters_run::kube;
use otters_run::overrides::parse_config;
use std::path::PathBuf;
/// The workload kind, as a flag value.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum KindArg {
    Pod,
    Job,
    Deployment,
    /// agent-sandbox's `Sandbox` (agents.x-k8s.io/v1beta1)
    Sandbox,
    /// agent-sandbox's `SandboxTemplate` (extensions.agents.x-k8s.io/v1beta1)
    SandboxTemplate,
}

/// What `otters kube` writes, as a flag value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// The objects as multi-document YAML (to standard output, or -o FILE)
    Yaml,
    /// A Kustomize base in the directory -o DIR (`kubectl kustomize DIR` renders it)
    Kustomize,
}

/// Who picks the pod's user, as a flag value.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum UidArg {
    /// The export's user, 65532, fixed in the pod's security context
    Fixed,
    /// The platform assigns one (`OpenShift` restricted-v2): no `runAsUser`, `runAsGroup` or `fsGroup`
    Auto,
}

/// Where the pod's agent tree comes from, as a flag value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TreeArg {
    /// Baked into the runnable export the pod runs
    Export,
    /// The RUNTIME image runs as it is; the tree export and each BIN image are mounted as image
    /// volumes (Kubernetes >= 1.35; `otters export REF --as tree --push` first)
    Image,
}

// Rationale: the flags are the switches of the generated objects, one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent: a local tag or digest, or a registry reference (pulled when missing)
    pub reference: String,
    /// The workload: a Deployment (default: the runtime is a server), a Pod, a Job (one run,
    /// restartPolicy Never), or agent-sandbox's Sandbox or `SandboxTemplate` (the same pod as their
    /// `podTemplate`)
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
    /// Also a `NetworkPolicy` admitting only the runtime's port; with `cilium`, an agent's
    /// declared EGRESS becomes a `CiliumNetworkPolicy` that holds its host names (`toFQDNs`)
    /// instead of a `NetworkPolicy` that can only hold its ports
    #[arg(long, value_enum, value_name = "KIND", num_args = 0..=1, default_missing_value = "kubernetes")]
    pub network_policy: Option<NetworkPolicyArg>,
    /// Also a Service for the runtime's port (9999)
    #[arg(long)]
    pub service: bool,
    /// Replicas of a Deployment
    #[arg(long)]
    pub replicas: Option<i64>,
    /// No readiness and liveness probes on the runtime's port (a serving agent gets them)
    #[arg(long)]
    pub no_probes: bool,
    /// Who picks the pod's user: `fixed` (the export's 65532) or `auto` (the platform assigns
    /// one in group 0, as `OpenShift`'s restricted-v2 does)
    #[arg(long, value_enum, default_value = "fixed")]
    pub uid: UidArg,
    /// Where the agent tree comes from: baked into the runnable export (default), or mounted from
    /// the tree export as an image volume beside the BIN images
    #[arg(long, value_enum, default_value = "export")]
    pub tree: TreeArg,
    /// Platform of the export to deploy (default: linux on this machine's architecture)
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Use only the local store
    #[arg(long)]
    pub offline: bool,
    /// Allow plain HTTP and unverified TLS for a registry that is not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// What to write: the objects as YAML, or a Kustomize base (into -o DIR)
    #[arg(long, value_enum, default_value = "yaml")]
    pub format: FormatArg,
    /// Write the YAML to FILE instead of standard output; with --format kustomize, the base into
    /// the directory DIR
    #[arg(short = 'o', long, value_name = "FILE|DIR")]
    pub output: Option<PathBuf>,
    /// With --format kustomize: write into a directory that holds files otters did not write
    /// (they are left as they are, those of otters' names replaced)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub gate: crate::flags::GateFlags,
}

/// A `--config`, `--config-from` or `--mount` text the library refuses (its own error).
#[derive(Debug)]
pub enum FlagError {
    Config(otters_run::overrides::OverrideError),
    Arg(kube::ArgError),
}

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlagError::Config(e) => e.fmt(f),
            FlagError::Arg(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for FlagError {}

impl From<otters_run::overrides::OverrideError> for FlagError {
    fn from(e: otters_run::overrides::OverrideError) -> Self {
        FlagError::Config(e)
    }
}

impl From<kube::ArgError> for FlagError {
    fn from(e: kube::ArgError) -> Self {
        FlagError::Arg(e)
    }
}

/// Each value of a repeatable flag, parsed.
fn parse_all<T, E: Into<FlagError>>(
    items: &[String],
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Vec<T>, FlagError> {
    items.iter().map(|s| parse(s).map_err(Into::into)).collect()
}

impl Args {
    /// The library's options these flags give. `image` is left empty: `--image`, else the
    /// agent's runnable export, is found later (`kube::agent::agent_objects` sets it).
    pub fn options(&self) -> Result<kube::Options, FlagError> {
        Ok(kube::Options {
            kind: self.kind.into(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            image: String::new(),
            secret: self.secret.clone(),
            configs: parse_all(&self.configs, parse_config)?,
            config_from: parse_all(&self.config_from, kube::parse_config_from)?,
            mounts: parse_all(&self.mounts, kube::parse_mount)?,
            allow_missing_mounts: self.allow_missing_mounts,
            var_lib_pvc: self.var_lib_pvc.clone(),
            resources: kube::Resources {
                cpu_request: self.cpu_request.clone(),
                memory_request: self.memory_request.clone(),
                cpu_limit: self.cpu_limit.clone(),
                memory_limit: self.memory_limit.clone(),
            },
            image_pull_secrets: self.image_pull_secrets.clone(),
            network_policy: self.network_policy.is_some(),
            cilium: self.network_policy == Some(NetworkPolicyArg::Cilium),
            service: self.service,
            replicas: self.replicas,
            no_probes: self.no_probes,
            uid: match self.uid {
                UidArg::Fixed => kube::Uid::Fixed,
                UidArg::Auto => kube::Uid::Auto,
            },
            tree: None,
            tree_image: self.tree == TreeArg::Image,
        })
    }
}

/// `--network-policy`, as a flag value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NetworkPolicyArg {
    // `networking.k8s.io/v1` objects (no doc comments: clap would switch the help's layout).
    Kubernetes,
    // `cilium.io/v2` `CiliumNetworkPolicy` for the declared egress (host names held).
    Cilium,
}

impl From<KindArg> for otters_run::kube::Kind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Pod => Self::Pod,
            KindArg::Job => Self::Job,
            KindArg::Deployment => Self::Deployment,
            KindArg::Sandbox => Self::Sandbox,
            KindArg::SandboxTemplate => Self::SandboxTemplate,
        }
    }
}
