//! The documents a transfer walks: the depth it follows indexes to, and manifests and indexes
//! read from the store or parsed from a registry's answer.

use crate::reference::Reference;
use crate::registry::error::RegistryError;
use crate::spec::descriptor::ManifestDoc;
use crate::spec::digest::Digest;
use crate::store::layout::Store;
use crate::validate::MAX_MANIFEST;

/// Deepest nesting of indexes a push or pull follows.
const MAX_DEPTH: usize = 4;

pub(crate) fn check_depth(depth: usize, r: &Reference) -> Result<(), RegistryError> {
    if depth > MAX_DEPTH {
        return Err(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: "indexes are nested too deeply".into(),
        });
    }
    Ok(())
}

pub(crate) fn read_doc(store: &Store, digest: &Digest) -> Result<Vec<u8>, RegistryError> {
    let bytes = store.read_blob(digest)?;
    if bytes.len() > MAX_MANIFEST {
        return Err(RegistryError::BadDocument {
            reference: digest.to_string(),
            reason: "manifest too large".into(),
        });
    }
    debug_assert_eq!(&Digest::of(&bytes), digest);
    Ok(bytes)
}

pub(crate) fn parse(
    bytes: &[u8],
    r: &impl std::fmt::Display,
) -> Result<ManifestDoc, RegistryError> {
    ManifestDoc::parse(bytes).map_err(|e| RegistryError::BadDocument {
        reference: r.to_string(),
        reason: format!("not a valid OCI manifest or index: {e}"),
    })
}

/// An image manifest, which must name a config (its blobs are the config, then the layers).
pub(super) fn parse_manifest(
    bytes: &[u8],
    r: &impl std::fmt::Display,
) -> Result<ManifestDoc, RegistryError> {
    let m = parse(bytes, r)?;
    if m.config.is_none() {
        return Err(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: "not a valid OCI manifest or index: missing field `config`".into(),
        });
    }
    Ok(m)
}
