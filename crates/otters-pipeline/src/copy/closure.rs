//! What an agent pins, and the closure walk over it: from one image, every image its RUNTIME, BINs
//! and FROM parent name (recursively), each as the whole index it was pinned from when that index
//! still holds the pinned manifest.
//!
//! Takes: a [`View`] (the documents of a registry, of the local store, of a loaded archive) and the
//! root references. Returns: the [`Node`]s of the closure, each once, in the order found. Must
//! never: follow a tag when its index no longer holds the pinned manifest (the pin is taken by
//! digest then), fetch a layer other than an agent's small config and `agent.yaml`, or loop (a
//! digest seen is not walked again; at most [`MAX_IMAGES`] images).

use crate::run::source::{parse_pins, PinsError};
use otters_oci::reference::Reference;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, MediaType};

/// Most images one closure holds.
pub const MAX_IMAGES: usize = 512;
/// Largest config, `agent.yaml` or Agentfile layer read while walking.
const MAX_SMALL_BLOB: u64 = 4 << 20;

/// Why an image is in the closure.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// An image named on the command line.
    Image,
    /// A FROM parent.
    From,
    Runtime,
    Bin,
}

/// Where a pin was written: the agent image and, when its Agentfile layer has it, the line.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
/// theirs; without, the roots alone. Roots come first in the result, in their order.
pub fn walk(view: &dyn View, roots: Vec<Start>, recursive: bool) -> Result<Vec<Node>, WalkError> {
    let mut nodes: Vec<Node> = Vec::new();
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
            todo.extend(pins_of(view, &node)?.into_iter().map(Start::Want));
        }
        nodes.push(node);
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
