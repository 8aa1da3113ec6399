//! The workload around the pod: a `Pod`, `Job` or `Deployment`, or agent-sandbox's `Sandbox` or
//! `SandboxTemplate`, whose `podTemplate` is the same hardened pod, unchanged; a `SandboxTemplate`
//! of an agent that declares EGRESS carries it as its own `networkPolicy`.

use super::yaml::Node;
use super::{Kind, Options};

/// The workload object of `opts.kind`: `metadata` its own, `template_metadata` the pod
/// template's (labels and annotations), `pod` the pod's spec, `egress` the rules of a
/// `SandboxTemplate`'s `networkPolicy` (the agent's declared egress, if any).
pub(super) fn workload(
    opts: &Options,
    name: &str,
    metadata: Node,
    template_metadata: Node,
    pod: Node,
    egress: Option<Vec<Node>>,
) -> Node {
    let template = || {
        Node::map()
            .with("metadata", template_metadata.clone())
            .with("spec", pod.clone())
    };
    let (api, spec) = match opts.kind {
        Kind::Pod => ("v1", pod.clone()),
        Kind::Job => (
            "batch/v1",
            Node::map()
                .with("backoffLimit", 0i64)
                .with("template", template()),
        ),
        Kind::Deployment => (
            "apps/v1",
            Node::map()
                .with("replicas", opts.replicas.unwrap_or(1))
                .with(
                    "selector",
                    Node::map().with(
                        "matchLabels",
                        Node::map().with("app.kubernetes.io/name", name),
                    ),
                )
                .with("template", template()),
        ),
        Kind::Sandbox => (
            "agents.x-k8s.io/v1beta1",
            Node::map().with("podTemplate", template()),
        ),
        Kind::SandboxTemplate => {
            let mut spec = Node::map().with("podTemplate", template());
            if let Some(policy) = template_network_policy(egress) {
                spec.push("networkPolicy", policy);
            }
            ("extensions.agents.x-k8s.io/v1beta1", spec)
        }
    };
    Node::map()
        .with("apiVersion", api)
        .with("kind", opts.kind.api_kind())
        .with("metadata", metadata)
        .with("spec", spec)
}

/// The `SandboxTemplate`'s own `networkPolicy`, the one the agent-sandbox controller applies to
/// every sandbox made of the template, from the agent's declared egress rules
/// ([`super::egress::template_rules`]). None for an agent that declares no EGRESS, so the
/// controller's secure default applies (ingress only from the sandbox router; egress to the
/// public internet, not to cluster-internal addresses or the metadata server). A policy of our
/// own replaces that default whole, and an empty `ingress` would deny all ingress: it admits the
/// sandbox router, as the default does, to the runtime's port only.
fn template_network_policy(egress: Option<Vec<Node>>) -> Option<Node> {
    let router = Node::map()
        .with(
            "namespaceSelector",
            Node::map().with(
                "matchLabels",
                Node::map().with("kubernetes.io/metadata.name", "agent-sandbox-system"),
            ),
        )
        .with(
            "podSelector",
            Node::map().with("matchLabels", Node::map().with("app", "sandbox-router")),
        );
    let ingress = Node::map().with("from", vec![router]).with(
        "ports",
        vec![Node::map()
            .with("protocol", "TCP")
            .with("port", i64::from(crate::plan::CONTAINER_PORT))],
    );
    Some(
        Node::map()
            .with("ingress", vec![ingress])
            .with("egress", egress?),
    )
}
