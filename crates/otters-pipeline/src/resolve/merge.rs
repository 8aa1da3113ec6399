//! The FROM merge of spec §c: a child model over an already-resolved (flattened) parent.
//!
//! Takes: the parent and child models. Returns: the merged model. Must never: do I/O, or keep a
//! parent item's span (inherited items have none, as read from the config blob).

use otters_agentfile::ir::{Agent, Agentfile};

/// Merges `child` over `parent` (spec §c).
pub fn merge(parent: &Agentfile, child: &Agentfile) -> Agentfile {
    let (p, c) = (&parent.agent, &child.agent);
    let pick = |ch: &Option<otters_agentfile::ir::Node<String>>,
                pa: &Option<otters_agentfile::ir::Node<String>>| {
        ch.clone()
            .filter(|n| !n.value.is_empty())
            .or_else(|| pa.clone())
    };
    let mut contexts = p.contexts.clone();
    for cc in &c.contexts {
        match contexts.iter_mut().find(|x| x.name == cc.name) {
            Some(slot) => *slot = cc.clone(),
            None => contexts.push(cc.clone()),
        }
    }
    let child_has_runtime = c.runtime.as_ref().is_some_and(|r| !r.value.is_empty());
    let configs = if child_has_runtime {
        c.configs.clone()
    } else {
        p.configs.iter().chain(&c.configs).cloned().collect()
    };
    let mut labels = p.labels.clone();
    labels.extend(c.labels.clone());
    let mut args = p.args.clone();
    args.extend(c.args.clone());
    let mut capabilities = p.capabilities.clone();
    for cap in &c.capabilities {
        if !capabilities.iter().any(|x| x.value == cap.value) {
            capabilities.push(cap.clone());
        }
    }
    let mut mounts = p.mounts.clone();
    for m in &c.mounts {
        mounts.retain(|x| x.target != m.target);
        mounts.push(m.clone());
    }
    Agentfile {
        syntax: if child.syntax.is_empty() {
            parent.syntax.clone()
        } else {
            child.syntax.clone()
        },
        agent: Agent {
            from: c.from.clone(),
            runtime: pick(&c.runtime, &p.runtime),
            model: pick(&c.model, &p.model),
            name: pick(&c.name, &p.name),
            contexts,
            configs,
            bins: p.bins.iter().chain(&c.bins).cloned().collect(),
            adds: p.adds.iter().chain(&c.adds).cloned().collect(),
            exec: c
                .exec
                .clone()
                .filter(|e| !e.value.is_empty())
                .or_else(|| p.exec.clone()),
            labels,
            args,
            envs: p.envs.iter().chain(&c.envs).cloned().collect(),
            capabilities,
            mounts,
            // Replaced whole (reference.md, Inheritance): the child's list when it has one.
            egress: if c.egress.is_empty() {
                p.egress.clone()
            } else {
                c.egress.clone()
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::ir::{Bin, Config, Context, Node};

    #[allow(clippy::unnecessary_wraps)] // model fields are `Option<Node<_>>`
    fn node(s: &str) -> Option<Node<String>> {
        Some(Node::new(s.to_owned(), None))
    }
    fn ctx(name: &str, content: &str) -> Context {
        Context {
            name: name.into(),
            description: None,
            content: Some(content.into()),
            file: None,
            span: None,
            name_span: None,
            file_span: None,
        }
    }
    fn bin(name: &str) -> Bin {
        Bin {
            name: name.into(),
            image: format!("x/{name}:1"),
            description: None,
            usage: None,
            span: None,
            name_span: None,
            image_span: None,
        }
    }
    fn config(key: &str) -> Config {
        Config {
            key: key.into(),
            value: None,
            description: None,
            required: false,
            span: None,
            key_span: None,
        }
    }

    #[test]
    fn merges_per_spec() {
        let mut parent = Agentfile {
            syntax: "openotters/agentfile:1".into(),
            ..Agentfile::default()
        };
        let p = &mut parent.agent;
        p.from = node("scratch");
        p.runtime = node("rt:1");
        p.model = node("m1");
        p.name = node("parent");
        p.contexts = vec![ctx("SOUL", "p-soul"), ctx("RULES", "p-rules")];
        p.configs = vec![config("a")];
        p.bins = vec![bin("sh")];
        p.capabilities = vec![Node::new("x".into(), None)];
        p.labels.insert("k".into(), Node::new("p".into(), None));

        let mut child = Agentfile::default();
        let c = &mut child.agent;
        c.from = node("reg/parent:1");
        c.name = node("child");
        c.contexts = vec![ctx("RULES", "c-rules"), ctx("EXTRA", "c-extra")];
        c.configs = vec![config("b")];
        c.bins = vec![bin("jq")];
        c.capabilities = vec![Node::new("y".into(), None), Node::new("x".into(), None)];
        c.labels.insert("k".into(), Node::new("c".into(), None));

        let m = merge(&parent, &child);
        assert_eq!(m.syntax, "openotters/agentfile:1");
        assert_eq!(m.agent.from_ref(), Some("reg/parent:1"));
        assert_eq!(
            m.agent.runtime.as_ref().map(|n| n.value.as_str()),
            Some("rt:1")
        );
        assert_eq!(m.agent.name_str(), Some("child"));
        let names: Vec<_> = m
            .agent
            .contexts
            .iter()
            .map(|c| (c.name.as_str(), c.content.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            names,
            vec![
                ("SOUL", "p-soul"),
                ("RULES", "c-rules"),
                ("EXTRA", "c-extra")
            ]
        );
        let keys: Vec<_> = m.agent.configs.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, vec!["a", "b"]);
        let bins: Vec<_> = m.agent.bins.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(bins, vec!["sh", "jq"]);
        let caps: Vec<_> = m
            .agent
            .capabilities
            .iter()
            .map(|c| c.value.as_str())
            .collect();
        assert_eq!(caps, vec!["x", "y"]);
        assert_eq!(m.agent.labels.get("k").map(|n| n.value.as_str()), Some("c"));

        // A child RUNTIME discards the parent's CONFIGs.
        child.agent.runtime = node("rt:2");
        let m = merge(&parent, &child);
        let keys: Vec<_> = m.agent.configs.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, vec!["b"]);
    }

    #[test]
    fn a_child_egress_replaces_the_parents_whole() {
        use otters_agentfile::ir::egress::Policy;
        use otters_agentfile::ir::Egress;
        let e = |t: &str| Egress {
            target: t.into(),
            description: None,
            span: None,
        };
        let mut parent = Agentfile::default();
        parent.agent.egress = vec![e("a.example.com"), e("b.example.com:80")];
        let targets = |m: &Agentfile| -> Vec<String> {
            m.agent.egress.iter().map(|x| x.target.clone()).collect()
        };
        // No EGRESS in the child: the parent's list.
        let inherited = merge(&parent, &Agentfile::default());
        assert_eq!(targets(&inherited), ["a.example.com", "b.example.com:80"]);
        // Any EGRESS in the child: only the child's (narrowing works).
        let mut child = Agentfile::default();
        child.agent.egress = vec![e("b.example.com:80")];
        assert_eq!(targets(&merge(&parent, &child)), ["b.example.com:80"]);
        child.agent.egress = vec![e("none")];
        assert_eq!(
            merge(&parent, &child).agent.egress_policy(),
            Policy::Nothing
        );
        // A parent without EGRESS and a child with: the child's.
        assert_eq!(
            targets(&merge(&Agentfile::default(), &parent)),
            targets(&parent)
        );
    }
}
