//! `otters sign-blob` and `otters verify-blob`.
use std::path::PathBuf;
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
