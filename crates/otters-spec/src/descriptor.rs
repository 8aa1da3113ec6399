//! OCI content descriptors and the media types otters writes.
//!
//! Takes: values or JSON. Returns: [`Descriptor`] with canonical JSON out (Go's field order:
//! mediaType, digest, size, annotations, platform, artifactType; annotation keys sorted) and serde
//! in, and [`ManifestDoc`], the read side of a manifest or index. Must never: serialise through `serde_json`'s printer for anything that gets hashed.

use crate::digest::Digest;
use crate::media_type::MediaType;
use crate::platform::Platform;
use otters_core::json::Value;
use serde::Deserialize;
use std::collections::BTreeMap;

pub use crate::media_type::{
    AGENTFILE_LAYER, AGENT_ARTIFACT, AGENT_CONFIG, AGENT_YAML_LAYER, CONTEXT_LAYER, EMPTY_CONFIG,
    FILE_LAYER, INDEX_V1, MANIFEST_V1, TAR_GZIP_LAYER,
};

pub const ANN_TITLE: &str = "org.opencontainers.image.title";
pub const ANN_CREATED: &str = "org.opencontainers.image.created";
pub const ANN_REF_NAME: &str = "org.opencontainers.image.ref.name";
pub const ANN_UNPACK: &str = "io.deis.oras.content.unpack";

/// A content descriptor (OCI image spec `descriptor.md`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: MediaType,
    pub digest: Digest,
    pub size: u64,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub platform: Option<Platform>,
    #[serde(default)]
    pub artifact_type: Option<String>,
}

impl Descriptor {
    pub fn new(media_type: impl Into<MediaType>, digest: Digest, size: u64) -> Self {
        Self {
            media_type: media_type.into(),
            digest,
            size,
            annotations: BTreeMap::new(),
            platform: None,
            artifact_type: None,
        }
    }

    #[must_use]
    pub fn with_annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }

    /// The `org.opencontainers.image.title` annotation.
    pub fn title(&self) -> Option<&str> {
        self.annotations.get(ANN_TITLE).map(String::as_str)
    }

    /// The `org.opencontainers.image.ref.name` annotation.
    pub fn ref_name(&self) -> Option<&str> {
        self.annotations.get(ANN_REF_NAME).map(String::as_str)
    }

    /// Canonical JSON value, in Go's `ocispec.Descriptor` field order.
    pub fn to_json(&self) -> Value {
        let mut v = Value::object()
            .with("mediaType", self.media_type.as_str())
            .with("digest", &self.digest)
            .with("size", self.size);
        if !self.annotations.is_empty() {
            v.push("annotations", string_map(&self.annotations));
        }
        if let Some(p) = &self.platform {
            v.push("platform", p.to_json());
        }
        if let Some(at) = &self.artifact_type {
            v.push("artifactType", at.as_str());
        }
        v
    }
}

/// A manifest or index as read (serde in only): every field optional, so one type reads both.
/// The one model of a manifest in otters: the store, archives, the registry client, resolve and
/// the CLI all read manifests and indexes through it (`tests/suite/tidy.rs` refuses a second).
/// Bounds and shape checks come first, where the bytes are read (`otters_oci::validate`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestDoc {
    #[serde(default)]
    pub media_type: Option<MediaType>,
    #[serde(default)]
    pub config: Option<Descriptor>,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// The manifest this one refers to (OCI 1.1 `subject`): a signature, SBOM or attestation.
    #[serde(default)]
    pub subject: Option<Descriptor>,
    #[serde(default)]
    pub artifact_type: Option<String>,
}

impl ManifestDoc {
    /// Reads a manifest or index from its JSON. Unknown fields are ignored; nothing is checked
    /// beyond types, so outside bytes go through the reader's bounds and validation first.
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// An image manifest's blobs: its config, then its layers.
    pub fn blobs(&self) -> impl Iterator<Item = &Descriptor> {
        self.config.iter().chain(self.layers.iter())
    }

    /// Everything the document names, in the order a walk stacks them: an index's manifests,
    /// then a manifest's config and layers (so a depth-first walk reads layers first).
    pub fn children(&self) -> impl Iterator<Item = &Descriptor> {
        self.manifests.iter().chain(self.blobs())
    }
}

impl Platform {
    /// The entries of an index that name a platform, with their digests: what [`Platform::pick`]
    /// chooses from. (Here rather than in `platform`, so that module needs no descriptors.)
    pub fn candidates(manifests: &[Descriptor]) -> Vec<(Platform, Digest)> {
        manifests
            .iter()
            .filter_map(|m| {
                m.platform
                    .as_ref()
                    .map(|p| (p.for_matching(), m.digest.clone()))
            })
            .collect()
    }
}

/// A sorted string map as a JSON object.
pub fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::from(v))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_core::json::to_compact;

    #[test]
    fn canonical_json_round_trips_through_serde() {
        let d = Descriptor::new(FILE_LAYER, Digest::of(b"abc"), 3)
            .with_annotation("z", "1")
            .with_annotation("a", "<2>");
        let bytes = to_compact(&d.to_json()).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with(r#"{"mediaType":"application/octet-stream","digest":"sha256:"#));
        assert!(text.ends_with(r#""size":3,"annotations":{"a":"\u003c2\u003e","z":"1"}}"#));
        let back: Descriptor = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, d);
    }
}
