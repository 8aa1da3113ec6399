//! What an agent pins, and the closure walk over it: from one image, every image its RUNTIME, BINs
//! and FROM parent name (recursively), each as the whole index it was pinned from when that index
//! still holds the pinned manifest.
//!
//! Takes: a [`View`] (the documents of a registry, of the local store, of a loaded archive) and the
//! root references. Returns: the [`Node`]s of the closure, each once, in the order found. Must
//! never: follow a tag when its index no longer holds the pinned manifest (the pin is taken by
//! digest then), fetch a layer other than an agent's small config and `agent.yaml`, or loop (a
//! digest seen is not walked again; at most [`MAX_IMAGES`] images).

use crate::lower::agent_yaml::{parse_pins, PinsError};
use otters_oci::reference::Reference;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, MediaType};

/// Most images one closure holds.
pub const MAX_IMAGES: usize = 512;
/// Largest config, `agent.yaml` or Agentfile layer read while walking.
const MAX_SMALL_BLOB: u64 = 4 << 20;

/// Why an image is in the closure.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// An image named on the command line.
    Image,
    /// A FROM parent.
    From,
    /// A RUNTIME image an agent pins.
    Runtime,
    /// A BIN image an agent pins.
    Bin,
}

/// Where a pin was written: the agent image and, when its Agentfile layer has it, the line.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PinnedBy {
    /// The agent image that pins it.
    pub agent: String,
    /// 1-based line of the image's own Agentfile (none for an inherited pin).
    pub line: Option<usize>,
    /// That line's text.
    pub text: Option<String>,
}

impl std::fmt::Display for PinnedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.line, &self.text) {
            (Some(n), Some(t)) => write!(
                f,
                "pinned by {} (its Agentfile, line {n}: `{}`)",
                self.agent,
                otters_core::escape::escape(t)
            ),
            _ => write!(
                f,
                "pinned by {} (inherited: its Agentfile does not name it)",
                self.agent
            ),
        }
    }
}

/// An image to find.
#[derive(Clone, Debug)]
pub struct Want {
    /// The reference as written (in the Agentfile, `agent.yaml`, or on the command line).
    pub reference: String,
    /// The manifest pinned (a platform's manifest), when the reference was pinned.
    pub pinned: Option<Digest>,
    pub role: Role,
    pub by: Option<PinnedBy>,
}

/// An image of the closure, as found at the source.
#[derive(Clone, Debug)]
pub struct Node {
    pub role: Role,
    /// The reference as written.
    pub written: String,
    /// Where it is read from: the repository, its tag when the tag still names this content, and
    /// the digest.
    pub source: Reference,
    /// The manifest or index copied (the whole index when the pin is one of its entries).
    pub descriptor: Descriptor,
    /// The platforms of an index (`os/arch`), empty for one manifest.
    pub platforms: Vec<String>,
    pub by: Option<PinnedBy>,
}

/// A manifest or index found, with its bytes.
pub struct Found {
    pub descriptor: Descriptor,
    pub bytes: Vec<u8>,
}

/// Why a walk stopped.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("{reference}: {source}")]
    Reference {
        reference: String,
        source: otters_oci::reference::ReferenceError,
    },
    /// A pinned (or named) image is not at its source.
    #[error("{} does not exist at its source{}", escape(reference), by.as_ref().map(|b| format!(", {b}")).unwrap_or_default())]
    Missing {
        reference: String,
        by: Option<PinnedBy>,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Reading the source failed.
    #[error("cannot read {}{}", escape(reference), by.as_ref().map(|b| format!(" ({b})")).unwrap_or_default())]
    Source {
        reference: String,
        by: Option<PinnedBy>,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{}: {message}", escape(reference))]
    BadAgent { reference: String, message: String },
    #[error("the closure has more than {MAX_IMAGES} images; copy fewer at once")]
    TooMany,
    /// Pins on registries the walk may not read (see [`Registries`]).
    #[error("{}", foreign_text(home, pins))]
    Foreign {
        /// The registries the walk may read, as the user chose them.
        home: Vec<String>,
        pins: Vec<Want>,
        /// The registries of `pins`, each once, in the order met.
        registries: Vec<String>,
    },
}

/// The refusal of pins on other registries: each pin and who pinned it (the CLI adds the flag
/// that allows a registry).
fn foreign_text(home: &[String], pins: &[Want]) -> String {
    use std::fmt::Write as _;
    let home = match home {
        [] => "the source's".to_owned(),
        h => h.iter().map(|h| escape(h)).collect::<Vec<_>>().join(", "),
    };
    let mut text = format!(
        "the closure pins {} image(s) on registries other than {home}; a pin elsewhere is read \
         only on a registry you name (it would be fetched with your credentials there and \
         republished):",
        pins.len()
    );
    for p in pins {
        let digest = match &p.pinned {
            Some(d) if !p.reference.contains('@') => format!("@{d}"),
            _ => String::new(),
        };
        let by = p.by.as_ref().map(|b| format!(", {b}")).unwrap_or_default();
        let _ = write!(text, "\n{}{digest}{by}", escape(&p.reference));
    }
    text.push_str("\nname only a registry whose images you mean to republish");
    text
}

/// The registry a reference names, as the walk compares it.
fn registry_of(reference: &str) -> Option<String> {
    Reference::parse(reference)
        .ok()
        .map(|r| r.registry.to_ascii_lowercase())
}

/// The registries a walk may read pins from: the source's (a copy's `SRC`, the images `save`
/// names) and each one the user named (`--from-registry`). An image the user named is always
/// read. `Any` for a source that reads no registry (an OCI layout or archive).
#[derive(Clone, Debug)]
pub enum Registries {
    Any,
    Only(Vec<String>),
}

impl Registries {
    /// `home` and `named`, compared without regard to case.
    pub fn only<'a>(home: impl IntoIterator<Item = &'a str>, named: &'a [String]) -> Registries {
        let mut v: Vec<String> = Vec::new();
        for h in home.into_iter().chain(named.iter().map(String::as_str)) {
            let h = h.to_ascii_lowercase();
            if !v.contains(&h) {
                v.push(h);
            }
        }
        Registries::Only(v)
    }

    fn allows(&self, reference: &str) -> bool {
        match self {
            Registries::Any => true,
            // An unreadable reference is left to the walk, which names what is wrong with it.
            Registries::Only(v) => registry_of(reference).is_none_or(|r| v.contains(&r)),
        }
    }
}

fn escape(s: &str) -> String {
    otters_core::escape::escape(s).into_owned()
}

/// What a view answers for a reference it does not have.
pub enum Lookup {
    Found(Box<Found>),
    Missing(Option<Box<dyn std::error::Error + Send + Sync>>),
}

/// Read access to images where they are now.
pub trait View {
    /// The manifest or index `reference` names (by digest when it has one, else by tag).
    fn manifest(
        &self,
        reference: &Reference,
        written: &str,
    ) -> Result<Lookup, Box<dyn std::error::Error + Send + Sync>>;
    /// A small blob of the image (a config, `agent.yaml`, the Agentfile), verified.
    fn blob(
        &self,
        reference: &Reference,
        digest: &Digest,
        max: u64,
    ) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>;
}

/// Where a walk starts: a reference to find, or an image already found.
pub enum Start {
    Want(Want),
    Known(Box<Node>),
}

/// Walks the closure of `roots`: with `recursive`, every image an agent among them pins, and
/// theirs; without, the roots alone. Roots come first in the result, in their order. A pin on a
/// registry `from` does not allow is never read: the walk goes on without it and then refuses
/// with every such pin ([`WalkError::Foreign`]).
pub fn walk(
    view: &dyn View,
    roots: Vec<Start>,
    recursive: bool,
    from: &Registries,
) -> Result<Vec<Node>, WalkError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut foreign: Vec<Want> = Vec::new();
    let mut todo: std::collections::VecDeque<Start> = roots.into();
    while let Some(start) = todo.pop_front() {
        let node = match start {
            Start::Known(n) => *n,
            Start::Want(want) => match find(view, &want)? {
                Some(n) => n,
                None => continue,
            },
        };
        if nodes.iter().any(|n| {
            n.descriptor.digest == node.descriptor.digest && n.source.name() == node.source.name()
        }) {
            continue;
        }
        if nodes.len() >= MAX_IMAGES {
            return Err(WalkError::TooMany);
        }
        if recursive {
            for pin in pins_of(view, &node)? {
                if pin.reference == "scratch" || from.allows(&pin.reference) {
                    todo.push_back(Start::Want(pin));
                } else if !foreign
                    .iter()
                    .any(|f| f.reference == pin.reference && f.pinned == pin.pinned)
                {
                    foreign.push(pin);
                }
            }
        }
        nodes.push(node);
    }
    if !foreign.is_empty() {
        let home = match from {
            Registries::Any => Vec::new(),
            Registries::Only(v) => v.clone(),
        };
        let mut registries: Vec<String> = Vec::new();
        for r in foreign.iter().filter_map(|p| registry_of(&p.reference)) {
            if !registries.contains(&r) {
                registries.push(r);
            }
        }
        return Err(WalkError::Foreign {
            home,
            pins: foreign,
            registries,
        });
    }
    Ok(nodes)
}

fn parse(reference: &str) -> Result<Reference, WalkError> {
    Reference::parse(reference).map_err(|source| WalkError::Reference {
        reference: escape(reference),
        source,
    })
}

/// Finds `want` at the source: its tag's index when that index holds the pinned manifest, else
/// the pinned manifest by digest. `None` for `scratch`.
fn find(view: &dyn View, want: &Want) -> Result<Option<Node>, WalkError> {
    if want.reference == "scratch" {
        return Ok(None);
    }
    let r = parse(&want.reference)?;
    let missing = |source| WalkError::Missing {
        reference: match &want.pinned {
            Some(d) if r.digest.is_none() => format!("{}@{d}", want.reference),
            _ => want.reference.clone(),
        },
        by: want.by.clone(),
        source,
    };
    let failed = |source| WalkError::Source {
        reference: want.reference.clone(),
        by: want.by.clone(),
        source,
    };
    let by_tag = match view.manifest(&r, &want.reference).map_err(failed)? {
        Lookup::Found(f) => Some(*f),
        Lookup::Missing(why) if want.pinned.is_none() => return Err(missing(why)),
        Lookup::Missing(_) => None,
    };
    let (source, found) = match (by_tag, &want.pinned) {
        (Some(f), None) => (r.clone(), f),
        (Some(f), Some(pin)) if f.descriptor.digest == *pin || holds(&f, pin) => (r.clone(), f),
        (_, Some(pin)) => {
            // The tag moved (or is gone): the pinned manifest alone, by digest, without the tag.
            let mut by_digest = r.with_digest(pin);
            by_digest.tag = None;
            match view.manifest(&by_digest, &want.reference).map_err(failed)? {
                Lookup::Found(f) => (by_digest, *f),
                Lookup::Missing(why) => return Err(missing(why)),
            }
        }
        (None, None) => return Err(missing(None)),
    };
    let source = source.with_digest(&found.descriptor.digest);
    let platforms = serde_json::from_slice::<ManifestDoc>(&found.bytes)
        .map(|d| {
            d.manifests
                .iter()
                .filter_map(|m| m.platform.as_ref().map(ToString::to_string))
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(Node {
        role: want.role.clone(),
        written: want.reference.clone(),
        source,
        descriptor: found.descriptor,
        platforms,
        by: want.by.clone(),
    }))
}

/// True when the index `f` lists `pin`.
fn holds(f: &Found, pin: &Digest) -> bool {
    f.descriptor.media_type.is_index()
        && serde_json::from_slice::<ManifestDoc>(&f.bytes)
            .is_ok_and(|d| d.manifests.iter().any(|m| m.digest == *pin))
}

/// The images the agent manifests of `node` pin: RUNTIME and BINs from `agent.yaml` (by digest),
/// the FROM parent from the config (by reference: an image records its parent by name only).
/// Images that are not agents pin nothing.
fn pins_of(view: &dyn View, node: &Node) -> Result<Vec<Want>, WalkError> {
    let read = |d: &Digest| {
        view.blob(&node.source, d, MAX_SMALL_BLOB)
            .map_err(|source| WalkError::Source {
                reference: node.written.clone(),
                by: node.by.clone(),
                source,
            })
    };
    let doc = |bytes: &[u8]| {
        serde_json::from_slice::<ManifestDoc>(bytes).map_err(|e| WalkError::BadAgent {
            reference: node.written.clone(),
            message: format!("not a valid manifest: {e}"),
        })
    };
    let mut manifests = Vec::new();
    if node.descriptor.media_type.is_index() {
        let top = read_manifest(view, node, &node.descriptor.digest)?;
        for m in doc(&top)?.manifests {
            if m.media_type.is_manifest() {
                manifests.push(read_manifest(view, node, &m.digest)?);
            }
        }
    } else {
        manifests.push(read_manifest(view, node, &node.descriptor.digest)?);
    }
    let mut out = Vec::new();
    for bytes in manifests {
        let m = doc(&bytes)?;
        if m.config.as_ref().map(|c| &c.media_type) != Some(&MediaType::AgentConfig) {
            continue;
        }
        let agentfile = match m
            .layers
            .iter()
            .find(|l| l.media_type == MediaType::Agentfile)
        {
            Some(l) => String::from_utf8_lossy(&read(&l.digest)?).into_owned(),
            None => String::new(),
        };
        let by = |reference: &str, keyword: &str| PinnedBy {
            agent: node.written.clone(),
            ..line_of(&agentfile, keyword, reference)
        };
        if let Some(c) = &m.config {
            let model = otters_agentfile::ir::from_config_blob(&read(&c.digest)?).map_err(|e| {
                WalkError::BadAgent {
                    reference: node.written.clone(),
                    message: e.to_string(),
                }
            })?;
            if let Some(from) = model
                .agent
                .from_ref()
                .filter(|f| *f != "scratch" && !f.is_empty())
            {
                out.push(Want {
                    reference: from.to_owned(),
                    pinned: None,
                    role: Role::From,
                    by: Some(by(from, "FROM")),
                });
            }
        }
        let Some(yaml) = m
            .layers
            .iter()
            .rev()
            .find(|l| l.media_type == MediaType::AgentYaml)
        else {
            continue;
        };
        let pins = parse_pins(&read(&yaml.digest)?).map_err(|e| WalkError::BadAgent {
            reference: node.written.clone(),
            message: match e {
                PinsError::Yaml(e) => format!("agent.yaml layer: {e}"),
                PinsError::NotADigest { reference, digest } => format!(
                    "agent.yaml pins {} to \"{}\", which is not a sha256 digest",
                    escape(&reference),
                    escape(&digest)
                ),
            },
        })?;
        if let Some(p) = pins.runtime {
            out.push(Want {
                by: Some(by(&p.reference, "RUNTIME")),
                reference: p.reference,
                pinned: Some(p.digest),
                role: Role::Runtime,
            });
        }
        for p in pins.bins.into_values() {
            out.push(Want {
                by: Some(by(&p.reference, "BIN")),
                reference: p.reference,
                pinned: Some(p.digest),
                role: Role::Bin,
            });
        }
    }
    Ok(out)
}

fn read_manifest(view: &dyn View, node: &Node, digest: &Digest) -> Result<Vec<u8>, WalkError> {
    let r = node.source.with_digest(digest);
    match view.manifest(&r, &node.written) {
        Ok(Lookup::Found(f)) => Ok(f.bytes),
        Ok(Lookup::Missing(source)) => Err(WalkError::Missing {
            reference: format!("{}@{digest}", node.written),
            by: node.by.clone(),
            source,
        }),
        Err(source) => Err(WalkError::Source {
            reference: node.written.clone(),
            by: node.by.clone(),
            source,
        }),
    }
}

/// The first line of `agentfile` whose instruction is `keyword` and which names `reference`
/// (the line an image's own Agentfile pinned it on); no line for an inherited pin.
pub fn line_of(agentfile: &str, keyword: &str, reference: &str) -> PinnedBy {
    for (i, line) in agentfile.lines().enumerate() {
        let mut words = line.split_whitespace();
        if words
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case(keyword))
            && words.any(|w| w == reference)
        {
            return PinnedBy {
                agent: String::new(),
                line: Some(i + 1),
                text: Some(line.trim().chars().take(200).collect()),
            };
        }
    }
    PinnedBy {
        agent: String::new(),
        line: None,
        text: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_of_finds_the_instruction_that_names_the_reference() {
        let af = "FROM reg/p:1\nNAME a\n# RUNTIME reg/rt:1 in a comment\nruntime reg/rt:1\nBIN jq reg/jq:1\n";
        let l = line_of(af, "RUNTIME", "reg/rt:1");
        assert_eq!(
            (l.line, l.text.as_deref()),
            (Some(4), Some("runtime reg/rt:1"))
        );
        assert_eq!(line_of(af, "BIN", "reg/jq:1").line, Some(5));
        assert_eq!(line_of(af, "FROM", "reg/p:1").line, Some(1));
        assert_eq!(line_of(af, "BIN", "reg/other:1").line, None);
    }

    #[test]
    fn only_the_registries_named_are_read_whatever_their_case() {
        let from = Registries::only(["Reg.Example:5000"], &["other.example".to_owned()]);
        assert!(from.allows("reg.example:5000/tools/jq:1"));
        assert!(from.allows("OTHER.example/a/b@sha256:00"));
        assert!(!from.allows("private.example/corp/tool:1"));
        assert!(!from.allows("reg.example:5001/tools/jq:1"));
        // Docker Hub by its short name is docker.io, like any other registry.
        assert!(!from.allows("alpine:3"));
        assert!(Registries::only(["docker.io"], &[]).allows("alpine:3"));
        assert!(Registries::Any.allows("private.example/corp/tool:1"));
    }

    #[test]
    fn a_foreign_pin_is_refused_with_who_pinned_it() {
        let want = |reference: &str, line| Want {
            reference: reference.into(),
            pinned: Some(Digest::of(b"x")),
            role: Role::Bin,
            by: Some(PinnedBy {
                agent: "reg/agent:1".into(),
                line,
                text: line.map(|_| format!("BIN tool {reference}")),
            }),
        };
        let e = WalkError::Foreign {
            home: vec!["reg".into()],
            pins: vec![
                want("private.example/corp/tool:1", Some(4)),
                want("GHCR.io/x/tool:1", None),
            ],
            registries: vec!["private.example".into(), "ghcr.io".into()],
        };
        let d = Digest::of(b"x");
        assert_eq!(
            e.to_string(),
            format!(
                "the closure pins 2 image(s) on registries other than reg; a pin elsewhere is read \
                 only on a registry you name (it would be fetched with your credentials there and \
                 republished):\n\
                 private.example/corp/tool:1@{d}, pinned by reg/agent:1 (its Agentfile, line 4: \
                 `BIN tool private.example/corp/tool:1`)\n\
                 GHCR.io/x/tool:1@{d}, pinned by reg/agent:1 (inherited: its Agentfile does not \
                 name it)\n\
                 name only a registry whose images you mean to republish"
            )
        );
    }

    #[test]
    fn a_missing_pin_names_the_agent_and_the_line() {
        let e = WalkError::Missing {
            reference: "reg/rt:1@sha256:ab".into(),
            by: Some(PinnedBy {
                agent: "reg/agent:1".into(),
                line: Some(3),
                text: Some("RUNTIME reg/rt:1".into()),
            }),
            source: None,
        };
        assert_eq!(
            e.to_string(),
            "reg/rt:1@sha256:ab does not exist at its source, pinned by reg/agent:1 (its Agentfile, line 3: `RUNTIME reg/rt:1`)"
        );
    }
}
