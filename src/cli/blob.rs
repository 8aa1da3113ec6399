//! `otters sign-blob` and `otters verify-blob`: a key-based Sigstore bundle (DSSE over an in-toto
//! statement: a plain signature, or with `--predicate-type/--predicate` an attestation) for a file
//! or a digest, and its verification, with no registry. `cosign
//! verify-blob-attestation --key` and `@sigstore/verify` read the same bundles.
//!
//! Takes: a key, a FILE or `--digest sha256:…`, a bundle path. Returns: the bundle (a file or
//! stdout); "Verified OK" and exit 0, or the reason it did not verify and exit 1. Must never: verify
//! a bundle against anything but the digest the user gave or the FILE's bytes hash to now.
use super::{fail, fail_in, CliResult};
use otters_supply::blob::{self, BlobError};
use otters_supply::bundle;
use otters_supply::keys::{KeyPair, PublicKey};
use otters_supply::statement::{Statement, Subject};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct SignBlobArgs {
    /// Private key (PKCS#8 PEM, as `otters key generate` writes it)
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    /// The file to sign (its sha256 becomes the statement's subject)
    #[arg(required_unless_present = "digest", conflicts_with = "digest")]
    pub file: Option<PathBuf>,
    /// Sign this digest instead of a file (e.g. an image's manifest digest)
    #[arg(long, value_name = "sha256:HEX")]
    pub digest: Option<String>,
    /// The subject's name in the statement (default: the file's name, or the digest)
    #[arg(long)]
    pub name: Option<String>,
    /// Attest instead of sign: the in-toto predicate type (a URI such as `https://slsa.dev/provenance/v1`)
    #[arg(long, value_name = "URI", requires = "predicate")]
    pub predicate_type: Option<String>,
    /// Attest instead of sign: a JSON file, the statement's predicate
    #[arg(long, value_name = "FILE", requires = "predicate_type")]
    pub predicate: Option<PathBuf>,
    /// Where to write the bundle (default: standard output)
    #[arg(short = 'o', long = "output", value_name = "BUNDLE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct VerifyBlobArgs {
    /// Public key (PKIX PEM, as `otters key generate` writes it)
    #[arg(long, value_name = "PUB")]
    pub key: PathBuf,
    /// The Sigstore bundle to check
    #[arg(long, value_name = "BUNDLE")]
    pub bundle: PathBuf,
    /// The file the bundle must cover (hashed now)
    #[arg(required_unless_present = "digest", conflicts_with = "digest")]
    pub file: Option<PathBuf>,
    /// The digest the bundle must cover, instead of a file
    #[arg(long, value_name = "sha256:HEX")]
    pub digest: Option<String>,
}

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
    outln!(
        "Verified OK: {} signs {} ({})",
        a.key.display(),
        v.subjects.join(", "),
        v.predicate_type
    );
    Ok(ExitCode::SUCCESS)
}
