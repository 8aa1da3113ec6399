//! `otters sign` and `otters verify`.
use crate::flags::IdentityFlags;
use crate::flags::KeylessServices;
use crate::flags::WhereFlags;
use std::path::PathBuf;
#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// The image to sign: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// Private key (PKCS#8 PEM, as `otters key generate` writes it)
    #[arg(
        long,
        value_name = "KEY",
        required_unless_present = "keyless",
        conflicts_with = "keyless"
    )]
    pub key: Option<PathBuf>,
    /// Sign keylessly: a short-lived Fulcio certificate for your OIDC identity instead of a key
    #[arg(long)]
    pub keyless: bool,
    #[command(flatten)]
    pub services: KeylessServices,
    #[command(flatten)]
    pub place: WhereFlags,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The image to verify: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// Public key (PKIX PEM, as `otters key generate` writes it)
    #[arg(
        long,
        value_name = "PUB",
        required_unless_present = "identity",
        conflicts_with = "identity"
    )]
    pub key: Option<PathBuf>,
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Accept a signed attestation of this predicate type instead of a signature: a URI, or
    /// signature, slsaprovenance1, cyclonedx, spdxjson, vuln
    #[arg(long = "type", value_name = "PREDICATE")]
    pub predicate_type: Option<String>,
    #[command(flatten)]
    pub place: WhereFlags,
}
