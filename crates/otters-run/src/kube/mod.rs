//! `otters kube`: the Kubernetes objects that run an agent from its runnable export.
//!
//! Takes: an agent image (from the store), the export's image reference by digest, and the
//! user's [`Options`]. Returns: the objects as multi-document YAML ([`yaml`]), the same bytes for
//! the same agent and options. The environment and the required-CONFIG gate come
//! from [`crate::plan::plan`] (docker layout, as in the export), so a pod sees what
//! `otters run --executor docker` shows. Must never: inline a credential (the provider key comes
//! from a Secret), accept a required CONFIG without value or an unmapped MOUNT (unless asked), or
//! write a name that is not DNS-1123.

pub mod agent;
mod check;
pub mod egress;
pub mod kustomize;
mod names;
mod options;
mod pod;
mod quantity;
pub mod tree;
mod workload;
pub mod yaml;

pub use check::check;
pub use names::{dns_name, is_dns1123_label, is_dns1123_subdomain, ObjectName};
pub use options::{
    parse_config_from, parse_mount, ArgError, ConfigFrom, Kind, MountSource, Options, Resources,
    Uid,
};

use crate::env::EnvEntry;
use crate::export::tree::TREE;
use crate::export::RUNNABLE;
use crate::overrides::{self, OverrideError, Overrides};
use crate::plan::{self, Launcher, Pins, PlanError, RunOptions, CONTAINER_PORT};
use crate::source::AgentImage;
use otters_oci::spec::annotations::{AGENT_DIGEST, EXPORT};
use otters_oci::Platform;
use pod::Mapped;
use std::path::PathBuf;
use yaml::Node;

#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// Every input the objects lack, both kinds at once: required CONFIGs without a value and
    /// declared MOUNTs no `--mount` backs (either list may be empty, not both).
    #[error("{}", missing_text(.configs, .mounts))]
    Missing {
        configs: Vec<String>,
        mounts: Vec<String>,
    },
    #[error("mount target {0}: the agent declares no MOUNT at {0}; its MOUNTs are: {1}")]
    UnknownMount(String, String),
    #[error("cannot make a Kubernetes name (DNS-1123: lower-case letters, digits and '-', at most {max}) from {from:?}")]
    BadName { from: String, max: usize },
    #[error(
        "namespace {0:?} is not a DNS-1123 label (lower-case letters, digits and '-', at most 63)"
    )]
    BadNamespace(String),
    #[error("{what} name {value:?} is not a DNS-1123 name (lower-case letters, digits, '-' and '.', at most 253)")]
    BadObjectName { what: ObjectName, value: String },
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
    #[error("the objects would not be valid Kubernetes objects: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// "required config(s) have no value: …; declared mount(s) not mapped: …", the parts that apply.
fn missing_text(configs: &[String], mounts: &[String]) -> String {
    let mut parts = Vec::new();
    if !configs.is_empty() {
        parts.push(format!(
            "required config(s) have no value: {}",
            configs.join(", ")
        ));
    }
    if !mounts.is_empty() {
        parts.push(format!(
            "declared mount(s) not mapped: {}",
            mounts.join(", ")
        ));
    }
    parts.join("; ")
}

/// What the objects do that their user should know, though Kubernetes takes them; the CLI prints
/// each on stderr with the flag that changes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// MOUNT targets backed by a `hostPath` volume, which Pod Security "baseline" and
    /// "restricted" refuse.
    HostPath(Vec<String>),
    /// A Job of an agent whose EXEC (shown) starts a server: it never completes.
    ServingJob(String),
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::HostPath(targets) => write!(
                f,
                "hostPath volume(s) at {}: Pod Security \"baseline\" and \"restricted\" refuse a pod with any hostPath, so these objects run only in a namespace at the \"privileged\" level",
                targets.join(", ")
            ),
            Warning::ServingJob(exec) => write!(
                f,
                "the agent's EXEC `{exec}` starts a server that does not exit, so this Job never completes (its pod runs until deleted)"
            ),
        }
    }
}

/// The objects as YAML, and what the user should know about them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifests {
    pub yaml: String,
    /// The objects the YAML writes, in order (for [`kustomize::base`]).
    pub objects: Vec<Node>,
    pub warnings: Vec<Warning>,
}

/// The objects, as YAML, with the warnings.
pub fn manifests(image: &AgentImage, opts: &Options) -> Result<Manifests, KubeError> {
    let objects = objects(image, opts)?;
    Ok(Manifests {
        yaml: yaml::documents(&objects),
        objects,
        warnings: warnings(image, opts),
    })
}

/// What the user should know about these objects: `hostPath` volumes, a Job that never ends.
pub fn warnings(image: &AgentImage, opts: &Options) -> Vec<Warning> {
    let mut out = Vec::new();
    let host: Vec<String> = opts
        .mounts
        .iter()
        .filter(|(_, s)| matches!(s, MountSource::HostPath(_)))
        .map(|(t, _)| clean(t))
        .collect();
    if !host.is_empty() {
        out.push(Warning::HostPath(host));
    }
    let exec = plan::exec_args(image);
    if opts.kind == Kind::Job && serves(image) {
        out.push(Warning::ServingJob(
            otters_core::escape::escape(&exec.join(" ")).into_owned(),
        ));
    }
    out
}

/// Whether the agent's EXEC starts the runtime's server (`serve`, the default): a process that
/// listens on the runtime's port and does not exit.
fn serves(image: &AgentImage) -> bool {
    plan::exec_args(image).first().map(String::as_str) == Some("serve")
}

/// The objects, in order: `ConfigMap`, workload, then `Service` and `NetworkPolicy` when asked
/// for.
pub fn objects(image: &AgentImage, opts: &Options) -> Result<Vec<Node>, KubeError> {
    let name = names::object_name(image, opts)?;
    names::check_names(opts)?;
    quantity::check_resources(&opts.resources)?;
    let mounts = map_mounts(image, opts)?;
    // Every missing input at once: the CONFIGs, then the MOUNTs.
    let configs = missing_configs(image, opts)?;
    let unmapped: Vec<String> = if opts.allow_missing_mounts {
        Vec::new()
    } else {
        mounts
            .iter()
            .filter(|m| m.source.is_none())
            .map(|m| m.target.clone())
            .collect()
    };
    if !configs.is_empty() || !unmapped.is_empty() {
        return Err(KubeError::Missing {
            configs,
            mounts: unmapped,
        });
    }
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

    let pod_spec = pod::pod_spec(image, serves(image), opts, &name, &config_name, &mounts);
    let annotations = Node::map()
        .with(AGENT_DIGEST, image.digest.as_str())
        .with(EXPORT, if opts.tree.is_some() { TREE } else { RUNNABLE });
    let metadata = meta(&name).with("annotations", annotations.clone());
    let template_metadata = Node::map()
        .with("labels", labels.clone())
        .with("annotations", annotations);
    let template_egress = egress::template_rules(image, &env, opts.cilium);
    let workload = workload::workload(
        opts,
        &name,
        metadata,
        template_metadata,
        pod_spec,
        template_egress,
    );
    let mut out = vec![config_map, workload];
    out.extend(extras(opts, &name, &meta(&name)));
    // Always, for an agent that declares EGRESS (not only with --network-policy).
    let egress_meta = meta(&egress::policy_name(&name));
    out.extend(egress::policy(image, &env, &name, egress_meta, opts.cilium));
    // A name made too long (a volume of the thousandth MOUNT) is refused here, not at the API server.
    let problems = check(&out);
    if !problems.is_empty() {
        return Err(KubeError::Invalid(problems));
    }
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

fn overrides(opts: &Options) -> Overrides {
    Overrides {
        configs: opts.configs.clone(),
        ..Overrides::default()
    }
}

/// The required CONFIGs these `--config` values leave without one; none when a `--config-from`
/// object may hold them (otters cannot read it).
fn missing_configs(image: &AgentImage, opts: &Options) -> Result<Vec<String>, KubeError> {
    match overrides::apply(&image.model.agent, &overrides(opts)) {
        Ok(_) => Ok(Vec::new()),
        Err(OverrideError::RequiredMissing(_)) if !opts.config_from.is_empty() => Ok(Vec::new()),
        Err(OverrideError::RequiredMissing(missing)) => {
            Ok(missing.into_iter().map(|m| m.key).collect())
        }
        Err(e) => Err(e.into()),
    }
}

/// The environment a docker-executor run with these `--config` values would give (no host
/// environment: the credential comes from the Secret), once [`missing_configs`] found none.
fn environment(image: &AgentImage, opts: &Options) -> Result<Vec<EnvEntry>, KubeError> {
    let overrides = overrides(opts);
    let mut planned = image.clone();
    // Checked by `missing_configs`: what is still missing comes from a --config-from object.
    for c in &mut planned.model.agent.configs {
        c.required = false;
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

/// A MOUNT target as one spelling: `/data/` and `data` are `/data`.
fn clean(t: &str) -> String {
    format!("/{}", t.trim_matches('/'))
}

/// Each declared MOUNT with what backs it (`None`: no `--mount` names it); a `--mount` of a
/// target the agent does not declare is refused.
fn map_mounts(image: &AgentImage, opts: &Options) -> Result<Vec<Mapped>, KubeError> {
    let declared = &image.model.agent.mounts;
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
    Ok(mapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(agentfile: &str) -> AgentImage {
        let file = otters_agentfile::diagnostic::SourceFile::new("Agentfile", agentfile);
        let ast = otters_agentfile::syntax::parse(&file);
        let (model, _) =
            otters_agentfile::ir::from_ast(&ast, &file, &std::collections::BTreeMap::new());
        AgentImage {
            reference: "r.example/a:1".into(),
            digest: otters_oci::Digest::of(b"agent"),
            layers: Vec::new(),
            model,
            pins: otters_pipeline::lower::Pins::default(),
        }
    }

    fn options() -> Options {
        Options {
            image: format!("r.example/a@sha256:{}", "0".repeat(64)),
            ..Options::default()
        }
    }

    const TWO_MOUNTS: &str = "FROM scratch\nNAME probe\nRUNTIME r.example/rt:1\nMODEL anthropic/x\nCONFIG webhook!\nCONFIG token!\nMOUNT /data ro\nMOUNT /out rw\n";

    /// `TWO_MOUNTS` with every input given.
    fn complete() -> Options {
        let mut opts = options();
        opts.allow_missing_mounts = true;
        opts.configs = vec![("webhook".into(), "x".into()), ("token".into(), "t".into())];
        opts
    }

    fn parsed(agent: &AgentImage, opts: &Options) -> Vec<serde_yaml_ng::Value> {
        let text = manifests(agent, opts).unwrap().yaml;
        serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect()
    }

    #[test]
    fn a_serving_pod_is_probed_on_its_port_unless_asked_not_to() {
        let serving = image(TWO_MOUNTS);
        let once = image(&format!("{TWO_MOUNTS}EXEC [\"run\", \"--once\"]\n"));
        let probes = |agent: &AgentImage, kind: Kind, no_probes: bool| {
            let mut opts = complete();
            opts.kind = kind;
            opts.no_probes = no_probes;
            let text = manifests(agent, &opts).unwrap().yaml;
            (
                text.matches("readinessProbe:").count(),
                text.matches("livenessProbe:").count(),
                text.matches("port: 9999").count(),
            )
        };
        for kind in [
            Kind::Pod,
            Kind::Deployment,
            Kind::Sandbox,
            Kind::SandboxTemplate,
        ] {
            assert_eq!(probes(&serving, kind, false), (1, 1, 2), "{kind:?}");
            assert_eq!(probes(&serving, kind, true), (0, 0, 0), "{kind:?}");
            assert_eq!(probes(&once, kind, false), (0, 0, 0), "{kind:?}");
        }
        // A Job's pod is meant to finish: never probed.
        assert_eq!(probes(&serving, Kind::Job, false), (0, 0, 0));
    }

    /// A `Sandbox`'s and a `SandboxTemplate`'s `podTemplate` is exactly the Pod otters writes: the
    /// same spec, the same labels and annotations.
    #[test]
    fn a_sandbox_holds_the_hardened_pod_unchanged() {
        let agent = image(TWO_MOUNTS);
        let of = |kind: Kind| {
            let mut opts = complete();
            opts.kind = kind;
            parsed(&agent, &opts).remove(1)
        };
        let pod = of(Kind::Pod);
        for (kind, api, name) in [
            (Kind::Sandbox, "agents.x-k8s.io/v1beta1", "Sandbox"),
            (
                Kind::SandboxTemplate,
                "extensions.agents.x-k8s.io/v1beta1",
                "SandboxTemplate",
            ),
        ] {
            let made = of(kind);
            assert_eq!(
                (made["apiVersion"].as_str(), made["kind"].as_str()),
                (Some(api), Some(name))
            );
            let template = &made["spec"]["podTemplate"];
            assert_eq!(template["spec"], pod["spec"], "{name}");
            assert_eq!(template["metadata"]["labels"], pod["metadata"]["labels"]);
            assert_eq!(
                template["metadata"]["annotations"],
                pod["metadata"]["annotations"]
            );
            assert_eq!(made["metadata"], pod["metadata"]);
        }
    }

    #[test]
    fn uid_auto_fixes_no_user_and_keeps_run_as_non_root() {
        let agent = image(TWO_MOUNTS);
        let mut opts = complete();
        opts.kind = Kind::Pod;
        let fixed = manifests(&agent, &opts).unwrap().yaml;
        opts.uid = Uid::Auto;
        let auto = manifests(&agent, &opts).unwrap().yaml;
        for key in ["runAsUser: 65532", "runAsGroup: 65532"] {
            assert_eq!(
                (fixed.matches(key).count(), auto.matches(key).count()),
                (2, 0),
                "{key}"
            );
        }
        assert_eq!(
            (
                fixed.matches("fsGroup").count(),
                auto.matches("fsGroup").count()
            ),
            (1, 0)
        );
        assert_eq!(auto.matches("runAsNonRoot: true").count(), 2);
        // Only those lines differ.
        let kept: Vec<&str> = fixed
            .lines()
            .filter(|l| {
                !l.contains("runAsUser") && !l.contains("runAsGroup") && !l.contains("fsGroup")
            })
            .collect();
        assert_eq!(kept, auto.lines().collect::<Vec<_>>());
    }

    #[test]
    fn every_missing_input_is_named_at_once() {
        let e = objects(&image(TWO_MOUNTS), &options()).unwrap_err();
        assert!(
            matches!(&e, KubeError::Missing { configs, mounts }
                if configs == &["token", "webhook"] && mounts == &["/data", "/out"]),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "required config(s) have no value: token, webhook; declared mount(s) not mapped: /data, /out"
        );
        // Each part alone says only its own.
        let mut opts = options();
        opts.allow_missing_mounts = true;
        let e = objects(&image(TWO_MOUNTS), &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            "required config(s) have no value: token, webhook"
        );
        opts.config_from.push(ConfigFrom::Secret("s".into()));
        opts.allow_missing_mounts = false;
        let e = objects(&image(TWO_MOUNTS), &opts).unwrap_err();
        assert_eq!(e.to_string(), "declared mount(s) not mapped: /data, /out");
    }

    #[test]
    fn volumes_are_named_after_the_object() {
        let mut opts = options();
        opts.name = Some("weather".into());
        opts.configs = vec![("webhook".into(), "x".into()), ("token".into(), "t".into())];
        opts.mounts = vec![
            ("/data".into(), MountSource::EmptyDir),
            ("/out".into(), MountSource::Pvc("results".into())),
        ];
        let text = manifests(&image(TWO_MOUNTS), &opts).unwrap().yaml;
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("- name: \"weather-"))
            .collect();
        let each = [
            "workspace\"",
            "home\"",
            "tmp\"",
            "var-lib\"",
            "mount-0\"",
            "mount-1\"",
        ];
        // volumeMounts, then volumes.
        assert_eq!(names, [each, each].concat());
        assert!(!text.contains("name: \"workspace\""), "{text}");
    }

    #[test]
    fn host_paths_and_a_serving_job_are_warned_about() {
        let mut opts = options();
        opts.allow_missing_mounts = true;
        opts.configs = vec![("webhook".into(), "x".into()), ("token".into(), "t".into())];
        let agent = image(TWO_MOUNTS);
        assert_eq!(warnings(&agent, &opts), []);
        opts.mounts = vec![
            ("/data/".into(), MountSource::HostPath("/srv/data".into())),
            ("/out".into(), MountSource::EmptyDir),
        ];
        opts.kind = Kind::Job;
        let made = manifests(&agent, &opts).unwrap();
        assert_eq!(
            made.warnings,
            [
                Warning::HostPath(vec!["/data".into()]),
                Warning::ServingJob("serve".into())
            ]
        );
        // A Job of an EXEC that finishes, or a Deployment of one that serves: nothing to say.
        let once = image(&format!("{TWO_MOUNTS}EXEC [\"run\", \"--once\"]\n"));
        assert_eq!(
            warnings(&once, &opts),
            [Warning::HostPath(vec!["/data".into()])]
        );
        opts.kind = Kind::Deployment;
        assert_eq!(
            warnings(&agent, &opts),
            [Warning::HostPath(vec!["/data".into()])]
        );
    }

    #[test]
    fn env_keys_yaml_1_1_reads_as_booleans_or_null_are_quoted() {
        let agent = image(
            "FROM scratch\nNAME probe\nRUNTIME r.example/rt:1\nMODEL ollama/x\nENV ON=1\nENV Y=2\nENV NO=3\nENV OFF=4\nENV TRUE=5\nENV NULL=6\nENV ONE=7\n",
        );
        let text = manifests(&agent, &options()).unwrap().yaml;
        let data: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != "data:")
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect();
        assert_eq!(
            data,
            [
                "  \"NO\": \"3\"",
                "  \"NULL\": \"6\"",
                "  \"OFF\": \"4\"",
                "  \"ON\": \"1\"",
                "  ONE: \"7\"",
                "  \"TRUE\": \"5\"",
                "  \"Y\": \"2\"",
            ]
        );
    }
}
