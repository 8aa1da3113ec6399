//! `otters key generate`.
use std::path::PathBuf;
#[derive(Debug, clap::Subcommand)]
pub enum KeyCommand {
    /// Write a new ECDSA P-256 key pair: PREFIX.key (private, PKCS#8 PEM, mode 0600) and PREFIX.pub (public, PKIX PEM)
    Generate(GenerateArgs),
}

#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// Path prefix of the two files (`--out ci/signing` writes ci/signing.key and ci/signing.pub)
    #[arg(long, value_name = "PREFIX")]
    pub out: PathBuf,
}
