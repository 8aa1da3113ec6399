//! The closure walk ([`super::closure::walk`]) against a FAKE [`View`], in memory: what it
//! finds, from where, and what it refuses (the real views are covered by the copy and save
//! suites against a running `docker-registry`).
//!
//! Takes: agent and bin images a test builds in the fake. Returns: nothing (tests). Must never:
//! be used outside tests.

use super::closure::{
    walk, Found, Lookup, Node, PinnedBy, Registries, Role, Start, View, WalkError, Want,
};
use otters_agentfile::ir::{Agent, Agentfile, Node as IrNode};
use otters_oci::reference::Reference;
use otters_oci::spec::descriptor::{
    AGENTFILE_LAYER, AGENT_CONFIG, AGENT_YAML_LAYER, INDEX_V1, MANIFEST_V1,
};
use otters_oci::{Descriptor, Digest, MediaType, Platform};
use serde_json::json;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const CONFIG_V1: &str = "application/vnd.oci.image.config.v1+json";

fn descriptor_json(d: &Descriptor) -> serde_json::Value {
    let mut v =
        json!({"mediaType": d.media_type.as_str(), "digest": d.digest.as_str(), "size": d.size});
    if let Some(p) = &d.platform {
        v["platform"] = json!({"architecture": p.architecture, "os": p.os});
    }
    v
}

/// Documents by digest, tags by `registry/repository:tag`, blobs by digest; every manifest
/// lookup logged.
#[derive(Default)]
struct Fake {
    docs: BTreeMap<Digest, Found>,
    tags: BTreeMap<String, Digest>,
    blobs: BTreeMap<Digest, Vec<u8>>,
    /// Repositories (`registry/repository`) whose every read fails.
    broken: Vec<String>,
    asked: RefCell<Vec<String>>,
}

impl View for Fake {
    fn manifest(&self, r: &Reference, _written: &str) -> Result<Lookup, BoxError> {
        self.asked.borrow_mut().push(r.to_string());
        if self.broken.contains(&r.name()) {
            return Err("connection refused".into());
        }
        let digest = match &r.digest {
            Some(d) => Some(d.clone()),
            None => self
                .tags
                .get(&format!("{}:{}", r.name(), r.tag_or_latest()))
                .cloned(),
        };
        Ok(match digest.and_then(|d| self.docs.get(&d)) {
            Some(f) => Lookup::Found(Box::new(Found {
                descriptor: f.descriptor.clone(),
                bytes: f.bytes.clone(),
            })),
            None => Lookup::Missing(None),
        })
    }

    fn blob(&self, _: &Reference, digest: &Digest, max: u64) -> Result<Vec<u8>, BoxError> {
        match self.blobs.get(digest) {
            Some(b) if b.len() as u64 <= max => Ok(b.clone()),
            Some(_) => Err("too large".into()),
            None => Err(format!("no blob {digest}").into()),
        }
    }
}

impl Fake {
    fn blob(&mut self, media_type: &str, bytes: &[u8]) -> Descriptor {
        let d = Descriptor::new(
            MediaType::parse(media_type),
            Digest::of(bytes),
            bytes.len() as u64,
        );
        self.blobs.insert(d.digest.clone(), bytes.to_vec());
        d
    }

    fn doc(&mut self, media_type: &str, value: &serde_json::Value) -> Descriptor {
        let bytes = serde_json::to_vec(value).unwrap();
        let descriptor = Descriptor::new(
            MediaType::parse(media_type),
            Digest::of(&bytes),
            bytes.len() as u64,
        );
        let found = Found {
            descriptor: descriptor.clone(),
            bytes,
        };
        self.docs.insert(descriptor.digest.clone(), found);
        descriptor
    }

    fn manifest(&mut self, config: &Descriptor, layers: &[Descriptor]) -> Descriptor {
        let layers: Vec<_> = layers.iter().map(descriptor_json).collect();
        let doc = json!({"schemaVersion": 2, "mediaType": MANIFEST_V1, "config": descriptor_json(config), "layers": layers});
        self.doc(MANIFEST_V1, &doc)
    }

    /// A bin image (a container image: it pins nothing).
    fn bin(&mut self, content: &str) -> Descriptor {
        let config = self.blob(CONFIG_V1, content.as_bytes());
        self.manifest(&config, &[])
    }

    /// An agent image: FROM `from`, its Agentfile text, and its `agent.yaml`.
    fn agent(&mut self, from: Option<&str>, agentfile: &str, agent_yaml: &str) -> Descriptor {
        let model = Agentfile {
            syntax: otters_agentfile::ir::DEFAULT_SYNTAX.to_owned(),
            agent: Agent {
                from: from.map(|f| IrNode::new(f.to_owned(), None)),
                name: Some(IrNode::new("a".to_owned(), None)),
                ..Agent::default()
            },
        };
        let config = otters_agentfile::ir::config_blob(&model).unwrap();
        let config = self.blob(AGENT_CONFIG, &config);
        let layers = [
            self.blob(AGENTFILE_LAYER, agentfile.as_bytes()),
            self.blob(AGENT_YAML_LAYER, agent_yaml.as_bytes()),
        ];
        self.manifest(&config, &layers)
    }

    fn index(&mut self, entries: &[(&str, &Descriptor)]) -> Descriptor {
        let manifests: Vec<_> = entries
            .iter()
            .map(|(p, m)| {
                let mut d = (*m).clone();
                d.platform = Some(Platform::parse(p).unwrap());
                descriptor_json(&d)
            })
            .collect();
        self.doc(
            INDEX_V1,
            &json!({"schemaVersion": 2, "mediaType": INDEX_V1, "manifests": manifests}),
        )
    }

    fn tag(&mut self, reference: &str, d: &Descriptor) {
        let r = Reference::parse(reference).unwrap();
        self.tags.insert(
            format!("{}:{}", r.name(), r.tag_or_latest()),
            d.digest.clone(),
        );
    }
}

fn yaml(runtime: Option<(&str, &Digest)>, tools: &[(&str, &str, &str)]) -> String {
    let mut y = String::from("name: \"a\"\n");
    if let Some((r, d)) = runtime {
        let _ = write!(y, "runtime:\n  ref: \"{r}\"\n  digest: \"{d}\"\n");
    }
    if !tools.is_empty() {
        y.push_str("tools:\n");
        for (name, r, d) in tools {
            let _ = write!(
                y,
                "  - name: \"{name}\"\n    ref: \"{r}\"\n    digest: \"{d}\"\n"
            );
        }
    }
    y
}

fn root(reference: &str) -> Vec<Start> {
    vec![Start::Want(Want {
        reference: reference.to_owned(),
        pinned: None,
        role: Role::Image,
        by: None,
    })]
}

fn summary(nodes: &[Node]) -> Vec<(Role, String, String)> {
    nodes
        .iter()
        .map(|n| (n.role.clone(), n.written.clone(), n.source.to_string()))
        .collect()
}

/// An agent `reg.example/agent:1` FROM `reg.example/parent:1`, with a RUNTIME and a BIN pinned in
/// `agent.yaml`; the parent pins the same runtime.
fn family() -> (Fake, Digest, Digest, Digest, Digest) {
    let mut f = Fake::default();
    let rt = f.bin("runtime");
    let jq = f.bin("jq");
    f.tag("reg.example/rt:1", &rt);
    f.tag("reg.example/jq:1", &jq);
    let parent = f.agent(
        None,
        "RUNTIME reg.example/rt:1\n",
        &yaml(Some(("reg.example/rt:1", &rt.digest)), &[]),
    );
    f.tag("reg.example/parent:1", &parent);
    let agent = f.agent(
        Some("reg.example/parent:1"),
        "FROM reg.example/parent:1\nBIN jq reg.example/jq:1\n",
        &yaml(
            Some(("reg.example/rt:1", &rt.digest)),
            &[("jq", "reg.example/jq:1", jq.digest.as_str())],
        ),
    );
    f.tag("reg.example/agent:1", &agent);
    (f, agent.digest, parent.digest, rt.digest, jq.digest)
}

#[test]
fn the_closure_is_every_pin_once_with_who_pinned_it() {
    let (f, agent, parent, rt, jq) = family();
    let nodes = walk(&f, root("reg.example/agent:1"), true, &Registries::Any).unwrap();
    assert_eq!(
        summary(&nodes),
        vec![
            (
                Role::Image,
                "reg.example/agent:1".into(),
                format!("reg.example/agent:1@{agent}")
            ),
            (
                Role::From,
                "reg.example/parent:1".into(),
                format!("reg.example/parent:1@{parent}")
            ),
            (
                Role::Runtime,
                "reg.example/rt:1".into(),
                format!("reg.example/rt:1@{rt}")
            ),
            (
                Role::Bin,
                "reg.example/jq:1".into(),
                format!("reg.example/jq:1@{jq}")
            ),
        ]
    );
    // The runtime both agents pin is walked once; the BIN's line is the agent's own.
    let bin_by = nodes[3].by.clone().unwrap();
    assert_eq!(
        bin_by,
        PinnedBy {
            agent: "reg.example/agent:1".into(),
            line: Some(2),
            text: Some("BIN jq reg.example/jq:1".into()),
        }
    );
    // The runtime is inherited by the agent: its Agentfile does not name it.
    assert_eq!(nodes[2].by.as_ref().unwrap().line, None);
    let alone = walk(&f, root("reg.example/agent:1"), false, &Registries::Any).unwrap();
    assert_eq!(alone.len(), 1);
}

#[test]
fn a_moved_tag_is_not_followed_but_an_index_holding_the_pin_is() {
    let (mut f, _, _, rt, jq) = family();
    // The runtime's tag now names an index that holds the pinned manifest: the whole index.
    let arm = f.bin("runtime arm64");
    let rt_manifest = f.docs[&rt].descriptor.clone();
    let index = f.index(&[("linux/amd64", &rt_manifest), ("linux/arm64", &arm)]);
    f.tag("reg.example/rt:1", &index);
    // The BIN's tag moved to other content: the pinned manifest alone, by digest, untagged.
    let other = f.bin("jq 2");
    f.tag("reg.example/jq:1", &other);
    let nodes = walk(&f, root("reg.example/agent:1"), true, &Registries::Any).unwrap();
    let runtime = nodes.iter().find(|n| n.role == Role::Runtime).unwrap();
    assert_eq!(runtime.descriptor.digest, index.digest);
    assert_eq!(runtime.platforms, ["linux/amd64", "linux/arm64"]);
    assert_eq!(runtime.source.tag.as_deref(), Some("1"));
    let bin = nodes.iter().find(|n| n.role == Role::Bin).unwrap();
    assert_eq!(bin.descriptor.digest, jq);
    assert_eq!(bin.source.to_string(), format!("reg.example/jq@{jq}"));
    assert!(f.asked.borrow().contains(&format!("reg.example/jq@{jq}")));
}

#[test]
fn a_pinned_image_gone_from_its_source_is_refused_naming_the_pin() {
    let (mut f, _, _, _, jq) = family();
    f.docs.remove(&jq);
    let e = walk(&f, root("reg.example/agent:1"), true, &Registries::Any).unwrap_err();
    assert!(matches!(e, WalkError::Missing { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!("reg.example/jq:1@{jq} does not exist at its source, pinned by reg.example/agent:1 (its Agentfile, line 2: `BIN jq reg.example/jq:1`)")
    );
    let e = walk(&f, root("reg.example/absent:1"), true, &Registries::Any).unwrap_err();
    assert_eq!(
        e.to_string(),
        "reg.example/absent:1 does not exist at its source"
    );
}

#[test]
fn a_source_that_fails_is_an_error_not_a_missing_image() {
    let (mut f, ..) = family();
    f.broken.push("reg.example/jq".into());
    let e = walk(&f, root("reg.example/agent:1"), true, &Registries::Any).unwrap_err();
    assert!(matches!(e, WalkError::Source { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("cannot read reg.example/jq:1 (pinned by reg.example/agent:1"),
        "{e}"
    );
}

#[test]
fn pins_on_registries_not_named_are_refused_all_at_once_unread() {
    let mut f = Fake::default();
    let tool = f.bin("tool");
    let rt = f.bin("rt");
    let agent = f.agent(
        None,
        "BIN tool private.example/corp/tool:1\n",
        &yaml(
            Some(("other.example/rt:1", &rt.digest)),
            &[("tool", "private.example/corp/tool:1", tool.digest.as_str())],
        ),
    );
    f.tag("reg.example/agent:1", &agent);
    let from = Registries::only(["reg.example"], &[]);
    let e = walk(&f, root("reg.example/agent:1"), true, &from).unwrap_err();
    match &e {
        WalkError::Foreign {
            home,
            pins,
            registries,
        } => {
            assert_eq!(home, &["reg.example"]);
            assert_eq!(pins.len(), 2);
            assert_eq!(registries, &["other.example", "private.example"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(!f
        .asked
        .borrow()
        .iter()
        .any(|a| a.contains("private.example") || a.contains("other.example")));
    // Named, they are read (the fake answers digests whatever the repository).
    let named = ["other.example".to_owned(), "private.example".to_owned()];
    let nodes = walk(
        &f,
        root("reg.example/agent:1"),
        true,
        &Registries::only(["reg.example"], &named),
    )
    .unwrap();
    assert_eq!(
        nodes.iter().map(|n| n.role.clone()).collect::<Vec<_>>(),
        [Role::Image, Role::Runtime, Role::Bin]
    );
}

#[test]
fn a_pin_that_is_not_a_digest_and_a_cycle() {
    let mut f = Fake::default();
    let bad = f.agent(
        None,
        "",
        "tools:\n  - name: \"jq\"\n    ref: \"reg.example/jq:1\"\n    digest: \"sha256:abc\"\n",
    );
    f.tag("reg.example/bad:1", &bad);
    let e = walk(&f, root("reg.example/bad:1"), true, &Registries::Any).unwrap_err();
    assert_eq!(
        e.to_string(),
        "reg.example/bad:1: agent.yaml pins reg.example/jq:1 to \"sha256:abc\", which is not a sha256 digest"
    );
    // An agent whose FROM names itself is walked once.
    let mut f = Fake::default();
    let selfish = f.agent(
        Some("reg.example/loop:1"),
        "FROM reg.example/loop:1\n",
        "name: \"a\"\n",
    );
    f.tag("reg.example/loop:1", &selfish);
    let nodes = walk(&f, root("reg.example/loop:1"), true, &Registries::Any).unwrap();
    assert_eq!(nodes.len(), 1);
}
