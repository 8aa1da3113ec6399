//! The keyless identity flags `verify` and `run` share (with `[verify]` in config.toml), as the
//! values of [`otters_pipeline::trust`], which holds who must have signed, the run gate and how a
//! failed verification reads. Shared by the `sign`/`verify` and `run` commands, so neither
//! imports the other.
use otters_pipeline::trust::Identity;
use std::path::PathBuf;

/// Keyless verification: who must have signed (`verify`, and `run`, where `[verify]` in
/// config.toml gives the same keys).
#[derive(Debug, Default, clap::Args)]
pub struct IdentityFlags {
    /// Keyless: the identity the signing certificate must name, exactly (its SAN: a workflow URI or
    /// an email)
    #[arg(long, value_name = "ID", group = "identity")]
    pub certificate_identity: Option<String>,
    /// Keyless: a regular expression the certificate's whole SAN must match (anchored at both ends)
    #[arg(long, value_name = "RE", group = "identity")]
    pub certificate_identity_regexp: Option<String>,
    /// Keyless: the OIDC issuer the signing certificate must name, exactly
    #[arg(long, value_name = "URL", requires = "identity")]
    pub certificate_oidc_issuer: Option<String>,
    /// Keyless: Sigstore's trusted root (`trusted_root.json`: certificate authorities and
    /// transparency logs); verification is offline
    #[arg(long, value_name = "FILE", requires = "identity")]
    pub trusted_root: Option<PathBuf>,
}

impl IdentityFlags {
    /// The flags' values.
    pub(super) fn identity(&self) -> Identity {
        Identity {
            identity: self.certificate_identity.clone(),
            identity_regexp: self.certificate_identity_regexp.clone(),
            issuer: self.certificate_oidc_issuer.clone(),
            trusted_root: self.trusted_root.clone(),
        }
    }
}
