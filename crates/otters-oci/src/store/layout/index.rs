//! `index.json`: tags and untagged images, resolution of a reference, and the lock every update
//! holds.

use super::blobs::media_type_of;
use super::{MovedTag, Removed, Store, StoreError};
use crate::path_io::io_err;
use crate::spec::descriptor::{Descriptor, ManifestDoc, ANN_REF_NAME, INDEX_V1, MANIFEST_V1};
use crate::spec::digest::Digest;
use crate::store::referrers::is_referrer_entry;
use crate::store::refname::tag_name;
use otters_core::json::{to_compact, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io;
use std::path::PathBuf;

impl Store {
    pub(super) fn index_path(&self) -> PathBuf {
        self.root.join("index.json")
    }

    /// Points tag `reference` (`:latest` added when untagged) at `descriptor`, replacing any
    /// earlier image of that tag. Returns the stored tag name.
    pub fn tag(&self, reference: &str, descriptor: &Descriptor) -> Result<String, StoreError> {
        let name = tag_name(reference)?;
        let mut d = descriptor.clone();
        d.annotations.insert(ANN_REF_NAME.to_owned(), name.clone());
        self.update_index(|entries| {
            // A tag replaces the untagged entry of the same image (as Docker's `<none>` goes).
            entries.retain(|e| {
                e.ref_name() != Some(name.as_str())
                    && !(e.ref_name().is_none() && e.digest == d.digest)
            });
            entries.push(d);
        })?;
        Ok(name)
    }

    /// Tags several images in one `index.json` update (`otters load` of an archive with many
    /// names): each `(name, descriptor)` is tagged as [`Store::tag`] would, or recorded untagged as
    /// [`Store::add_untagged`] would when `name` is empty. A tag that already names another image
    /// would move: with `force` it moves (and is reported), without it nothing at all is written
    /// and [`StoreError::WouldMove`] lists them. Returns the stored names (empty for untagged
    /// entries), in input order, and the tags moved.
    pub fn tag_all(
        &self,
        images: &[(String, Descriptor)],
        force: bool,
    ) -> Result<(Vec<String>, Vec<MovedTag>), StoreError> {
        let mut named = Vec::with_capacity(images.len());
        for (name, d) in images {
            let mut d = d.clone();
            if name.is_empty() {
                d.annotations.remove(ANN_REF_NAME);
                named.push((String::new(), d));
            } else {
                let name = tag_name(name)?;
                d.annotations.insert(ANN_REF_NAME.to_owned(), name.clone());
                named.push((name, d));
            }
        }
        let mut moved = Vec::new();
        let mut refused = false;
        // The last of several entries of one name wins, as one-by-one tagging did.
        let target: BTreeMap<&str, &Descriptor> = named
            .iter()
            .filter(|(n, _)| !n.is_empty())
            .map(|(n, d)| (n.as_str(), d))
            .collect();
        self.update_index_if(|entries| {
            let old: HashMap<&str, &Digest> = entries
                .iter()
                .filter_map(|e| Some((e.ref_name()?, &e.digest)))
                .collect();
            for (name, d) in &target {
                if let Some(from) = old.get(name).filter(|f| **f != &d.digest) {
                    moved.push(MovedTag {
                        name: (*name).to_owned(),
                        from: (*from).clone(),
                        to: d.digest.clone(),
                    });
                }
            }
            if !moved.is_empty() && !force {
                refused = true;
                return false;
            }
            let tagged: HashSet<&Digest> = target.values().map(|d| &d.digest).collect();
            entries.retain(|e| match e.ref_name() {
                Some(n) => !target.contains_key(n),
                // A tag replaces the untagged entry of the same image.
                None => !tagged.contains(&e.digest),
            });
            let mut present: HashSet<Digest> = entries.iter().map(|e| e.digest.clone()).collect();
            present.extend(tagged.into_iter().cloned());
            entries.extend(target.values().map(|d| (*d).clone()));
            for (_, d) in named.iter().filter(|(n, _)| n.is_empty()) {
                if present.insert(d.digest.clone()) {
                    entries.push(d.clone());
                }
            }
            true
        })?;
        if refused {
            return Err(StoreError::WouldMove(moved));
        }
        Ok((named.into_iter().map(|(n, _)| n).collect(), moved))
    }

    /// Records an image that has no tag (pulled or loaded by digest) in `index.json`, so that
    /// `images` lists it as `<none>` and `otters prune` keeps it. Does nothing when an entry of
    /// that digest, tagged or not, is already there.
    pub fn add_untagged(&self, descriptor: &Descriptor) -> Result<(), StoreError> {
        let mut d = descriptor.clone();
        d.annotations.remove(ANN_REF_NAME);
        self.update_index(|entries| {
            if !entries.iter().any(|e| e.digest == d.digest) {
                entries.push(d);
            }
        })
    }

    /// Removes a tag. Returns false when no such tag existed.
    pub fn untag(&self, reference: &str) -> Result<bool, StoreError> {
        let name = tag_name(reference)?;
        let mut removed = false;
        self.update_index(|entries| {
            let before = entries.len();
            entries.retain(|e| e.ref_name() != Some(name.as_str()));
            removed = entries.len() != before;
        })?;
        Ok(removed)
    }

    /// `otters rm`: a tag (as [`Store::untag`]), or an image named by digest, `name@digest` or a
    /// unique digest prefix — then every `index.json` entry of that image goes (its `<none>`
    /// entry and its tags; several tags only with `force`, as `docker rmi` asks). Blobs stay
    /// until `otters prune`. `None` when nothing matches.
    pub fn remove(&self, reference: &str, force: bool) -> Result<Option<Removed>, StoreError> {
        let entries = self.read_index()?;
        let tag = tag_name(reference).ok();
        let is_tag = |n: &str| n == reference || tag.as_deref() == Some(n);
        if let Some(name) = entries
            .iter()
            .filter_map(|e| e.ref_name())
            .find(|n| is_tag(n))
        {
            let name = name.to_owned();
            self.untag(&name)?;
            return Ok(Some(Removed {
                digest: None,
                tags: vec![name],
            }));
        }
        let Some(d) = self.resolve(reference)? else {
            return Ok(None);
        };
        let mut outcome = Ok(None);
        self.update_index_if(|entries| {
            let tags: Vec<String> = entries
                .iter()
                .filter(|e| e.digest == d.digest)
                .filter_map(|e| e.ref_name().map(str::to_owned))
                .collect();
            if tags.len() > 1 && !force {
                outcome = Err(StoreError::SeveralTags {
                    digest: d.digest.clone(),
                    tags,
                });
                return false;
            }
            let before = entries.len();
            entries.retain(|e| e.digest != d.digest);
            if entries.len() == before {
                return false;
            }
            outcome = Ok(Some(Removed {
                digest: Some(d.digest.clone()),
                tags,
            }));
            true
        })?;
        outcome
    }

    /// Every entry of `index.json`: (ref name, or "" for untagged entries; descriptor).
    pub fn list(&self) -> Result<Vec<(String, Descriptor)>, StoreError> {
        Ok(self
            .read_index()?
            .into_iter()
            .map(|d| (d.ref_name().unwrap_or_default().to_owned(), d))
            .collect())
    }

    /// Finds an image by tag (as given, or with `:latest` added), by digest (`sha256:…`,
    /// `name@sha256:…`) or by a unique prefix of at least 4 hex digits.
    pub fn resolve(&self, reference: &str) -> Result<Option<Descriptor>, StoreError> {
        let entries = self.read_index()?;
        let by_name = |n: &str| entries.iter().find(|e| e.ref_name() == Some(n)).cloned();
        if let Some(d) = by_name(reference) {
            return Ok(Some(d));
        }
        if let Ok(name) = tag_name(reference) {
            if let Some(d) = by_name(&name) {
                return Ok(Some(d));
            }
        }
        let digest_part = reference.rsplit_once('@').map_or(reference, |(_, d)| d);
        if let Ok(digest) = Digest::parse(digest_part) {
            if let Some(d) = entries.iter().find(|e| e.digest == digest) {
                let mut d = d.clone();
                d.annotations.remove(ANN_REF_NAME);
                return Ok(Some(d));
            }
            if self.has_blob(&digest) {
                let bytes = self.read_blob(&digest)?;
                let media_type = media_type_of(&bytes).unwrap_or_else(|| MANIFEST_V1.to_owned());
                return self.put_manifest(&bytes, &media_type).map(Some);
            }
            return Ok(None);
        }
        let prefix = reference.strip_prefix("sha256:").unwrap_or(reference);
        if prefix.len() >= 4 && prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut hits: Vec<&Descriptor> = entries
                .iter()
                .filter(|e| e.digest.hex().starts_with(prefix))
                .collect();
            hits.dedup_by(|a, b| a.digest == b.digest);
            hits.sort_by(|a, b| a.digest.cmp(&b.digest));
            hits.dedup_by(|a, b| a.digest == b.digest);
            return match hits.as_slice() {
                [] => Ok(None),
                [one] => {
                    let mut d = (*one).clone();
                    d.annotations.remove(ANN_REF_NAME);
                    Ok(Some(d))
                }
                _ => Err(StoreError::Ambiguous(reference.to_owned())),
            };
        }
        Ok(None)
    }

    /// The image entries of `index.json`: tags and untagged images, without the entries that keep
    /// referrers reachable for other layout tools (see [`crate::store::referrers`]).
    pub(in crate::store) fn read_index(&self) -> Result<Vec<Descriptor>, StoreError> {
        let mut entries = self.read_index_file()?;
        entries.retain(|e| !is_referrer_entry(e));
        Ok(entries)
    }

    /// Every entry of `index.json`, referrer entries included.
    fn read_index_file(&self) -> Result<Vec<Descriptor>, StoreError> {
        let path = self.index_path();
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("read", &path)(e).into()),
        };
        let index =
            ManifestDoc::parse(&bytes).map_err(|source| StoreError::BadIndex { path, source })?;
        Ok(index.manifests)
    }

    pub(super) fn write_index(&self, entries: &[Descriptor]) -> Result<(), StoreError> {
        let doc = index_json(entries);
        let bytes = to_compact(&doc).unwrap_or_default();
        self.write_atomic(&self.index_path(), &bytes)
    }

    /// Read-modify-write of `index.json` under the exclusive lock. Entries are kept sorted by
    /// ref name then digest, so the file's bytes do not depend on the order of operations.
    /// A batch handle first makes its blobs durable, so no entry ever points at one that is not.
    fn update_index(&self, f: impl FnOnce(&mut Vec<Descriptor>)) -> Result<(), StoreError> {
        self.update_index_if(|entries| {
            f(entries);
            true
        })
    }

    /// [`Store::update_index`] whose change can be called off: nothing is written when `f`
    /// returns false.
    fn update_index_if(
        &self,
        f: impl FnOnce(&mut Vec<Descriptor>) -> bool,
    ) -> Result<(), StoreError> {
        self.sync_batch()?;
        let _lock = self.lock_index()?;
        self.rewrite_index_locked(|all| {
            // `f` sees the images only; the referrer entries stay as they are.
            let (mut images, referrers): (Vec<_>, Vec<_>) = std::mem::take(all)
                .into_iter()
                .partition(|e| !is_referrer_entry(e));
            let changed = f(&mut images);
            *all = images;
            all.extend(referrers);
            changed
        })
    }

    /// Read-modify-write of every entry of `index.json`, referrer entries included; the caller
    /// holds the index lock. Nothing is written when `f` returns false.
    pub(in crate::store) fn rewrite_index_locked(
        &self,
        f: impl FnOnce(&mut Vec<Descriptor>) -> bool,
    ) -> Result<(), StoreError> {
        let mut entries = self.read_index_file()?;
        if !f(&mut entries) {
            return Ok(());
        }
        entries.sort_by(|a, b| (a.ref_name(), &a.digest).cmp(&(b.ref_name(), &b.digest)));
        self.write_index(&entries)
    }

    /// Takes the exclusive lock every `index.json` update holds (and `otters prune`, for its
    /// whole run).
    pub(in crate::store) fn lock_index(&self) -> Result<IndexLock, StoreError> {
        let path = self.root.join("index.json.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err("create lock file", &path))?;
        // Rust 1.89's `File::lock` is flock(2): released by the kernel when the process dies, so a
        // killed build never leaves the store locked.
        file.lock().map_err(io_err("lock", &path))?;
        Ok(IndexLock(file))
    }
}

/// Holds `index.json.lock`; dropping it releases the lock.
pub(in crate::store) struct IndexLock(#[allow(dead_code)] File);

/// The canonical `index.json` document for these entries.
pub fn index_json(entries: &[Descriptor]) -> Value {
    Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", INDEX_V1)
        .with(
            "manifests",
            Value::Array(entries.iter().map(Descriptor::to_json).collect()),
        )
}
