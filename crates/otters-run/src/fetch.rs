//! The registry-backed [`Fetcher`]: pulls a runtime, BIN or agent image into the local store by
//! digest (or, for unpinned references, by tag) when it is not there yet.
//!
//! Takes: client options and the store. Returns: the digest of the image's top document. Must
//! never: re-resolve a pinned reference by tag, or contact a registry when the blobs are local.

use super::source::{Fetcher, LocalOnly, Platform, SourceError};
use otters_oci::reference::Reference;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::pull_image;
use otters_oci::registry::{ClientOptions, RegistryClient};
use otters_oci::{Digest, Store};
use std::cell::RefCell;

/// Pulls what is missing from the image's registry.
pub struct RegistryFetcher {
    opts: ClientOptions,
    client: RefCell<Option<RegistryClient>>,
}

impl RegistryFetcher {
    pub fn new(opts: ClientOptions) -> Self {
        Self {
            opts,
            client: RefCell::new(None),
        }
    }

    /// Pull `reference` (with `digest` when pinned) and return the top digest.
    pub fn pull(
        &self,
        store: &Store,
        reference: &str,
        digest: Option<&Digest>,
    ) -> Result<Digest, SourceError> {
        self.pull_counted(store, reference, digest).map(|(d, _)| d)
    }

    /// [`RegistryFetcher::pull`], and whether any blob came from the registry (none when the
    /// store already held the image, under another name).
    pub fn pull_counted(
        &self,
        store: &Store,
        reference: &str,
        digest: Option<&Digest>,
    ) -> Result<(Digest, bool), SourceError> {
        let fail = |message: String| SourceError::Fetch {
            reference: reference.to_owned(),
            message,
        };
        let mut r = Reference::parse(reference).map_err(|e| fail(e.to_string()))?;
        if let Some(d) = digest {
            r = r.with_digest(d);
        }
        let mut slot = self.client.borrow_mut();
        if slot.is_none() {
            *slot = Some(RegistryClient::new(self.opts.clone()).map_err(|e| fail(e.to_string()))?);
        }
        let client = slot
            .as_ref()
            .ok_or_else(|| fail("no registry client".into()))?;
        let mut sources = Sources::load(store.root());
        let (desc, report) = pull_image(client, store, &r, &mut sources, &mut |_| {})
            .map_err(|e| fail(e.to_string()))?;
        let _ = sources.save();
        Ok((desc.digest, !report.downloaded.is_empty()))
    }
}

impl Fetcher for RegistryFetcher {
    fn ensure(
        &self,
        store: &Store,
        reference: &str,
        digest: Option<&Digest>,
        platform: &Platform,
    ) -> Result<Digest, SourceError> {
        if let Some(d) = digest {
            // Pinned: the local copy if the store has it, else pull by digest.
            return LocalOnly
                .ensure(store, reference, digest, platform)
                .or_else(|_| self.pull(store, reference, Some(d)));
        }
        // Unpinned: ask the registry what the tag means now; fall back to a local copy offline.
        match self.pull(store, reference, None) {
            Ok(d) => Ok(d),
            Err(e) => LocalOnly
                .ensure(store, reference, None, platform)
                .map_err(|_| e),
        }
    }
}
