//! The workload around the pod: a `Pod`, `Job` or `Deployment`, or agent-sandbox's `Sandbox` or
//! `SandboxTemplate`, whose `podTemplate` is the same hardened pod, unchanged.

use super::yaml::Node;
use super::{Kind, Options};

/// The workload object of `opts.kind`: `metadata` its own, `template_metadata` the pod
/// template's (labels and annotations), `pod` the pod's spec.
pub(super) fn workload(
    opts: &Options,
    name: &str,
    metadata: Node,
    template_metadata: Node,
    pod: Node,
) -> Node {
    let template = || {
        Node::map()
            .with("metadata", template_metadata.clone())
            .with("spec", pod.clone())
    };
    let (api, kind, spec) = match opts.kind {
        Kind::Pod => ("v1", "Pod", pod.clone()),
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
                        Node::map().with("app.kubernetes.io/name", name),
                    ),
                )
                .with("template", template()),
        ),
        Kind::Sandbox => (
            "agents.x-k8s.io/v1beta1",
            "Sandbox",
            Node::map().with("podTemplate", template()),
        ),
        Kind::SandboxTemplate => {
            let mut spec = Node::map().with("podTemplate", template());
            if let Some(policy) = template_network_policy(opts) {
                spec.push("networkPolicy", policy);
            }
            (
                "extensions.agents.x-k8s.io/v1beta1",
                "SandboxTemplate",
                spec,
            )
        }
    };
    Node::map()
        .with("apiVersion", api)
        .with("kind", kind)
        .with("metadata", metadata)
        .with("spec", spec)
}

/// The `SandboxTemplate`'s own `networkPolicy`, the one the agent-sandbox controller applies to
/// every sandbox made of the template. None for now, so the controller's secure default applies
/// (ingress only from the sandbox router; egress to the public internet, not to cluster-internal
/// addresses or the metadata server): a `networkPolicy` without `egress` rules would deny all
/// egress, the model provider's included.
///
/// The seam for the agent's declared egress: once an agent can declare it, this returns
/// `{ingress: [the runtime's port], egress: [the declared destinations]}`.
fn template_network_policy(_opts: &Options) -> Option<Node> {
    None
}
