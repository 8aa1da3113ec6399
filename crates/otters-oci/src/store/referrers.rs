//! The local store's referrers: for each subject manifest, the manifests that refer to it
//! (signatures, SBOMs, attestations), kept in `referrers/sha256/<subject hex>` as an OCI image
//! index, and each also as an untagged `index.json` entry annotated with its subject
//! ([`ANN_REFERRER_SUBJECT`]), so that OCI-layout tools (`umoci gc`, which may delete whatever
//! `index.json` does not reach) keep them. `images`, `save` and tag lookups skip those entries.
//!
//! Takes: a [`Store`], subject digests and referrer descriptors. Returns: the referrers of a
//! subject. Must never: update a referrers file or entry without holding the index lock, or write
//! one in place (temp file, fsync, rename, as every store write). `otters prune` keeps a referrer
//! while its subject lives and drops the file and entries of a subject that is gone. A store
//! written before the entries existed (referrers only in `referrers/`) reads the same.

use crate::path_io::io_err;
use crate::referrers::{
    artifact_manifest, descriptor_of, index_bytes, merge, parse_index, EMPTY_JSON,
};
use crate::spec::descriptor::{Descriptor, ANN_REF_NAME, MANIFEST_V1};
use crate::spec::digest::Digest;
use crate::store::layout::{Store, StoreError};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::PathBuf;

/// The annotation on a referrer's `index.json` entry: the digest of its subject.
pub const ANN_REFERRER_SUBJECT: &str = "io.openotters.referrer.subject";

/// An `index.json` entry that is there to keep a referrer reachable, not an image.
pub(crate) fn is_referrer_entry(d: &Descriptor) -> bool {
    d.annotations.contains_key(ANN_REFERRER_SUBJECT)
}

impl Store {
    /// Stores an artifact manifest of `artifact_type` whose layers (already stored) are `layers`,
    /// referring to `subject`, and records it as a referrer of `subject`. Returns its descriptor
    /// (with `artifactType` and annotations, as a referrers index lists it).
    pub fn attach(
        &self,
        subject: &Descriptor,
        artifact_type: &str,
        layers: &[Descriptor],
        annotations: &BTreeMap<String, String>,
    ) -> Result<Descriptor, StoreError> {
        self.put_blob_bytes(EMPTY_JSON)?;
        let bytes = artifact_manifest(subject, artifact_type, layers, annotations);
        let stored = self.put_manifest(&bytes, MANIFEST_V1)?;
        let d = descriptor_of(&bytes, &stored.media_type);
        self.add_referrer(&subject.digest, &d)?;
        Ok(d)
    }

    fn referrers_path(&self, subject: &Digest) -> PathBuf {
        self.root().join("referrers/sha256").join(subject.hex())
    }

    /// Records `referrer` (a manifest already stored) as referring to `subject`. Adding one that is
    /// there already changes nothing.
    /// The referrer also gets its `index.json` entry (added when missing, so adding one again
    /// fills in the entry a store of an older otters lacks).
    pub fn add_referrer(&self, subject: &Digest, referrer: &Descriptor) -> Result<(), StoreError> {
        // The entry may point only at blobs already durable.
        self.sync_batch()?;
        let _lock = self.lock_index()?;
        let mut list = self.referrers(subject)?;
        if merge(&mut list, std::slice::from_ref(referrer)) {
            let path = self.referrers_path(subject);
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(io_err("create directory", dir))?;
            }
            self.write_atomic(&path, &index_bytes(&list))?;
        }
        self.rewrite_index_locked(|entries| {
            if entries
                .iter()
                .any(|e| e.digest == referrer.digest && is_referrer_entry(e))
            {
                return false;
            }
            let mut entry = referrer.clone();
            entry.annotations.remove(ANN_REF_NAME);
            entry
                .annotations
                .insert(ANN_REFERRER_SUBJECT.to_owned(), subject.to_string());
            entries.push(entry);
            true
        })
    }

    /// The referrers of `subject` recorded in the store, in digest order.
    pub fn referrers(&self, subject: &Digest) -> Result<Vec<Descriptor>, StoreError> {
        let path = self.referrers_path(subject);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("read", &path)(e).into()),
        };
        parse_index(&bytes, None).map_err(|why| StoreError::BadReferrers { path, why })
    }

    /// The subjects that have a referrers file (the caller holds the index lock).
    pub(super) fn referrer_subjects(&self) -> Vec<Digest> {
        let dir = self.root().join("referrers/sha256");
        let Ok(entries) = fs::read_dir(&dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| Digest::from_hex(e.ok()?.file_name().to_str()?).ok())
            .collect()
    }

    /// Removes the referrers file of `subject` and the `index.json` entries of its referrers (the
    /// caller holds the index lock).
    pub(super) fn drop_referrers(&self, subject: &Digest) -> Result<(), StoreError> {
        let subject_text = subject.to_string();
        self.rewrite_index_locked(|entries| {
            let before = entries.len();
            entries.retain(|e| {
                e.annotations.get(ANN_REFERRER_SUBJECT).map(String::as_str)
                    != Some(subject_text.as_str())
            });
            entries.len() != before
        })?;
        let path = self.referrers_path(subject);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err("remove", &path)(e).into()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::descriptor::{Descriptor, MANIFEST_V1};
    use crate::spec::digest::Digest;
    use crate::store::layout::{Store, StoreError};

    #[test]
    fn referrers_are_kept_per_subject_and_merged() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let subject = Digest::of(b"s");
        assert!(store.referrers(&subject).unwrap().is_empty());
        let a = Descriptor::new(MANIFEST_V1, Digest::of(b"a"), 1);
        let b = Descriptor::new(MANIFEST_V1, Digest::of(b"b"), 1);
        store.add_referrer(&subject, &a).unwrap();
        store.add_referrer(&subject, &b).unwrap();
        store.add_referrer(&subject, &a).unwrap();
        assert_eq!(store.referrers(&subject).unwrap().len(), 2);
        assert!(store.referrers(&Digest::of(b"other")).unwrap().is_empty());
        assert_eq!(store.referrer_subjects(), vec![subject.clone()]);
        std::fs::write(store.referrers_path(&subject), b"[]").unwrap();
        assert!(matches!(
            store.referrers(&subject),
            Err(StoreError::BadReferrers { .. })
        ));
    }
}
