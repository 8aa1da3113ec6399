//! Leases: what a running build, pull, load or run holds against a concurrent `otters prune`.

use super::files::open_regular_nofollow;
use super::{Store, StoreError};
use crate::path_io::io_err;
use crate::spec::digest::Digest;
use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// Where leases live, under the store root.
pub const LEASES_DIR: &str = "leases";

/// A lease, as containerd keeps them: a file in `leases/` that its process holds `flock`ed for
/// as long as it lives, listing (one hex digest a line) the blobs it is writing or reusing before
/// it tags them. `otters prune` keeps every blob a live lease lists; the kernel drops the lock
/// of a killed process, and prune then removes its lease file.
#[derive(Debug)]
pub(super) struct Lease {
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

impl Store {
    /// A handle on the same store that holds a lease (see `Lease`) until it and every handle
    /// made from it are dropped: every command that writes into the store (`build`, `pull`, `load`,
    /// `run`, `lock`, `export`, `kube`, `copy`, `attach`, `sign`) writes through one, so a
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
        // Made and locked in `.tmp/` (whose collector leaves young files alone), then renamed
        // into `leases/`: a lease is never seen there unlocked. Created in `leases/` and locked
        // after, a `prune` reading the leases in between took it for a dead process's, removed
        // it, and every blob this handle then leased was unprotected.
        let tmp = self.tmp_dir();
        fs::create_dir_all(&tmp).map_err(io_err("create directory", &tmp))?;
        let (file, made) = tempfile::Builder::new()
            .prefix(&format!("{}-", std::process::id()))
            .tempfile_in(&tmp)
            .map_err(io_err("create a lease in", &tmp))?
            .keep()
            .map_err(|e| io_err("create a lease in", &tmp)(e.error))?;
        file.lock().map_err(io_err("lock", &made))?;
        let path = dir.join(made.file_name().unwrap_or_default());
        if let Err(e) = fs::rename(&made, &path) {
            let _ = fs::remove_file(&made);
            return Err(io_err("move a lease into", &dir)(e).into());
        }
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
    pub(in crate::store) fn leased_digests(&self) -> HashSet<Digest> {
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
    pub(super) fn lease(&self, digest: &Digest) -> Result<(), StoreError> {
        match &self.lease {
            Some(l) => l.record(digest),
            None => Ok(()),
        }
    }
}
