//! `otters inspect`: where the image a front end names is read, the local store or its registry
//! (manifest and config blob only: no layer is downloaded, nothing is written to the store).
//!
//! Takes: the local store, the reference as written, a [`Place`] and an optional platform.
//! Returns: the image's details or the registry reference to read them from, or an
//! [`InspectError`] that speaks of values (the front end adds its flag names). Must never: read
//! an implied Docker Hub for a local tag, or print.
use crate::target::{names_registry, Place};
use otters_core::escape::escape;
use otters_oci::reference::{Reference, ReferenceError};
use otters_oci::store::query::{self, ImageDetails, QueryError};
use otters_oci::{Platform, Store};

#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// A platform was asked of an image the store holds (it picks a manifest of an index read
    /// from a registry).
    #[error("`{}` is in the local store: a platform picks a manifest of an index read from a registry", escape(.0))]
    PlatformOfLocal(String),
    #[error("image `{}` is not in the local store", escape(.0))]
    NotInStore(String),
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error(transparent)]
    Reference(#[from] ReferenceError),
}

/// The image `reference` names in the local store, if it holds one. A platform is refused for
/// an image found there.
pub fn local(
    store: &Store,
    reference: &str,
    platform: Option<&Platform>,
) -> Result<Option<ImageDetails>, InspectError> {
    match query::details(store, reference)? {
        Some(_) if platform.is_some() => Err(InspectError::PlatformOfLocal(reference.to_owned())),
        found => Ok(found),
    }
}

/// The registry reference to read an image the store does not hold from: any reference with
/// [`Place::Remote`], with [`Place::Auto`] one that spells out its registry (`HOST/…`), else
/// none ([`InspectError::NotInStore`]).
pub fn registry_reference(reference: &str, place: Place) -> Result<Reference, InspectError> {
    match place {
        Place::Remote => Ok(Reference::parse(reference)?),
        Place::Auto => {
            names_registry(reference).ok_or_else(|| InspectError::NotInStore(reference.to_owned()))
        }
        Place::Local => Err(InspectError::NotInStore(reference.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_tag_is_never_read_from_a_registry() {
        let e = registry_reference("agents/demo:1", Place::Auto).unwrap_err();
        assert_eq!(
            e.to_string(),
            "image `agents/demo:1` is not in the local store"
        );
        let r = registry_reference("127.0.0.1:5000/agents/demo:1", Place::Auto).unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert!(registry_reference("127.0.0.1:5000/a:1", Place::Local).is_err());
        let r = registry_reference("agents/demo:1", Place::Remote).unwrap();
        assert_eq!(r.registry, "docker.io");
        assert!(matches!(
            registry_reference("no spaces/x:1", Place::Remote),
            Err(InspectError::Reference(_))
        ));
    }

    #[test]
    fn a_platform_is_refused_for_a_local_image() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let linux = Platform::parse("linux/amd64").unwrap();
        assert!(local(&store, "absent:1", Some(&linux)).unwrap().is_none());
        let (config, _) = store.put_blob_bytes(b"{}").unwrap();
        let doc = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config}","size":2}},"layers":[]}}"#
        );
        let (digest, size) = store.put_blob_bytes(doc.as_bytes()).unwrap();
        let d =
            otters_oci::Descriptor::new(otters_oci::spec::media_type::MANIFEST_V1, digest, size);
        store.tag("demo:1", &d).unwrap();
        assert!(local(&store, "demo:1", None).unwrap().is_some());
        assert!(matches!(
            local(&store, "demo:1", Some(&linux)),
            Err(InspectError::PlatformOfLocal(_))
        ));
    }
}
