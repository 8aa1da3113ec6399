//! `otters kube`: the Kubernetes objects that run an agent from its runnable export.
//!
//! Takes: an agent image (from the store), the export's image reference by digest, and the
//! user's [`Options`]. Returns: the objects as multi-document YAML ([`yaml`]), the same bytes for
//! the same agent and options. The environment and the required-CONFIG gate come
//! from [`crate::run::plan::plan`] (docker layout, as in the export), so a pod sees what
//! `otters run --executor docker` shows. Must never: inline a credential (the provider key comes
//! from a Secret), accept a required CONFIG without value or an unmapped MOUNT (unless asked), or
//! write a name that is not DNS-1123.

pub mod agent;
pub mod yaml;

use crate::export::{RUNNABLE, USER_ID};
use crate::run::env::EnvEntry;
use crate::run::overrides::{self, OverrideError, Overrides};
use crate::run::plan::{self, Launcher, Pins, PlanError, RunOptions, CONTAINER_PORT};
use crate::run::prepare::provider_key;
use crate::run::source::AgentImage;
use otters_oci::Platform;
use std::path::PathBuf;
use yaml::Node;

/// The workload kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Job,
    /// The default: the runtime is a server (`serve`), kept running and restarted.
    #[default]
    Deployment,
}

/// What a MOUNT is backed by in the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountSource {
    Pvc(String),
    EmptyDir,
    HostPath(String),
}

/// Where extra CONFIG values come from (`--config-from`): every key of the object becomes an
/// environment variable (`RUNTIME_<KEY>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigFrom {
    Secret(String),
    ConfigMap(String),
}

/// Requests and limits of the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resources {
    pub cpu_request: String,
    pub memory_request: String,
    pub cpu_limit: String,
    pub memory_limit: String,
}

impl Default for Resources {
    fn default() -> Self {
        Self {
            cpu_request: "100m".into(),
            memory_request: "128Mi".into(),
            cpu_limit: "1".into(),
            memory_limit: "512Mi".into(),
        }
    }
}

/// What the user asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub kind: Kind,
    /// `--name`; default derived from the agent's NAME.
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// The runnable image, by digest (`REPO@sha256:…`).
    pub image: String,
    /// `--secret`: the Secret holding the provider credential; default `<name>-credentials`.
    pub secret: Option<String>,
    pub configs: Vec<(String, String)>,
    pub config_from: Vec<ConfigFrom>,
    /// `--mount TARGET=SOURCE`.
    pub mounts: Vec<(String, MountSource)>,
    pub allow_missing_mounts: bool,
    /// A `PersistentVolumeClaim` for `/var/lib` instead of an `emptyDir`.
    pub var_lib_pvc: Option<String>,
    pub resources: Resources,
    pub image_pull_secrets: Vec<String>,
    pub network_policy: bool,
    pub service: bool,
    pub replicas: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("required config(s) have no value: {}", .0.join(", "))]
    RequiredMissing(Vec<String>),
    #[error("declared mount(s) not mapped: {}", .0.join(", "))]
    UnmappedMounts(Vec<String>),
    #[error("mount target {0}: the agent declares no MOUNT at {0}; its MOUNTs are: {1}")]
    UnknownMount(String, String),
    #[error("cannot make a Kubernetes name (DNS-1123: lower-case letters, digits and '-', at most {max}) from {from:?}")]
    BadName { from: String, max: usize },
    #[error(
        "namespace {0:?} is not a DNS-1123 label (lower-case letters, digits and '-', at most 63)"
    )]
    BadNamespace(String),
    #[error("{what} {value:?} is not a DNS-1123 name (lower-case letters, digits, '-' and '.', at most 253)")]
    BadObjectName { what: &'static str, value: String },
    #[error("image {0} is not named by digest: name it REPO@sha256:…, as `otters export --push` prints it")]
    NotByDigest(String),
    #[error("{what} {value:?} is not a Kubernetes quantity: write a number with an optional suffix (m, k, M, G, T, Ki, Mi, Gi, Ti), e.g. 500m or 256Mi")]
    BadQuantity { what: &'static str, value: String },
    #[error("the {resource} request {request} is more than its limit {limit}: Kubernetes refuses such a container")]
    RequestOverLimit {
        resource: &'static str,
        request: String,
        limit: String,
    },
    #[error("image {image} is not an image reference: name it REPO@sha256:…, as `otters export --push` prints it")]
    BadImage {
        image: String,
        #[source]
        source: otters_oci::reference::ReferenceError,
    },
    #[error(transparent)]
    Override(#[from] OverrideError),
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// Whether `s` is a DNS-1123 label: 1–63 of `a-z0-9-`, starting and ending alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain: at most 253, dot-separated labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// The object name made from an agent NAME: lower-cased, every run of other characters one `-`,
/// trimmed, at most `max` long; `None` when nothing is left.
pub fn dns_name(from: &str, max: usize) -> Option<String> {
    let mut s = String::new();
    for c in from.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            s.push(c);
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let mut s = s.trim_matches('-').to_owned();
    s.truncate(max);
    let s = s.trim_end_matches('-').to_owned();
    (!s.is_empty()).then_some(s)
}

/// The longest suffix otters adds to the workload's name (`-credentials`).
const LONGEST_SUFFIX: usize = "-credentials".len();

/// The objects, as YAML.
pub fn manifests(image: &AgentImage, opts: &Options) -> Result<String, KubeError> {
    Ok(yaml::documents(&objects(image, opts)?))
}

/// The objects, in order: `ConfigMap`, workload, then `Service` and `NetworkPolicy` when asked
/// for.
pub fn objects(image: &AgentImage, opts: &Options) -> Result<Vec<Node>, KubeError> {
    let name = object_name(image, opts)?;
    check_names(opts)?;
    check_resources(&opts.resources)?;
    let mounts = map_mounts(image, opts)?;
    let env = environment(image, opts)?;

    let config_name = format!("{name}-config");
    let labels = labels(image, &name);
    let meta = |n: &str| {
        let mut m = Node::map().with("name", n);
        if let Some(ns) = &opts.namespace {
            m.push("namespace", ns.as_str());
        }
        m.with("labels", labels.clone())
    };
    let mut data = Node::map();
    for e in env
        .iter()
        .filter(|e| !e.secret && is_agent_env(image, &e.key))
    {
        data.push(&e.key, e.value.as_str());
    }
    let config_map = Node::map()
        .with("apiVersion", "v1")
        .with("kind", "ConfigMap")
        .with("metadata", meta(&config_name))
        .with("data", data);

    let pod_spec = pod_spec(image, opts, &name, &config_name, &mounts);
    let annotations = Node::map()
        .with("io.openotters.agent.digest", image.digest.as_str())
        .with("io.openotters.export", RUNNABLE);
    let metadata = meta(&name).with("annotations", annotations.clone());
    let template = || {
        Node::map()
            .with(
                "metadata",
                Node::map()
                    .with("labels", labels.clone())
                    .with("annotations", annotations.clone()),
            )
            .with("spec", pod_spec.clone())
    };
    let (api, kind, spec) = match opts.kind {
        Kind::Pod => ("v1", "Pod", pod_spec.clone()),
        Kind::Job => (
            "batch/v1",
            "Job",
            Node::map()
                .with("backoffLimit", 0i64)
                .with("template", template()),
        ),
        Kind::Deployment => (
            "apps/v1",
            "Deployment",
            Node::map()
                .with("replicas", opts.replicas.unwrap_or(1))
                .with(
                    "selector",
                    Node::map().with(
                        "matchLabels",
                        Node::map().with("app.kubernetes.io/name", name.as_str()),
                    ),
                )
                .with("template", template()),
        ),
    };
    let workload = Node::map()
        .with("apiVersion", api)
        .with("kind", kind)
        .with("metadata", metadata)
        .with("spec", spec);
    let mut out = vec![config_map, workload];
    out.extend(extras(opts, &name, &meta(&name)));
    Ok(out)
}

/// The `Service` and `NetworkPolicy` for the runtime's port, when asked for.
fn extras(opts: &Options, name: &str, metadata: &Node) -> Vec<Node> {
    let mut out = Vec::new();
    let selector = Node::map().with("app.kubernetes.io/name", name);
    if opts.service {
        out.push(
            Node::map()
                .with("apiVersion", "v1")
                .with("kind", "Service")
                .with("metadata", metadata.clone())
                .with(
                    "spec",
                    Node::map().with("selector", selector.clone()).with(
                        "ports",
                        vec![Node::map()
                            .with("name", "http")
                            .with("port", i64::from(CONTAINER_PORT))
                            .with("targetPort", "http")
                            .with("protocol", "TCP")],
                    ),
                ),
        );
    }
    if opts.network_policy {
        out.push(
            Node::map()
                .with("apiVersion", "networking.k8s.io/v1")
                .with("kind", "NetworkPolicy")
                .with("metadata", metadata.clone())
                .with(
                    "spec",
                    Node::map()
                        .with("podSelector", Node::map().with("matchLabels", selector))
                        .with("policyTypes", vec![Node::from("Ingress")])
                        .with(
                            "ingress",
                            vec![Node::map().with(
                                "ports",
                                vec![Node::map()
                                    .with("protocol", "TCP")
                                    .with("port", i64::from(CONTAINER_PORT))],
                            )],
                        ),
                ),
        );
    }
    out
}

/// The workload's name: `--name`, else the agent's NAME made DNS-1123.
fn object_name(image: &AgentImage, opts: &Options) -> Result<String, KubeError> {
    let agent = &image.model.agent;
    let agent_name = agent
        .name_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("agent");
    let max = 63 - LONGEST_SUFFIX;
    Ok(match &opts.name {
        Some(n) if is_dns1123_label(n) && n.len() <= max => n.clone(),
        Some(n) => {
            return Err(KubeError::BadName {
                from: n.clone(),
                max,
            })
        }
        None => dns_name(agent_name, max).ok_or_else(|| KubeError::BadName {
            from: agent_name.to_owned(),
            max,
        })?,
    })
}

/// Every other name the user gave is DNS-1123, and the image is a reference by digest.
fn check_names(opts: &Options) -> Result<(), KubeError> {
    if let Some(ns) = &opts.namespace {
        if !is_dns1123_label(ns) {
            return Err(KubeError::BadNamespace(ns.clone()));
        }
    }
    for (what, v) in std::iter::once(("--secret", opts.secret.as_ref()))
        .chain(
            opts.image_pull_secrets
                .iter()
                .map(|s| ("--image-pull-secret", Some(s))),
        )
        .chain(opts.var_lib_pvc.iter().map(|s| ("--var-lib-pvc", Some(s))))
        .chain(opts.config_from.iter().map(|c| match c {
            ConfigFrom::Secret(s) | ConfigFrom::ConfigMap(s) => ("--config-from", Some(s)),
        }))
        .chain(opts.mounts.iter().filter_map(|(_, m)| match m {
            MountSource::Pvc(p) => Some(("--mount pvc", Some(p))),
            _ => None,
        }))
    {
        if let Some(v) = v.filter(|v| !is_dns1123_subdomain(v)) {
            return Err(KubeError::BadObjectName {
                what,
                value: v.clone(),
            });
        }
    }
    // Parsed, not searched for `@sha256:`: `x@sha256:abc` or a name with a control character
    // would be written into the pod spec and fail only at the kubelet.
    match otters_oci::reference::Reference::parse(&opts.image) {
        Err(source) => Err(KubeError::BadImage {
            image: opts.image.clone(),
            source,
        }),
        Ok(r) if r.digest.is_none() => Err(KubeError::NotByDigest(opts.image.clone())),
        Ok(_) => Ok(()),
    }
}

/// Each request and limit is a quantity Kubernetes accepts, and no request is above its limit:
/// either would be written into the pod spec and refused only by the API server.
fn check_resources(r: &Resources) -> Result<(), KubeError> {
    let value = |what: &'static str, text: &str| {
        quantity(text).ok_or_else(|| KubeError::BadQuantity {
            what,
            value: text.to_owned(),
        })
    };
    for (resource, (req_what, request), (lim_what, limit)) in [
        (
            "cpu",
            ("cpu request", &r.cpu_request),
            ("cpu limit", &r.cpu_limit),
        ),
        (
            "memory",
            ("memory request", &r.memory_request),
            ("memory limit", &r.memory_limit),
        ),
    ] {
        // Equal values written in two units (`100m` and `0.1`) may differ in the last bit of a
        // float: only a request above its limit by more than that is refused.
        if value(req_what, request)? > value(lim_what, limit)? * (1.0 + 1e-9) {
            return Err(KubeError::RequestOverLimit {
                resource,
                request: request.clone(),
                limit: limit.clone(),
            });
        }
    }
    Ok(())
}

/// The value of a Kubernetes quantity (the grammar of `resource.Quantity`: a number, then an
/// optional binary-SI suffix `Ki`…`Ei`, decimal-SI suffix `m`, `k`, `M`…`E`, or exponent
/// `e`/`E` and an integer), or `None`. A sign is allowed only as `+`: no request or limit is
/// negative.
fn quantity(text: &str) -> Option<f64> {
    let s = text.strip_prefix('+').unwrap_or(text);
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    if !number.bytes().any(|b| b.is_ascii_digit()) || number.matches('.').count() > 1 {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    let binary = |p: i32| 1024f64.powi(p);
    let scale = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            10f64.powi(exponent.parse::<i32>().ok()?)
        }
    };
    Some(n * scale)
}

/// `app.kubernetes.io/{name,version,managed-by}`; the version is the agent's
/// `org.opencontainers.image.version` LABEL (else its `version` LABEL) when it is a valid label
/// value, else the first 12 hex digits of its digest.
fn labels(image: &AgentImage, name: &str) -> Node {
    let labels = &image.model.agent.labels;
    let version = ["org.opencontainers.image.version", "version"]
        .iter()
        .filter_map(|k| labels.get(*k))
        .map(|v| v.value.clone())
        .find(|v| {
            v.len() <= 63
                && v.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
                && v.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        })
        .unwrap_or_else(|| image.digest.hex()[..12].to_owned());
    Node::map()
        .with("app.kubernetes.io/name", name)
        .with("app.kubernetes.io/version", version)
        .with("app.kubernetes.io/managed-by", "otters")
}

/// An environment variable that belongs in the `ConfigMap`: a CONFIG value or an ENV, not one
/// of the fixed ones the image sets (PATH, HOME, …).
fn is_agent_env(image: &AgentImage, key: &str) -> bool {
    key.starts_with("RUNTIME_") || image.model.agent.envs.iter().any(|e| e.key == key)
}

/// The environment a docker-executor run with these `--config` values would give (no host
/// environment: the credential comes from the Secret), after the required gate.
fn environment(image: &AgentImage, opts: &Options) -> Result<Vec<EnvEntry>, KubeError> {
    let overrides = Overrides {
        configs: opts.configs.clone(),
        ..Overrides::default()
    };
    let mut planned = image.clone();
    match overrides::apply(&image.model.agent, &overrides) {
        Ok(_) => {}
        Err(OverrideError::RequiredMissing(missing)) if opts.config_from.is_empty() => {
            return Err(KubeError::RequiredMissing(
                missing.into_iter().map(|m| m.key).collect(),
            ))
        }
        // The keys come from --config-from objects, which otters cannot read.
        Err(OverrideError::RequiredMissing(_)) => {
            for c in &mut planned.model.agent.configs {
                c.required = false;
            }
        }
        Err(e) => return Err(e.into()),
    }
    let mounts = crate::export::declared_mounts(image);
    let run = RunOptions {
        root: PathBuf::from("/"),
        name: "agent".into(),
        id: crate::export::agent_id(&image.digest),
        executor: Launcher::Docker {
            cli: PathBuf::from("docker"),
            base_image: String::new(),
            user: crate::export::USER.to_owned(),
        },
        overrides,
        mounts,
        allow_missing_mounts: false,
        platform: Platform::new("linux", "amd64", None),
        // Only the environment is asked for: the image is the export, which copied the pins.
        pins: Pins::Optional,
        // No host lookup: the provider key is a secretKeyRef, never a value.
        providers: Vec::new(),
    };
    Ok(plan::plan(&planned, &run, &|_| None)?.env)
}

/// One declared MOUNT and what backs it.
struct Mapped {
    target: String,
    read_only: bool,
    source: Option<MountSource>,
}

fn map_mounts(image: &AgentImage, opts: &Options) -> Result<Vec<Mapped>, KubeError> {
    let declared = &image.model.agent.mounts;
    let clean = |t: &str| format!("/{}", t.trim_matches('/'));
    for (t, _) in &opts.mounts {
        if !declared.iter().any(|d| clean(&d.target) == clean(t)) {
            return Err(KubeError::UnknownMount(
                t.clone(),
                if declared.is_empty() {
                    "none".into()
                } else {
                    declared
                        .iter()
                        .map(|d| d.target.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            ));
        }
    }
    let mapped: Vec<Mapped> = declared
        .iter()
        .map(|d| Mapped {
            target: clean(&d.target),
            read_only: d.read_only,
            source: opts
                .mounts
                .iter()
                .find(|(t, _)| clean(t) == clean(&d.target))
                .map(|(_, s)| s.clone()),
        })
        .collect();
    let missing: Vec<String> = mapped
        .iter()
        .filter(|m| m.source.is_none())
        .map(|m| m.target.clone())
        .collect();
    if !missing.is_empty() && !opts.allow_missing_mounts {
        return Err(KubeError::UnmappedMounts(missing));
    }
    Ok(mapped)
}

/// The pod's volumes and the container's mounts: `emptyDir`s (or a claim) for the writable
/// directories, and each mapped MOUNT.
fn volumes(opts: &Options, mounts: &[Mapped]) -> (Vec<Node>, Vec<Node>) {
    let mut volumes = Vec::new();
    let mut volume_mounts = Vec::new();
    let mut mount = |volume: &str, path: &str, read_only: bool, source: Node| {
        volumes.push(Node::map().with("name", volume).merge(source));
        let mut m = Node::map().with("name", volume).with("mountPath", path);
        if read_only {
            m.push("readOnly", true);
        }
        volume_mounts.push(m);
    };
    let empty = || Node::map().with("emptyDir", Node::map());
    let pvc = |claim: &str| {
        Node::map().with(
            "persistentVolumeClaim",
            Node::map().with("claimName", claim),
        )
    };
    mount("workspace", "/workspace", false, empty());
    mount("home", "/home", false, empty());
    mount("tmp", "/tmp", false, empty());
    mount(
        "var-lib",
        "/var/lib",
        false,
        opts.var_lib_pvc.as_deref().map_or_else(empty, pvc),
    );
    for (i, m) in mounts.iter().enumerate() {
        let Some(source) = &m.source else { continue };
        let node = match source {
            MountSource::EmptyDir => empty(),
            MountSource::Pvc(claim) => pvc(claim),
            MountSource::HostPath(p) => Node::map().with(
                "hostPath",
                Node::map()
                    .with("path", p.as_str())
                    .with("type", "Directory"),
            ),
        };
        mount(&format!("mount-{i}"), &m.target, m.read_only, node);
    }
    (volumes, volume_mounts)
}

fn pod_spec(
    image: &AgentImage,
    opts: &Options,
    name: &str,
    config_name: &str,
    mounts: &[Mapped],
) -> Node {
    let uid = i64::from(USER_ID);
    let seccomp = || Node::map().with("type", "RuntimeDefault");
    let (volumes, volume_mounts) = volumes(opts, mounts);
    let mut env_from =
        vec![Node::map().with("configMapRef", Node::map().with("name", config_name))];
    for c in &opts.config_from {
        env_from.push(match c {
            ConfigFrom::Secret(s) => {
                Node::map().with("secretRef", Node::map().with("name", s.as_str()))
            }
            ConfigFrom::ConfigMap(c) => {
                Node::map().with("configMapRef", Node::map().with("name", c.as_str()))
            }
        });
    }
    let mut container = Node::map()
        .with("name", "agent")
        .with("image", opts.image.as_str())
        .with("imagePullPolicy", "IfNotPresent")
        .with(
            "ports",
            vec![Node::map()
                .with("name", "http")
                .with("containerPort", i64::from(CONTAINER_PORT))
                .with("protocol", "TCP")],
        )
        .with("envFrom", env_from);
    let model = image.model.agent.model.as_ref().map(|m| m.value.as_str());
    if let Some(key) = model.and_then(provider_key) {
        let secret = opts
            .secret
            .clone()
            .unwrap_or_else(|| format!("{name}-credentials"));
        container.push(
            "env",
            vec![Node::map().with("name", key.as_str()).with(
                "valueFrom",
                Node::map().with(
                    "secretKeyRef",
                    Node::map().with("name", secret).with("key", key.as_str()),
                ),
            )],
        );
    }
    let r = &opts.resources;
    container.push(
        "resources",
        Node::map()
            .with(
                "requests",
                Node::map()
                    .with("cpu", r.cpu_request.as_str())
                    .with("memory", r.memory_request.as_str()),
            )
            .with(
                "limits",
                Node::map()
                    .with("cpu", r.cpu_limit.as_str())
                    .with("memory", r.memory_limit.as_str()),
            ),
    );
    container.push(
        "securityContext",
        Node::map()
            .with("allowPrivilegeEscalation", false)
            .with("privileged", false)
            .with("readOnlyRootFilesystem", true)
            .with("runAsNonRoot", true)
            .with("runAsUser", uid)
            .with("runAsGroup", uid)
            .with(
                "capabilities",
                Node::map().with("drop", vec![Node::from("ALL")]),
            )
            .with("seccompProfile", seccomp()),
    );
    container.push("volumeMounts", volume_mounts);

    let mut spec = Node::map().with("automountServiceAccountToken", false);
    if opts.kind == Kind::Job {
        spec.push("restartPolicy", "Never");
    }
    spec.push(
        "securityContext",
        Node::map()
            .with("runAsNonRoot", true)
            .with("runAsUser", uid)
            .with("runAsGroup", uid)
            .with("fsGroup", uid)
            .with("seccompProfile", seccomp()),
    );
    if !opts.image_pull_secrets.is_empty() {
        spec.push(
            "imagePullSecrets",
            opts.image_pull_secrets
                .iter()
                .map(|s| Node::map().with("name", s.as_str()))
                .collect::<Vec<_>>(),
        );
    }
    spec.with("containers", vec![container])
        .with("volumes", volumes)
}

impl Node {
    /// The entries of `other` (a map) added to this map.
    #[must_use]
    fn merge(mut self, other: Node) -> Node {
        if let (Node::Map(a), Node::Map(b)) = (&mut self, other) {
            a.extend(b);
        }
        self
    }
}

/// Every volumeMount of every container names a volume of its pod, and every object name is
/// DNS-1123: the two checks schema validation misses. Returns what is wrong, one line each.
pub fn check(objects: &[Node]) -> Vec<String> {
    let mut problems = Vec::new();
    for o in objects {
        let name = o
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(|n| match n {
                Node::Str(s) => Some(s.as_str()),
                _ => None,
            })
            .unwrap_or_default();
        if !is_dns1123_subdomain(name) {
            problems.push(format!("object name {name:?} is not DNS-1123"));
        }
        let spec = o.get("spec");
        let pod = spec
            .and_then(|s| s.get("template"))
            .and_then(|t| t.get("spec"))
            .or(spec);
        let Some(pod) = pod else { continue };
        let names = |key: &str, n: &Node| -> Vec<String> {
            match n.get(key) {
                Some(Node::Seq(items)) => items
                    .iter()
                    .filter_map(|i| match i.get("name") {
                        Some(Node::Str(s)) => Some(s.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            }
        };
        let volumes = names("volumes", pod);
        if let Some(Node::Seq(containers)) = pod.get("containers") {
            for c in containers {
                for m in names("volumeMounts", c) {
                    if !volumes.contains(&m) {
                        problems.push(format!("{name}: volumeMount {m:?} names no volume"));
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_agent_names() {
        assert_eq!(
            dns_name("Weather_Bot.v2", 51).as_deref(),
            Some("weather-bot-v2")
        );
        assert_eq!(dns_name("--x--", 51).as_deref(), Some("x"));
        assert_eq!(dns_name("___", 51), None);
        assert_eq!(dns_name(&"a".repeat(80), 51).unwrap().len(), 51);
        assert!(is_dns1123_label("a-1") && !is_dns1123_label("A") && !is_dns1123_label("-a"));
        assert!(is_dns1123_subdomain("a.b-c") && !is_dns1123_subdomain("a..b"));
    }

    #[test]
    fn the_image_is_a_reference_by_a_whole_digest() {
        let zeros = "0".repeat(64);
        let image = |image: &str| {
            check_names(&Options {
                image: image.to_owned(),
                ..Options::default()
            })
        };
        assert!(image(&format!("reg.example:5000/a/b@sha256:{zeros}")).is_ok());
        assert!(image(&format!("a:1@sha256:{zeros}")).is_ok());
        assert!(matches!(image("a:1"), Err(KubeError::NotByDigest(_))));
        for bad in [
            "x@sha256:abc".to_owned(),
            format!("a/UPPER@sha256:{zeros}"),
            format!("a\u{1b}[31m@sha256:{zeros}"),
            format!("a@sha256:{zeros} b"),
            format!("a@sha512:{zeros}"),
        ] {
            assert!(
                matches!(image(&bad), Err(KubeError::BadImage { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn quantities_follow_kubernetes_grammar() {
        for (text, value) in [
            ("1", 1.0),
            ("500m", 0.5),
            ("1.5", 1.5),
            (".5", 0.5),
            ("2.", 2.0),
            ("+1", 1.0),
            ("128Mi", 128.0 * 1024.0 * 1024.0),
            ("1Gi", 1024f64.powi(3)),
            ("2k", 2000.0),
            ("1e3", 1000.0),
            ("1E-3", 0.001),
            ("1E", 1e18),
        ] {
            assert_eq!(quantity(text), Some(value), "{text}");
        }
        for bad in [
            "",
            "lots",
            "-1",
            "1.2.3",
            ".",
            "1 Gi",
            "1Gb",
            "1e",
            "1e+",
            "1\u{1b}[2J",
            "Mi",
        ] {
            assert_eq!(quantity(bad), None, "{bad:?}");
        }
        let r = |cpu_request: &str, cpu_limit: &str| {
            check_resources(&Resources {
                cpu_request: cpu_request.into(),
                cpu_limit: cpu_limit.into(),
                ..Resources::default()
            })
        };
        assert!(r("100m", "1").is_ok() && r("1", "1000m").is_ok());
        for (a, b) in [
            ("100m", "0.1"),
            ("300m", "0.3"),
            ("1.1", "1100m"),
            ("3e-1", "300m"),
        ] {
            assert!(r(a, b).is_ok() && r(b, a).is_ok(), "{a} = {b}");
        }
        assert!(r("1001m", "1").is_err());
        assert!(matches!(
            r("2", "500m"),
            Err(KubeError::RequestOverLimit {
                resource: "cpu",
                ..
            })
        ));
        assert!(matches!(
            r("100m", "lots"),
            Err(KubeError::BadQuantity {
                what: "cpu limit",
                ..
            })
        ));
        assert!(check_resources(&Resources::default()).is_ok());
    }

    #[test]
    fn check_finds_dangling_mounts_and_bad_names() {
        let pod = Node::map()
            .with("metadata", Node::map().with("name", "Bad_Name"))
            .with(
                "spec",
                Node::map()
                    .with(
                        "containers",
                        vec![Node::map()
                            .with("volumeMounts", vec![Node::map().with("name", "gone")])],
                    )
                    .with("volumes", vec![Node::map().with("name", "here")]),
            );
        assert_eq!(
            check(&[pod]),
            [
                "object name \"Bad_Name\" is not DNS-1123",
                "Bad_Name: volumeMount \"gone\" names no volume"
            ]
        );
    }
}

/// Why a `--mount` or `--config-from` text is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArgError {
    #[error("mount {0:?}: write TARGET=pvc:NAME, TARGET=emptydir or TARGET=hostpath:/PATH, both paths absolute and without `..` (e.g. /data=pvc:agent-data)")]
    Mount(String),
    #[error("config source {0:?}: write secret:NAME or configmap:NAME")]
    ConfigFrom(String),
}

/// Parses `--mount TARGET=pvc:NAME|emptydir|hostpath:/PATH`.
pub fn parse_mount(text: &str) -> Result<(String, MountSource), ArgError> {
    let bad = || ArgError::Mount(text.to_owned());
    let (target, source) = text.split_once('=').ok_or_else(bad)?;
    if !target.starts_with('/') || target.split('/').any(|p| p == "..") {
        return Err(bad());
    }
    let source = match source.split_once(':') {
        Some(("pvc", n)) if !n.is_empty() => MountSource::Pvc(n.to_owned()),
        // Kubernetes refuses a hostPath with a `..` component.
        Some(("hostpath", p)) if p.starts_with('/') && !p.split('/').any(|c| c == "..") => {
            MountSource::HostPath(p.to_owned())
        }
        None if source == "emptydir" => MountSource::EmptyDir,
        _ => return Err(bad()),
    };
    Ok((target.to_owned(), source))
}

/// Parses `--config-from secret:NAME|configmap:NAME`.
pub fn parse_config_from(text: &str) -> Result<ConfigFrom, ArgError> {
    match text.split_once(':') {
        Some(("secret", n)) if !n.is_empty() => Ok(ConfigFrom::Secret(n.to_owned())),
        Some(("configmap", n)) if !n.is_empty() => Ok(ConfigFrom::ConfigMap(n.to_owned())),
        _ => Err(ArgError::ConfigFrom(text.to_owned())),
    }
}

#[cfg(test)]
mod arg_tests {
    use super::*;

    #[test]
    fn mount_and_config_from_texts() {
        assert_eq!(
            parse_mount("/data=pvc:d"),
            Ok(("/data".into(), MountSource::Pvc("d".into())))
        );
        assert_eq!(
            parse_mount("/x=hostpath:/srv/x"),
            Ok(("/x".into(), MountSource::HostPath("/srv/x".into())))
        );
        assert_eq!(
            parse_mount("/t=emptydir"),
            Ok(("/t".into(), MountSource::EmptyDir))
        );
        for bad in [
            "data=pvc:d",
            "/d=pvc:",
            "/d=hostpath:rel",
            "/d",
            "/a/../b=emptydir",
            "/d=hostpath:/srv/../etc",
            "/d=hostpath:/srv/..",
        ] {
            assert!(parse_mount(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_config_from("secret:s"),
            Ok(ConfigFrom::Secret("s".into()))
        );
        assert!(parse_config_from("vault:s").is_err());
    }
}
