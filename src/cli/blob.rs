//! `otters sign-blob` and `otters verify-blob`: a key-based Sigstore bundle (DSSE over an in-toto
//! statement: a plain signature, or with `--predicate-type/--predicate` an attestation) for a file
//! or a digest, and its verification, with no registry. `cosign
//! verify-blob-attestation --key` and `@sigstore/verify` read the same bundles.
//!
//! Takes: a key, a FILE or `--digest sha256:…`, a bundle path. Returns: the bundle (a file or
//! stdout); "Verified OK" and exit 0, or the reason it did not verify and exit 1. Must never: verify
//! a bundle against anything but the digest the user gave or the FILE's bytes hash to now.
use super::CliResult;
use miette::{miette, IntoDiagnostic};
use otters_oci::spec::digest::{Digest, HashingWriter};
use otters_supply::bundle;
use otters_supply::keys::{KeyPair, PublicKey};
use otters_supply::statement::{from_serde, Statement, Subject};
use std::path::{Path, PathBuf};
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

/// The digest named by `--digest` or the FILE's sha256, and the default subject name.
fn subject_digest(file: Option<&Path>, digest: Option<&str>) -> miette::Result<(Digest, String)> {
    if let Some(d) = digest {
        let d = Digest::parse(d).map_err(|e| miette!("--digest: {e}"))?;
        let name = d.to_string();
        return Ok((d, name));
    }
    let path = file.ok_or_else(|| miette!("give a FILE or --digest sha256:HEX"))?;
    let mut f =
        otters_core::files::open_named(path, "file to sign or verify").map_err(super::fail)?;
    let mut w = HashingWriter::new(std::io::sink());
    std::io::copy(&mut f, &mut w).map_err(|e| miette!("cannot read {}: {e}", path.display()))?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok((w.finish().0, name))
}

pub fn run_sign(a: SignBlobArgs) -> CliResult {
    let key = KeyPair::read(&a.key).map_err(|e| miette!("{e}"))?;
    let (digest, default_name) = subject_digest(a.file.as_deref(), a.digest.as_deref())?;
    let mut statement = Statement::signature(Subject {
        name: a.name.unwrap_or(default_name),
        digest,
    });
    if let (Some(ty), Some(path)) = (a.predicate_type, a.predicate) {
        let text = read_bounded(&path)?;
        let value: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| miette!("--predicate {} is not JSON: {e}", path.display()))?;
        if !value.is_object() {
            return Err(miette!(
                "--predicate {} is not a JSON object",
                path.display()
            ));
        }
        statement.predicate_type = ty;
        statement.predicate = from_serde(&value);
    }
    let bytes = bundle::sign(&statement, &key);
    match a.output {
        Some(p) if p.as_os_str() != "-" => {
            std::fs::write(&p, &bytes).map_err(|e| miette!("cannot write {}: {e}", p.display()))?;
        }
        _ => out!("{}", String::from_utf8(bytes).into_diagnostic()?),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_verify(a: VerifyBlobArgs) -> CliResult {
    let key = PublicKey::read(&a.key).map_err(|e| miette!("{e}"))?;
    let (digest, _) = subject_digest(a.file.as_deref(), a.digest.as_deref())?;
    let bytes = read_bounded(&a.bundle)?;
    let v = bundle::verify(&bytes, &key, digest.hex())
        .map_err(|e| miette!("{} does not verify: {e}", a.bundle.display()))?;
    outln!(
        "Verified OK: {} signs {} ({})",
        a.key.display(),
        v.subjects.join(", "),
        v.predicate_type
    );
    Ok(ExitCode::SUCCESS)
}

/// A bundle or predicate file, at most [`bundle::MAX_BUNDLE`] bytes (the verifier refuses more);
/// a FIFO or a device is refused before it is read.
fn read_bounded(path: &Path) -> miette::Result<Vec<u8>> {
    otters_core::files::read_named(path, "bundle or predicate", bundle::MAX_BUNDLE as u64)
        .map_err(super::fail)
}
