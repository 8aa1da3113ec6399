//! Whole images moved between places (registries, the local store, OCI layouts, oci-archives),
//! each with every platform of its index and the referrers of each of its manifests: the transfer
//! half of `otters copy` and `otters save --with-deps` (what an agent pins is the pipeline's part).
//!
//! Takes: a [`RegistryClient`], a [`Store`] (where a copy to or from a layout or archive stages
//! its blobs, and where referrers are staged) and image descriptors. Returns: transfer reports.
//! Must never: let a blob into the store before its digest is checked (fetches are pulls), write
//! a layout in place (every file is a temp file renamed in, `index.json` last), or send a blob a
//! destination already has (pushes `HEAD` first, and mount across repositories of one registry).
//!
//! Registry to registry ([`relay`]), an image's blobs do not touch the store: each is streamed
//! from the source into the destination and checked on the way ([`stream`]).

use crate::archive::local::LocalSource;
use crate::archive::ArchiveError;
use crate::progress::Progress;
use crate::reference::{Reference, ReferenceError};
use crate::registry::client::RegistryClient;
use crate::registry::error::RegistryError;
use crate::registry::referrers::{pull_referrers, push_referrers};
use crate::registry::sources::Sources;
use crate::registry::transfer::pull::pull_image;
use crate::registry::transfer::push::push_image;
use crate::registry::transfer::report::TransferReport;
use crate::spec::descriptor::Descriptor;
use crate::spec::digest::Digest;
use crate::store::layout::{Store, StoreError};
use std::path::Path;

/// The registry-to-registry relay, at its old path.
pub use crate::registry::transfer::relay as stream;

/// Where images come from or go: a registry reference, or `oci:DIR[:name]` /
/// `oci-archive:FILE[:name]` (skopeo's spelling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Registry(Reference),
    Local(LocalSource),
}

impl Place {
    /// `oci:` and `oci-archive:` first, else a registry reference.
    pub fn parse(text: &str) -> Result<Place, ReferenceError> {
        match LocalSource::parse(text) {
            Some(l) => Ok(Place::Local(l)),
            None => Reference::parse(text).map(Place::Registry),
        }
    }
}

/// Every manifest and index of the image `root` in the store: `root`, then each index entry, in
/// order (the subjects whose referrers travel with the image).
pub fn manifests(store: &Store, root: &Descriptor) -> Result<Vec<Digest>, StoreError> {
    crate::archive::referrers::manifests_of(store, root)
}

/// Brings the image `r` names into the store: the whole index with every platform (or the one
/// manifest), and the referrers the registry lists for each of its manifests. Blobs already
/// stored are skipped, so a rerun after an interruption fetches only what is missing.
pub fn fetch(
    client: &RegistryClient,
    store: &Store,
    r: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
) -> Result<(Descriptor, TransferReport), RegistryError> {
    let (desc, mut report) = pull_image(client, store, r, sources, progress)?;
    for m in manifests(store, &desc)? {
        pull_referrers(
            client,
            store,
            &r.with_digest(&m),
            &m,
            sources,
            progress,
            &mut report,
        )?;
    }
    Ok((desc, report))
}

/// Pushes the stored image `image` to `to` (under its tag, else by digest), then the referrers
/// the store has for each of its manifests. What the registry has is skipped; a blob it holds in
/// another repository is mounted.
pub fn deliver(
    client: &RegistryClient,
    store: &Store,
    image: &Descriptor,
    to: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
) -> Result<TransferReport, RegistryError> {
    let mut report = push_image(client, store, image, to, sources, progress)?;
    for m in manifests(store, image)? {
        push_referrers(
            client,
            store,
            &m,
            &to.with_digest(&m),
            sources,
            progress,
            &mut report,
        )?;
    }
    Ok(report)
}

/// Copies the image `src` names from its registry to `dest` in another (or the same) registry:
/// every blob streamed across ([`stream::stream_image`]), then the referrers the source lists for
/// each of its manifests, staged in the store (they are small, and `store.referrers` is what
/// [`push_referrers`] sends) and pushed. Returns what reached the destination, and what was
/// downloaded into the store on the way (referrers only).
pub fn relay(
    client: &RegistryClient,
    store: &Store,
    src: &Reference,
    dest: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
) -> Result<(TransferReport, TransferReport), RegistryError> {
    let image = stream::stream_image(client, src, dest, sources, progress)?;
    let mut pushed = image.report;
    let mut staged = TransferReport::new(
        src.to_string(),
        image.top.digest.clone(),
        image.top.media_type.clone(),
    );
    for m in &image.manifests {
        pull_referrers(
            client,
            store,
            &src.with_digest(m),
            m,
            sources,
            progress,
            &mut staged,
        )?;
        push_referrers(
            client,
            store,
            m,
            &dest.with_digest(m),
            sources,
            progress,
            &mut pushed,
        )?;
    }
    Ok((pushed, staged))
}

/// Writes `images` (each with the ref names it gets) and their referrers into the OCI image
/// layout at `dir`, created when missing. An existing layout keeps its other images; an entry
/// with one of the new names is replaced (see [`crate::archive::layout_dir::export_layout`]).
pub fn write_layout(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
    dir: &Path,
) -> Result<(), ArchiveError> {
    // The destination is untrusted: the one layout writer that opens it through directory handles
    // without following links (issue 17.1), not a second one beside it.
    crate::archive::layout_dir::export_layout(store, images, dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::layout_entries;
    use crate::spec::descriptor::{INDEX_V1, MANIFEST_V1};
    use otters_core::json::to_compact;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path().join("store")).unwrap();
        (dir, s)
    }

    /// A manifest with one layer; returns its descriptor.
    fn image(s: &Store, layer: &[u8]) -> Descriptor {
        let (cd, cs) = s.put_blob_bytes(b"{}").unwrap();
        let (ld, ls) = s.put_blob_bytes(layer).unwrap();
        let m = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{cd}","size":{cs}}},"layers":[{{"mediaType":"application/octet-stream","digest":"{ld}","size":{ls}}}]}}"#
        );
        s.put_manifest(m.as_bytes(), MANIFEST_V1).unwrap()
    }

    #[test]
    fn place_parses_local_transports_before_references() {
        assert!(matches!(Place::parse("oci:/tmp/x:1").unwrap(), Place::Local(l) if !l.is_archive));
        assert!(
            matches!(Place::parse("oci-archive:a.tar").unwrap(), Place::Local(l) if l.is_archive)
        );
        assert!(matches!(
            Place::parse("127.0.0.1:5000/a/b:1").unwrap(),
            Place::Registry(r) if r.repository == "a/b"
        ));
        assert!(Place::parse("Not A Ref").is_err());
    }

    #[test]
    fn manifests_lists_an_index_and_every_entry() {
        let (_d, s) = store();
        let a = image(&s, b"a");
        let b = image(&s, b"b");
        let idx = format!(
            r#"{{"schemaVersion":2,"mediaType":"{INDEX_V1}","manifests":[{},{}]}}"#,
            String::from_utf8(to_compact(&a.to_json()).unwrap()).unwrap(),
            String::from_utf8(to_compact(&b.to_json()).unwrap()).unwrap()
        );
        let i = s.put_manifest(idx.as_bytes(), INDEX_V1).unwrap();
        assert_eq!(manifests(&s, &i).unwrap(), [i.digest, a.digest, b.digest]);
    }

    #[test]
    fn write_layout_merges_names_and_keeps_other_images() {
        let (d, s) = store();
        let a = image(&s, b"first");
        let b = image(&s, b"second");
        let dir = d.path().join("layout");
        write_layout(&s, &[(a.clone(), vec!["x:1".into(), "keep".into()])], &dir).unwrap();
        write_layout(&s, &[(b.clone(), vec!["x:1".into()])], &dir).unwrap();
        let entries = layout_entries(&dir).unwrap();
        let named = |n: &str| entries.iter().find(|e| e.ref_name() == Some(n)).unwrap();
        assert_eq!(named("x:1").digest, b.digest);
        assert_eq!(named("keep").digest, a.digest);
        assert_eq!(entries.len(), 2);
        for blob in crate::archive::reachable(&s, &a).unwrap() {
            let bytes = std::fs::read(dir.join("blobs/sha256").join(blob.0.hex())).unwrap();
            assert_eq!(Digest::of(&bytes), blob.0);
        }
    }

    #[test]
    fn write_layout_refuses_a_damaged_store_blob_and_leaves_no_temp_file() {
        let (d, s) = store();
        let a = image(&s, b"will be damaged");
        let layer = crate::archive::reachable(&s, &a)
            .unwrap()
            .into_iter()
            .find(|(_, n)| *n == 15)
            .unwrap()
            .0;
        std::fs::write(s.blob_path(&layer), b"WILL BE DAMAGED").unwrap();
        let dir = d.path().join("layout");
        assert!(write_layout(&s, &[(a, vec!["x:1".into()])], &dir).is_err());
        assert!(!dir.join("blobs/sha256").join(layer.hex()).exists());
        assert!(!dir.join("index.json").exists());
        let left: Vec<_> = std::fs::read_dir(dir.join("blobs/sha256"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".otters-copy-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
