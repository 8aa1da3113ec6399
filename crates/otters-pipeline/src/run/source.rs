//! Reading an agent image and its runtime/BIN images out of the local store.
//!
//! Takes: the [`Store`], a reference, and a [`Fetcher`] that can bring missing images in (from a
//! registry, by digest). Returns: the [`AgentImage`] (layers, model, pins) and the per-platform
//! [`BinImage`]s. Must never: re-resolve a tag when a digest is pinned, or accept an index with
//! no entry for the requested platform.

use crate::lower::{Pin, Pins};
use otters_agentfile::ir::Agentfile;
use otters_oci::spec::descriptor::{ManifestDoc, AGENT_YAML_LAYER, INDEX_V1};
use otters_oci::{Descriptor, Digest, Store, StoreError};
use serde::Deserialize;
use std::collections::BTreeMap;

/// An OCI platform as otters matches it (exact os and architecture).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
}

impl Platform {
    /// The host in OCI spelling (`linux/amd64`, `linux/arm64`, …).
    pub fn host() -> Self {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" => "ppc64le",
            other => other,
        };
        Self {
            os: std::env::consts::OS.to_owned(),
            architecture: architecture.to_owned(),
        }
    }

    /// Parse `os/arch`.
    pub fn parse(s: &str) -> Option<Self> {
        let (os, arch) = s.split_once('/')?;
        let arch = arch.split('/').next().unwrap_or(arch);
        (!os.is_empty() && !arch.is_empty()).then(|| Self {
            os: os.to_owned(),
            architecture: arch.to_owned(),
        })
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{reference}: {message}")]
    Fetch { reference: String, message: String },
    #[error(
        "{reference}: not in the local store; run `otters pull {reference}` or drop --pull never"
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
    #[error("{reference}: no image for platform {wanted}: the pinned manifest is for {actual}; rebuild the agent with `otters build --platform {wanted}`")]
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
        digest: Option<&str>,
        platform: &Platform,
    ) -> Result<String, SourceError>;
}

/// A fetcher that only looks in the local store (`--pull never`).
pub struct LocalOnly;

impl Fetcher for LocalOnly {
    fn ensure(
        &self,
        store: &Store,
        reference: &str,
        digest: Option<&str>,
        _: &Platform,
    ) -> Result<String, SourceError> {
        if let Some(d) = pinned_digest(reference, digest)? {
            if store.has_blob(&d) {
                return Ok(d.to_string());
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
    pub digest: String,
    pub layers: Vec<Descriptor>,
    pub model: Agentfile,
    pub pins: Pins,
}

/// One platform manifest of a runtime or BIN image.
#[derive(Clone, Debug)]
pub struct BinImage {
    pub reference: String,
    pub digest: String,
    pub layers: Vec<Descriptor>,
    /// Manifest annotations over the index entry's (the manifest wins).
    pub annotations: BTreeMap<String, String>,
}

/// The pinned digest, when there is one. A pin that is not a sha256 digest is an error naming the
/// reference and the value: falling back to the tag would run whatever the tag means today.
pub fn pinned_digest(reference: &str, digest: Option<&str>) -> Result<Option<Digest>, SourceError> {
    digest
        .map(|d| {
            Digest::parse(d).map_err(|_| SourceError::BadArtifact {
                reference: reference.to_owned(),
                message: bad_pin(None, d),
            })
        })
        .transpose()
}

/// Why a pin (of `pinned`, when the message is about another image) is refused.
fn bad_pin(pinned: Option<&str>, d: &str) -> String {
    use otters_oci::validate::escape_text;
    let what = pinned.map_or_else(
        || "its pinned digest".to_owned(),
        |r| format!("agent.yaml pins {} to", escape_text(r, 200)),
    );
    format!(
        "{what} \"{}\", which is not a sha256 digest (`sha256:` and 64 lower-case hex digits); otters does not fall back to the tag: rebuild the agent to pin it again",
        escape_text(d, 80)
    )
}

fn digest_of(reference: &str, d: &str) -> Result<Digest, SourceError> {
    Digest::parse(d).map_err(|_| SourceError::BadArtifact {
        reference: reference.to_owned(),
        message: format!("bad digest {d:?}"),
    })
}

fn read_doc(
    store: &Store,
    reference: &str,
    digest: &str,
    what: &'static str,
) -> Result<ManifestDoc, SourceError> {
    let bytes = store.read_blob(&digest_of(reference, digest)?)?;
    serde_json::from_slice(&bytes).map_err(|source| SourceError::BadJson {
        reference: reference.to_owned(),
        what,
        source,
    })
}

/// Load an agent image: manifest, config blob (re-validated by decoding it) and pins.
pub fn load_agent(store: &Store, reference: &str, digest: &str) -> Result<AgentImage, SourceError> {
    let bad = |message: String| SourceError::BadArtifact {
        reference: reference.to_owned(),
        message,
    };
    let doc = read_doc(store, reference, digest, "the manifest")?;
    if doc.media_type.as_deref() == Some(INDEX_V1) || !doc.manifests.is_empty() {
        return Err(bad("it is an image index, not an agent image".into()));
    }
    let config = doc
        .config
        .ok_or_else(|| bad("the manifest has no config".into()))?;
    let blob = store.read_blob(&digest_of(reference, &config.digest)?)?;
    let model =
        otters_agentfile::ir::from_config_blob(&blob).map_err(|source| SourceError::BadConfig {
            reference: reference.to_owned(),
            source,
        })?;
    let pins = match doc
        .layers
        .iter()
        .rev()
        .find(|l| l.media_type == AGENT_YAML_LAYER)
    {
        Some(l) => {
            let yaml = store.read_blob(&digest_of(reference, &l.digest)?)?;
            parse_pins(&yaml).map_err(|e| bad(format!("agent.yaml layer: {e}")))?
        }
        None => Pins::default(),
    };
    // Every pin must be a digest now, before anything is fetched or written.
    for pin in pins.runtime.iter().chain(pins.bins.values()) {
        if Digest::parse(&pin.digest).is_err() {
            return Err(bad(bad_pin(Some(&pin.reference), &pin.digest)));
        }
    }
    Ok(AgentImage {
        reference: reference.to_owned(),
        digest: digest.to_owned(),
        layers: doc.layers,
        model,
        pins,
    })
}

#[derive(Deserialize)]
struct YamlRef {
    #[serde(rename = "ref", default)]
    reference: Option<String>,
    #[serde(default)]
    digest: Option<String>,
}

#[derive(Deserialize)]
struct YamlTool {
    name: String,
    #[serde(rename = "ref", default)]
    reference: Option<String>,
    #[serde(default)]
    digest: Option<String>,
}

#[derive(Deserialize)]
struct YamlPins {
    #[serde(default)]
    runtime: Option<YamlRef>,
    #[serde(default)]
    tools: Vec<YamlTool>,
}

/// The runtime and tool digests pinned in an image's `agent.yaml`.
pub fn parse_pins(yaml: &[u8]) -> Result<Pins, serde_yaml_ng::Error> {
    let doc: YamlPins = serde_yaml_ng::from_slice(yaml)?;
    let mut pins = Pins::default();
    if let Some(YamlRef {
        reference: Some(reference),
        digest: Some(digest),
    }) = doc.runtime
    {
        pins.runtime = Some(Pin { reference, digest });
    }
    for t in doc.tools {
        if let (Some(reference), Some(digest)) = (t.reference, t.digest) {
            pins.bins.insert(t.name, Pin { reference, digest });
        }
    }
    Ok(pins)
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
    let Ok(bytes) = store.read_blob(&digest_of(reference, &config.digest)?) else {
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
    digest: &str,
    platform: &Platform,
) -> Result<BinImage, SourceError> {
    let doc = read_doc(store, reference, digest, "the manifest")?;
    if doc.manifests.is_empty() {
        check_platform(store, reference, doc.config.as_ref(), platform)?;
        return Ok(BinImage {
            reference: reference.to_owned(),
            digest: digest.to_owned(),
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
            available: {
                let v: Vec<String> = doc
                    .manifests
                    .iter()
                    .filter_map(|m| {
                        m.platform.as_ref().map(|p| {
                            otters_oci::validate::escape_text(
                                &format!("{}/{}", p.os, p.architecture),
                                60,
                            )
                        })
                    })
                    .take(32)
                    .collect();
                if v.is_empty() {
                    "none".to_owned()
                } else {
                    v.join(", ")
                }
            },
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

    #[test]
    fn pins_from_agent_yaml() {
        let y = b"name: \"x\"\nruntime:\n  ref: \"r:1\"\n  digest: \"sha256:aa\"\n  binary: \"/usr/local/bin/runtime\"\ntools:\n  - name: \"t\"\n    binary: \"usr/bin/t\"\n    ref: \"t:1\"\n    digest: \"sha256:bb\"\n  - name: \"u\"\n    binary: \"usr/bin/u\"\n    ref: \"u:1\"\n";
        let p = parse_pins(y).unwrap();
        assert_eq!(p.runtime_digest("r:1"), Some("sha256:aa"));
        assert_eq!(p.bin_digest("t", "t:1"), Some("sha256:bb"));
        assert_eq!(p.bin_digest("u", "u:1"), None);
    }

    #[test]
    fn a_malformed_pin_is_an_error_not_a_tag_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let host = Platform::host();
        for bad in ["latest", "sha256:abc", "sha256:../../etc"] {
            let e = LocalOnly
                .ensure(&store, "127.0.0.1:1/rt:1", Some(bad), &host)
                .expect_err("must fail")
                .to_string();
            assert!(
                e.starts_with("127.0.0.1:1/rt:1: invalid artifact: its pinned digest"),
                "{e}"
            );
            assert!(e.contains(&format!("{bad:?}")), "{e}");
            // The registry fetcher refuses before contacting anything (port 1 would fail
            // differently, and only after a connection attempt).
            let f = super::super::fetch::RegistryFetcher::new(
                otters_oci::registry::ClientOptions::default(),
            );
            let e2 = f
                .ensure(&store, "127.0.0.1:1/rt:1", Some(bad), &host)
                .expect_err("must fail")
                .to_string();
            assert_eq!(e, e2);
        }
    }

    #[test]
    fn platforms() {
        assert_eq!(
            Platform::parse("linux/arm64/v8").unwrap().to_string(),
            "linux/arm64"
        );
        assert!(Platform::parse("linux").is_none());
        assert_eq!(Platform::host().os, std::env::consts::OS);
    }
}
