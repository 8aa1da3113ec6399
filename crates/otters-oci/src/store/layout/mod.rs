//! The local store: an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/`) on disk.
//!
//! Takes: a root directory. Returns: blobs by digest and manifests by tag. Must never: leave a
//! partly written file under a final name — every write goes to `.tmp/` in the same layout, is
//! fully written, then renamed into place — let `index.json` point at a blob that is not durable,
//! or update `index.json` without holding `index.json.lock`. A plain [`Store`] fsyncs each blob
//! before its rename; a batch handle ([`Store::batched`], used by a build) renames blobs without
//! fsync and makes them all durable in one pass ([`Store::sync_batch`]) before any index change,
//! as git's batch fsync mode does: a crash before that pass may lose a blob, never leave a tag to
//! it. A blob already in place whose size is not the written one (lost write-back after a power
//! cut) is replaced, and every reader checks a blob's digest as it reads it.
//! Blob writes need no lock: they are content-addressed, so two writers of one blob write the
//! same bytes. A process killed at any point leaves at most stray files in `.tmp/`, and those are
//! collected: every temp file is `flock`ed by its writer for as long as it is open (the kernel
//! drops the lock when the writer dies), and [`Store::open`] removes the files in `.tmp/` that no
//! live process holds and that have not changed for [`STALE_TEMP_AGE`].
//!
//! One file per concern, all over one [`Store`]: `blobs` (reading, writing and placing blobs;
//! [`BlobWriter`]), `index` (`index.json`: tags, resolution, the index lock), `lease` (what a
//! running build, pull or load holds against `otters prune`), `batch` (the batch handle and its
//! one fsync pass), `files` (temp files: locked, collected when stale, written atomically).

mod batch;
mod blobs;
mod files;
mod index;
mod lease;
#[cfg(test)]
mod tests;

pub use blobs::BlobWriter;
pub use files::{collect_stale_temps, locked_temp};
pub use index::index_json;
pub use lease::LEASES_DIR;

use crate::path_io::{io_err, PathIoError};
use crate::spec::digest::Digest;
use crate::store::refname::RefNameError;
use batch::Batch;
use lease::Lease;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Size of the copy buffer: large enough that syscalls and hashing calls are amortised.
pub const COPY_BUFFER: usize = 1 << 20;

/// How many copy buffers the read/hash and write threads pass between them.
pub const PIPELINE_BUFFERS: usize = 4;

/// Every this many bytes written, the blob writer asks its flusher thread (`blobs::Flusher`) to `fdatasync` the file:
/// write-back then runs while reading and hashing go on, and the final fsync (or the batch's
/// pass) waits only for the tail. Measured on a 512 MiB blob (docs/performance.md): 4, 8, 16
/// and 32 MiB all cut the build from ~1.7x to ~1.2x the hashing floor; 64 MiB gained little.
pub const WRITEBACK_STEP: u64 = 16 << 20;

/// An unlocked temp file this old is left over by a killed writer. (Every writer of this version
/// holds a lock; the age only protects a writer that predates the lock.)
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Largest JSON document (manifest, config, index) [`Store::read_blob`] reads into memory.
pub const MAX_JSON_BLOB: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error("{} is not a valid OCI index: {source}; move it away to start an empty store", path.display())]
    BadIndex {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("blob {0} is not in the store; rebuild or pull the image again")]
    MissingBlob(Digest),
    #[error("blob {expected} in the store is corrupt: {path} holds content with digest {actual}; remove that file, then run `otters pull` (or rebuild the image) to fetch it again", path = path.display())]
    Corrupt {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("blob {digest} is {size} bytes, more than the {MAX_JSON_BLOB} bytes allowed for a JSON document")]
    TooLarge { digest: Digest, size: u64 },
    #[error(transparent)]
    RefName(#[from] RefNameError),
    #[error("digest prefix `{0}` matches more than one image; give more digits")]
    Ambiguous(String),
    #[error("{} tag(s) already name other images: {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    WouldMove(Vec<MovedTag>),
    #[error("image {digest} has {} tags ({})", tags.len(), tags.join(", "))]
    SeveralTags { digest: Digest, tags: Vec<String> },
    #[error("{} is not a valid referrers index: {why}; remove it (the referrers it listed can be pulled or attached again)", path.display())]
    BadReferrers { path: PathBuf, why: String },
}

/// A tag [`Store::tag_all`] moved (or would move) from one image to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovedTag {
    pub name: String,
    pub from: Digest,
    pub to: Digest,
}

impl std::fmt::Display for MovedTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (now {}, would be {})",
            self.name,
            self.from.short(),
            self.to.short()
        )
    }
}

/// What [`Store::remove`] took out of `index.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    /// The image removed, when it was named by digest (`None`: one tag was removed).
    pub digest: Option<Digest>,
    /// The tags removed.
    pub tags: Vec<String>,
}

/// An OCI image layout directory used as otters' image store.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
    /// Set on a batch handle: the blobs written or reused through it, not yet made durable.
    batch: Option<Arc<Batch>>,
    /// Set on a leased handle (and the handles made from it): every blob it writes or reuses is
    /// recorded there first, so `otters prune` keeps it while this process lives.
    lease: Option<Arc<Lease>>,
}

impl Store {
    /// Opens (creating when needed) the layout at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let store = Self {
            root: root.into(),
            batch: None,
            lease: None,
        };
        for dir in [store.root.join("blobs/sha256"), store.tmp_dir()] {
            fs::create_dir_all(&dir).map_err(io_err("create directory", &dir))?;
        }
        // Best effort: a temp file that cannot be collected now is collected by a later open.
        collect_stale_temps(&store.tmp_dir(), STALE_TEMP_AGE);
        let layout = store.root.join("oci-layout");
        if !layout.exists() {
            store.write_atomic(&layout, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        if !store.index_path().exists() {
            let _lock = store.lock_index()?;
            if !store.index_path().exists() {
                store.write_index(&[])?;
            }
        }
        Ok(store)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(super) fn tmp_dir(&self) -> PathBuf {
        self.root.join(".tmp")
    }
}
