//! The resolved `agent.yaml` (spec §g.2): written as the image's last layer at build time (without
//! `id` and `image`) and again, complete, when `otters run` materialises an agent.
//!
//! Takes: the model, the pins and the executor flavour. Returns: YAML text. Must never: do I/O,
//! write ENV values or mount host paths (they are secrets or host details), or depend on map
//! iteration order. Every string is double-quoted with escapes and every key quoted unless plainly
//! safe ([`otters_core::yaml`], the quoter the `kube` objects use too), so no value can change the
//! YAML's shape and the bytes are stable.

use super::pins::{Pin, Pins};
use otters_agentfile::ir::Agentfile;
use otters_core::yaml::{key as key_text, quote};
use otters_oci::Digest;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Which executor the file describes; it decides where binaries live (`otters run --executor`;
/// the flag's help describes the values, not these comments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Executor {
    /// The runtime runs on the host: `usr/bin/<tool>`, `/usr/local/bin/runtime`.
    #[default]
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    System,
    /// The runtime runs in a container: `/opt/bins/<tool>`, `/opt/runtime/runtime`.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Docker,
}

/// `egress:` only when declared (an agent without EGRESS keeps its bytes): `[]` for `EGRESS none`,
/// else host, port and description per destination.
fn egress(y: &mut Yaml, a: &otters_agentfile::ir::Agent) {
    use otters_agentfile::ir::egress::Policy;
    match a.egress_policy() {
        Policy::Undeclared => {}
        Policy::Nothing => y.raw(0, "egress", "[]"),
        Policy::Allow(list) => {
            y.key(0, "egress");
            for e in &list {
                y.item(1, "host", &e.dest.host.to_string());
                y.raw(2, "port", &e.dest.port.to_string());
                y.opt(2, "description", e.description.as_deref());
            }
        }
    }
}

/// The image an agent was created from (run time only).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageRef {
    pub reference: String,
    pub digest: Option<Digest>,
}

/// What varies between the build-time and run-time forms.
#[derive(Clone, Debug, Default)]
pub struct Options<'a> {
    pub id: Option<&'a str>,
    pub image: Option<&'a ImageRef>,
    pub executor: Executor,
    /// Capability descriptions from a catalogue; capabilities not listed get no description.
    pub capability_descriptions: Option<&'a BTreeMap<String, String>>,
}

/// Renders `agent.yaml`, keys in spec §g.2 order, empty sections omitted.
pub fn render(model: &Agentfile, pins: &Pins, opts: &Options<'_>) -> String {
    let a = &model.agent;
    let mut y = Yaml::default();
    if let Some(id) = opts.id {
        y.scalar(0, "id", id);
    }
    y.scalar(0, "name", a.name_str().unwrap_or_default());
    y.scalar(
        0,
        "model",
        a.model.as_ref().map_or("", |m| m.value.as_str()),
    );
    y.scalar(0, "workspace", "/workspace");
    if let Some(image) = opts.image {
        y.key(0, "image");
        y.scalar(1, "ref", &image.reference);
        if let Some(d) = &image.digest {
            y.scalar(1, "digest", d.as_str());
        }
    }
    if let Some(rt) = &a.runtime {
        y.key(0, "runtime");
        y.scalar(1, "ref", &rt.value);
        if let Some(d) = pins.runtime_digest(&rt.value) {
            y.scalar(1, "digest", d.as_str());
        }
        let binary = match opts.executor {
            Executor::System => "/usr/local/bin/runtime",
            Executor::Docker => "/opt/runtime/runtime",
        };
        y.scalar(1, "binary", binary);
    }
    let configs: BTreeMap<&str, String> = a
        .configs
        .iter()
        .filter_map(|c| c.value.as_ref().map(|v| (c.key.as_str(), v.display())))
        .collect();
    if !configs.is_empty() {
        y.key(0, "configs");
        for (k, v) in &configs {
            y.scalar(1, k, v);
        }
    }
    if !a.capabilities.is_empty() {
        y.key(0, "capabilities");
        let mut seen = std::collections::BTreeSet::new();
        for c in a
            .capabilities
            .iter()
            .filter(|c| seen.insert(c.value.as_str()))
        {
            y.item(1, "name", &c.value);
            if let Some(d) = opts.capability_descriptions.and_then(|m| m.get(&c.value)) {
                y.scalar(2, "description", d);
            }
        }
    }
    if !a.envs.is_empty() {
        y.key(0, "envs");
        for e in &a.envs {
            y.item(1, "key", &e.key);
            y.opt(2, "description", e.description.as_deref());
        }
    }
    if !a.mounts.is_empty() {
        y.key(0, "mounts");
        for m in &a.mounts {
            y.item(1, "target", &m.target);
            y.opt(2, "description", m.description.as_deref());
            if m.read_only {
                y.raw(2, "read_only", "true");
            }
        }
    }
    egress(&mut y, a);
    y.key(0, "context");
    let mut generated = vec!["AGENT", "WORKSPACE"];
    if !a.mounts.is_empty() {
        generated.push("MOUNTS");
    }
    for name in generated {
        y.item(1, "name", name);
        y.scalar(2, "file", &format!("/etc/context/{name}.md"));
    }
    for c in &a.contexts {
        y.item(1, "name", &c.name);
        y.scalar(2, "file", &format!("/etc/context/{}.md", c.name));
        y.opt(2, "description", c.description.as_deref());
    }
    if !a.bins.is_empty() {
        y.key(0, "tools");
        for b in &a.bins {
            y.item(1, "name", &b.name);
            y.opt(2, "description", b.description.as_deref());
            let binary = match opts.executor {
                Executor::System => format!("usr/bin/{}", b.name),
                Executor::Docker => format!("/opt/bins/{}", b.name),
            };
            y.scalar(2, "binary", &binary);
            y.scalar(2, "ref", &b.image);
            y.opt(
                2,
                "digest",
                pins.bin_digest(&b.name, &b.image).map(Digest::as_str),
            );
            if b.usage.is_some() {
                y.scalar(2, "usage", &format!("/etc/data/bins/{}/USAGE.md", b.name));
            }
        }
    }
    if let Some(exec) = a.exec.as_ref().filter(|e| !e.value.is_empty()) {
        y.key(0, "exec");
        for arg in &exec.value {
            y.list_scalar(1, arg);
        }
    }
    y.out
}

/// A tiny block-style YAML writer; `depth` counts two-space levels.
#[derive(Default)]
struct Yaml {
    out: String,
}

impl Yaml {
    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn key(&mut self, depth: usize, key: &str) {
        self.indent(depth);
        let _ = writeln!(self.out, "{}:", key_text(key));
    }

    fn raw(&mut self, depth: usize, key: &str, value: &str) {
        self.indent(depth);
        let _ = writeln!(self.out, "{}: {value}", key_text(key));
    }

    fn scalar(&mut self, depth: usize, key: &str, value: &str) {
        self.raw(depth, key, &quote(value));
    }

    fn opt(&mut self, depth: usize, key: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.scalar(depth, key, v);
        }
    }

    /// The first key of a list item: `- key: "value"` at `depth`, later keys at `depth + 1`.
    fn item(&mut self, depth: usize, key: &str, value: &str) {
        self.indent(depth);
        let _ = writeln!(self.out, "- {}: {}", key_text(key), quote(value));
    }

    fn list_scalar(&mut self, depth: usize, value: &str) {
        self.indent(depth);
        let _ = writeln!(self.out, "- {}", quote(value));
    }
}

// The reader: the one model of the document, which run, copy, prune and the run tree's claim read
// back (every key optional but a tool's name; unknown keys ignored; digests are checked text).

/// `image:` and `runtime:` (`binary` is the runtime's only).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RefEntry {
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub digest: Option<String>,
    pub binary: Option<String>,
}

/// One of `capabilities:`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct CapabilityEntry {
    pub name: String,
    pub description: Option<String>,
}

/// One of `envs:` (never a value).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct EnvEntry {
    pub key: String,
    pub description: Option<String>,
}

/// One of `mounts:` (never a host path).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct MountEntry {
    pub target: String,
    pub description: Option<String>,
    pub read_only: bool,
}

/// One of `context:`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ContextEntry {
    pub name: String,
    pub file: String,
    pub description: Option<String>,
}

/// One of `tools:`; its name is required.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ToolEntry {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub binary: Option<String>,
    #[serde(rename = "ref", default)]
    pub reference: Option<String>,
    #[serde(default)]
    pub digest: Option<String>,
    #[serde(default)]
    pub usage: Option<String>,
}

/// An `agent.yaml` as [`render`] writes it (spec §g.2), read back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Document {
    pub id: Option<String>,
    pub name: Option<String>,
    pub model: Option<String>,
    pub workspace: Option<String>,
    pub image: Option<RefEntry>,
    pub runtime: Option<RefEntry>,
    pub configs: BTreeMap<String, String>,
    pub capabilities: Vec<CapabilityEntry>,
    pub envs: Vec<EnvEntry>,
    pub mounts: Vec<MountEntry>,
    pub context: Vec<ContextEntry>,
    pub tools: Vec<ToolEntry>,
    pub exec: Vec<String>,
}

/// Reads an `agent.yaml` (an image's layer or a run tree's file).
pub fn parse(yaml: &[u8]) -> Result<Document, serde_yaml_ng::Error> {
    serde_yaml_ng::from_slice(yaml)
}

/// Why an `agent.yaml` gives no pins.
#[derive(Debug)]
pub enum PinsError {
    Yaml(serde_yaml_ng::Error),
    /// A pin (runtime first, then tools by name) that is not a sha256 digest.
    NotADigest {
        reference: String,
        digest: String,
    },
}

impl Document {
    /// The runtime and tool digests it pins; each must be a sha256 digest.
    pub fn pins(self) -> Result<Pins, PinsError> {
        let pin = |reference: String, digest: String| match Digest::parse(&digest) {
            Ok(digest) => Ok(Pin { reference, digest }),
            Err(_) => Err(PinsError::NotADigest { reference, digest }),
        };
        let mut pins = Pins::default();
        if let Some(RefEntry {
            reference: Some(reference),
            digest: Some(digest),
            ..
        }) = self.runtime
        {
            pins.runtime = Some(pin(reference, digest)?);
        }
        // A later tool of the same name replaces an earlier one before anything is checked.
        let mut tools = BTreeMap::new();
        for t in self.tools {
            if let (Some(reference), Some(digest)) = (t.reference, t.digest) {
                tools.insert(t.name, (reference, digest));
            }
        }
        for (name, (reference, digest)) in tools {
            pins.bins.insert(name, pin(reference, digest)?);
        }
        Ok(pins)
    }
}

/// The runtime and tool digests pinned in an image's `agent.yaml`: [`parse`], then
/// [`Document::pins`].
pub fn parse_pins(yaml: &[u8]) -> Result<Pins, PinsError> {
    parse(yaml).map_err(PinsError::Yaml)?.pins()
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::ir::{Agent, Bin, Config, ConfigValue, Context, Env, Mount, Node};

    fn n(s: &str) -> Node<String> {
        Node::new(s.to_owned(), None)
    }

    fn sample() -> Agentfile {
        Agentfile {
            syntax: otters_agentfile::ir::DEFAULT_SYNTAX.to_owned(),
            agent: Agent {
                from: Some(n("scratch")),
                runtime: Some(n("ghcr.io/openotters/runtime:v1")),
                model: Some(n("anthropic/claude")),
                name: Some(n("meteo")),
                contexts: vec![Context {
                    name: "SOUL".into(),
                    description: Some("core \"rules\"".into()),
                    content: Some("x".into()),
                    file: None,
                    span: None,
                    name_span: None,
                    file_span: None,
                }],
                configs: vec![
                    Config {
                        key: "max-tokens".into(),
                        value: Some(ConfigValue::Int(1)),
                        description: None,
                        required: false,
                        span: None,
                        key_span: None,
                    },
                    Config {
                        key: "max-tokens".into(),
                        value: Some(ConfigValue::Float(0.5)),
                        description: None,
                        required: false,
                        span: None,
                        key_span: None,
                    },
                    Config {
                        key: "url".into(),
                        value: None,
                        description: None,
                        required: true,
                        span: None,
                        key_span: None,
                    },
                ],
                bins: vec![Bin {
                    name: "jq".into(),
                    image: "ghcr.io/openotters/tools/jq:latest".into(),
                    description: Some("json".into()),
                    usage: Some("use it".into()),
                    span: None,
                    name_span: None,
                    image_span: None,
                }],
                envs: vec![Env {
                    key: "TOKEN".into(),
                    value: "secret".into(),
                    description: None,
                    span: None,
                    key_span: None,
                }],
                mounts: vec![Mount {
                    target: "/data".into(),
                    read_only: true,
                    description: None,
                    span: None,
                }],
                exec: Some(Node::new(vec!["--x".into()], None)),
                capabilities: vec![n("note_save"), n("note_save")],
                ..Agent::default()
            },
        }
    }

    #[test]
    fn build_form_has_pins_and_no_secrets() {
        let mut pins = Pins::default();
        pins.bins.insert(
            "jq".into(),
            super::super::pins::Pin {
                reference: "ghcr.io/openotters/tools/jq:latest".into(),
                digest: otters_oci::Digest::of(b""),
            },
        );
        let y = render(&sample(), &pins, &Options::default());
        assert!(!y.contains("secret"));
        let expected = r#"name: "meteo"
model: "anthropic/claude"
workspace: "/workspace"
runtime:
  ref: "ghcr.io/openotters/runtime:v1"
  binary: "/usr/local/bin/runtime"
configs:
  max-tokens: "0.5"
capabilities:
  - name: "note_save"
envs:
  - key: "TOKEN"
mounts:
  - target: "/data"
    read_only: true
context:
  - name: "AGENT"
    file: "/etc/context/AGENT.md"
  - name: "WORKSPACE"
    file: "/etc/context/WORKSPACE.md"
  - name: "MOUNTS"
    file: "/etc/context/MOUNTS.md"
  - name: "SOUL"
    file: "/etc/context/SOUL.md"
    description: "core \"rules\""
tools:
  - name: "jq"
    description: "json"
    binary: "usr/bin/jq"
    ref: "ghcr.io/openotters/tools/jq:latest"
    digest: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    usage: "/etc/data/bins/jq/USAGE.md"
exec:
  - "--x"
"#;
        assert_eq!(y, expected);
        let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&y).unwrap();
        assert_eq!(
            parsed["tools"][0]["digest"].as_str(),
            Some(otters_oci::Digest::of(b"").as_str())
        );
    }

    #[test]
    fn the_writer_reads_back_as_the_same_values() {
        let mut model = sample();
        let a = &mut model.agent;
        a.name = Some(n("we: \"ird\"\n\u{2028}#x"));
        a.envs[0].description = Some("the token".into());
        a.mounts[0].description = Some("- data".into());
        a.bins.push(Bin {
            name: "yq".into(),
            image: "reg.example:5000/yq@sha256:00".into(),
            description: None,
            usage: None,
            span: None,
            name_span: None,
            image_span: None,
        });
        let d = |b: &[u8]| otters_oci::Digest::of(b);
        let pin = |reference: &str, digest| Pin {
            reference: reference.into(),
            digest,
        };
        let pins = Pins {
            runtime: Some(pin("ghcr.io/openotters/runtime:v1", d(b"rt"))),
            bins: [(
                "jq".to_owned(),
                pin("ghcr.io/openotters/tools/jq:latest", d(b"jq")),
            )]
            .into(),
        };
        let image = ImageRef {
            reference: "localhost:5000/meteo:1".into(),
            digest: Some(d(b"image")),
        };
        let descriptions = [("note_save".to_owned(), "saves: \"notes\"".to_owned())].into();
        let y = render(
            &model,
            &pins,
            &Options {
                id: Some("0b6e6c4e-3c5e-4f36-9d51-6f0f6e0a8e55"),
                image: Some(&image),
                executor: Executor::Docker,
                capability_descriptions: Some(&descriptions),
            },
        );
        let s = |v: &str| Some(v.to_owned());
        let context = |name: &str, description: Option<String>| ContextEntry {
            name: name.into(),
            file: format!("/etc/context/{name}.md"),
            description,
        };
        let want = Document {
            id: s("0b6e6c4e-3c5e-4f36-9d51-6f0f6e0a8e55"),
            name: s("we: \"ird\"\n\u{2028}#x"),
            model: s("anthropic/claude"),
            workspace: s("/workspace"),
            image: Some(RefEntry {
                reference: s("localhost:5000/meteo:1"),
                digest: Some(d(b"image").to_string()),
                binary: None,
            }),
            runtime: Some(RefEntry {
                reference: s("ghcr.io/openotters/runtime:v1"),
                digest: Some(d(b"rt").to_string()),
                binary: s("/opt/runtime/runtime"),
            }),
            configs: [("max-tokens".to_owned(), "0.5".to_owned())].into(),
            capabilities: vec![CapabilityEntry {
                name: "note_save".into(),
                description: s("saves: \"notes\""),
            }],
            envs: vec![EnvEntry {
                key: "TOKEN".into(),
                description: s("the token"),
            }],
            mounts: vec![MountEntry {
                target: "/data".into(),
                description: s("- data"),
                read_only: true,
            }],
            context: vec![
                context("AGENT", None),
                context("WORKSPACE", None),
                context("MOUNTS", None),
                context("SOUL", s("core \"rules\"")),
            ],
            tools: vec![
                ToolEntry {
                    name: "jq".into(),
                    description: s("json"),
                    binary: s("/opt/bins/jq"),
                    reference: s("ghcr.io/openotters/tools/jq:latest"),
                    digest: Some(d(b"jq").to_string()),
                    usage: s("/etc/data/bins/jq/USAGE.md"),
                },
                ToolEntry {
                    name: "yq".into(),
                    description: None,
                    binary: s("/opt/bins/yq"),
                    reference: s("reg.example:5000/yq@sha256:00"),
                    digest: None,
                    usage: None,
                },
            ],
            exec: vec!["--x".into()],
        };
        let got = parse(y.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{y}"));
        assert_eq!(got, want, "{y}");
        assert_eq!(got.pins().unwrap(), pins);
    }

    #[test]
    fn pins_are_refused_unless_digests_and_tools_are_named() {
        let doc = "tools:\n  - name: \"jq\"\n    ref: \"jq:1\"\n    digest: \"sha256:abc\"\n";
        match parse_pins(doc.as_bytes()) {
            Err(PinsError::NotADigest { reference, digest }) => {
                assert_eq!(
                    (reference.as_str(), digest.as_str()),
                    ("jq:1", "sha256:abc")
                );
            }
            other => panic!("{other:?}"),
        }
        let unnamed = "tools:\n  - ref: \"jq:1\"\n";
        assert!(matches!(
            parse_pins(unnamed.as_bytes()),
            Err(PinsError::Yaml(_))
        ));
        // Unpinned references and an empty document pin nothing.
        assert_eq!(
            parse_pins(b"runtime:\n  ref: \"rt\"\n").unwrap(),
            Pins::default()
        );
        assert_eq!(parse(b"{}").unwrap(), Document::default());
    }

    #[test]
    fn egress_is_written_only_when_declared() {
        use otters_agentfile::ir::Egress;
        let e = |t: &str, d: Option<&str>| Egress {
            target: t.into(),
            description: d.map(str::to_owned),
            span: None,
        };
        let mut m = sample();
        let plain = render(&m, &Pins::default(), &Options::default());
        assert!(!plain.contains("egress"));
        m.agent.egress = vec![
            e("API.example.com", Some("the API")),
            e("[2001:db8::1]:853", None),
            e("*.example.org:80", None),
        ];
        let y = render(&m, &Pins::default(), &Options::default());
        assert!(y.contains("egress:\n  - host: \"api.example.com\"\n    port: 443\n    description: \"the API\"\n  - host: \"2001:db8::1\"\n    port: 853\n  - host: \"*.example.org\"\n    port: 80\ncontext:\n"), "{y}");
        let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&y).unwrap();
        assert_eq!(parsed["egress"][2]["port"].as_u64(), Some(80));
        m.agent.egress = vec![e("none", None)];
        let none = render(&m, &Pins::default(), &Options::default());
        assert!(none.contains("\negress: []\ncontext:\n"), "{none}");
    }

    #[test]
    fn quoting_survives_a_yaml_parser() {
        for s in [
            "a: b",
            "- x",
            "\"\\",
            "line\nbreak",
            "\u{1}\u{85}\u{2028}",
            "#c",
            "true",
            "é ✓",
        ] {
            let doc = format!("k: {}\n", quote(s));
            let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&doc).unwrap();
            assert_eq!(v["k"].as_str(), Some(s), "{doc}");
        }
    }
}
