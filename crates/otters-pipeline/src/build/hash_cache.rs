//! The file-hash cache: (path, device, inode, size, mtime, ctime) → blob digest, so a rebuild with
//! nothing changed neither re-reads nor re-hashes large inputs.
//!
//! Takes: file metadata and digests. Returns: remembered digests. Must never: change a build's
//! output — a hit is used only when the blob is already in the store, and entries are recorded
//! only for files whose mtime is older than [`RACY_WINDOW`] and whose stamp did not change while
//! they were read (a file rewritten within one timestamp tick of being hashed could otherwise keep
//! a stale entry: git's "racily clean" problem). Any later write moves the mtime, and any later
//! `touch -d` that puts it back moves the ctime, which is part of the key. The file lives at `$OTTERS_HOME/cache/blobs.json`; a missing or unreadable cache is
//! an empty one, and concurrent writers simply replace each other's file atomically.

use otters_oci::Digest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Files modified this recently are hashed but not remembered.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Bumped whenever the meaning of a key or of the stored bytes changes.
const FORMAT: u32 = 1;

/// A remembered blob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedBlob {
    pub digest: Digest,
    pub size: u64,
}

#[derive(Default, Serialize, Deserialize)]
struct CacheFile {
    format: u32,
    entries: BTreeMap<String, CachedBlob>,
}

/// The cache, loaded in memory for one build.
#[derive(Debug)]
pub struct HashCache {
    path: PathBuf,
    entries: BTreeMap<String, CachedBlob>,
    dirty: bool,
    now: SystemTime,
}

/// The part of a file's metadata that changes whenever its content might have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Stamp {
    pub fn of(meta: &fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }

    /// The stamp of an `lstat` (as [`crate::build::nofollow::stat_at`] gives it): the same values
    /// as [`Stamp::of`] the file's handle.
    #[allow(clippy::useless_conversion)] // the field types vary by target
    pub fn of_stat(st: &rustix::fs::Stat) -> Self {
        Self {
            dev: u64::from(st.st_dev),
            ino: u64::from(st.st_ino),
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
            ctime_ns: i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
        }
    }

    /// The stamp as fixed-width bytes, fed to a tree's key (no text formatted per file).
    pub fn feed(&self, h: &mut impl sha2::Digest) {
        h.update(self.dev.to_le_bytes());
        h.update(self.ino.to_le_bytes());
        h.update(self.size.to_le_bytes());
        h.update(self.mtime_ns.to_le_bytes());
        h.update(self.ctime_ns.to_le_bytes());
    }

    /// The key text for this stamp (used for files).
    pub fn key(&self) -> String {
        format!(
            "{}:{}:{}:{}:{}",
            self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns
        )
    }
}

impl HashCache {
    /// Loads `path`; any problem gives an empty cache.
    pub fn load(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let entries = fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<CacheFile>(&b).ok())
            .filter(|f| f.format == FORMAT)
            .map(|f| f.entries)
            .unwrap_or_default();
        Self {
            path,
            entries,
            dirty: false,
            now: SystemTime::now(),
        }
    }

    /// The key of a regular file.
    pub fn file_key(path: &Path, stamp: &Stamp) -> String {
        format!("file:{}:{}", stamp.key(), path.display())
    }

    pub fn get(&self, key: &str) -> Option<&CachedBlob> {
        self.entries.get(key)
    }

    /// True when a file with this stamp is old enough to be remembered.
    pub fn settled(&self, stamp: &Stamp) -> bool {
        let Ok(now) = self.now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let limit = i128::try_from(now.saturating_sub(RACY_WINDOW).as_nanos()).unwrap_or(i128::MAX);
        stamp.mtime_ns < limit
    }

    pub fn insert(&mut self, key: String, blob: CachedBlob) {
        if self.entries.get(&key) != Some(&blob) {
            self.entries.insert(key, blob);
            self.dirty = true;
        }
    }

    /// Writes the cache back (temp file + fsync + rename) when it changed.
    pub fn save(&self) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        // Temp files live in their own directory, locked while written, so the ones a killed
        // build left behind can be collected without touching the cache itself.
        let tmp_dir = dir.join(".tmp");
        fs::create_dir_all(&tmp_dir)?;
        otters_oci::store::layout::collect_stale_temps(
            &tmp_dir,
            otters_oci::store::layout::STALE_TEMP_AGE,
        );
        let mut tmp =
            otters_oci::store::layout::locked_temp(&tmp_dir, "cache-").map_err(io::Error::other)?;
        let doc = CacheFile {
            format: FORMAT,
            entries: self.entries.clone(),
        };
        serde_json::to_writer(&mut tmp, &doc)?;
        tmp.flush()?;
        tmp.as_file().sync_all()?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_ignores_fresh_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        fs::write(&f, "x").unwrap();
        let stamp = Stamp::of(&fs::metadata(&f).unwrap());
        let mut c = HashCache::load(dir.path().join("cache/blobs.json"));
        assert!(!c.settled(&stamp), "a file written just now is racy");
        let key = HashCache::file_key(&f, &stamp);
        c.insert(
            key.clone(),
            CachedBlob {
                digest: Digest::of(b"x"),
                size: 1,
            },
        );
        c.save().unwrap();
        let c2 = HashCache::load(dir.path().join("cache/blobs.json"));
        assert_eq!(c2.get(&key).unwrap().digest, Digest::of(b"x"));
        fs::write(dir.path().join("cache/blobs.json"), "garbage").unwrap();
        assert!(HashCache::load(dir.path().join("cache/blobs.json"))
            .get(&key)
            .is_none());
    }
}
