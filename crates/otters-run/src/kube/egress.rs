//! The egress `NetworkPolicy` of an agent that declares EGRESS, written whatever the flags say:
//! DNS to kube-dns and exactly the declared ports (an IP literal narrowed to its `/32` or `/128`),
//! or no egress at all for `EGRESS none`.
//!
//! Takes: the agent, its environment (for the MODEL provider's endpoint), its name and metadata.
//! Returns: the policy, or nothing for an agent that declares no EGRESS. Must never: open a port
//! that is not declared (or the provider's), or pretend a `NetworkPolicy` holds a host name (it
//! cannot: the annotation says so).

use super::yaml::Node;
use crate::env::EnvEntry;
use crate::plan::{egress_plan, EgressPlan};
use crate::source::AgentImage;
use otters_agentfile::ir::egress::{Dest, Host};
use otters_oci::spec::annotations::EGRESS;
use std::collections::BTreeSet;

/// The annotation that says what a `NetworkPolicy` cannot hold.
pub const NOTE: &str = "io.openotters.egress.note";

/// The policy's name: the agent's, then `-egress`.
pub fn policy_name(name: &str) -> String {
    format!("{name}-egress")
}

/// The egress policy, when the agent declares EGRESS: a `NetworkPolicy`, or with `cilium` (and
/// destinations to hold) a `CiliumNetworkPolicy`. `metadata` is the objects' common metadata with
/// the policy's name.
pub fn policy(
    image: &AgentImage,
    env: &[EnvEntry],
    name: &str,
    metadata: Node,
    cilium: bool,
) -> Option<Node> {
    let agent = &image.model.agent;
    let model = agent.model.as_ref().map(|m| m.value.as_str());
    let plan = egress_plan(agent, model, env)?;
    if let (true, EgressPlan::Proxy { declared, .. }) = (cilium, &plan) {
        let metadata = metadata.with("annotations", Node::map().with(EGRESS, declared.join(",")));
        return Some(cilium_policy(&plan.allow(), name, metadata));
    }
    let selector = Node::map().with(
        "matchLabels",
        Node::map().with("app.kubernetes.io/name", name),
    );
    let (rules, annotations) = match &plan {
        EgressPlan::NoNetwork => (
            Vec::new(),
            Node::map().with(EGRESS, "none").with(
                NOTE,
                "EGRESS none: this policy denies all egress, DNS included",
            ),
        ),
        EgressPlan::Proxy { declared, .. } => {
            let allow = plan.allow();
            let named: Vec<String> = allow
                .iter()
                .filter(|d| !d.host.is_ip())
                .map(Dest::to_string)
                .collect();
            let note = if named.is_empty() {
                "every destination is an IP address, held exactly".to_owned()
            } else {
                format!(
                    "a NetworkPolicy cannot name hosts: the ports of {} are open to any address; a CiliumNetworkPolicy (toFQDNs) or an egress proxy holds the names",
                    named.join(", ")
                )
            };
            (
                rules(&allow),
                Node::map()
                    .with(EGRESS, declared.join(","))
                    .with(NOTE, note),
            )
        }
    };
    let metadata = metadata.with("annotations", annotations);
    Some(
        Node::map()
            .with("apiVersion", "networking.k8s.io/v1")
            .with("kind", "NetworkPolicy")
            .with("metadata", metadata)
            .with(
                "spec",
                Node::map()
                    .with("podSelector", selector)
                    .with("policyTypes", vec![Node::from("Egress")])
                    .with("egress", rules),
            ),
    )
}

/// The egress rules of an agent-sandbox `SandboxTemplate`'s `networkPolicy`, when the agent
/// declares EGRESS: those of the `NetworkPolicy` above (DNS, the declared ports, IP literals as
/// `ipBlock`s), or none at all for `EGRESS none` (the controller then denies all egress). With
/// `cilium`, the names are the `CiliumNetworkPolicy`'s to hold: a rule opening their ports to any
/// address would, added to it, let them go anywhere, so only DNS and the IP literals are here.
pub fn template_rules(image: &AgentImage, env: &[EnvEntry], cilium: bool) -> Option<Vec<Node>> {
    let agent = &image.model.agent;
    let model = agent.model.as_ref().map(|m| m.value.as_str());
    match egress_plan(agent, model, env)? {
        EgressPlan::NoNetwork => Some(Vec::new()),
        plan @ EgressPlan::Proxy { .. } => {
            let allow: Vec<Dest> = plan
                .allow()
                .into_iter()
                .filter(|d| !cilium || d.host.is_ip())
                .collect();
            Some(rules(&allow))
        }
    }
}

/// A `cilium.io/v2` `CiliumNetworkPolicy`: DNS to kube-dns through Cilium's DNS proxy (which
/// `toFQDNs` needs to learn the addresses), then one rule per destination: `toFQDNs`
/// (`matchName`, or `matchPattern` for a `*.` wildcard, one label as ours) or `toCIDR`.
fn cilium_policy(allow: &[Dest], name: &str, metadata: Node) -> Node {
    let ports = |p: u16, proto: &str| {
        vec![Node::map().with(
            "ports",
            vec![Node::map()
                .with("port", p.to_string())
                .with("protocol", proto)],
        )]
    };
    let mut dns_ports = ports(53, "ANY");
    if let Some(first) = dns_ports.pop() {
        dns_ports.push(first.with(
            "rules",
            Node::map().with("dns", vec![Node::map().with("matchPattern", "*")]),
        ));
    }
    let mut rules = vec![Node::map()
        .with(
            "toEndpoints",
            vec![Node::map().with(
                "matchLabels",
                Node::map()
                    .with("k8s:io.kubernetes.pod.namespace", "kube-system")
                    .with("k8s:k8s-app", "kube-dns"),
            )],
        )
        .with("toPorts", dns_ports)];
    for d in allow {
        let to = match &d.host {
            Host::Name(n) => (
                "toFQDNs",
                Node::from(vec![Node::map().with("matchName", n.as_str())]),
            ),
            Host::Wildcard(s) => (
                "toFQDNs",
                Node::from(vec![Node::map().with("matchPattern", format!("*.{s}"))]),
            ),
            Host::V4(ip) => ("toCIDR", Node::from(vec![Node::from(format!("{ip}/32"))])),
            Host::V6(ip) => ("toCIDR", Node::from(vec![Node::from(format!("{ip}/128"))])),
        };
        rules.push(
            Node::map()
                .with(to.0, to.1)
                .with("toPorts", ports(d.port, "TCP")),
        );
    }
    Node::map()
        .with("apiVersion", "cilium.io/v2")
        .with("kind", "CiliumNetworkPolicy")
        .with("metadata", metadata)
        .with(
            "spec",
            Node::map()
                .with(
                    "endpointSelector",
                    Node::map().with(
                        "matchLabels",
                        Node::map().with("app.kubernetes.io/name", name),
                    ),
                )
                .with("egress", rules),
        )
}

/// DNS to kube-dns; one rule for the ports of named hosts (any address: a `NetworkPolicy` cannot
/// name a host); one rule per IP literal, narrowed to that address.
fn rules(allow: &[Dest]) -> Vec<Node> {
    let port = |p: u16| {
        Node::map()
            .with("protocol", "TCP")
            .with("port", i64::from(p))
    };
    let dns = Node::map()
        .with(
            "to",
            vec![Node::map()
                .with(
                    "namespaceSelector",
                    Node::map().with(
                        "matchLabels",
                        Node::map().with("kubernetes.io/metadata.name", "kube-system"),
                    ),
                )
                .with(
                    "podSelector",
                    Node::map().with("matchLabels", Node::map().with("k8s-app", "kube-dns")),
                )],
        )
        .with(
            "ports",
            vec![
                Node::map().with("protocol", "UDP").with("port", 53i64),
                Node::map().with("protocol", "TCP").with("port", 53i64),
            ],
        );
    let mut out = vec![dns];
    let named: BTreeSet<u16> = allow
        .iter()
        .filter(|d| !d.host.is_ip())
        .map(|d| d.port)
        .collect();
    if !named.is_empty() {
        out.push(Node::map().with("ports", named.into_iter().map(port).collect::<Vec<_>>()));
    }
    for d in allow {
        let cidr = match d.host {
            Host::V4(ip) => format!("{ip}/32"),
            Host::V6(ip) => format!("{ip}/128"),
            _ => continue,
        };
        out.push(
            Node::map()
                .with(
                    "to",
                    vec![Node::map().with("ipBlock", Node::map().with("cidr", cidr))],
                )
                .with("ports", vec![port(d.port)]),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{manifests, Options};
    use crate::source::AgentImage;
    use serde_yaml_ng::Value;

    fn policy_of(lines: &str) -> Option<Value> {
        objects_of(lines, Options::default())
            .into_iter()
            .find(|d| d["metadata"]["name"].as_str() == Some("probe-egress"))
    }

    /// The `networkPolicy` of the `SandboxTemplate` made of an agent with `lines`.
    fn template_policy_of(lines: &str, cilium: bool) -> Value {
        let opts = Options {
            kind: super::super::Kind::SandboxTemplate,
            cilium,
            ..Options::default()
        };
        let docs = objects_of(lines, opts);
        assert_eq!(docs[1]["kind"].as_str(), Some("SandboxTemplate"));
        docs[1]["spec"]["networkPolicy"].clone()
    }

    fn objects_of(lines: &str, opts: Options) -> Vec<Value> {
        let text =
            format!("FROM scratch\nNAME probe\nRUNTIME r.example/rt:1\nMODEL anthropic/x\n{lines}");
        let file = otters_agentfile::diagnostic::SourceFile::new("Agentfile", &text);
        let ast = otters_agentfile::syntax::parse(&file);
        let (model, _) =
            otters_agentfile::ir::from_ast(&ast, &file, &std::collections::BTreeMap::new());
        let image = AgentImage {
            reference: "r.example/a:1".into(),
            digest: otters_oci::Digest::of(b"agent"),
            layers: Vec::new(),
            model,
            pins: otters_pipeline::lower::Pins::default(),
        };
        let opts = Options {
            image: format!("r.example/a@sha256:{}", "0".repeat(64)),
            ..opts
        };
        let yaml = manifests(&image, &opts).unwrap().yaml;
        serde_yaml_ng::Deserializer::from_str(&yaml)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect()
    }

    #[test]
    fn a_sandbox_template_carries_the_same_egress_rules() {
        // No EGRESS: no networkPolicy, the controller's default applies.
        assert!(template_policy_of("", false).is_null());
        // EGRESS none: the router admitted, all egress denied.
        let none = template_policy_of("EGRESS none\n", false);
        assert_eq!(none["egress"].as_sequence().map(Vec::len), Some(0));
        let from = &none["ingress"][0]["from"][0];
        assert_eq!(
            from["podSelector"]["matchLabels"]["app"].as_str(),
            Some("sandbox-router")
        );
        assert_eq!(none["ingress"][0]["ports"][0]["port"].as_u64(), Some(9999));
        // Hosts: exactly the rules of the <name>-egress NetworkPolicy.
        let lines = "EGRESS api.example.com\nEGRESS 10.0.0.5:5432\n";
        let template = template_policy_of(lines, false);
        let policy = policy_of(lines).unwrap();
        assert_eq!(template["egress"], policy["spec"]["egress"]);
        assert_eq!(template["egress"].as_sequence().map(Vec::len), Some(3));
        // With Cilium, the names are the CiliumNetworkPolicy's: DNS and the address only.
        let cilium = template_policy_of(lines, true);
        let rules = cilium["egress"].as_sequence().unwrap();
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert_eq!(
            rules[1]["to"][0]["ipBlock"]["cidr"].as_str(),
            Some("10.0.0.5/32")
        );
    }

    #[test]
    fn no_egress_no_policy() {
        assert!(policy_of("").is_none());
    }

    #[test]
    fn none_denies_all_egress() {
        let p = policy_of("EGRESS none\n").unwrap();
        assert_eq!(p["kind"].as_str(), Some("NetworkPolicy"));
        assert_eq!(p["spec"]["policyTypes"][0].as_str(), Some("Egress"));
        assert_eq!(p["spec"]["egress"].as_sequence().map(Vec::len), Some(0));
        assert_eq!(
            p["metadata"]["annotations"]["io.openotters.egress"].as_str(),
            Some("none")
        );
    }

    #[test]
    fn declared_ports_dns_and_ip_blocks_exactly() {
        let p = policy_of(
            "EGRESS api.example.com\nEGRESS *.example.org:80\nEGRESS 10.0.0.5:5432\nEGRESS [2001:db8::1]:853\n",
        )
        .unwrap();
        let rules = p["spec"]["egress"].as_sequence().unwrap();
        assert_eq!(rules.len(), 4, "{rules:?}");
        // DNS, to kube-dns only.
        assert_eq!(
            rules[0]["to"][0]["podSelector"]["matchLabels"]["k8s-app"].as_str(),
            Some("kube-dns")
        );
        let ports = |r: &Value| -> Vec<(String, u64)> {
            r["ports"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["protocol"].as_str().unwrap().to_owned(),
                        p["port"].as_u64().unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(ports(&rules[0]), [("UDP".into(), 53), ("TCP".into(), 53)]);
        // Named hosts (and the provider's API host, 443): their ports, to any address.
        assert!(rules[1]["to"].is_null());
        assert_eq!(ports(&rules[1]), [("TCP".into(), 80), ("TCP".into(), 443)]);
        assert_eq!(
            rules[2]["to"][0]["ipBlock"]["cidr"].as_str(),
            Some("10.0.0.5/32")
        );
        assert_eq!(ports(&rules[2]), [("TCP".into(), 5432)]);
        assert_eq!(
            rules[3]["to"][0]["ipBlock"]["cidr"].as_str(),
            Some("2001:db8::1/128")
        );
        assert_eq!(ports(&rules[3]), [("TCP".into(), 853)]);
        let note = p["metadata"]["annotations"]["io.openotters.egress.note"]
            .as_str()
            .unwrap();
        assert!(
            note.contains("cannot name hosts") && note.contains("*.example.org:80"),
            "{note}"
        );
        assert_eq!(
            p["metadata"]["annotations"]["io.openotters.egress"].as_str(),
            Some("api.example.com:443,*.example.org:80,10.0.0.5:5432,[2001:db8::1]:853")
        );
    }
}
