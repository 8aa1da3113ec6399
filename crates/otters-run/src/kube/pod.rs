//! The pod: its volumes, its one container and their security settings.

use super::yaml::Node;
use super::{ConfigFrom, Kind, MountSource, Options, Uid};
use crate::export::USER_ID;
use crate::plan::CONTAINER_PORT;
use crate::prepare::provider_key;
use crate::source::AgentImage;

/// One declared MOUNT and what backs it.
pub(super) struct Mapped {
    pub(super) target: String,
    pub(super) read_only: bool,
    pub(super) source: Option<MountSource>,
}

/// The pod's volumes and the container's mounts: `emptyDir`s (or a claim) for the writable
/// directories, and each mapped MOUNT. Each volume is named after the object (`NAME-workspace`,
/// `NAME-mount-0`): `podman kube play` makes a named volume of each, so a name two agents share
/// would give them one workspace, home and tmp.
fn volumes(opts: &Options, name: &str, mounts: &[Mapped]) -> (Vec<Node>, Vec<Node>) {
    let mut volumes = Vec::new();
    let mut volume_mounts = Vec::new();
    let mut mount = |volume: &str, path: &str, read_only: bool, source: Node| {
        let volume = format!("{name}-{volume}");
        volumes.push(Node::map().with("name", volume.as_str()).merge(source));
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

/// `context` with the export's user fixed (`runAsUser`, `runAsGroup`, and for the pod
/// `fsGroup`), unless the platform picks it (`Uid::Auto`).
fn user(opts: &Options, context: Node, pod: bool) -> Node {
    if opts.uid == Uid::Auto {
        return context;
    }
    let uid = i64::from(USER_ID);
    let context = context.with("runAsUser", uid).with("runAsGroup", uid);
    if pod {
        context.with("fsGroup", uid)
    } else {
        context
    }
}

/// The container's `env`: with `--tree image`, the image config's fixed variables (and its
/// `command` and `args` set on `container`); MODEL's provider key from the Secret.
fn env(image: &AgentImage, opts: &Options, name: &str, container: &mut Node) -> Vec<Node> {
    let model = image.model.agent.model.as_ref().map(|m| m.value.as_str());
    let mut env = Vec::new();
    if let Some(t) = &opts.tree {
        let args = crate::plan::container_args(&crate::plan::exec_args(image), model.unwrap_or(""));
        super::tree::container(t, container, args);
        env = super::tree::env(t);
    }
    if let Some(key) = model.and_then(provider_key) {
        let secret = opts
            .secret
            .clone()
            .unwrap_or_else(|| format!("{name}-credentials"));
        env.push(Node::map().with("name", key.as_str()).with(
            "valueFrom",
            Node::map().with(
                "secretKeyRef",
                Node::map().with("name", secret).with("key", key.as_str()),
            ),
        ));
    }
    env
}

/// The pod's spec; `serves` when the agent's EXEC starts the runtime's server (then readiness
/// and liveness probe its port, unless `opts.no_probes`; never in a Job).
pub(super) fn pod_spec(
    image: &AgentImage,
    serves: bool,
    opts: &Options,
    name: &str,
    config_name: &str,
    mounts: &[Mapped],
) -> Node {
    let seccomp = || Node::map().with("type", "RuntimeDefault");
    let (mut volumes, mut volume_mounts) = volumes(opts, name, mounts);
    if let Some(t) = &opts.tree {
        super::tree::apply(t, name, &mut volumes, &mut volume_mounts);
    }
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
    let env = env(image, opts, name, &mut container);
    if !env.is_empty() {
        container.push("env", env);
    }
    if serves && !opts.no_probes && opts.kind != Kind::Job {
        // The runtime contract names no health path: a probe of the port it serves on.
        let tcp = || {
            Node::map().with(
                "tcpSocket",
                Node::map().with("port", i64::from(CONTAINER_PORT)),
            )
        };
        container.push("readinessProbe", tcp().with("periodSeconds", 5i64));
        container.push(
            "livenessProbe",
            tcp()
                .with("initialDelaySeconds", 10i64)
                .with("periodSeconds", 20i64),
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
        user(
            opts,
            Node::map()
                .with("allowPrivilegeEscalation", false)
                .with("privileged", false)
                .with("readOnlyRootFilesystem", true)
                .with("runAsNonRoot", true),
            false,
        )
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
        user(opts, Node::map().with("runAsNonRoot", true), true).with("seccompProfile", seccomp()),
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
