//! Blobs: looked up, read with their digest checked, streamed in (hashed while written) and
//! placed under their digest's name.

use super::files::{locked_temp, persist};
use super::{Store, StoreError, COPY_BUFFER, MAX_JSON_BLOB, PIPELINE_BUFFERS, WRITEBACK_STEP};
use crate::path_io::io_err;
use crate::spec::descriptor::Descriptor;
use crate::spec::digest::{Digest, Hasher, HashingWriter};
use crate::spec::media_type::MediaType;
use crate::store::verify::VerifiedBlob;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use tempfile::NamedTempFile;

impl Store {
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
            flusher: Flusher::default(),
        })
    }

    /// Streams `reader` into a blob, calling `progress` with each chunk's length.
    ///
    /// Three threads share the work: this one reads and hashes, a writer thread writes, and the
    /// writer's `Flusher` syncs what is written every [`WRITEBACK_STEP`] bytes, so hashing, copying and write-back overlap instead of adding up; the last fsync
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
                let mut write_back = Flusher::default();
                let mut out = &file;
                let wrote = full_rx.into_iter().try_for_each(|(buf, n)| {
                    out.write_all(&buf[..n])?;
                    let _ = empty_tx.send(buf);
                    write_back.wrote(n, || file.try_clone())
                });
                let flushed = write_back.finish();
                wrote.and(flushed)
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

fn json_field(bytes: &[u8], field: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    v.get(field)?.as_str().map(str::to_owned)
}

fn artifact_type_of(bytes: &[u8]) -> Option<String> {
    json_field(bytes, "artifactType")
}

pub(super) fn media_type_of(bytes: &[u8]) -> Option<String> {
    json_field(bytes, "mediaType")
}

/// A blob being written: hash on the fly, then [`BlobWriter::commit`] renames it to its digest.
/// Write-back runs beside the writing (see `Flusher`).
pub struct BlobWriter<'s> {
    store: &'s Store,
    tmp: NamedTempFile,
    out: HashingWriter<BufWriter<File>>,
    pub(super) flusher: Flusher,
}

/// Write-back beside a blob's writing: past every [`WRITEBACK_STEP`] bytes written, a thread
/// (started at the first step, so a small blob starts none) syncs what has reached the file, so
/// hashing, copying and write-back overlap instead of all waiting for the last fsync.
/// [`Flusher::finish`] stops it and says whether every sync succeeded; dropping it stops it too.
#[derive(Default)]
pub(super) struct Flusher {
    since: u64,
    nudge: Option<mpsc::SyncSender<()>>,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
}

impl Flusher {
    /// Counts `n` more bytes written; at each step, asks for a sync (one asked for and not yet
    /// begun covers this one too), starting the thread on `file`, a second handle on the blob's
    /// open file, the first time.
    pub(super) fn wrote(
        &mut self,
        n: usize,
        file: impl FnOnce() -> io::Result<File>,
    ) -> io::Result<()> {
        self.since += n as u64;
        if self.since < WRITEBACK_STEP {
            return Ok(());
        }
        self.since = 0;
        if self.thread.is_none() {
            let file = file()?;
            let (nudge, nudged) = mpsc::sync_channel::<()>(1);
            self.thread = Some(std::thread::spawn(move || -> io::Result<()> {
                for () in nudged {
                    file.sync_data()?;
                }
                Ok(())
            }));
            self.nudge = Some(nudge);
        }
        if let Some(n) = &self.nudge {
            let _ = n.try_send(());
        }
        Ok(())
    }

    /// Whether the thread has started.
    #[cfg(test)]
    pub(super) fn started(&self) -> bool {
        self.thread.is_some()
    }

    fn finish(&mut self) -> io::Result<()> {
        drop(self.nudge.take());
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the blob flusher thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for Flusher {
    /// An abandoned write still stops its thread (which ends when its channel closes).
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

impl BlobWriter<'_> {
    /// Flushes and renames the blob into place (fsynced first on a plain handle, see
    /// [`Store::batched`]); returns its digest and size.
    pub fn commit(mut self) -> Result<(Digest, u64), StoreError> {
        let flushed = self.flusher.finish();
        let (digest, size, buffered) = self.out.finish();
        let file = buffered
            .into_inner()
            .map_err(|e| io_err("write", self.tmp.path())(e.into_error()))?;
        drop(file);
        flushed.map_err(io_err("sync", self.tmp.path()))?;
        self.store.place(self.tmp, &digest, size)?;
        Ok((digest, size))
    }

    pub fn written(&self) -> u64 {
        self.out.written()
    }
}

impl Write for BlobWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        let tmp = &self.tmp;
        self.flusher.wrote(n, || tmp.as_file().try_clone())?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
