//! A FAKE registry, in memory, for the unit tests of `resolve` (the real [`RegistryClient`] is
//! covered by the integration suites against a running `docker-registry`).
//!
//! Takes: documents, blobs and tags a test puts in, and failures it wants. Returns: answers that
//! keep the [`Registry`] contract (by tag or digest, an index followed with
//! [`Platform::pick`], content-addressed blobs) and a log of every call. Must never: be
//! used outside tests.
//!
//! [`RegistryClient`]: otters_oci::registry::RegistryClient

use super::registry::Registry;
use otters_oci::reference::Reference;
use otters_oci::registry::{Fetched, RegistryError, Resolved};
use otters_oci::spec::descriptor::{Descriptor, ManifestDoc, INDEX_V1, MANIFEST_V1};
use otters_oci::{Digest, MediaType, Platform, Store};
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// A registry failure the fake answers with, built for the reference asked about.
pub type Failure = fn(&Reference) -> RegistryError;

/// An in-memory registry: one namespace of tags, content-addressed documents and blobs.
#[derive(Default)]
pub struct FakeRegistry {
    /// `registry/repository:tag` → digest of the document the tag names.
    tags: BTreeMap<String, Digest>,
    /// Manifests and indexes by digest.
    docs: BTreeMap<Digest, Fetched>,
    blobs: BTreeMap<Digest, Vec<u8>>,
    /// `registry/repository` → the failure every call about it answers with.
    failures: BTreeMap<String, Failure>,
    /// Every call, as `"resolve ghcr.io/o/x:1"`, in order.
    calls: RefCell<Vec<String>>,
}

fn descriptor_json(d: &Descriptor) -> Value {
    let mut o = Map::new();
    o.insert("mediaType".into(), json!(d.media_type.as_str()));
    o.insert("digest".into(), json!(d.digest.as_str()));
    o.insert("size".into(), json!(d.size));
    if !d.annotations.is_empty() {
        o.insert("annotations".into(), json!(d.annotations));
    }
    if let Some(p) = &d.platform {
        let mut pj = json!({"architecture": p.architecture, "os": p.os});
        if let Some(v) = &p.variant {
            pj["variant"] = json!(v);
        }
        o.insert("platform".into(), pj);
    }
    Value::Object(o)
}

impl FakeRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores a blob; returns its descriptor.
    pub fn blob(&mut self, media_type: &str, bytes: &[u8]) -> Descriptor {
        let d = Descriptor::new(
            MediaType::parse(media_type),
            Digest::of(bytes),
            bytes.len() as u64,
        );
        self.blobs.insert(d.digest.clone(), bytes.to_vec());
        d
    }

    /// Stores a document under its digest; returns its descriptor.
    fn doc(&mut self, media_type: &str, value: &Value) -> Descriptor {
        let bytes = serde_json::to_vec(value).unwrap_or_default();
        let d = Descriptor::new(
            MediaType::parse(media_type),
            Digest::of(&bytes),
            bytes.len() as u64,
        );
        self.docs.insert(
            d.digest.clone(),
            Fetched {
                digest: d.digest.clone(),
                media_type: MediaType::parse(media_type),
                bytes,
            },
        );
        d
    }

    /// Stores an image manifest over `config` and `layers` (which must already be blobs).
    pub fn manifest(
        &mut self,
        config: &Descriptor,
        layers: &[Descriptor],
        annotations: &[(&str, &str)],
    ) -> Descriptor {
        let ann: BTreeMap<&str, &str> = annotations.iter().copied().collect();
        let doc = json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_V1,
            "config": descriptor_json(config),
            "layers": layers.iter().map(descriptor_json).collect::<Vec<_>>(),
            "annotations": ann,
        });
        self.doc(MANIFEST_V1, &doc)
    }

    /// Stores an index listing `entries` (`os/arch[/variant]`, manifest).
    pub fn index(&mut self, entries: &[(&str, &Descriptor)]) -> Descriptor {
        let manifests: Vec<Value> = entries
            .iter()
            .map(|(platform, m)| {
                let mut d = (*m).clone();
                d.platform = Some(Platform::parse(platform).unwrap_or_else(|e| panic!("{e}")));
                descriptor_json(&d)
            })
            .collect();
        let doc = json!({"schemaVersion": 2, "mediaType": INDEX_V1, "manifests": manifests});
        self.doc(INDEX_V1, &doc)
    }

    /// Points `reference` (`registry/repository:tag`) at `d`.
    pub fn tag(&mut self, reference: &str, d: &Descriptor) {
        let r = Reference::parse(reference).unwrap_or_else(|e| panic!("{e}"));
        self.tags.insert(
            format!("{}:{}", r.name(), r.tag_or_latest()),
            d.digest.clone(),
        );
    }

    /// Every call about `name` (`registry/repository`) fails with `failure`.
    pub fn fail(&mut self, name: &str, failure: Failure) {
        self.failures.insert(name.to_owned(), failure);
    }

    /// The calls made so far.
    pub fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    /// Logs the call and answers with the failure set for its repository, if any.
    fn enter(&self, what: &str, r: &Reference) -> Result<(), RegistryError> {
        self.calls
            .borrow_mut()
            .push(format!("{what} {}", r.familiar()));
        match self.failures.get(&r.name()) {
            Some(f) => Err(f(r)),
            None => Ok(()),
        }
    }

    /// The document `selector` (a digest, else a tag of `r`'s repository) names.
    fn document(&self, r: &Reference, selector: &str) -> Result<Fetched, RegistryError> {
        let digest = if selector.contains(':') {
            Digest::parse(selector).map_err(|e| RegistryError::BadDocument {
                reference: r.familiar(),
                reason: e.to_string(),
            })?
        } else {
            let key = format!("{}:{selector}", r.name());
            self.tags
                .get(&key)
                .cloned()
                .ok_or_else(|| RegistryError::NotFound {
                    reference: r.familiar(),
                })?
        };
        self.docs
            .get(&digest)
            .cloned()
            .ok_or_else(|| RegistryError::NotFound {
                reference: format!("{}@{digest}", r.name()),
            })
    }

    fn parse_doc(r: &Reference, f: &Fetched) -> Result<ManifestDoc, RegistryError> {
        serde_json::from_slice(&f.bytes).map_err(|e| RegistryError::BadDocument {
            reference: r.familiar(),
            reason: e.to_string(),
        })
    }

    /// Stores `f` and everything it refers to.
    fn store_tree(&self, store: &Store, r: &Reference, f: &Fetched) -> Result<(), RegistryError> {
        let doc = Self::parse_doc(r, f)?;
        if f.media_type.is_index() {
            for m in &doc.manifests {
                self.store_tree(store, r, &self.document(r, m.digest.as_str())?)?;
            }
        } else {
            for d in doc.config.iter().chain(&doc.layers) {
                let bytes =
                    self.blobs
                        .get(&d.digest)
                        .ok_or_else(|| RegistryError::BlobNotFound {
                            reference: r.familiar(),
                            digest: d.digest.clone(),
                        })?;
                store.put_blob_bytes(bytes)?;
            }
        }
        store.put_manifest(&f.bytes, &f.media_type)?;
        Ok(())
    }
}

impl Registry for FakeRegistry {
    fn fetch_manifest(&self, r: &Reference) -> Result<Fetched, RegistryError> {
        self.enter("fetch_manifest", r)?;
        self.document(r, r.selector())
    }

    fn resolve(&self, r: &Reference, platform: &Platform) -> Result<Resolved, RegistryError> {
        self.enter("resolve", r)?;
        let top = self.document(r, r.selector())?;
        if !top.media_type.is_index() {
            return Ok(Resolved {
                manifest: top.clone(),
                top,
                platform: None,
            });
        }
        let candidates = Platform::candidates(&Self::parse_doc(r, &top)?.manifests);
        let Some((p, digest)) = platform.pick(&candidates) else {
            let available: Vec<String> = candidates.iter().map(|(p, _)| p.to_string()).collect();
            return Err(RegistryError::Platform {
                reference: r.familiar(),
                wanted: platform.to_string(),
                available: if available.is_empty() {
                    "none".into()
                } else {
                    available.join(", ")
                },
            });
        };
        Ok(Resolved {
            manifest: self.document(r, digest.as_str())?,
            top,
            platform: Some(p),
        })
    }

    fn fetch_blob(
        &self,
        r: &Reference,
        digest: &Digest,
        max: u64,
    ) -> Result<Vec<u8>, RegistryError> {
        self.enter("fetch_blob", r)?;
        let bytes = self
            .blobs
            .get(digest)
            .ok_or_else(|| RegistryError::BlobNotFound {
                reference: r.familiar(),
                digest: digest.clone(),
            })?;
        if bytes.len() as u64 > max {
            return Err(RegistryError::BadDocument {
                reference: r.familiar(),
                reason: format!("blob {digest} is larger than {max} bytes"),
            });
        }
        Ok(bytes.clone())
    }

    fn pull(&self, store: &Store, r: &Reference) -> Result<(), RegistryError> {
        self.enter("pull", r)?;
        let top = self.document(r, r.selector())?;
        self.store_tree(store, r, &top)
    }
}
