//! Content digests (`sha256:<hex>`): the one type for them, the one way to compute them
//! ([`Digest::of`], [`Hasher`], [`HashingWriter`]), and the one parse of digest text.
//!
//! Takes: bytes, a stream, or text from outside (CLI, registry, lockfile, store files). Returns:
//! [`Digest`] values, which serialise (serde and canonical JSON) as their `sha256:…` text. Must
//! never: accept a digest string that could name a path outside `blobs/sha256/` (only lower-case
//! 64-hex sha256 digests parse).

use sha2::{Digest as _, Sha256};
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

/// A validated `sha256:<64 lower-case hex>` digest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

/// Computes a [`Digest`] from bytes fed in pieces.
#[derive(Clone, Default)]
pub struct Hasher(Sha256);

impl Hasher {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest of everything fed so far.
    pub fn finish(self) -> Digest {
        Digest::from_hasher(self.0)
    }
}

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

    /// The digest whose hex part (a blob's file name) is `hex`.
    pub fn from_hex(hex: &str) -> Result<Self, BadDigest> {
        Self::parse(&format!("sha256:{hex}"))
    }

    /// The digest of a byte string.
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_hasher(Sha256::new_with_prefix(bytes))
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

impl FromStr for Digest {
    type Err = BadDigest;

    fn from_str(s: &str) -> Result<Self, BadDigest> {
        Self::parse(s)
    }
}

impl AsRef<str> for Digest {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Digest {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Digest {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<&Digest> for otters_core::json::Value {
    fn from(d: &Digest) -> Self {
        Self::from(d.as_str())
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A digest's JSON Schema: the text form, `sha256:` and 64 lower-case hex digits.
impl schemars::JsonSchema for Digest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Digest".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^sha256:[0-9a-f]{64}$",
            "description": "A content digest: `sha256:` and 64 lower-case hex digits."
        })
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
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
    hasher: Hasher,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Hasher::new(),
            written: 0,
        }
    }

    /// The digest and size of everything written, and the inner writer.
    pub fn finish(self) -> (Digest, u64, W) {
        (self.hasher.finish(), self.written, self.inner)
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
    fn one_computation_whatever_the_route() {
        // sha256("abc"), FIPS 180-2 test vector.
        let abc = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(Digest::of(b"abc").as_str(), abc);
        let mut h = Hasher::new();
        for piece in [&b"a"[..], b"", b"bc"] {
            h.update(piece);
        }
        assert_eq!(h.finish().as_str(), abc);
        let d = Digest::of(b"abc");
        assert_eq!(d.hex(), &abc[7..]);
        assert_eq!(d.short(), "ba7816bf8f01");
        assert_eq!(Digest::from_hex(d.hex()), Ok(d.clone()));
        assert_eq!(d.to_string(), abc);
        assert_eq!(abc.parse::<Digest>(), Ok(d));
    }

    #[test]
    fn parse_errors_name_the_text_and_the_rule() {
        let h = "a".repeat(64);
        for bad in [
            String::new(),
            h.clone(),
            "sha256:".to_owned(),
            format!("sha256:{}", &h[..63]),
            format!("sha256:{h}a"),
            format!("SHA256:{h}"),
            format!("sha256:{}", "A".repeat(64)),
            format!("sha256:{}g", &h[..63]),
            format!("sha512:{h}"),
            format!("md5:{h}"),
            format!(" sha256:{h}"),
            format!("sha256:{h}\n"),
        ] {
            let e = Digest::parse(&bad).expect_err(&bad);
            assert_eq!(
                e.to_string(),
                format!("`{bad}` is not a sha256 digest (expected `sha256:` and 64 lower-case hex digits)")
            );
        }
        assert!(Digest::from_hex("../x").is_err());
    }

    #[test]
    fn serialises_as_its_text_and_parses_strictly() {
        let d = Digest::of(b"");
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"{d}\""));
        assert_eq!(serde_json::from_str::<Digest>(&json).unwrap(), d);
        let e = serde_json::from_str::<Digest>(r#""sha256:../../etc/passwd""#).unwrap_err();
        assert!(e.to_string().contains("is not a sha256 digest"), "{e}");
        assert_eq!(
            otters_core::json::to_compact(&otters_core::json::Value::from(&d)).unwrap(),
            json.as_bytes()
        );
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
