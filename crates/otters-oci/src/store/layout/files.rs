//! Temp files: every write goes through one, `flock`ed while it lives, renamed into place, and
//! collected when a killed writer leaves it behind.

use super::{Store, StoreError};
use crate::path_io::io_err;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use tempfile::NamedTempFile;

impl Store {
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
pub(super) fn open_regular_nofollow(path: &Path) -> Option<File> {
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

pub(super) fn persist(tmp: NamedTempFile, path: &Path) -> Result<(), StoreError> {
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
