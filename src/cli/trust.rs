//! Who must have signed, and the checks that ask: the identity flags `verify` and `run` share
//! (with `[verify]` in config.toml), the run gate, and how a failed verification reads. Shared by
//! the `sign`/`verify` and `run` commands, so neither imports the other.
use super::common::{client, esc};
use miette::miette;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest};
use otters_pipeline::target::Target;
use otters_supply::signer::{Loaded, Who};
use otters_supply::statement::SIGN_PREDICATE;
use otters_supply::verify::{
    verify_local_first, Fallback, ImageVerifyError, OpenSource, Referrers, VerifyOptions,
};
use std::path::{Path, PathBuf};

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

/// The signer `key` or `flags` name; `None` when they name none. Half a keyless identity is an
/// error naming the missing flag.
pub(super) fn who(key: Option<&Path>, flags: &IdentityFlags) -> miette::Result<Option<Who>> {
    if let Some(k) = key {
        return Ok(Some(Who::Key(k.to_owned())));
    }
    let (identity, regexp) = match (
        &flags.certificate_identity,
        &flags.certificate_identity_regexp,
    ) {
        (Some(id), _) => (id.clone(), false),
        (None, Some(re)) => (re.clone(), true),
        (None, None) => return Ok(None),
    };
    let Some(issuer) = flags.certificate_oidc_issuer.clone() else {
        return Err(miette!(
                "keyless verification needs --certificate-oidc-issuer URL beside the identity (for GitHub Actions: https://token.actions.githubusercontent.com)"
            ));
    };
    let Some(root) = flags.trusted_root.clone() else {
        return Err(miette!(
                "keyless verification needs --trusted-root FILE (Sigstore's trusted_root.json; see docs/supply-chain.md for where the public-good one comes from)"
            ));
    };
    Ok(Some(Who::Keyless {
        identity,
        regexp,
        issuer,
        root,
    }))
}

/// How to make the signature `signer` checks.
fn sign_hint(signer: &Loaded, reference: &str) -> String {
    let how = match signer {
        Loaded::Key { .. } => "--key KEY",
        Loaded::Keyless { .. } => "--keyless",
    };
    format!("otters sign {} {how}", esc(reference))
}

/// Why `reference` (`digest`) did not verify, as the report says it.
pub(super) fn explain(
    e: ImageVerifyError,
    digest: &Digest,
    opts: &VerifyOptions<'_>,
    signer: &Loaded,
    reference: &str,
) -> miette::Report {
    let who = format!("{}@{digest}", esc(reference));
    match e {
        ImageVerifyError::NotSigned => miette!(
            "{who} is not signed: it has no Sigstore bundle referrer (sign it with `{}`)",
            sign_hint(signer, reference)
        ),
        e @ ImageVerifyError::List(_) => miette!("{who}: {e}"),
        e if opts.predicate_type == SIGN_PREDICATE => {
            miette!("{who} has no valid signature by {}: {e}", signer.describe())
        }
        e => miette!(
            "{who} has no valid attestation of type {} by {}: {e}",
            esc(&opts.predicate_type),
            signer.describe()
        ),
    }
}

/// A report's whole chain on one line, for a verifier's reason.
pub(super) fn report_text(e: &miette::Report) -> String {
    e.chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// The run gate (`otters run --verify-key`, `--certificate-identity…`): the image `digest` (what
/// `reference` resolved to for this run) must carry a signature by `who`, found in the local
/// store or, when the run may contact a registry and `reference` names one, in that registry.
pub(super) fn verify_for_run(
    store: &otters_oci::Store,
    reference: &str,
    digest: &Digest,
    who: &Who,
    insecure: bool,
    may_contact: bool,
) -> miette::Result<()> {
    let signer = Loaded::load(who.clone()).map_err(|e| miette!("{e}"))?;
    let opts = VerifyOptions::by(signer.signer());
    let bytes = store.read_blob(digest).map_err(super::fail)?;
    let media_type = otters_oci::MediaType::parse(
        &ManifestDoc::parse(&bytes)
            .ok()
            .and_then(|m| m.media_type)
            .map_or_else(
                || otters_oci::spec::descriptor::MANIFEST_V1.to_owned(),
                |m| m.as_str().to_owned(),
            ),
    );
    let d = Descriptor::new(media_type, digest.clone(), bytes.len() as u64);
    let local = Target::Local(store.clone(), d.clone());
    let remote = otters_oci::reference::Reference::parse(reference)
        .ok()
        // Only a reference that names its registry (never an implied Docker Hub for a local tag).
        .filter(|r| may_contact && reference.starts_with(&format!("{}/", r.registry)));
    let second: Box<OpenSource<'_>> = Box::new(move || {
        let Some(r) = remote else { return Ok(None) };
        let client = client(insecure).map_err(|e| report_text(&e))?;
        let remote = Target::Remote(store.clone(), Box::new(client), r.with_digest(digest), d);
        Ok(Some(Box::new(remote) as Box<dyn Referrers>))
    });
    verify_local_first(&local, second, digest, &opts, Fallback::OnAnyFailure)
        .map(|_| ())
        .map_err(|e| {
            explain(e, digest, &opts, &signer, reference)
                .wrap_err("refusing to run an unverified image")
        })
}
