//! Reading a store blob while checking it against its digest: the store is a directory anyone
//! with the user's rights can edit, so no blob is trusted because of its file name.
//!
//! Takes: an open blob file and the digest it is stored under. Returns: its bytes, hashed as they
//! pass; at end of file a mismatch is an error ([`VerifiedBlob::finish`] drains and checks for
//! readers that stop early). Must never: let a reader reach end of file on a corrupt blob without
//! an error, or hold more than one copy buffer in memory.

use crate::spec::digest::{Digest, Hasher};
use crate::store::layout::StoreError;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::PathBuf;

/// A store blob being read; every byte is hashed, and reaching end of file checks the digest.
pub struct VerifiedBlob {
    inner: BufReader<File>,
    hasher: Hasher,
    expected: Digest,
    path: PathBuf,
    read: u64,
    size: u64,
    /// `Some(actual digest)` once end of file was reached.
    outcome: Option<Digest>,
}

impl VerifiedBlob {
    pub(crate) fn new(file: File, expected: Digest, path: PathBuf) -> Self {
        let size = file.metadata().map_or(0, |m| m.len());
        Self {
            size,
            inner: BufReader::with_capacity(64 << 10, file),
            hasher: Hasher::new(),
            expected,
            path,
            read: 0,
            outcome: None,
        }
    }

    /// The digest the blob is stored under.
    pub fn digest(&self) -> &Digest {
        &self.expected
    }

    /// The blob file's size when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn corrupt(&self, actual: &Digest) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            expected: self.expected.to_string(),
            actual: actual.to_string(),
        }
    }

    /// Reads the rest of the blob (bytes a reader that stopped early left unread) and checks the
    /// digest. Call it before using anything read from the blob.
    pub fn finish(mut self) -> Result<(), StoreError> {
        if self.outcome.is_none() {
            let path = self.path.clone();
            io::copy(&mut self, &mut io::sink()).map_err(|e| {
                match self.outcome.as_ref().filter(|a| **a != self.expected) {
                    Some(actual) => self.corrupt(actual),
                    None => crate::path_io::io_err("read", &path)(e).into(),
                }
            })?;
        }
        match &self.outcome {
            Some(actual) if *actual != self.expected => Err(self.corrupt(actual)),
            _ => Ok(()),
        }
    }
}

/// Runs `f` on the verified blob `digest`, then drains and checks it: the result counts only when
/// the whole blob matched. When `f` fails on a corrupt blob (a damaged gzip stream, a bad tar
/// header), the corruption is reported rather than its symptom.
pub fn with_verified<T, E: From<StoreError>>(
    store: &crate::Store,
    digest: &Digest,
    f: impl FnOnce(&mut VerifiedBlob) -> Result<T, E>,
) -> Result<T, E> {
    let mut blob = store.open_verified(digest)?;
    match f(&mut blob) {
        Ok(v) => {
            blob.finish()?;
            Ok(v)
        }
        Err(e) => match blob.finish() {
            Err(c @ StoreError::Corrupt { .. }) => Err(c.into()),
            _ => Err(e),
        },
    }
}

impl Read for VerifiedBlob {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if let Some(actual) = &self.outcome {
            if *actual != self.expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    self.corrupt(actual).to_string(),
                ));
            }
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if n == 0 {
            let actual = std::mem::take(&mut self.hasher).finish();
            let bad = actual != self.expected;
            self.outcome = Some(actual);
            if bad {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    self.outcome
                        .as_ref()
                        .map(|a| self.corrupt(a).to_string())
                        .unwrap_or_default(),
                ));
            }
            return Ok(0);
        }
        self.hasher.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    #[test]
    fn good_blobs_read_to_the_end_and_finish() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (d, _) = store.put_blob_bytes(b"hello world").unwrap();
        let mut r = store.open_verified(&d).unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello world");
        r.finish().unwrap();
        // A reader that stops early: finish drains and checks.
        let mut r = store.open_verified(&d).unwrap();
        let mut two = [0u8; 2];
        r.read_exact(&mut two).unwrap();
        r.finish().unwrap();
    }

    #[test]
    fn a_flipped_byte_fails_at_end_of_file_and_in_finish() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (d, _) = store.put_blob_bytes(b"hello world").unwrap();
        std::fs::write(store.blob_path(&d), b"hello worle").unwrap();
        let mut r = store.open_verified(&d).unwrap();
        let e = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("is corrupt"), "{e}");
        // Reading again keeps failing rather than reporting a clean end of file.
        assert!(r.read(&mut [0u8; 4]).is_err());
        assert!(matches!(r.finish(), Err(StoreError::Corrupt { .. })));
        let mut r = store.open_verified(&d).unwrap();
        r.read_exact(&mut [0u8; 3]).unwrap();
        let e = r.finish().unwrap_err().to_string();
        assert!(
            e.contains(&d.to_string()) && e.contains("otters pull"),
            "{e}"
        );
    }
}
