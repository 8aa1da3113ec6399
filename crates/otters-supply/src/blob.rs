//! What `otters sign-blob` and `otters verify-blob` sign and check: the subject (a file's sha256,
//! or a digest given), a predicate read from a JSON file, and bundle files read bounded.
//!
//! Takes: paths and a digest's text. Returns: the subject's digest and default name, a
//! [`Statement`] made an attestation, a bundle's bytes. Must never: read a FIFO or a device, or
//! more than [`MAX_BUNDLE`] bytes of a bundle or predicate.
use crate::bundle::MAX_BUNDLE;
use crate::statement::{from_serde, Statement};
use otters_core::files::{self, ReadError};
use otters_spec::digest::{BadDigest, Digest, HashingWriter};
use std::path::{Path, PathBuf};

/// Why a subject or a predicate could not be had.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error(transparent)]
    Digest(#[from] BadDigest),
    #[error("no blob given: neither a file nor a digest")]
    NoSubject,
    #[error(transparent)]
    Open(#[from] ReadError),
    #[error("cannot read {}", .0.display())]
    Read(PathBuf, #[source] std::io::Error),
    #[error("{} is not JSON: {source}", path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} is not a JSON object", .0.display())]
    NotObject(PathBuf),
}

/// The subject: `digest` when given, else the sha256 of the file at `file`; with the default
/// subject name (the digest, or the file's name).
pub fn subject(file: Option<&Path>, digest: Option<&str>) -> Result<(Digest, String), BlobError> {
    if let Some(d) = digest {
        let d = Digest::parse(d)?;
        let name = d.to_string();
        return Ok((d, name));
    }
    let path = file.ok_or(BlobError::NoSubject)?;
    let mut f = files::open_named(path, "file to sign or verify")?;
    let mut w = HashingWriter::new(std::io::sink());
    std::io::copy(&mut f, &mut w).map_err(|e| BlobError::Read(path.to_path_buf(), e))?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok((w.finish().0, name))
}

/// A bundle or predicate file, at most [`MAX_BUNDLE`] bytes (the verifier refuses more); a FIFO
/// or a device is refused before it is read.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, ReadError> {
    files::read_named(path, "bundle or predicate", MAX_BUNDLE as u64)
}

/// Makes `statement` an attestation of `predicate_type` whose predicate is the JSON object in
/// the file at `path`.
pub fn attest(
    statement: &mut Statement,
    predicate_type: String,
    path: &Path,
) -> Result<(), BlobError> {
    let text = read_bounded(path)?;
    let value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|source| BlobError::NotJson {
            path: path.to_path_buf(),
            source,
        })?;
    if !value.is_object() {
        return Err(BlobError::NotObject(path.to_path_buf()));
    }
    statement.predicate_type = predicate_type;
    statement.predicate = from_serde(&value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::Subject;

    #[test]
    fn a_file_subject_is_its_sha256_and_name() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("notes.txt");
        std::fs::write(&f, b"hello").unwrap();
        let (d, name) = subject(Some(&f), None).unwrap();
        assert_eq!(d, Digest::of(b"hello"));
        assert_eq!(name, "notes.txt");
        let given = Digest::of(b"x").to_string();
        assert_eq!(subject(Some(&f), Some(&given)).unwrap().1, given);
        assert!(matches!(subject(None, None), Err(BlobError::NoSubject)));
        assert!(matches!(
            subject(None, Some("sha256:nothex")),
            Err(BlobError::Digest(_))
        ));
    }

    #[test]
    fn a_predicate_is_a_json_object() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Statement::signature(Subject {
            name: "x".into(),
            digest: Digest::of(b"x"),
        });
        let p = dir.path().join("p.json");
        std::fs::write(&p, b"[1]").unwrap();
        assert!(matches!(
            attest(&mut s, "t".into(), &p),
            Err(BlobError::NotObject(_))
        ));
        std::fs::write(&p, b"{").unwrap();
        assert!(matches!(
            attest(&mut s, "t".into(), &p),
            Err(BlobError::NotJson { .. })
        ));
        std::fs::write(&p, br#"{"a":1}"#).unwrap();
        attest(&mut s, "https://example.com/t".into(), &p).unwrap();
        assert_eq!(s.predicate_type, "https://example.com/t");
    }
}
