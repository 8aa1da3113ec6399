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

use crate::path_io::{io_err, PathIoError};
use crate::spec::descriptor::{Descriptor, ManifestDoc, ANN_REF_NAME, INDEX_V1, MANIFEST_V1};
use crate::spec::digest::{Digest, Hasher, HashingWriter};
use crate::spec::media_type::MediaType;
use crate::store::referrers::is_referrer_entry;
use crate::store::refname::{tag_name, RefNameError};
use crate::store::verify::VerifiedBlob;
use otters_core::json::{to_compact, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use tempfile::NamedTempFile;

/// Size of the copy buffer: large enough that syscalls and hashing calls are amortised.
pub const COPY_BUFFER: usize = 1 << 20;

/// How many copy buffers the read/hash and write threads pass between them.
pub const PIPELINE_BUFFERS: usize = 4;

/// Every this many bytes written, the blob writer asks its syncer thread to `fdatasync` the file:
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
    #[error("image {digest} has {} tags ({}); remove them one by one, or pass --force to remove the image with all its tags", tags.len(), tags.join(", "))]
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

/// Where leases live, under the store root.
pub const LEASES_DIR: &str = "leases";

/// A lease, as containerd keeps them: a file in `leases/` that its process holds `flock`ed for
/// as long as it lives, listing (one hex digest a line) the blobs it is writing or reusing before
/// it tags them. `otters prune` keeps every blob a live lease lists; the kernel drops the lock
/// of a killed process, and prune then removes its lease file.
#[derive(Debug)]
struct Lease {
    file: Mutex<File>,
    path: PathBuf,
}

impl Lease {
    fn record(&self, digest: &Digest) -> Result<(), StoreError> {
        let mut line = digest.hex().to_owned();
        line.push('\n');
        // One unbuffered append: complete before the caller looks for or renames the blob.
        self.file
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_all(line.as_bytes())
            .map_err(|e| io_err("write", &self.path)(e).into())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The blob files a batch handle has placed or reused since its last [`Store::sync_batch`].
#[derive(Debug, Default)]
struct Batch {
    pending: Mutex<Vec<PathBuf>>,
}

impl Batch {
    fn record(&self, path: PathBuf) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path);
    }

    fn take(&self) -> Vec<PathBuf> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }
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

    /// A handle on the same store whose blob writes skip the per-blob fsync: blobs are still
    /// written in full and renamed into place, and [`Store::sync_batch`] (which every `index.json`
    /// update through this handle runs first) makes every blob written or reused through it
    /// durable in one pass. A build writes through one, so its blobs cost one fsync pass.
    #[must_use]
    pub fn batched(&self) -> Store {
        Store {
            root: self.root.clone(),
            batch: Some(Arc::default()),
            lease: self.lease.clone(),
        }
    }

    /// A handle on the same store that holds a lease (see `Lease`) until it and every handle
    /// made from it are dropped: `otters build`, `pull`, `load` and `run` write through one, so a
    /// concurrent `otters prune` never removes a blob they wrote or reused but have not tagged yet.
    /// A store this user cannot write (a shared, read-only one) gets no lease: nothing can be
    /// written into it that a prune could race with.
    pub fn leased(&self) -> Result<Store, StoreError> {
        match self.take_lease() {
            Err(StoreError::Io(e))
                if matches!(
                    e.source.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                Ok(self.clone())
            }
            other => other,
        }
    }

    fn take_lease(&self) -> Result<Store, StoreError> {
        let dir = self.root.join(LEASES_DIR);
        fs::create_dir_all(&dir).map_err(io_err("create directory", &dir))?;
        let (file, path) = tempfile::Builder::new()
            .prefix(&format!("{}-", std::process::id()))
            .tempfile_in(&dir)
            .map_err(io_err("create a lease in", &dir))?
            .keep()
            .map_err(|e| io_err("create a lease in", &dir)(e.error))?;
        file.lock().map_err(io_err("lock", &path))?;
        Ok(Store {
            root: self.root.clone(),
            batch: self.batch.clone(),
            lease: Some(Arc::new(Lease {
                file: Mutex::new(file),
                path,
            })),
        })
    }

    /// Every blob a live lease lists. A lease file no live process holds (its writer died) is
    /// removed; a line still being written (no newline yet) does not count.
    pub(super) fn leased_digests(&self) -> HashSet<Digest> {
        let mut out = HashSet::new();
        let dir = self.root.join(LEASES_DIR);
        let Ok(entries) = fs::read_dir(&dir) else {
            return out;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Some(mut f) = open_regular_nofollow(&path) else {
                continue;
            };
            if f.try_lock().is_ok() {
                let _ = fs::remove_file(&path);
                continue;
            }
            let mut text = String::new();
            if f.read_to_string(&mut text).is_err() {
                continue;
            }
            let complete = text.rfind('\n').map_or("", |i| &text[..i]);
            out.extend(complete.lines().filter_map(|l| Digest::from_hex(l).ok()));
        }
        out
    }

    /// Records `digest` in this handle's lease, if it has one.
    fn lease(&self, digest: &Digest) -> Result<(), StoreError> {
        match &self.lease {
            Some(l) => l.record(digest),
            None => Ok(()),
        }
    }

    /// Makes durable every blob this batch handle wrote or reused since the last call: an fsync
    /// of each file, then one of `blobs/sha256/` (the renames). Nothing to do on a plain handle.
    pub fn sync_batch(&self) -> Result<(), StoreError> {
        let Some(batch) = &self.batch else {
            return Ok(());
        };
        let mut pending = batch.take();
        if pending.is_empty() {
            return Ok(());
        }
        pending.sort();
        pending.dedup();
        let sync = |path: &PathBuf| File::open(path).and_then(|f| f.sync_all());
        let synced = pending
            .iter()
            .try_for_each(|path| -> Result<(), StoreError> {
                match sync(path) {
                    // A concurrent `prune` moves a blob aside while it checks the leases, and
                    // puts a leased one back before it lets go of the index lock: wait for that
                    // lock, then look again. A blob still missing was not leased: an error.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        drop(self.lock_index()?);
                        Ok(sync(path).map_err(io_err("sync", path))?)
                    }
                    other => Ok(other.map_err(io_err("sync", path))?),
                }
            });
        if let Err(e) = synced {
            // Not durable: keep them pending, so a retry syncs them again.
            for path in pending {
                batch.record(path);
            }
            return Err(e);
        }
        let dir = self.root.join("blobs/sha256");
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err("sync", &dir))?;
        Ok(())
    }

    pub(super) fn tmp_dir(&self) -> PathBuf {
        self.root.join(".tmp")
    }

    fn index_path(&self) -> PathBuf {
        self.root.join("index.json")
    }

    /// Where the blob with this digest lives (whether or not it exists).
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    /// Whether the blob is stored. Every writer asks this before reusing a stored blob instead of
    /// writing its own copy, so a blob found here has its mtime set to now: `otters prune` (see
    /// [`crate::store::prune`]) never removes a blob touched within its grace period, and a build that
    /// reuses an untagged blob keeps it alive until the build tags its image.
    /// On a batch handle, a blob found is also made durable by the batch's sync: the writer that
    /// placed it may not have synced it yet.
    pub fn has_blob(&self, digest: &Digest) -> bool {
        // Leased before it is looked for: a prune that moves it aside after this sees the lease.
        // A lease that cannot be written makes the blob count as absent (it is written again).
        if self.lease(digest).is_err() {
            return false;
        }
        let path = self.blob_path(digest);
        let found = refresh(&path);
        if found {
            if let Some(batch) = &self.batch {
                batch.record(path);
            }
        }
        found
    }

    /// The size of a stored blob, refreshed (and recorded by a batch) as [`Store::has_blob`]
    /// does; `None` when absent.
    pub fn stored_size(&self, digest: &Digest) -> Option<u64> {
        if !self.has_blob(digest) {
            return None;
        }
        fs::metadata(self.blob_path(digest)).ok().map(|m| m.len())
    }

    pub fn open_blob(&self, digest: &Digest) -> Result<File, StoreError> {
        let path = self.blob_path(digest);
        File::open(&path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                StoreError::MissingBlob(digest.clone())
            } else {
                io_err("open", &path)(e).into()
            }
        })
    }

    /// Opens a blob for streaming; its bytes are checked against `digest` as they are read (see
    /// [`VerifiedBlob`]). Every layer and binary read from the store goes through this.
    pub fn open_verified(&self, digest: &Digest) -> Result<VerifiedBlob, StoreError> {
        let file = self.open_blob(digest)?;
        Ok(VerifiedBlob::new(
            file,
            digest.clone(),
            self.blob_path(digest),
        ))
    }

    /// Reads a small blob (a JSON document) and checks its digest.
    pub fn read_blob(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.blob_path(digest);
        let file = self.open_blob(digest)?;
        let size = file.metadata().map_err(io_err("stat", &path))?.len();
        if size > MAX_JSON_BLOB {
            return Err(StoreError::TooLarge {
                digest: digest.clone(),
                size,
            });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(MAX_JSON_BLOB)
            .read_to_end(&mut bytes)
            .map_err(io_err("read", &path))?;
        let actual = Digest::of(&bytes);
        if &actual != digest {
            return Err(StoreError::Corrupt {
                path,
                expected: digest.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(bytes)
    }

    /// Starts a streamed blob write; bytes are hashed as they are written.
    pub fn blob_writer(&self) -> Result<BlobWriter<'_>, StoreError> {
        let tmp = locked_temp(&self.tmp_dir(), "blob-")?;
        let file = tmp.reopen().map_err(io_err("open", tmp.path()))?;
        Ok(BlobWriter {
            store: self,
            tmp,
            out: HashingWriter::new(BufWriter::with_capacity(COPY_BUFFER, file)),
        })
    }

    /// Streams `reader` into a blob, calling `progress` with each chunk's length.
    ///
    /// Three threads share the work: this one reads and hashes, a writer thread writes, and a
    /// syncer thread started by the writer flushes what is written every [`WRITEBACK_STEP`]
    /// bytes, so hashing, copying and write-back overlap instead of adding up; the last fsync
    /// comes at the end (or in the batch's pass, see [`Store::batched`]). (Flushing
    /// every 64 or 256 MiB to overlap write-back was measured and was slower on ext4.) Each byte is read once and hashed once; at most
    /// [`PIPELINE_BUFFERS`] buffers of [`COPY_BUFFER`] bytes are alive.
    pub fn put_blob_from_reader(
        &self,
        reader: impl Read,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(Digest, u64), StoreError> {
        self.put_blob_checked(reader, None, progress)
    }

    /// Streams a blob into the store only if its bytes hash to `expected`: content that does not
    /// match is never renamed into `blobs/` (its temp file is removed), whatever its real digest.
    pub fn put_blob_expecting(
        &self,
        reader: impl Read,
        expected: &Digest,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(Digest, u64), StoreError> {
        self.put_blob_checked(reader, Some(expected), progress)
    }

    fn put_blob_checked(
        &self,
        mut reader: impl Read,
        expected: Option<&Digest>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(Digest, u64), StoreError> {
        let tmp = locked_temp(&self.tmp_dir(), "blob-")?;
        let file = tmp.reopen().map_err(io_err("open", tmp.path()))?;
        let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<u8>, usize)>(PIPELINE_BUFFERS);
        let (empty_tx, empty_rx) = mpsc::sync_channel::<Vec<u8>>(PIPELINE_BUFFERS);
        for _ in 0..PIPELINE_BUFFERS {
            let _ = empty_tx.send(vec![0u8; COPY_BUFFER]);
        }
        let mut hasher = Hasher::new();
        let mut total = 0u64;
        let (read_result, write_result) = std::thread::scope(|s| {
            let writer = s.spawn(move || -> io::Result<()> {
                let file = &file;
                let (nudge, nudged) = mpsc::sync_channel::<()>(1);
                std::thread::scope(|s2| {
                    let syncer = s2.spawn(move || -> io::Result<()> {
                        for () in nudged {
                            file.sync_data()?;
                        }
                        Ok(())
                    });
                    let mut since = 0u64;
                    let mut out = file;
                    let wrote = full_rx.into_iter().try_for_each(|(buf, n)| {
                        out.write_all(&buf[..n])?;
                        let _ = empty_tx.send(buf);
                        since += n as u64;
                        if since >= WRITEBACK_STEP {
                            since = 0;
                            let _ = nudge.try_send(());
                        }
                        Ok::<(), io::Error>(())
                    });
                    drop(nudge);
                    let flushed = syncer
                        .join()
                        .unwrap_or_else(|_| Err(io::Error::other("the syncer panicked")));
                    wrote.and(flushed)
                })
            });
            let read_result = loop {
                // The writer has stopped (it failed): its error is reported below.
                let Ok(mut buf) = empty_rx.recv() else {
                    break Ok(());
                };
                let n = match reader.read(&mut buf) {
                    Ok(0) => break Ok(()),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                        let _ = full_tx.send((buf, 0));
                        continue;
                    }
                    Err(e) => break Err(e),
                };
                hasher.update(&buf[..n]);
                total += n as u64;
                progress(n as u64);
                if full_tx.send((buf, n)).is_err() {
                    break Ok(());
                }
            };
            drop(full_tx);
            let write_result = writer
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the blob writer thread panicked")));
            (read_result, write_result)
        });
        read_result.map_err(io_err("read input for", &self.root))?;
        write_result.map_err(io_err("write", tmp.path()))?;
        let digest = hasher.finish();
        if let Some(expected) = expected.filter(|e| **e != digest) {
            return Err(StoreError::Corrupt {
                path: tmp.path().to_owned(),
                expected: expected.to_string(),
                actual: digest.to_string(),
            });
        }
        self.place(tmp, &digest, total)?;
        Ok((digest, total))
    }

    /// Stores a blob held in memory.
    pub fn put_blob_bytes(&self, bytes: &[u8]) -> Result<(Digest, u64), StoreError> {
        let digest = Digest::of(bytes);
        let size = bytes.len() as u64;
        if self.stored_size(&digest) != Some(size) {
            let mut tmp = locked_temp(&self.tmp_dir(), "blob-")?;
            tmp.write_all(bytes).map_err(io_err("write", tmp.path()))?;
            self.place(tmp, &digest, size)?;
        }
        Ok((digest, size))
    }

    /// Moves a fully written temp file to its digest's name. A blob already there with this size
    /// is kept (ours holds the same bytes) and, on a plain handle, synced, since a batch writer
    /// may not have synced it yet; one of another size (write-back lost in a power cut) is
    /// replaced. A plain handle fsyncs the file before the rename and the directory after; a
    /// batch handle leaves both to [`Store::sync_batch`].
    fn place(&self, tmp: NamedTempFile, digest: &Digest, size: u64) -> Result<(), StoreError> {
        self.lease(digest)?;
        let target = self.blob_path(digest);
        if self.stored_size(digest) == Some(size) {
            if self.batch.is_none() {
                File::open(&target)
                    .and_then(|f| f.sync_all())
                    .map_err(io_err("sync", &target))?;
            }
            return Ok(());
        }
        match &self.batch {
            None => {
                tmp.as_file()
                    .sync_all()
                    .map_err(io_err("sync", tmp.path()))?;
                persist(tmp, &target)
            }
            Some(batch) => {
                tmp.persist(&target)
                    .map_err(|e| io_err("rename into", &target)(e.error))?;
                batch.record(target);
                Ok(())
            }
        }
    }

    /// Stores a manifest (or index) and returns its descriptor (with `artifactType` copied from
    /// the document when it has one).
    pub fn put_manifest(
        &self,
        bytes: &[u8],
        media_type: impl Into<MediaType>,
    ) -> Result<Descriptor, StoreError> {
        let (digest, size) = self.put_blob_bytes(bytes)?;
        let mut d = Descriptor::new(media_type, digest, size);
        d.artifact_type = artifact_type_of(bytes);
        Ok(d)
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
    /// referrers reachable for other layout tools (see [`super::referrers`]).
    pub(super) fn read_index(&self) -> Result<Vec<Descriptor>, StoreError> {
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

    fn write_index(&self, entries: &[Descriptor]) -> Result<(), StoreError> {
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
    pub(super) fn rewrite_index_locked(
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
    pub(super) fn lock_index(&self) -> Result<IndexLock, StoreError> {
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

    /// Writes `bytes` to `path` via a temp file in `.tmp/`, fsync and rename.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        let mut tmp = locked_temp(&self.tmp_dir(), "file-")?;
        tmp.write_all(bytes).map_err(io_err("write", tmp.path()))?;
        tmp.as_file()
            .sync_all()
            .map_err(io_err("sync", tmp.path()))?;
        persist(tmp, path)
    }
}

/// Holds `index.json.lock`; dropping it releases the lock.
pub(super) struct IndexLock(#[allow(dead_code)] File);

/// A new temp file in `dir`, `flock`ed for as long as it lives so that [`collect_stale_temps`]
/// never removes it. A collector that removed it between its creation and the lock is noticed
/// (the file has no link left) and a new one is made.
pub fn locked_temp(dir: &Path, prefix: &str) -> Result<NamedTempFile, StoreError> {
    use std::os::unix::fs::MetadataExt;
    for _ in 0..8 {
        let tmp = tempfile::Builder::new()
            // 0666 less the umask, as `cp` or `docker save` would create it: others may read what is
            // shared (a CI step, another user); the credentials file is the one kept 0600.
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .prefix(prefix)
            .tempfile_in(dir)
            .map_err(io_err("create a temporary file in", dir))?;
        tmp.as_file().lock().map_err(io_err("lock", tmp.path()))?;
        let linked = tmp
            .as_file()
            .metadata()
            .map_err(io_err("stat", tmp.path()))?
            .nlink();
        if linked > 0 {
            return Ok(tmp);
        }
    }
    Err(io_err("create a temporary file in", dir)(io::Error::other(
        "it was removed again and again while being created",
    ))
    .into())
}

/// Opens the regular file at `path` for reading with `O_NOFOLLOW | O_NONBLOCK` (never following a
/// link or blocking on a FIFO put in its place); `None` when that fails or it is not a regular file.
fn open_regular_nofollow(path: &Path) -> Option<File> {
    use rustix::fs::OFlags;
    let fd = rustix::fs::openat(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let f = File::from(fd);
    f.metadata().is_ok_and(|m| m.is_file()).then_some(f)
}

/// Removes the regular files in `dir` that no live process holds locked and that have not been
/// modified for `age`; returns how many went. Errors are ignored (the next call tries again).
pub fn collect_stale_temps(dir: &Path, age: std::time::Duration) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|d| d >= age);
        if !meta.file_type().is_file() || !old {
            continue;
        }
        let Some(f) = open_regular_nofollow(&path) else {
            continue;
        };
        if f.try_lock().is_ok() {
            // Removed while we hold the lock: a writer that locks after us sees no link left.
            if fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Sets the mtime of the regular file at `path` to now (without following a symlink); returns
/// whether it exists. A store that cannot be written (read-only, another user's) is only looked at.
fn refresh(path: &Path) -> bool {
    use rustix::fs::{AtFlags, Timespec, Timestamps, UTIME_NOW, UTIME_OMIT};
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        },
    };
    match rustix::fs::utimensat(rustix::fs::CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW) {
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => false,
        _ => fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()),
    }
}

fn persist(tmp: NamedTempFile, path: &Path) -> Result<(), StoreError> {
    tmp.persist(path)
        .map_err(|e| io_err("rename into", path)(e.error))?;
    if let Some(parent) = path.parent() {
        // The rename is durable only once the directory entry is.
        if let Ok(dir) = File::open(parent) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

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

fn json_field(bytes: &[u8], field: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    v.get(field)?.as_str().map(str::to_owned)
}

fn artifact_type_of(bytes: &[u8]) -> Option<String> {
    json_field(bytes, "artifactType")
}

fn media_type_of(bytes: &[u8]) -> Option<String> {
    json_field(bytes, "mediaType")
}

/// A blob being written: hash on the fly, then [`BlobWriter::commit`] renames it to its digest.
pub struct BlobWriter<'s> {
    store: &'s Store,
    tmp: NamedTempFile,
    out: HashingWriter<BufWriter<File>>,
}

impl BlobWriter<'_> {
    /// Flushes and renames the blob into place (fsynced first on a plain handle, see
    /// [`Store::batched`]); returns its digest and size.
    pub fn commit(self) -> Result<(Digest, u64), StoreError> {
        let (digest, size, buffered) = self.out.finish();
        let file = buffered
            .into_inner()
            .map_err(|e| io_err("write", self.tmp.path())(e.into_error()))?;
        drop(file);
        self.store.place(self.tmp, &digest, size)?;
        Ok((digest, size))
    }

    pub fn written(&self) -> u64 {
        self.out.written()
    }
}

impl Write for BlobWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_tags_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s")).unwrap();
        let (d, n) = store
            .put_blob_from_reader(&b"hello"[..], &mut |_| {})
            .unwrap();
        assert_eq!(d, Digest::of(b"hello"));
        assert_eq!(n, 5);
        assert_eq!(store.read_blob(&d).unwrap(), b"hello");
        let m = br#"{"schemaVersion":2,"artifactType":"x/y"}"#;
        let desc = store.put_manifest(m, MANIFEST_V1).unwrap();
        assert_eq!(desc.artifact_type.as_deref(), Some("x/y"));
        assert_eq!(store.tag("meteo", &desc).unwrap(), "meteo:latest");
        store.tag("b/c:1", &desc).unwrap();
        assert_eq!(store.resolve("meteo").unwrap().unwrap().digest, desc.digest);
        assert_eq!(
            store.resolve("meteo:latest").unwrap().unwrap().digest,
            desc.digest
        );
        assert_eq!(
            store.resolve(desc.digest.as_str()).unwrap().unwrap().digest,
            desc.digest
        );
        assert_eq!(
            store
                .resolve(&desc.digest.as_str()[7..14])
                .unwrap()
                .unwrap()
                .digest,
            desc.digest
        );
        assert!(store.resolve("nope").unwrap().is_none());
        let names: Vec<String> = store.list().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["b/c:1", "meteo:latest"]);
        assert!(store.untag("meteo").unwrap());
        assert!(!store.untag("meteo").unwrap());
        assert!(fs::read_dir(dir.path().join("s/.tmp"))
            .unwrap()
            .next()
            .is_none());
    }

    #[test]
    fn a_batch_places_whole_blobs_and_syncs_them_before_any_index_change() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s")).unwrap();
        let batch = store.batched();
        let pending = || batch.batch.as_ref().unwrap().pending.lock().unwrap().len();
        let (d, n) = batch
            .put_blob_from_reader(&b"hello"[..], &mut |_| {})
            .unwrap();
        assert_eq!((d.clone(), n), (Digest::of(b"hello"), 5));
        // Under its digest name in full at once, before the sync; no index entry yet.
        assert_eq!(fs::read(store.blob_path(&d)).unwrap(), b"hello");
        let mut w = batch.blob_writer().unwrap();
        w.write_all(b"streamed").unwrap();
        w.commit().unwrap();
        let desc = batch
            .put_manifest(br#"{"schemaVersion":2}"#, MANIFEST_V1)
            .unwrap();
        assert_eq!(pending(), 3);
        assert!(store.list().unwrap().is_empty());
        // A reused blob is synced too: its writer may not have synced it.
        assert!(batch.has_blob(&d));
        assert_eq!(pending(), 4);
        batch.tag("meteo", &desc).unwrap();
        assert_eq!(pending(), 0);
        assert_eq!(store.resolve("meteo").unwrap().unwrap().digest, desc.digest);
        // A plain handle records nothing.
        assert!(store.batch.is_none());
        store.sync_batch().unwrap();
    }

    /// What `prune` does to a leased blob it looked at before the lease was taken: under the index
    /// lock, moved aside, the leases read again, put back. A sync in that window waits for the
    /// lock instead of failing (the race `store_hygiene`'s concurrent builds and prunes hit).
    #[test]
    fn a_sync_waits_for_a_prune_that_has_a_leased_blob_aside() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s")).unwrap();
        let batch = store.batched();
        let (d, _) = batch.put_blob_bytes(b"leased").unwrap();
        let path = store.blob_path(&d);
        let aside = store.tmp_dir().join("prune-test");
        let (moved, wait) = std::sync::mpsc::channel();
        let prune = {
            let (store, path, aside) = (store.clone(), path.clone(), aside.clone());
            std::thread::spawn(move || {
                let _lock = store.lock_index().unwrap();
                fs::rename(&path, &aside).unwrap();
                moved.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(200));
                fs::rename(&aside, &path).unwrap();
            })
        };
        wait.recv().unwrap();
        batch.sync_batch().unwrap();
        prune.join().unwrap();
        assert_eq!(store.read_blob(&d).unwrap(), b"leased");
    }

    #[test]
    fn a_blob_of_the_wrong_size_under_its_name_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s")).unwrap();
        let d = Digest::of(b"hello");
        // What a lost write-back leaves after a power cut: the name, not all the bytes.
        fs::write(store.blob_path(&d), b"he").unwrap();
        store.put_blob_bytes(b"hello").unwrap();
        assert_eq!(store.read_blob(&d).unwrap(), b"hello");
        fs::write(store.blob_path(&d), b"").unwrap();
        let batch = store.batched();
        batch
            .put_blob_from_reader(&b"hello"[..], &mut |_| {})
            .unwrap();
        batch.sync_batch().unwrap();
        assert_eq!(store.read_blob(&d).unwrap(), b"hello");
    }

    #[test]
    fn stale_temp_files_are_collected_but_locked_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tmp = dir.path().join(".tmp");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        let make = |name: &str, aged: bool| {
            let f = File::create(tmp.join(name)).unwrap();
            if aged {
                f.set_modified(old).unwrap();
            }
            f
        };
        drop(make("blob-stale", true));
        drop(make("fresh", false));
        let held = make("blob-held", true);
        held.lock().unwrap();
        // A live writer's file, made the way the store makes them.
        let writer = store.blob_writer().unwrap();
        fs::create_dir(tmp.join("a-dir")).unwrap();
        drop(Store::open(dir.path()).unwrap());
        let mut left: Vec<String> = fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("blob-") || n == "blob-held" || n == "blob-stale")
            .collect();
        left.sort();
        assert_eq!(left, ["a-dir", "blob-held", "fresh"]);
        assert_eq!(
            collect_stale_temps(&tmp, std::time::Duration::ZERO),
            1,
            "only `fresh` is unlocked"
        );
        assert!(tmp.join("blob-held").exists());
        let (d, _) = writer.commit().unwrap();
        assert!(
            store.has_blob(&d),
            "the collector left the live writer's file alone"
        );
        drop(held);
        assert_eq!(collect_stale_temps(&tmp, std::time::Duration::ZERO), 1);
    }

    #[test]
    fn corrupt_blob_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (d, _) = store.put_blob_bytes(b"{}").unwrap();
        fs::write(store.blob_path(&d), b"[]").unwrap();
        assert!(matches!(
            store.read_blob(&d),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
