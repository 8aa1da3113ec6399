//! Flag groups several commands flatten (`#[command(flatten)]`), so each flag is declared once:
//! how references are pinned, `--build-arg`, where an image is (`--remote`/`--local`), progress
//! and output of transfers, attestations and keyless signing, and keyless identities. A command
//! whose help says more about a flag sets its own text with `mut_arg` (`run`'s pinning flags).
use crate::Format;
use otters_pipeline::target::Place;
use otters_pipeline::trust::verify::Identity;
use otters_supply::keyless;
use std::path::PathBuf;
/// The attestation flags of `otters build`.
// Rationale: one switch per flag is what clap parses them into.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct AttestFlags {
    /// Attach a `CycloneDX` 1.6 SBOM of the agent as a referrer
    #[arg(long)]
    pub sbom: bool,
    /// Attach SLSA v1 provenance (an in-toto statement) as a referrer; it records the build
    /// arguments an ARG declares, and of one read from the environment (a bare --build-arg KEY)
    /// only its name
    #[arg(long)]
    pub provenance: bool,
    /// Record in the provenance the values of build arguments read from the environment too (a
    /// bare --build-arg KEY); they may be secrets, and --push publishes the provenance
    #[arg(long)]
    pub provenance_env_args: bool,
    /// Sign the image with this private key, and attach the SBOM and provenance as signed DSSE
    /// attestations (Sigstore bundles)
    #[arg(long, value_name = "KEY", conflicts_with = "sign_keyless")]
    pub sign_key: Option<PathBuf>,
    /// Sign the image keylessly (a short-lived Fulcio certificate for the CI's OIDC identity, a
    /// Rekor entry and/or an RFC 3161 timestamp), and the SBOM and provenance as attestations
    #[arg(long)]
    pub sign_keyless: bool,
    #[command(flatten)]
    pub keyless: KeylessServices,
}

impl AttestFlags {
    /// Whether the build must describe its inputs.
    pub fn wanted(&self) -> bool {
        self.sbom || self.provenance || self.sign_key.is_some() || self.sign_keyless
    }
}

/// Keyless signing: an ephemeral key, a Fulcio certificate for the CI's OIDC identity, a Rekor
/// entry and/or an RFC 3161 timestamp (`sign --keyless`, `build --sign-keyless`).
#[derive(Debug, clap::Args)]
pub struct KeylessServices {
    /// Keyless: the OIDC identity token [default: `$SIGSTORE_ID_TOKEN`, else GitHub Actions' token
    /// for the audience `sigstore` (needs `permissions: id-token: write`)]
    #[arg(
        long,
        value_name = "JWT",
        env = "SIGSTORE_ID_TOKEN",
        hide_env_values = true
    )]
    pub identity_token: Option<String>,
    /// Keyless: Fulcio, the certificate authority
    #[arg(long, value_name = "URL", default_value = keyless::PUBLIC_FULCIO)]
    pub fulcio_url: String,
    /// Keyless: Rekor, the transparency log (`none`: no log entry; then --tsa-url is needed)
    #[arg(long, value_name = "URL", default_value = keyless::PUBLIC_REKOR)]
    pub rekor_url: String,
    /// Keyless: an RFC 3161 timestamp authority (for example
    /// `https://timestamp.sigstore.dev/api/v1/timestamp`)
    #[arg(long, value_name = "URL")]
    pub tsa_url: Option<String>,
}

/// The flags that pick where an image is: the local store, or `--remote` its registry. Without
/// either, `verify` and `discover` use the registry of a reference the store does not hold.
#[derive(Debug, clap::Args)]
pub struct WhereFlags {
    /// Work on the image in its registry instead of the local store
    #[arg(long, conflicts_with = "local")]
    pub remote: bool,
    /// Use only the local store, never the registry
    #[arg(long)]
    pub local: bool,
    /// Allow plain HTTP and unverified TLS for a registry not on this machine
    #[arg(long, conflicts_with = "local")]
    pub insecure: bool,
}

impl WhereFlags {
    /// Where a read looks: `--remote`, `--local`, or (neither) the store then the registry a
    /// reference spells out.
    pub fn for_read(&self) -> Place {
        match (self.remote, self.local) {
            (true, _) => Place::Remote,
            (_, true) => Place::Local,
            _ => Place::Auto,
        }
    }

    /// Where a command that adds a referrer (`attach`, `sign`) works: `--remote`, else the store.
    pub fn for_write(&self) -> Place {
        if self.remote {
            Place::Remote
        } else {
            Place::Local
        }
    }
}

/// How the images an Agentfile names are pinned while it is built.
#[derive(Debug, Default, clap::Args)]
pub struct PinFlags {
    /// Take every pin from Agentfile.lock; never contact a registry
    #[arg(long)]
    pub offline: bool,
    /// Build references that have no pin without a digest (with a warning)
    #[arg(long)]
    pub allow_unpinned: bool,
    /// Fail when resolution would change Agentfile.lock
    #[arg(long)]
    pub locked: bool,
}

/// `--build-arg`, as `build` and `lock` take it.
#[derive(Debug, Default, clap::Args)]
pub struct BuildArgFlags {
    /// Set a build argument (repeatable); a bare KEY takes its value from the environment
    #[arg(long = "build-arg", value_name = "K=V")]
    pub build_args: Vec<String>,
}

/// `--progress`: how progress shows on stderr (see the flag's help).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    Auto,
    Plain,
    Tty,
    Quiet,
}

/// The flags `push`, `pull` and `copy` share.
#[derive(Debug, clap::Args)]
pub struct TransferFlags {
    /// Allow plain HTTP and unverified TLS for a registry that is not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// No progress bars or status lines
    #[arg(short, long)]
    pub quiet: bool,
    /// Progress output on stderr: `auto` (status lines, and bars on a terminal), `plain` (also one
    /// line per blob: pushed/pulled with size and time, exists, mounted; never a control sequence:
    /// for CI logs), `tty` (bars even when stderr is not a terminal), `quiet` (same as `-q`:
    /// nothing but errors)
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

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

/// Who must have signed an agent before `run`, `export` or `kube` uses it: one gate, the same
/// flags and the same `[verify]` defaults.
#[derive(Debug, Default, clap::Args)]
pub struct GateFlags {
    /// Refuse the image unless a signature by this public key covers its digest (default: `key`
    /// under `[verify]` in `$OTTERS_HOME/config.toml`)
    #[arg(long, value_name = "PUB", conflicts_with = "identity")]
    pub verify_key: Option<PathBuf>,
    /// Refuse the image unless a keyless signature by this identity covers its digest (with
    /// --certificate-oidc-issuer and --trusted-root; defaults: the same keys under `[verify]`)
    #[command(flatten)]
    pub identity: IdentityFlags,
    #[command(flatten)]
    pub policy: PolicyFlags,
}

impl GateFlags {
    /// The gate these flags name; `insecure` and `may_contact` (not offline) say how a
    /// signature may be read from the image's registry.
    pub fn gate(
        &self,
        insecure: bool,
        may_contact: bool,
    ) -> otters_pipeline::trust::verify::Gate<'_> {
        otters_pipeline::trust::verify::Gate {
            key: self.verify_key.as_deref(),
            identity: self.identity.identity(),
            insecure,
            may_contact,
        }
    }
}

impl IdentityFlags {
    /// The flags' values.
    pub fn identity(&self) -> Identity {
        Identity {
            identity: self.certificate_identity.clone(),
            identity_regexp: self.certificate_identity_regexp.clone(),
            issuer: self.certificate_oidc_issuer.clone(),
            trusted_root: self.trusted_root.clone(),
        }
    }
}

impl TransferFlags {
    /// `-q`, or `--progress quiet`.
    pub fn quiet(&self) -> bool {
        self.quiet || self.progress == ProgressMode::Quiet
    }
}

/// The organisation policy files a command holds its agent to, on top of `[policy]` in
/// `$OTTERS_HOME/config.toml`, the files `OTTERS_POLICY` names and the project's `otters.toml`.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct PolicyFlags {
    /// Also hold the agent to the `[policy]` of this file (repeatable); each policy only narrows
    /// the others (see docs/policy.md)
    #[arg(long = "policy", value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

impl PolicyFlags {
    /// The user's policy: config.toml's, `OTTERS_POLICY`'s, then these files'.
    pub fn load(&self) -> Result<otters_policy::Policy, otters_policy::PolicyError> {
        otters_policy::Policy::user(&self.files)
    }
}
