//! The registry seam of `resolve`: the four things resolution asks of a registry, as the
//! [`Registry`] trait, and the adapter that answers them with the real HTTP [`RegistryClient`].
//!
//! Takes: parsed references, a target platform, digests, the local store. Returns: what the
//! registry holds (documents, blobs) or a [`RegistryError`], which the stage maps to its
//! diagnostics (AF401–AF412). Must never: decide anything resolution decides (pins, the lock,
//! diagnostics): that stays in `resolve`, so a test registry exercises the real stage.

use otters_oci::reference::Reference;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::{transfer, Fetched, RegistryClient, RegistryError, Resolved};
use otters_oci::Store;
use otters_oci::{Digest, Platform};

/// What resolution needs from a registry. [`RegistryClient`] is the implementation every build
/// uses; unit tests give `resolve` an in-memory one.
pub trait Registry {
    /// The manifest or index `r` names: by digest when `r` has one (and then verified against
    /// it, else [`RegistryError::DigestMismatch`]), by tag otherwise.
    fn fetch_manifest(&self, r: &Reference) -> Result<Fetched, RegistryError>;

    /// `r` for `platform`: the document `r` names and, when it is an index, the manifest of the
    /// entry [`Platform::pick`] chooses ([`RegistryError::Platform`] listing the platforms
    /// the index has when none fits).
    fn resolve(&self, r: &Reference, platform: &Platform) -> Result<Resolved, RegistryError>;

    /// A small blob of `r`'s repository (a config, a usage document), at most `max` bytes,
    /// verified against `digest`.
    fn fetch_blob(
        &self,
        r: &Reference,
        digest: &Digest,
        max: u64,
    ) -> Result<Vec<u8>, RegistryError>;

    /// Pulls `r` (pinned by digest) with every blob it needs into `store`, recording where the
    /// blobs came from.
    fn pull(&self, store: &Store, r: &Reference) -> Result<(), RegistryError>;
}

/// The adapter: each question goes to the client (or `transfer`) unchanged.
impl Registry for RegistryClient {
    fn fetch_manifest(&self, r: &Reference) -> Result<Fetched, RegistryError> {
        RegistryClient::fetch_manifest(self, r)
    }

    fn resolve(&self, r: &Reference, platform: &Platform) -> Result<Resolved, RegistryError> {
        RegistryClient::resolve(self, r, platform)
    }

    fn fetch_blob(
        &self,
        r: &Reference,
        digest: &Digest,
        max: u64,
    ) -> Result<Vec<u8>, RegistryError> {
        RegistryClient::fetch_blob(self, r, digest, max)
    }

    fn pull(&self, store: &Store, r: &Reference) -> Result<(), RegistryError> {
        let mut sources = Sources::load(store.root());
        let pulled = transfer::pull_image(self, store, r, &mut sources, &mut |_| {});
        // What did arrive is recorded even when the pull stopped half way.
        let _ = sources.save();
        pulled.map(|_| ())
    }
}
