//! The batch handle: blobs renamed into place without a per-blob fsync, made durable in one
//! pass before any `index.json` change.

use super::{Store, StoreError};
use crate::path_io::io_err;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// The blob files a batch handle has placed or reused since its last [`Store::sync_batch`].
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub(super) pending: Mutex<Vec<PathBuf>>,
}

impl Batch {
    pub(super) fn record(&self, path: PathBuf) {
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
                    // puts a leased one back before it lets go of the index lock: take that
                    // lock, and look again while holding it (a prune that starts after the lock
                    // is let go may move the blob aside again). A blob still missing was not
                    // leased: an error.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        let _lock = self.lock_index()?;
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
}
