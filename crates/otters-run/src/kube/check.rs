//! The checks schema validation misses, run over the objects as written.

use super::yaml::Node;
use super::{is_dns1123_label, is_dns1123_subdomain};

/// Every volumeMount of every container names a volume of its pod, every object name is
/// DNS-1123 and every volume name a DNS-1123 label: what schema validation misses. Returns what
/// is wrong, one line each.
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
        // A Job's or Deployment's `template`, a Sandbox's `podTemplate`, else a Pod's own spec.
        let pod = spec
            .and_then(|s| s.get("template").or_else(|| s.get("podTemplate")))
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
        for v in volumes.iter().filter(|v| !is_dns1123_label(v)) {
            problems.push(format!("{name}: volume name {v:?} is not a DNS-1123 label"));
        }
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
                    .with(
                        "volumes",
                        vec![
                            Node::map().with("name", "here"),
                            Node::map().with("name", "a".repeat(64)),
                        ],
                    ),
            );
        assert_eq!(
            check(&[pod]),
            [
                "object name \"Bad_Name\" is not DNS-1123".to_owned(),
                format!(
                    "Bad_Name: volume name \"{}\" is not a DNS-1123 label",
                    "a".repeat(64)
                ),
                "Bad_Name: volumeMount \"gone\" names no volume".to_owned(),
            ]
        );
    }
}
