//! Where blobs came from: a small record of `digest → registry/repository` pairs, kept beside the
//! store, so a push can mount a blob from another repository of the same registry instead of
//! uploading it (inherited parent layers, re-tagged images).
//!
//! Takes: the store root. Returns: repositories known to hold a blob. Must never: be needed for
//! correctness — a lost or unreadable record only costs uploads — or be written in place.

use crate::reference::Reference;
use crate::spec::digest::Digest;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// At most this many repositories are remembered per blob.
const MAX_PER_BLOB: usize = 8;

#[derive(Debug, Default)]
pub struct Sources {
    path: Option<PathBuf>,
    map: BTreeMap<String, BTreeSet<String>>,
    dirty: bool,
}

impl Sources {
    /// Loads the record kept beside the store at `store_root` (empty when missing or unreadable).
    pub fn load(store_root: &Path) -> Sources {
        let path = store_root.with_file_name("blob-sources.json");
        let map = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Sources {
            path: Some(path),
            map,
            dirty: false,
        }
    }

    /// Notes that `r`'s repository holds `digest`.
    pub fn add(&mut self, digest: &Digest, r: &Reference) {
        let set = self.map.entry(digest.to_string()).or_default();
        if set.len() < MAX_PER_BLOB && set.insert(r.name()) {
            self.dirty = true;
        }
    }

    /// Repositories on `registry` known to hold `digest`.
    pub fn repositories_on(&self, digest: &Digest, registry: &str) -> Vec<String> {
        let prefix = format!("{registry}/");
        self.map
            .get(digest.as_str())
            .into_iter()
            .flatten()
            .filter_map(|n| n.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    }

    /// Writes the record back (temp file + rename) when it changed. Errors are returned for the
    /// caller to ignore or report; they never affect a transfer.
    pub fn save(&mut self) -> std::io::Result<()> {
        let (Some(path), true) = (&self.path, self.dirty) else {
            return Ok(());
        };
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".blob-sources.")
            .tempfile_in(dir)?;
        let bytes = serde_json::to_vec(&self.map).map_err(std::io::Error::other)?;
        std::io::Write::write_all(&mut tmp, &bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_reloads() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = dir.path().join("store");
        let mut s = Sources::load(&store);
        let r = Reference::parse("127.0.0.1:5000/a/parent:1").unwrap_or_else(|e| panic!("{e}"));
        let aa = Digest::of(b"aa");
        s.add(&aa, &r);
        s.save().unwrap_or_else(|e| panic!("{e}"));
        let s = Sources::load(&store);
        assert_eq!(
            s.repositories_on(&aa, "127.0.0.1:5000"),
            vec!["a/parent".to_owned()]
        );
        assert!(s.repositories_on(&aa, "127.0.0.1:5001").is_empty());
    }
}
