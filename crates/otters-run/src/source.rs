//! Reading an agent image and its runtime/BIN images out of the local store.
//!
//! Takes: the [`Store`], a reference, and a [`Fetcher`] that can bring missing images in (from a
//! registry, by digest). Returns: the [`AgentImage`] (layers, model, pins) and the per-platform
//! [`BinImage`]s. Must never: re-resolve a tag when a digest is pinned, or accept an index with
//! no entry for the requested platform.

use otters_agentfile::ir::Agentfile;
use otters_oci::spec::descriptor::ManifestDoc;
/// The one platform type (`otters_oci::Platform`), named here for the run stage's callers.
pub use otters_oci::Platform;
use otters_oci::{Descriptor, Digest, MediaType, Store, StoreError};
use otters_pipeline::lower::agent_yaml::{parse_pins, PinsError};
use otters_pipeline::lower::Pins;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{reference}: {message}")]
    Fetch { reference: String, message: String },
    #[error(
        "{reference}: not in the local store, and pulling is off; run `otters pull {reference}` first"
    )]
    NotLocal { reference: String },
    #[error("{reference}: {what} is not valid JSON: {source}")]
    BadJson {
        reference: String,
        what: &'static str,
        source: serde_json::Error,
    },
    #[error("{reference}: invalid artifact: {message}")]
    BadArtifact { reference: String, message: String },
    #[error("{reference}: not an agent: {what}; `otters run` runs agent images (`otters build` makes them)")]
    NotAnAgent { reference: String, what: String },
    /// The config blob cannot be read as an Agentfile model, or a name in it is unsafe.
    #[error("{reference}: invalid artifact: {source}")]
    BadConfig {
        reference: String,
        source: otters_agentfile::ir::BlobError,
    },
    #[error("{reference}: no image for platform {wanted} in the index (available: {available})")]
    NoPlatform {
        reference: String,
        wanted: String,
        available: String,
    },
    #[error("{reference}: no image for platform {wanted}: the pinned manifest is for {actual}")]
    PinnedPlatform {
        reference: String,
        wanted: String,
        actual: String,
    },
}

/// Brings images into the local store.
pub trait Fetcher {
    /// Make sure `reference` (at `digest` when given: never re-resolve a pinned tag) is in the
    /// store with the blobs `platform` needs; return the digest of its manifest or index.
    fn ensure(
        &self,
        store: &Store,
        reference: &str,
        digest: Option<&Digest>,
        platform: &Platform,
    ) -> Result<Digest, SourceError>;
}

/// A fetcher that only looks in the local store (`--pull never`).
pub struct LocalOnly;

impl Fetcher for LocalOnly {
    fn ensure(
        &self,
        store: &Store,
        reference: &str,
        digest: Option<&Digest>,
        _: &Platform,
    ) -> Result<Digest, SourceError> {
        if let Some(d) = digest {
            if store.has_blob(d) {
                return Ok(d.clone());
            }
            return Err(SourceError::NotLocal {
                reference: format!("{reference}@{d}"),
            });
        }
        match store.resolve(reference)? {
            Some(desc) => Ok(desc.digest),
            None => Err(SourceError::NotLocal {
                reference: reference.to_owned(),
            }),
        }
    }
}

/// An agent image, read from the store.
#[derive(Clone, Debug)]
pub struct AgentImage {
    pub reference: String,
    pub digest: Digest,
    pub layers: Vec<Descriptor>,
    pub model: Agentfile,
    pub pins: Pins,
}

/// One platform manifest of a runtime or BIN image.
#[derive(Clone, Debug)]
pub struct BinImage {
    pub reference: String,
    pub digest: Digest,
    pub layers: Vec<Descriptor>,
    /// Manifest annotations over the index entry's (the manifest wins).
    pub annotations: BTreeMap<String, String>,
}

/// Why a pin of agent.yaml is refused: a pin that is not a sha256 digest is an error naming the
/// reference and the value, since falling back to the tag would run whatever the tag means today.
fn bad_pin(pinned: &str, d: &str) -> String {
    use otters_oci::validate::escape_text;
    format!(
        "agent.yaml pins {} to \"{}\", which is not a sha256 digest (`sha256:` and 64 lower-case hex digits); otters does not fall back to the tag: rebuild the agent to pin it again",
        escape_text(pinned, 200),
        escape_text(d, 80)
    )
}

fn read_doc(
    store: &Store,
    reference: &str,
    digest: &Digest,
    what: &'static str,
) -> Result<ManifestDoc, SourceError> {
    let bytes = store.read_blob(digest)?;
    serde_json::from_slice(&bytes).map_err(|source| SourceError::BadJson {
        reference: reference.to_owned(),
        what,
        source,
    })
}

/// The agent manifest to run: `digest` itself when it is a manifest; when it is an image index
/// (a multi-platform build), the entry for `platform` ([`Platform::pick`]), or
/// [`SourceError::NoPlatform`] listing the platforms the index has.
pub fn agent_manifest(
    store: &Store,
    reference: &str,
    digest: &Digest,
    platform: &Platform,
) -> Result<Digest, SourceError> {
    let doc = read_doc(store, reference, digest, "the manifest")?;
    if doc.media_type != Some(MediaType::OciIndex) && doc.manifests.is_empty() {
        return Ok(digest.clone());
    }
    let candidates = Platform::candidates(&doc.manifests);
    match platform.pick(&candidates) {
        Some((_, d)) => Ok(d),
        None => Err(SourceError::NoPlatform {
            reference: reference.to_owned(),
            wanted: platform.to_string(),
            available: platform_list(&doc.manifests),
        }),
    }
}

/// The platforms an index's entries name (`os/arch`, escaped, at most 32), or `none`.
fn platform_list(manifests: &[Descriptor]) -> String {
    let v: Vec<String> = manifests
        .iter()
        .filter_map(|m| {
            m.platform.as_ref().map(|p| {
                otters_oci::validate::escape_text(&format!("{}/{}", p.os, p.architecture), 60)
            })
        })
        .take(32)
        .collect();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

/// Load an agent image: manifest, config blob (re-validated by decoding it) and pins.
pub fn load_agent(
    store: &Store,
    reference: &str,
    digest: &Digest,
) -> Result<AgentImage, SourceError> {
    let bad = |message: String| SourceError::BadArtifact {
        reference: reference.to_owned(),
        message,
    };
    let doc = read_doc(store, reference, digest, "the manifest")?;
    if doc.media_type == Some(MediaType::OciIndex) || !doc.manifests.is_empty() {
        return Err(bad("it is an image index, not an agent image".into()));
    }
    let config = doc
        .config
        .as_ref()
        .ok_or_else(|| bad("the manifest has no config".into()))?;
    if config.media_type != MediaType::AgentConfig {
        return Err(SourceError::NotAnAgent {
            reference: reference.to_owned(),
            what: not_an_agent(&doc, config),
        });
    }
    let blob = store.read_blob(&config.digest)?;
    let model =
        otters_agentfile::ir::from_config_blob(&blob).map_err(|source| SourceError::BadConfig {
            reference: reference.to_owned(),
            source,
        })?;
    let pins = match doc
        .layers
        .iter()
        .rev()
        .find(|l| l.media_type == MediaType::AgentYaml)
    {
        Some(l) => {
            let yaml = store.read_blob(&l.digest)?;
            // Every pin must be a digest now, before anything is fetched or written.
            parse_pins(&yaml).map_err(|e| match e {
                PinsError::Yaml(e) => bad(format!("agent.yaml layer: {e}")),
                PinsError::NotADigest { reference, digest } => bad(bad_pin(&reference, &digest)),
            })?
        }
        None => Pins::default(),
    };
    Ok(AgentImage {
        reference: reference.to_owned(),
        digest: digest.clone(),
        layers: doc.layers,
        model,
        pins,
    })
}

/// What an image that is not an agent is, for [`SourceError::NotAnAgent`]: its config media type,
/// and whether it is a bin image (a RUNTIME or BIN for an Agentfile), a container image or another
/// OCI artifact.
fn not_an_agent(doc: &ManifestDoc, config: &Descriptor) -> String {
    use otters_oci::validate::escape_text;
    let bin = otters_oci::spec::annotations::BIN_NAME_KEYS
        .iter()
        .any(|k| doc.annotations.contains_key(*k));
    let kind = if bin {
        "a bin image: name it as RUNTIME or BIN in an Agentfile, and run the agent".to_owned()
    } else if config.media_type.is_image_config() {
        "a container image, not an agent: run it with docker or podman".to_owned()
    } else {
        let artifact = doc.artifact_type.as_deref().unwrap_or("none");
        format!(
            "an OCI artifact (artifactType {}), not an agent",
            escape_text(artifact, 120)
        )
    };
    format!(
        "its config is {}, not an agent config ({}); it is {kind}",
        escape_text(config.media_type.as_str(), 120),
        otters_oci::spec::descriptor::AGENT_CONFIG
    )
}

/// The digests of the images an agent manifest pins (its RUNTIME and BINs, from its `agent.yaml`
/// layer): what `otters prune` must keep for an offline run of a still-tagged agent. Empty for a
/// manifest that is not an agent; an `agent.yaml` that is missing from the store or unreadable
/// is an error (what it pins is unknown).
pub fn pinned_images(store: &Store, doc: &ManifestDoc) -> Result<Vec<Digest>, String> {
    let Some(layer) = doc
        .layers
        .iter()
        .rev()
        .find(|l| l.media_type == MediaType::AgentYaml)
    else {
        return Ok(Vec::new());
    };
    let yaml = match store.read_blob(&layer.digest) {
        Ok(y) => y,
        // Nothing of the agent is left to run; its pins need not be kept.
        Err(StoreError::MissingBlob(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.to_string()),
    };
    let pins = parse_pins(&yaml).map_err(|e| match e {
        PinsError::Yaml(e) => format!("agent.yaml layer {}: {e}", layer.digest),
        PinsError::NotADigest { reference, digest } => bad_pin(&reference, &digest),
    })?;
    Ok(pins
        .runtime
        .into_iter()
        .chain(pins.bins.into_values())
        .map(|p| p.digest)
        .collect())
}

/// A single manifest (a pin made for one platform) must be for `platform`: its config's `os` and
/// `architecture`, when it states them, must match.
fn check_platform(
    store: &Store,
    reference: &str,
    config: Option<&Descriptor>,
    platform: &Platform,
) -> Result<(), SourceError> {
    #[derive(Deserialize)]
    struct ConfigPlatform {
        #[serde(default)]
        os: String,
        #[serde(default)]
        architecture: String,
    }
    let Some(config) = config else {
        return Ok(());
    };
    let Ok(bytes) = store.read_blob(&config.digest) else {
        return Ok(());
    };
    let Ok(p) = serde_json::from_slice::<ConfigPlatform>(&bytes) else {
        return Ok(());
    };
    if p.os.is_empty() || p.architecture.is_empty() {
        return Ok(());
    }
    if p.os != platform.os || p.architecture != platform.architecture {
        return Err(SourceError::PinnedPlatform {
            reference: reference.to_owned(),
            wanted: platform.to_string(),
            actual: otters_oci::validate::escape_text(&format!("{}/{}", p.os, p.architecture), 60),
        });
    }
    Ok(())
}

/// Read a runtime/BIN image at `digest` and pick `platform` when it is an index.
pub fn bin_image(
    store: &Store,
    reference: &str,
    digest: &Digest,
    platform: &Platform,
) -> Result<BinImage, SourceError> {
    let doc = read_doc(store, reference, digest, "the manifest")?;
    if doc.manifests.is_empty() {
        check_platform(store, reference, doc.config.as_ref(), platform)?;
        return Ok(BinImage {
            reference: reference.to_owned(),
            digest: digest.clone(),
            layers: doc.layers,
            annotations: doc.annotations,
        });
    }
    let entry = doc
        .manifests
        .iter()
        .find(|m| {
            m.platform
                .as_ref()
                .is_some_and(|p| p.os == platform.os && p.architecture == platform.architecture)
        })
        .ok_or_else(|| SourceError::NoPlatform {
            reference: reference.to_owned(),
            wanted: platform.to_string(),
            available: platform_list(&doc.manifests),
        })?;
    let inner = read_doc(store, reference, &entry.digest, "the platform manifest")?;
    let mut annotations = doc.annotations.clone();
    annotations.extend(entry.annotations.clone());
    annotations.extend(inner.annotations);
    Ok(BinImage {
        reference: reference.to_owned(),
        digest: entry.digest.clone(),
        layers: inner.layers,
        annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const AA: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const BB: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn yaml(runtime: &str, tool: &str) -> String {
        format!("name: \"x\"\nruntime:\n  ref: \"r:1\"\n  digest: \"{runtime}\"\n  binary: \"/usr/local/bin/runtime\"\ntools:\n  - name: \"t\"\n    binary: \"usr/bin/t\"\n    ref: \"t:1\"\n    digest: \"{tool}\"\n  - name: \"u\"\n    binary: \"usr/bin/u\"\n    ref: \"u:1\"\n")
    }

    #[test]
    fn pins_from_agent_yaml() {
        let p = parse_pins(yaml(AA, BB).as_bytes()).unwrap();
        assert_eq!(p.runtime_digest("r:1").map(Digest::as_str), Some(AA));
        assert_eq!(p.bin_digest("t", "t:1").map(Digest::as_str), Some(BB));
        assert_eq!(p.bin_digest("u", "u:1"), None);
    }

    #[test]
    fn a_malformed_pin_is_an_error_not_a_tag_lookup() {
        for bad in ["latest", "sha256:abc", "sha256:../../etc"] {
            for (y, reference) in [(yaml(bad, BB), "r:1"), (yaml(AA, bad), "t:1")] {
                let Err(PinsError::NotADigest {
                    reference: r,
                    digest: d,
                }) = parse_pins(y.as_bytes())
                else {
                    panic!("{bad} must be refused")
                };
                assert_eq!((r.as_str(), d.as_str()), (reference, bad));
                let message = bad_pin(&r, &d);
                assert!(
                    message.starts_with(&format!(
                        "agent.yaml pins {reference} to {bad:?}, which is not a sha256 digest"
                    )),
                    "{message}"
                );
            }
        }
    }
}
