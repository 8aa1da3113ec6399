//! Read-only questions to the local store, as `otters images`, `inspect` and `save` ask them: the
//! images with their total sizes, one image's manifest and config, and the images (with the tags
//! to keep) a list of names selects.
//!
//! Takes: a [`Store`] and names as the user wrote them. Returns: values; an image whose manifest
//! cannot be read is listed with its manifest's size only. Must never: write to the store, or
//! print.

use super::layout::{Store, StoreError};
use super::refname::tag_name;
use crate::spec::descriptor::{Descriptor, ManifestDoc, ANN_CREATED};
use crate::spec::digest::{BadDigest, Digest};

/// What a query can fail with.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Digest(#[from] BadDigest),
    #[error("manifest {digest} is not valid JSON: {source}")]
    BadManifest {
        digest: Digest,
        source: serde_json::Error,
    },
    /// No image of the store has this name.
    #[error("image `{0}` is not in the local store")]
    NotFound(String),
}

/// One entry of the store's index, with what `otters images` shows of it.
#[derive(Clone, Debug)]
pub struct ImageEntry {
    /// The tag, or "" for an untagged image.
    pub name: String,
    pub descriptor: Descriptor,
    /// Manifest, config and layers together, in bytes.
    pub size: u64,
    /// The manifest's `org.opencontainers.image.created`.
    pub created: Option<String>,
}

/// The images whose name `keep` accepts, in name order, with their sizes.
pub fn images(store: &Store, keep: impl Fn(&str) -> bool) -> Result<Vec<ImageEntry>, StoreError> {
    let mut out = Vec::new();
    for (name, d) in store.list()? {
        if !keep(&name) {
            continue;
        }
        let (_, m) = read_manifest(store, &d).unwrap_or_default();
        let size = d.size
            + m.config.as_ref().map_or(0, |c| c.size)
            + m.layers.iter().map(|l| l.size).sum::<u64>();
        out.push(ImageEntry {
            name,
            created: m.annotations.get(ANN_CREATED).cloned(),
            descriptor: d,
            size,
        });
    }
    Ok(out)
}

/// The digests of the images whose name `keep` accepts, each once, in name order.
pub fn digests(store: &Store, keep: impl Fn(&str) -> bool) -> Result<Vec<Digest>, StoreError> {
    let mut seen = std::collections::HashSet::new();
    Ok(store
        .list()?
        .into_iter()
        .filter(|(name, d)| keep(name) && seen.insert(d.digest.clone()))
        .map(|(_, d)| d.digest)
        .collect())
}

/// The manifest (or index) `d` points to: its bytes and what they say.
pub fn read_manifest(store: &Store, d: &Descriptor) -> Result<(Vec<u8>, ManifestDoc), QueryError> {
    let bytes = store.read_blob(&d.digest)?;
    let m = serde_json::from_slice(&bytes).map_err(|source| QueryError::BadManifest {
        digest: d.digest.clone(),
        source,
    })?;
    Ok((bytes, m))
}

/// One image as `inspect` shows it.
#[derive(Debug)]
pub struct ImageDetails {
    pub descriptor: Descriptor,
    /// The manifest's bytes, and what they say.
    pub bytes: Vec<u8>,
    pub manifest: ManifestDoc,
    /// The config blob as JSON, when it is in the store and is JSON.
    pub config: Option<serde_json::Value>,
}

/// The image `reference` names (tag, digest or digest prefix); `None` when there is none.
pub fn details(store: &Store, reference: &str) -> Result<Option<ImageDetails>, QueryError> {
    let Some(d) = store.resolve(reference)? else {
        return Ok(None);
    };
    let (bytes, manifest) = read_manifest(store, &d)?;
    let config = manifest
        .config
        .as_ref()
        .and_then(|c| store.read_blob(&c.digest).ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    Ok(Some(ImageDetails {
        descriptor: d,
        bytes,
        manifest,
        config,
    }))
}

/// The images `references` name, each once, with the tags an archive of them keeps: the tag an
/// image was named by (naming one image twice adds its tags, not a copy).
pub fn select(
    store: &Store,
    references: &[String],
) -> Result<Vec<(Descriptor, Vec<String>)>, QueryError> {
    let listed = store.list()?;
    let mut images: Vec<(Descriptor, Vec<String>)> = Vec::new();
    for r in references {
        let d = store
            .resolve(r)?
            .ok_or_else(|| QueryError::NotFound(r.clone()))?;
        let tag = tag_name(r).ok();
        let tags: Vec<String> = listed
            .iter()
            .filter(|(n, e)| !n.is_empty() && e.digest == d.digest)
            .map(|(n, _)| n.clone())
            .filter(|n| Some(n) == tag.as_ref() || n == r)
            .collect();
        match images.iter_mut().find(|(e, _)| e.digest == d.digest) {
            Some((_, have)) => {
                for t in tags {
                    if !have.contains(&t) {
                        have.push(t);
                    }
                }
            }
            None => images.push((d, tags)),
        }
    }
    for (d, tags) in &mut images {
        if tags.is_empty() {
            tags.extend(digest_name(store, &listed, &d.digest)?);
        }
    }
    Ok(images)
}

/// The `repository@digest` name of an image selected by digest: the repository of a tag the
/// store has for it, else (a referrer, such as a runnable export) of its subject's, up to the
/// depth of a referrer chain; `None` when the store knows no repository for it.
fn digest_name(
    store: &Store,
    listed: &[(String, Descriptor)],
    digest: &Digest,
) -> Result<Option<String>, QueryError> {
    let mut at = digest.clone();
    for _ in 0..=crate::referrers::MAX_DEPTH {
        if let Some((name, _)) = listed.iter().find(|(n, e)| !n.is_empty() && e.digest == at) {
            let (repository, _) = repository_and_tag(name);
            return Ok(Some(format!("{repository}@{digest}")));
        }
        match crate::referrers::subject_of(&store.read_blob(&at)?) {
            Some(s) => at = s.digest,
            None => break,
        }
    }
    Ok(None)
}

/// `repository` and `tag` of a stored name (`<none>` for an untagged image).
pub fn repository_and_tag(name: &str) -> (String, String) {
    if name.is_empty() {
        return ("<none>".into(), "<none>".into());
    }
    let base = name.split('@').next().unwrap_or(name);
    match base.rsplit_once(':').filter(|(_, t)| !t.contains('/')) {
        Some((r, t)) => (r.to_owned(), t.to_owned()),
        None => (base.to_owned(), "<none>".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::descriptor::MANIFEST_V1;

    /// A store with one image (config + one layer) tagged `a:1` and `b:1`, and its descriptor.
    fn store_with_image() -> (tempfile::TempDir, Store, Descriptor) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let (cd, cs) = store.put_blob_bytes(b"{\"k\":1}").unwrap();
        let (ld, ls) = store.put_blob_bytes(b"layer bytes").unwrap();
        let manifest = format!(
            "{{\"schemaVersion\":2,\"mediaType\":\"{MANIFEST_V1}\",\"config\":{{\"mediaType\":\"application/json\",\"digest\":\"{cd}\",\"size\":{cs}}},\"layers\":[{{\"mediaType\":\"application/octet-stream\",\"digest\":\"{ld}\",\"size\":{ls}}}],\"annotations\":{{\"{ANN_CREATED}\":\"2024-01-01T00:00:00Z\"}}}}"
        );
        let d = store
            .put_manifest(manifest.as_bytes(), MANIFEST_V1)
            .unwrap();
        store.tag("a:1", &d).unwrap();
        store.tag("b:1", &d).unwrap();
        (dir, store, d)
    }

    #[test]
    fn images_add_up_manifest_config_and_layers() {
        let (_dir, store, d) = store_with_image();
        let all = images(&store, |_| true).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].name, "a:1");
        assert_eq!(all[0].size, d.size + 7 + 11);
        assert_eq!(all[0].created.as_deref(), Some("2024-01-01T00:00:00Z"));
        let only_b = images(&store, |n| n.starts_with('b')).unwrap();
        assert_eq!(only_b.len(), 1);
        assert_eq!(
            digests(&store, |_| true).unwrap(),
            std::slice::from_ref(&d.digest)
        );
    }

    #[test]
    fn details_read_manifest_and_config() {
        let (_dir, store, d) = store_with_image();
        let shown = details(&store, "a:1").unwrap().unwrap();
        assert_eq!(shown.descriptor.digest, d.digest);
        assert_eq!(shown.manifest.layers.len(), 1);
        assert_eq!(shown.config, Some(serde_json::json!({"k": 1})));
        assert!(details(&store, "missing:1").unwrap().is_none());
    }

    #[test]
    fn select_keeps_the_named_tags_once() {
        let (_dir, store, d) = store_with_image();
        let picked = select(&store, &["a:1".into(), "b:1".into(), "a:1".into()]).unwrap();
        assert_eq!(picked.len(), 1);
        assert_eq!(picked[0].0.digest, d.digest);
        assert_eq!(picked[0].1, ["a:1", "b:1"]);
        // By digest: named `repository@digest` after a tag of it (for `ctr image import`), a
        // referrer after its subject's.
        let by_digest = select(&store, &[d.digest.to_string()]).unwrap();
        assert_eq!(by_digest[0].1, [format!("a@{}", d.digest)]);
        let (layer, size) = store.put_blob_bytes(b"an export").unwrap();
        let layer = Descriptor::new("application/octet-stream", layer, size);
        let export = store
            .attach(
                &d,
                "application/x.test",
                &[layer],
                &std::collections::BTreeMap::default(),
            )
            .unwrap();
        let by_digest = select(&store, &[export.digest.to_string()]).unwrap();
        assert_eq!(by_digest[0].1, [format!("a@{}", export.digest)]);
        let err = select(&store, &["nope:1".into()]).unwrap_err();
        assert!(matches!(err, QueryError::NotFound(ref r) if r == "nope:1"));
    }

    #[test]
    fn repository_and_tag_split_at_the_last_colon_of_the_name() {
        assert_eq!(
            repository_and_tag("127.0.0.1:5000/a/b:1"),
            ("127.0.0.1:5000/a/b".into(), "1".into())
        );
        assert_eq!(
            repository_and_tag("127.0.0.1:5000/a"),
            ("127.0.0.1:5000/a".into(), "<none>".into())
        );
        assert_eq!(repository_and_tag(""), ("<none>".into(), "<none>".into()));
    }
}
