//! `otters push` and `otters pull`: an image of the local store to a registry, or from a
//! registry (or an OCI layout or archive another tool wrote) into the store, with its referrers.
//!
//! Takes: the store, a registry client, references as written. Returns: the image's descriptor
//! and the [`TransferReport`], or a [`PushError`]/[`PullError`] that speaks of values (the front
//! end adds its flag names and hints). Must never: push a digest other than the local image's, or
//! print (progress goes through the caller's [`Progress`]).
use otters_core::escape::escape;
use otters_oci::archive::local::{self, LocalError, LocalSource};
use otters_oci::reference::{Reference, ReferenceError};
use otters_oci::registry::referrers::{pull_referrers, push_referrers};
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::{pull_image, push_image, Progress, TransferReport};
use otters_oci::registry::{RegistryClient, RegistryError};
use otters_oci::{Descriptor, Digest, Platform, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("no image {} in the local store", escape(.0))]
    NotInStore(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    #[error("{} names digest {}, but the local image is {local}", escape(.destination), .named)]
    OtherDigest {
        destination: String,
        named: Digest,
        local: Digest,
    },
    /// The push stopped on the way (interrupted, or the registry became unreachable): running
    /// it again finishes it.
    #[error("push to {destination} did not finish: {source}")]
    Unfinished {
        destination: String,
        source: Box<RegistryError>,
    },
    #[error("cannot push to {destination}: {source}")]
    Registry {
        destination: String,
        source: Box<RegistryError>,
    },
}

/// The local image `reference` names, and where it goes: `destination` (else the reference
/// itself), `latest` when it names no tag; a digest it names must be the local image's.
pub fn push_target(
    store: &Store,
    reference: &str,
    destination: Option<&str>,
) -> Result<(Descriptor, Reference), PushError> {
    let local = store
        .resolve(reference)?
        .ok_or_else(|| PushError::NotInStore(reference.to_owned()))?;
    let written = destination.unwrap_or(reference);
    let mut dest = Reference::parse(written)?;
    if dest.tag.is_none() && dest.digest.is_none() {
        dest.tag = Some("latest".into());
    }
    match &dest.digest {
        Some(d) if *d != local.digest => Err(PushError::OtherDigest {
            destination: written.to_owned(),
            named: d.clone(),
            local: local.digest,
        }),
        _ => Ok((local, dest)),
    }
}

/// Pushes `local` to `dest`, then (with `referrers`) its referrers, pinned to its digest.
pub fn push(
    client: &RegistryClient,
    store: &Store,
    local: &Descriptor,
    dest: &Reference,
    referrers: bool,
    progress: Progress<'_>,
) -> Result<TransferReport, PushError> {
    let mut sources = Sources::load(store.root());
    let result =
        push_image(client, store, local, dest, &mut sources, progress).and_then(|mut report| {
            if referrers {
                let pinned = dest.with_digest(&local.digest);
                let s = &mut sources;
                push_referrers(
                    client,
                    store,
                    &local.digest,
                    &pinned,
                    s,
                    progress,
                    &mut report,
                )?;
            }
            Ok(report)
        });
    let _ = sources.save();
    result.map_err(|source| {
        let destination = dest.familiar();
        match source {
            RegistryError::Interrupted { .. } | RegistryError::Unreachable { .. } => {
                PushError::Unfinished {
                    destination,
                    source: Box::new(source),
                }
            }
            _ => PushError::Registry {
                destination,
                source: Box::new(source),
            },
        }
    })
}

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    #[error("cannot pull {reference}: {source}")]
    Registry {
        reference: String,
        source: Box<RegistryError>,
    },
    #[error("cannot tag the pulled image as {}: {source}", escape(.tag))]
    Tag { tag: String, source: StoreError },
    #[error("cannot record the pulled image in the store: {0}")]
    Record(#[source] StoreError),
    #[error(transparent)]
    Local(#[from] LocalError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The reference to pull: `text` parsed, pinned to `platform`'s manifest when one is asked for.
pub fn pull_reference(
    client: &RegistryClient,
    text: &str,
    platform: Option<&Platform>,
) -> Result<Reference, PullError> {
    let r = Reference::parse(text)?;
    let Some(platform) = platform else {
        return Ok(r);
    };
    let resolved = client
        .resolve(&r, platform)
        .map_err(|source| PullError::Registry {
            reference: r.familiar(),
            source: Box::new(source),
        })?;
    Ok(r.with_digest(&resolved.manifest.digest))
}

/// Pulls `r` into the store, then (with `referrers`) its referrers. Nothing is tagged yet.
pub fn pull(
    client: &RegistryClient,
    store: &Store,
    r: &Reference,
    referrers: bool,
    progress: Progress<'_>,
) -> Result<(Descriptor, TransferReport), PullError> {
    let mut sources = Sources::load(store.root());
    let result =
        pull_image(client, store, r, &mut sources, progress).and_then(|(desc, mut report)| {
            if referrers {
                let pinned = r.with_digest(&desc.digest);
                let s = &mut sources;
                pull_referrers(
                    client,
                    store,
                    &pinned,
                    &desc.digest,
                    s,
                    progress,
                    &mut report,
                )?;
            }
            Ok((desc, report))
        });
    let _ = sources.save();
    result.map_err(|source| PullError::Registry {
        reference: r.familiar(),
        source: Box::new(source),
    })
}

/// Records a pulled image: tagged `tag`, else the reference as `written` when it names a tag
/// (not a digest), else untagged. The name it got, if any.
pub fn record(
    store: &Store,
    desc: &Descriptor,
    written: &str,
    tag: Option<&str>,
) -> Result<Option<String>, PullError> {
    let name = match (tag, Reference::parse(written)) {
        (Some(t), _) => Some(t),
        (None, Ok(orig)) if orig.digest.is_none() => Some(written),
        _ => None,
    };
    let Some(t) = name else {
        store.add_untagged(desc).map_err(PullError::Record)?;
        return Ok(None);
    };
    let tagged = store.tag(t, desc).map_err(|source| PullError::Tag {
        tag: t.to_owned(),
        source,
    })?;
    Ok(Some(tagged))
}

/// `oci:DIR[:tag]` / `oci-archive:FILE[:tag]`: an OCI layout or archive written by another tool
/// (skopeo, buildah, oras) copied into the store with the checks a registry pull applies, and
/// named `tag`, else as it was named inside when that is a full name. Its root descriptor and
/// the name it got.
pub fn pull_local(
    store: &Store,
    src: &LocalSource,
    tag: Option<&str>,
) -> Result<(Descriptor, Option<String>), PullError> {
    let imported = local::import(store, src)?;
    let root = imported.root.clone();
    let name = if let Some(t) = imported.local_name(tag) {
        Some(store.tag(&t, &root)?)
    } else {
        store.add_untagged(&root)?;
        None
    };
    Ok((root, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(tag: &str) -> (tempfile::TempDir, Store, Descriptor) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (config, _) = store.put_blob_bytes(b"{}").unwrap();
        let doc = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config}","size":2}},"layers":[]}}"#
        );
        let (digest, size) = store.put_blob_bytes(doc.as_bytes()).unwrap();
        let d = Descriptor::new(otters_oci::spec::media_type::MANIFEST_V1, digest, size);
        store.tag(tag, &d).unwrap();
        (dir, store, d)
    }

    #[test]
    fn a_push_goes_where_it_is_named_and_never_to_another_digest() {
        let (_dir, store, d) = store_with("127.0.0.1:5000/team/a:1");
        let (local, dest) = push_target(&store, "127.0.0.1:5000/team/a:1", None).unwrap();
        assert_eq!(local.digest, d.digest);
        assert_eq!(dest.to_string(), "127.0.0.1:5000/team/a:1");
        let (_, dest) =
            push_target(&store, "127.0.0.1:5000/team/a:1", Some("127.0.0.1:5000/b")).unwrap();
        assert_eq!(dest.tag.as_deref(), Some("latest"));
        let pinned = format!("127.0.0.1:5000/b@{}", d.digest);
        assert!(push_target(&store, "127.0.0.1:5000/team/a:1", Some(&pinned)).is_ok());
        let other = format!("127.0.0.1:5000/b@{}", Digest::of(b"other"));
        assert!(matches!(
            push_target(&store, "127.0.0.1:5000/team/a:1", Some(&other)),
            Err(PushError::OtherDigest { .. })
        ));
        let e = push_target(&store, "absent:1", None).unwrap_err();
        assert_eq!(e.to_string(), "no image absent:1 in the local store");
    }

    #[test]
    fn a_pull_is_named_by_its_tag_never_by_a_digest() {
        let (_dir, store, d) = store_with("seed:1");
        let written = "127.0.0.1:5000/team/a:1";
        assert_eq!(
            record(&store, &d, written, None).unwrap().as_deref(),
            Some(written)
        );
        let by_digest = format!("127.0.0.1:5000/team/a@{}", d.digest);
        assert_eq!(record(&store, &d, &by_digest, None).unwrap(), None);
        assert_eq!(
            record(&store, &d, &by_digest, Some("mine:2"))
                .unwrap()
                .as_deref(),
            Some("mine:2")
        );
        assert!(matches!(
            record(&store, &d, written, Some("Bad Tag")),
            Err(PullError::Tag { .. })
        ));
    }
}
