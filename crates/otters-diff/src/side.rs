//! One side of a diff: an agent read from where a `Target` holds it (the local store or a
//! registry) for one platform.
//!
//! Takes: a resolved `Target` and the platform to compare. Returns: a [`Side`]: the model of the
//! config blob, the pins of `agent.yaml`, the text of each CONTEXT layer, each data layer's title,
//! size and digest, the platforms of an index, the referrers and who their bundles name as signers
//! (read, never verified). Must never: download a data (ADD)
//! layer (only the config, `agent.yaml` and context layers are read, each at most
//! [`MAX_TEXT`] bytes), or write anything.
use otters_agentfile::ir::{self, Agentfile, BlobError};
use otters_core::escape::escape;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, MediaType, Platform};
use otters_pipeline::lower::agent_yaml::{parse_pins, PinsError};
use otters_pipeline::lower::Pins;
use otters_pipeline::target::{Target, TargetError};
use otters_supply::statement::SIGN_PREDICATE;
use otters_supply::verify::{claims, Referrers};
use std::collections::{BTreeMap, BTreeSet};

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
    /// Who each Sigstore bundle referrer names as its signer, **not verified**, by what the
    /// bundle claims to be (`signature`, or its statement's predicate type): see [`signers`].
    pub signers: BTreeMap<String, BTreeSet<String>>,
    /// The flattened FROM chain (filled by `chain::follow`; empty until then).
    pub chain: Chain,
}

/// One level of the chain: the FROM reference and the digest it was built from, when recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    pub reference: String,
    pub digest: Option<Digest>,
}

impl Level {
    /// `reference@digest`, or `reference (digest not recorded)`.
    pub fn describe(&self) -> String {
        match &self.digest {
            Some(d) if !self.reference.contains('@') => format!("{}@{d}", self.reference),
            Some(_) => self.reference.clone(),
            None => format!("{} (digest not recorded)", self.reference),
        }
    }
}

/// A side's chain, and why it ends where it does when that is not at `FROM scratch`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    pub levels: Vec<Level>,
    /// `None` when the last level's parent is `scratch`; else why the walk stopped.
    pub cut: Option<String>,
}

/// The most bundle referrers of one side whose signer is read.
pub const MAX_SIGNERS: usize = 16;
/// The most bytes of bundle referrers (manifests and bundles) one side reads.
pub const MAX_SIGNER_BYTES: u64 = 4 << 20;

/// The referrers already listed, read through the target: the bundle walk lists nothing again.
struct Listed<'a>(&'a Target, Vec<Descriptor>);

impl Referrers for Listed<'_> {
    fn list(&self, _: &Digest) -> Result<Vec<Descriptor>, String> {
        Ok(self.1.clone())
    }
    fn manifest(&self, d: &Descriptor) -> Result<Vec<u8>, String> {
        Referrers::manifest(self.0, d)
    }
    fn blob(&self, d: &Descriptor, max: u64) -> Result<Vec<u8>, String> {
        Referrers::blob(self.0, d, max)
    }
    fn is_local(&self) -> bool {
        Referrers::is_local(self.0)
    }
}

/// Who the bundle referrers among `listed` name as signers (unverified, at most [`MAX_SIGNERS`]
/// bundles and [`MAX_SIGNER_BYTES`] read), by kind: `signature` for a plain signature, else the
/// predicate type the statement claims (`bundle` when it cannot be read). A bundle that cannot
/// be read is named `(unreadable: why)`.
pub fn signers(
    target: &Target,
    subject: &Digest,
    listed: Vec<Descriptor>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let maybe_bundle = |d: &Descriptor| {
        d.artifact_type
            .as_deref()
            .is_none_or(|t| t == otters_supply::bundle::BUNDLE_V03)
    };
    if !listed.iter().any(maybe_bundle) {
        return out;
    }
    let source = Listed(target, listed);
    let Ok(claims) = claims(&source, subject, MAX_SIGNER_BYTES, MAX_SIGNERS) else {
        return out;
    };
    for c in claims {
        let kind = match c.predicate_type.as_deref() {
            Some(SIGN_PREDICATE) => "signature".to_owned(),
            Some(p) => p.to_owned(),
            None => "bundle".to_owned(),
        };
        let who = match c.signer {
            Ok(n) => n.describe(),
            Err(why) => format!("(unreadable: {why})"),
        };
        out.entry(kind).or_default().insert(who);
    }
    out
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
    read_with(target, reference, platform, None)
}

/// [`read`], given the top manifest's bytes when they were already fetched to resolve the target
/// (`Target::resolve_read`): a registry side then fetches its manifest once, not twice. Bytes
/// that are not of the target's digest are not used.
pub fn read_with(
    target: &Target,
    reference: &str,
    platform: &Platform,
    fetched: Option<Vec<u8>>,
) -> Result<Side, DiffError> {
    let top = target.descriptor().clone();
    let bytes = match fetched.filter(|b| Digest::of(b) == top.digest) {
        Some(b) => b,
        None => target.manifest(&top)?,
    };
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
        signers: BTreeMap::new(),
        chain: Chain::default(),
    };
    // Every text layer's size is known before any is read: refuse the lot at once.
    let text: u64 = doc
        .layers
        .iter()
        .filter(|l| matches!(l.media_type, MediaType::AgentYaml | MediaType::Context))
        .fold(config.size, |n, l| n.saturating_add(l.size));
    if text > MAX_TOTAL {
        return Err(DiffError::TooMuchText {
            reference: reference.to_owned(),
            max: MAX_TOTAL,
        });
    }
    let read = |layer: &Descriptor| target.blob(layer, MAX_TEXT);
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
    let listed = target.referrers(&top.digest, None)?;
    for r in &listed {
        let kind = r
            .artifact_type
            .clone()
            .unwrap_or_else(|| "unknown".to_owned());
        *side.referrers.entry(kind).or_default() += 1;
    }
    side.signers = signers(target, &top.digest, listed);
    Ok(side)
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_oci::spec::media_type::{AGENT_CONFIG, CONTEXT_LAYER, FILE_LAYER, MANIFEST_V1};
    use otters_oci::Store;

    /// A store holding one manifest of `config` (of `config_type`) and `layers` (media type,
    /// title, size, and the bytes when they are stored), as a local target.
    fn target(
        config_type: &str,
        layers: &[(&str, &str, u64, Option<&[u8]>)],
    ) -> (tempfile::TempDir, Target) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let blob = br#"{"agent":{"from":"scratch","name":"x"}}"#;
        let (config, size) = store.put_blob_bytes(blob).unwrap();
        let mut listed = Vec::new();
        for (media_type, title, size, bytes) in layers {
            let digest = match bytes {
                Some(b) => store.put_blob_bytes(b).unwrap().0,
                None => Digest::of(title.as_bytes()),
            };
            listed.push(format!(
                r#"{{"mediaType":"{media_type}","digest":"{digest}","size":{size},"annotations":{{"org.opencontainers.image.title":"{title}"}}}}"#
            ));
        }
        let doc = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"{config_type}","digest":"{config}","size":{size}}},"layers":[{}]}}"#,
            listed.join(",")
        );
        let (digest, size) = store.put_blob_bytes(doc.as_bytes()).unwrap();
        let d = Descriptor::new(MANIFEST_V1, digest, size);
        (dir, Target::Local(store, d))
    }

    #[test]
    fn a_data_layer_is_never_read_and_a_context_is() {
        let data = (FILE_LAYER, "big.bin", 1 << 30, None);
        let context = (CONTEXT_LAYER, "SOUL.md", 3, Some(&b"hi\n"[..]));
        let (_dir, t) = target(AGENT_CONFIG, &[context, data]);
        let side = read(&t, "x", &Platform::host()).unwrap();
        assert_eq!(side.contexts["SOUL"], "hi\n");
        assert_eq!(side.data["big.bin"].size, 1 << 30);
        assert!(!side.data["big.bin"].directory);
    }

    #[test]
    fn bytes_already_fetched_are_used_only_when_they_are_of_the_digest() {
        let (_dir, t) = target(AGENT_CONFIG, &[]);
        // Bytes of another manifest are not used: the target's own are read.
        let other = br#"{"schemaVersion":2,"layers":[]}"#.to_vec();
        let side = read_with(&t, "x", &Platform::host(), Some(other)).unwrap();
        assert_eq!(side.manifest, t.descriptor().digest);
        // The right bytes are used as they are, even when the store no longer has them.
        let bytes = t.store().read_blob(&t.descriptor().digest).unwrap();
        std::fs::remove_file(t.store().blob_path(&t.descriptor().digest)).unwrap();
        assert!(read(&t, "x", &Platform::host()).is_err());
        let side = read_with(&t, "x", &Platform::host(), Some(bytes)).unwrap();
        assert_eq!(side.model.agent.name_str(), Some("x"));
    }

    #[test]
    fn an_oversized_text_layer_is_refused_before_it_is_read() {
        let huge = (CONTEXT_LAYER, "SOUL.md", MAX_TEXT + 1, None);
        let (_dir, t) = target(AGENT_CONFIG, &[huge]);
        let e = read(&t, "x", &Platform::host()).unwrap_err();
        assert!(
            matches!(e, DiffError::Target(TargetError::TooLarge { .. })),
            "{e}"
        );
        // Many layers within the per-layer cap still hit the total.
        let layers: Vec<_> = (0..17)
            .map(|_| (CONTEXT_LAYER, "N.md", MAX_TEXT, None))
            .collect();
        let (_dir, t) = target(AGENT_CONFIG, &layers);
        let e = read(&t, "x", &Platform::host()).unwrap_err();
        assert!(matches!(e, DiffError::TooMuchText { .. }), "{e}");
    }

    #[test]
    fn an_image_that_is_not_an_agent_says_so() {
        let (_dir, t) = target("application/vnd.oci.image.config.v1+json", &[]);
        let e = read(&t, "x", &Platform::host()).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "x: not an agent: its config is application/vnd.oci.image.config.v1+json"
            ),
            "{e}"
        );
    }
}
