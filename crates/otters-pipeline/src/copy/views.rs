//! Where the closure walk of a copy reads its documents: a registry, the images of a loaded layout
//! or archive, or the local store first and then the registry (`save --with-deps`); each a
//! [`View`].
//!
//! Takes: the client or the store (with a layout's or archive's entries). Returns: the manifest
//! or index a reference names ([`Lookup::Missing`] when there is none), or a blob. Must never:
//! write to the store, or ask a registry what the store already holds (`StoreFirst`).

use super::closure::{Found, Lookup, View};
use otters_oci::reference::Reference;
use otters_oci::registry::{RegistryClient, RegistryError};
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, MediaType, Store};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A registry's documents.
pub(super) struct RegistryView<'c>(pub(super) &'c RegistryClient);

impl View for RegistryView<'_> {
    fn manifest(&self, r: &Reference, _: &str) -> Result<Lookup, BoxError> {
        match self.0.fetch_manifest(r) {
            Ok(f) => Ok(Lookup::Found(Box::new(Found {
                descriptor: Descriptor::new(f.media_type, f.digest, f.bytes.len() as u64),
                bytes: f.bytes,
            }))),
            Err(e @ RegistryError::NotFound { .. }) => Ok(Lookup::Missing(Some(Box::new(e)))),
            Err(e) => Err(Box::new(e)),
        }
    }

    fn blob(&self, r: &Reference, digest: &Digest, max: u64) -> Result<Vec<u8>, BoxError> {
        Ok(self.0.fetch_blob(r, digest, max)?)
    }
}

/// A manifest or index the store holds by digest.
fn stored(store: &Store, digest: &Digest) -> Result<Lookup, BoxError> {
    if !store.has_blob(digest) {
        return Ok(Lookup::Missing(None));
    }
    let bytes = store.read_blob(digest)?;
    let doc: ManifestDoc = serde_json::from_slice(&bytes)?;
    let media_type = match doc.media_type {
        Some(m) => m,
        None if !doc.manifests.is_empty() => MediaType::OciIndex,
        None => MediaType::OciManifest,
    };
    Ok(Lookup::Found(Box::new(Found {
        descriptor: Descriptor::new(media_type, digest.clone(), bytes.len() as u64),
        bytes,
    })))
}

/// The images of a loaded layout or archive, by the names they had there or by digest.
pub(super) struct LoadedView<'s> {
    pub(super) store: &'s Store,
    pub(super) entries: Vec<(String, Descriptor)>,
}

impl View for LoadedView<'_> {
    fn manifest(&self, r: &Reference, written: &str) -> Result<Lookup, BoxError> {
        if let Some(d) = r.digest.clone() {
            return stored(self.store, &d);
        }
        match self.entries.iter().find(|(n, _)| n == written) {
            Some((_, d)) => stored(self.store, &d.digest),
            None => Ok(Lookup::Missing(None)),
        }
    }

    fn blob(&self, _: &Reference, digest: &Digest, _: u64) -> Result<Vec<u8>, BoxError> {
        Ok(self.store.read_blob(digest)?)
    }
}

/// The local store first (by digest, or by the tag as written), then the registry.
pub(super) struct StoreFirst<'s> {
    pub(super) store: &'s Store,
    pub(super) client: &'s RegistryClient,
}

impl View for StoreFirst<'_> {
    fn manifest(&self, r: &Reference, written: &str) -> Result<Lookup, BoxError> {
        let local = match r.digest.clone() {
            Some(d) => stored(self.store, &d)?,
            None => match self.store.resolve(written) {
                Ok(Some(d)) => stored(self.store, &d.digest)?,
                _ => Lookup::Missing(None),
            },
        };
        match local {
            Lookup::Found(f) => Ok(Lookup::Found(f)),
            Lookup::Missing(_) => RegistryView(self.client).manifest(r, written),
        }
    }

    fn blob(&self, r: &Reference, digest: &Digest, max: u64) -> Result<Vec<u8>, BoxError> {
        if self.store.has_blob(digest) {
            return Ok(self.store.read_blob(digest)?);
        }
        RegistryView(self.client).blob(r, digest, max)
    }
}
