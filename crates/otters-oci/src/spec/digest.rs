//! Content digests (`sha256:<hex>`) and a writer that hashes what passes through it.
//!
//! Takes: bytes or a stream. Returns: [`Digest`] values. Must never: accept a digest string that
//! could name a path outside `blobs/sha256/` (only lower-case 64-hex sha256 digests parse).

use sha2::{Digest as _, Sha256};
use std::fmt;
use std::io::{self, Write};

/// A validated `sha256:<64 lower-case hex>` digest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

/// The string is not a sha256 digest.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is not a sha256 digest (expected `sha256:` and 64 lower-case hex digits)")]
pub struct BadDigest(pub String);

impl Digest {
    /// Parses `sha256:<hex>`.
    pub fn parse(s: &str) -> Result<Self, BadDigest> {
        let hex = s
            .strip_prefix("sha256:")
            .ok_or_else(|| BadDigest(s.to_owned()))?;
        if hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Self(s.to_owned()))
        } else {
            Err(BadDigest(s.to_owned()))
        }
    }

    /// The digest of a byte string.
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_hasher(Sha256::new_with_prefix(bytes))
    }

    /// The digest a finished hasher computed.
    pub fn from_sha256(h: Sha256) -> Self {
        Self::from_hasher(h)
    }

    fn from_hasher(h: Sha256) -> Self {
        Self(format!("sha256:{}", hex::encode(h.finalize())))
    }

    /// The hex part, which is also the blob's file name.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 hex digits, as `docker images` shows them.
    pub fn short(&self) -> &str {
        &self.hex()[..12]
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Hashes and counts every byte written, then forwards it to `inner`.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    /// The digest and size of everything written, and the inner writer.
    pub fn finish(self) -> (Digest, u64, W) {
        (Digest::from_hasher(self.hasher), self.written, self.inner)
    }

    pub fn written(&self) -> u64 {
        self.written
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_empty_is_well_known() {
        assert_eq!(
            Digest::of(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn parse_rejects_paths_and_upper_case() {
        assert!(Digest::parse("sha256:../../etc/passwd").is_err());
        assert!(Digest::parse(&format!("sha256:{}", "A".repeat(64))).is_err());
        assert!(Digest::parse(&format!("sha512:{}", "a".repeat(64))).is_err());
        assert!(Digest::parse(&format!("sha256:{}", "a".repeat(64))).is_ok());
    }

    #[test]
    fn hashing_writer_matches_one_shot() {
        let mut w = HashingWriter::new(Vec::new());
        w.write_all(b"hello ").unwrap();
        w.write_all(b"world").unwrap();
        let (d, n, inner) = w.finish();
        assert_eq!(d, Digest::of(b"hello world"));
        assert_eq!(n, 11);
        assert_eq!(inner, b"hello world");
    }
}
