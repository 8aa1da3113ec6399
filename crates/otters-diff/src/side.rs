//! One side of a diff: an agent read from where a `Target` holds it (the local store or a
//! registry) for one platform.
//!
//! Takes: a resolved `Target` and the platform to compare. Returns: a [`Side`]: the model of the
//! config blob, the pins of `agent.yaml`, the text of each CONTEXT layer, each data layer's title,
//! size and digest, the platforms of an index, the referrers. Must never: download a data (ADD)
//! layer (only the config, `agent.yaml` and context layers are read, each at most
//! [`MAX_TEXT`] bytes), or write anything.
use otters_agentfile::ir::{self, Agentfile, BlobError};
use otters_core::escape::escape;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, MediaType, Platform};
use otters_pipeline::lower::agent_yaml::{parse_pins, PinsError};
use otters_pipeline::lower::Pins;
use otters_pipeline::target::{Target, TargetError};
use std::collections::BTreeMap;

/// The largest config blob, `agent.yaml` or context layer a diff reads.
pub const MAX_TEXT: u64 = 4 << 20;
/// The most text a diff reads of one agent (config, `agent.yaml` and every context layer).
pub const MAX_TOTAL: u64 = 64 << 20;

/// Why an agent could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{}: {what} is not a valid manifest: {source}", escape(.reference))]
    BadManifest {
        reference: String,
        what: &'static str,
        source: serde_json::Error,
    },
    #[error("{}: not an agent: {why}", escape(.reference))]
    NotAnAgent { reference: String, why: String },
    #[error("{}: no image for platform {wanted} in the index (it has: {available})", escape(.reference))]
    NoPlatform {
        reference: String,
        wanted: String,
        available: String,
    },
    #[error("{}: the config blob is not an agent's: {source}", escape(.reference))]
    BadConfig {
        reference: String,
        source: BlobError,
    },
    #[error("{}: agent.yaml cannot be read: {why}", escape(.reference))]
    BadPins { reference: String, why: String },
    #[error("{}: its config and text layers are more than {max} bytes together; otters diff reads at most that much of an agent", escape(.reference))]
    TooMuchText { reference: String, max: u64 },
}

/// A data (ADD) layer as the diff sees it: never its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Data {
    pub digest: Digest,
    pub size: u64,
    /// A directory packed as one layer (tar+gzip, unpacked at run time).
    pub directory: bool,
}

/// One agent, for one platform.
#[derive(Clone, Debug)]
pub struct Side {
    /// The reference as the user gave it.
    pub reference: String,
    /// What the reference resolved to (an index or a manifest).
    pub digest: Digest,
    /// The agent manifest compared (the platform's, for an index).
    pub manifest: Digest,
    /// The platforms of an index (`os/arch[/variant]`, sorted); empty for a single manifest.
    pub platforms: Vec<String>,
    pub model: Agentfile,
    pub pins: Pins,
    /// Each CONTEXT's text by name (the `NAME.md` layer's bytes, lossy UTF-8).
    pub contexts: BTreeMap<String, String>,
    /// Each data layer by title.
    pub data: BTreeMap<String, Data>,
    /// The number of referrers of [`Self::digest`] by artifact type.
    pub referrers: BTreeMap<String, usize>,
}

fn parse_doc(reference: &str, what: &'static str, bytes: &[u8]) -> Result<ManifestDoc, DiffError> {
    serde_json::from_slice(bytes).map_err(|source| DiffError::BadManifest {
        reference: reference.to_owned(),
        what,
        source,
    })
}

fn platform_name(p: &Platform) -> String {
    match &p.variant {
        Some(v) => format!("{}/{}/{v}", p.os, p.architecture),
        None => format!("{}/{}", p.os, p.architecture),
    }
}

/// The platforms of an index (sorted, each once) and the manifest `platform` picks of it.
fn pick(
    target: &Target,
    reference: &str,
    index: &ManifestDoc,
    platform: &Platform,
) -> Result<(Vec<String>, Digest, ManifestDoc), DiffError> {
    let candidates = Platform::candidates(&index.manifests);
    let mut platforms: Vec<String> = candidates.iter().map(|(p, _)| platform_name(p)).collect();
    platforms.sort();
    platforms.dedup();
    let Some((_, digest)) = platform.pick(&candidates) else {
        let available = if platforms.is_empty() {
            "none".to_owned()
        } else {
            let shown: Vec<String> = platforms.iter().map(|p| escape(p).into_owned()).collect();
            shown.join(", ")
        };
        return Err(DiffError::NoPlatform {
            reference: reference.to_owned(),
            wanted: platform_name(platform),
            available,
        });
    };
    let entry = index
        .manifests
        .iter()
        .find(|m| m.digest == digest)
        .cloned()
        .unwrap_or_else(|| {
            Descriptor::new(otters_oci::spec::media_type::MANIFEST_V1, digest.clone(), 0)
        });
    let inner = target.manifest(&entry)?;
    let doc = parse_doc(reference, "the platform manifest", &inner)?;
    Ok((platforms, digest, doc))
}

/// The agent `target` holds, for `platform` when it is an index.
pub fn read(target: &Target, reference: &str, platform: &Platform) -> Result<Side, DiffError> {
    let top = target.descriptor().clone();
    let bytes = target.manifest(&top)?;
    let mut doc = parse_doc(reference, "the manifest", &bytes)?;
    let mut platforms = Vec::new();
    let mut manifest = top.digest.clone();
    if doc.media_type == Some(MediaType::OciIndex) || !doc.manifests.is_empty() {
        (platforms, manifest, doc) = pick(target, reference, &doc, platform)?;
    }
    let not_agent = |why: String| DiffError::NotAnAgent {
        reference: reference.to_owned(),
        why,
    };
    let config = doc
        .config
        .as_ref()
        .ok_or_else(|| not_agent("the manifest has no config".into()))?;
    if config.media_type != MediaType::AgentConfig {
        return Err(not_agent(format!(
            "its config is {}, not {}",
            escape(config.media_type.as_str()),
            otters_oci::spec::descriptor::AGENT_CONFIG
        )));
    }
    let model = ir::from_config_blob(&target.blob(config, MAX_TEXT)?).map_err(|source| {
        DiffError::BadConfig {
            reference: reference.to_owned(),
            source,
        }
    })?;
    let mut side = Side {
        reference: reference.to_owned(),
        digest: top.digest.clone(),
        manifest,
        platforms,
        model,
        pins: Pins::default(),
        contexts: BTreeMap::new(),
        data: BTreeMap::new(),
        referrers: BTreeMap::new(),
    };
    let mut budget = MAX_TOTAL.saturating_sub(config.size);
    let mut read = |layer: &Descriptor| -> Result<Vec<u8>, DiffError> {
        budget = budget
            .checked_sub(layer.size)
            .ok_or_else(|| DiffError::TooMuchText {
                reference: reference.to_owned(),
                max: MAX_TOTAL,
            })?;
        Ok(target.blob(layer, MAX_TEXT)?)
    };
    for layer in &doc.layers {
        let title = layer.title().unwrap_or_default().to_owned();
        match layer.media_type {
            MediaType::Agentfile => {}
            MediaType::AgentYaml => {
                let yaml = read(layer)?;
                side.pins = parse_pins(&yaml).map_err(|e| DiffError::BadPins {
                    reference: reference.to_owned(),
                    why: match e {
                        PinsError::Yaml(e) => e.to_string(),
                        PinsError::NotADigest { reference, digest } => format!(
                            "the pin of {} is not a sha256 digest: {}",
                            escape(&reference),
                            escape(&digest)
                        ),
                    },
                })?;
            }
            MediaType::Context => {
                let name = title.strip_suffix(".md").unwrap_or(&title).to_owned();
                let text = read(layer)?;
                side.contexts
                    .insert(name, String::from_utf8_lossy(&text).into_owned());
            }
            _ => {
                side.data.insert(
                    title,
                    Data {
                        digest: layer.digest.clone(),
                        size: layer.size,
                        directory: layer.media_type.as_str().contains("tar"),
                    },
                );
            }
        }
    }
    for r in target.referrers(&top.digest, None)? {
        let kind = r
            .artifact_type
            .clone()
            .unwrap_or_else(|| "unknown".to_owned());
        *side.referrers.entry(kind).or_default() += 1;
    }
    Ok(side)
}
