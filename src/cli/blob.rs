//! `otters sign-blob` and `otters verify-blob`: a key-based Sigstore bundle (DSSE over an in-toto
//! statement: a plain signature, or with `--predicate-type/--predicate` an attestation) for a file
//! or a digest, and its verification, with no registry. `cosign
//! verify-blob-attestation --key` and `@sigstore/verify` read the same bundles.
//!
//! Takes: a key, a FILE or `--digest sha256:…`, a bundle path. Returns: the bundle (a file or
//! stdout); "Verified OK" and exit 0, or the reason it did not verify and exit 1. Must never: verify
//! a bundle against anything but the digest the user gave or the FILE's bytes hash to now.
use super::{common::esc, fail, fail_in, CliResult};
use otters_cli::blob::{SignBlobArgs, VerifyBlobArgs};
use otters_supply::blob::{self, BlobError};
use otters_supply::bundle;
use otters_supply::keys::{KeyPair, PublicKey};
use otters_supply::statement::{Statement, Subject};
use std::process::ExitCode;

/// A subject or predicate error, named by its flag where one was given.
fn blob_error(e: BlobError) -> miette::Report {
    match e {
        BlobError::Digest(e) => fail_in("--digest", e),
        e @ (BlobError::NotJson { .. } | BlobError::NotObject(_)) => fail_in("--predicate", e),
        e => fail(e),
    }
}

pub fn run_sign(a: SignBlobArgs) -> CliResult {
    let key = KeyPair::read(&a.key).map_err(fail)?;
    let (digest, default_name) =
        blob::subject(a.file.as_deref(), a.digest.as_deref()).map_err(blob_error)?;
    let mut statement = Statement::signature(Subject {
        name: a.name.unwrap_or(default_name),
        digest,
    });
    if let (Some(ty), Some(path)) = (a.predicate_type, a.predicate) {
        blob::attest(&mut statement, ty, &path).map_err(blob_error)?;
    }
    let bytes = bundle::sign(&statement, &key);
    match a.output {
        Some(p) if p.as_os_str() != "-" => std::fs::write(&p, &bytes)
            .map_err(|e| fail_in(format!("cannot write {}", p.display()), e))?,
        _ => out!("{}", String::from_utf8(bytes).map_err(fail)?),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_verify(a: VerifyBlobArgs) -> CliResult {
    let key = PublicKey::read(&a.key).map_err(fail)?;
    let (digest, _) = blob::subject(a.file.as_deref(), a.digest.as_deref()).map_err(blob_error)?;
    let bytes = blob::read_bounded(&a.bundle).map_err(fail)?;
    let v = bundle::verify(&bytes, &key, digest.hex())
        .map_err(|e| fail_in(format!("{} does not verify", a.bundle.display()), e))?;
    // Subjects (named after the signed files) and the predicate type come from the bundle.
    outln!(
        "Verified OK: {} signs {} ({})",
        crate::view::path(&a.key),
        esc(&v.subjects.join(", ")),
        esc(&v.predicate_type)
    );
    Ok(ExitCode::SUCCESS)
}
