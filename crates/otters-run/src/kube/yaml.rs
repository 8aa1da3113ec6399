//! A small deterministic YAML writer for Kubernetes objects: block style, keys in the order they
//! were added, every string double-quoted and every key quoted unless plainly safe under YAML 1.1
//! (kubectl's reader) and 1.2, both by the project's one quoter ([`otters_core::yaml`]), integers
//! and booleans plain, `{}` and `[]` for empty collections. Same value, same bytes.

use otters_core::yaml::{key, quote as quoted};
use std::fmt::Write as _;

/// A YAML value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
    Str(String),
    Int(i64),
    Bool(bool),
}

impl Node {
    pub fn map() -> Node {
        Node::Map(Vec::new())
    }

    /// Adds `key: value` (a map only; on anything else it does nothing).
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Node>) -> Node {
        self.push(key, value);
        self
    }

    pub fn push(&mut self, key: &str, value: impl Into<Node>) {
        if let Node::Map(entries) = self {
            entries.push((key.to_owned(), value.into()));
        }
    }

    /// The value of `key` in a map.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl From<&str> for Node {
    fn from(s: &str) -> Node {
        Node::Str(s.to_owned())
    }
}

impl From<String> for Node {
    fn from(s: String) -> Node {
        Node::Str(s)
    }
}

impl From<&String> for Node {
    fn from(s: &String) -> Node {
        Node::Str(s.clone())
    }
}

impl From<i64> for Node {
    fn from(i: i64) -> Node {
        Node::Int(i)
    }
}

impl From<bool> for Node {
    fn from(b: bool) -> Node {
        Node::Bool(b)
    }
}

impl From<Vec<Node>> for Node {
    fn from(v: Vec<Node>) -> Node {
        Node::Seq(v)
    }
}

/// Documents separated by `---`.
pub fn documents(docs: &[Node]) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        block(&mut out, d, 0);
    }
    out
}

fn scalar(n: &Node) -> Option<String> {
    match n {
        Node::Str(s) => Some(quoted(s)),
        Node::Int(i) => Some(i.to_string()),
        Node::Bool(b) => Some(b.to_string()),
        Node::Map(m) if m.is_empty() => Some("{}".into()),
        Node::Seq(s) if s.is_empty() => Some("[]".into()),
        _ => None,
    }
}

fn block(out: &mut String, n: &Node, indent: usize) {
    let pad = " ".repeat(indent);
    match n {
        Node::Map(entries) if !entries.is_empty() => {
            for (k, v) in entries {
                if let Some(s) = scalar(v) {
                    let _ = writeln!(out, "{pad}{}: {s}", key(k));
                } else {
                    let _ = writeln!(out, "{pad}{}:", key(k));
                    let inner = if matches!(v, Node::Seq(_)) {
                        indent
                    } else {
                        indent + 2
                    };
                    block(out, v, inner);
                }
            }
        }
        Node::Seq(items) if !items.is_empty() => {
            for item in items {
                if let Some(s) = scalar(item) {
                    let _ = writeln!(out, "{pad}- {s}");
                } else {
                    // The first line of the item goes after `- `, the rest aligned with it.
                    let mut inner = String::new();
                    block(&mut inner, item, indent + 2);
                    let first = inner.get(indent + 2..).unwrap_or_default();
                    let _ = write!(out, "{pad}- {first}");
                }
            }
        }
        other => {
            let _ = writeln!(out, "{pad}{}", scalar(other).unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_maps_and_sequences() {
        let doc = Node::map()
            .with("apiVersion", "v1")
            .with(
                "metadata",
                Node::map().with("name", "a").with("labels", Node::map()),
            )
            .with(
                "items",
                vec![
                    Node::map().with("name", "x").with("port", 9999i64),
                    Node::from("plain"),
                    Node::map().with("list", vec![Node::from("ALL")]),
                ],
            )
            .with("ok", true)
            .with("yes", "quoted \"key\"\n");
        let text = documents(&[doc]);
        assert_eq!(
            text,
            "---\napiVersion: \"v1\"\nmetadata:\n  name: \"a\"\n  labels: {}\nitems:\n- name: \"x\"\n  port: 9999\n- \"plain\"\n- list:\n  - \"ALL\"\nok: true\n\"yes\": \"quoted \\\"key\\\"\\n\"\n"
        );
        let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(parsed["items"][0]["port"], 9999);
        assert_eq!(parsed["items"][2]["list"][0], "ALL");
        assert_eq!(parsed["yes"], "quoted \"key\"\n");
    }

    #[test]
    fn control_characters_are_escaped() {
        let text = documents(&[Node::map().with("k", "a\u{1b}b\u{85}")]);
        assert_eq!(text, "---\nk: \"a\\u001bb\\u0085\"\n");
        let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(parsed["k"], "a\u{1b}b\u{85}");
    }
}
