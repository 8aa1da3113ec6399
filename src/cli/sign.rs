//! `otters sign` and `otters verify` (and the run gate's flags): a Sigstore bundle over an image's
//! manifest digest, key-based or keyless, attached as an OCI 1.1 referrer (artifactType
//! `application/vnd.dev.sigstore.bundle.v0.3+json`, as cosign 3 stores bundles), and its
//! verification against the digest the reference names now. Flags and printing only: the walk is
//! `otters_supply::verify`, the attaching `otters_pipeline::attest`.
//!
//! Takes: an image (local store, or `--remote` its registry) and a key or a keyless identity.
//! Returns: the signature referrer's digest; "Verified OK" and exit 0, or why not and exit 1. Must
//! never: accept a bundle about another digest than the one the reference resolves to at
//! verification time, or one whose signature does not verify for the given signer.
use super::attest::KeylessServices;
use super::referrers::{names_registry, Target, WhereFlags};
use super::{fail_in, CliResult};
use miette::miette;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest};
use otters_pipeline::attest;
use otters_supply::bundle;
use otters_supply::keys::KeyPair;
use otters_supply::signer::{Loaded, Who};
use otters_supply::statement::{Statement, Subject, SIGN_PREDICATE};
use otters_supply::verify::{
    verify_local_first, Fallback, ImageVerifyError, OpenSource, Referrers, Verdict, VerifyOptions,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

pub fn run_sign(a: SignArgs) -> CliResult {
    let key = match &a.key {
        Some(path) => Some(KeyPair::read(path).map_err(|e| miette!("{e}"))?),
        None => None,
    };
    let target = Target::resolve(&a.reference, &a.place)?;
    let subject = target.descriptor().clone();
    let statement = Statement::signature(Subject {
        name: target.subject_name(&a.reference),
        digest: subject.digest.clone(),
    });
    let bytes = match &key {
        Some(key) => bundle::sign(&statement, key),
        None => {
            (a.services.signer()?)(&statement).map_err(|e| miette!("cannot sign keylessly: {e}"))?
        }
    };
    let d = attest::attach_bundle(target.store(), &subject, &statement, &bytes)
        .map_err(|e| fail_in("cannot store the signature", e))?;
    target.publish(&d)?;
    eprintln!("signed {}@{}", esc(&a.reference), subject.digest);
    outln!("{}", d.digest);
    Ok(ExitCode::SUCCESS)
}

pub fn run_verify(a: VerifyArgs) -> CliResult {
    let Some(who) = who(a.key.as_deref(), &a.identity)? else {
        return Err(miette!("pass --key PUB, or --certificate-identity ID --certificate-oidc-issuer URL --trusted-root FILE"));
    };
    let signer = Loaded::load(who).map_err(|e| miette!("{e}"))?;
    let mut opts = VerifyOptions::by(signer.signer());
    if let Some(t) = &a.predicate_type {
        opts.predicate_type =
            otters_supply::verify::predicate_type(t).map_err(|e| miette!("{e}"))?;
    }
    let target = Target::resolve_for_read(&a.reference, &a.place)?;
    let digest = target.descriptor().digest.clone();
    let registry = names_registry(&a.reference).filter(|_| matches!(target, Target::Local(..)));
    // Nothing in the store (a plain `pull` brings no referrers): look where it came from.
    let second: Box<OpenSource<'_>> = match &registry {
        Some(r) if !a.place.local => Box::new(|| {
            eprintln!(
                "note: no signature of {} in the local store; checking {} (pass --local to check only the store)",
                esc(&a.reference),
                esc(&r.registry)
            );
            let remote = target
                .in_registry(r, a.place.insecure)
                .map_err(|e| report_text(&e))?;
            Ok(Some(Box::new(remote) as Box<dyn Referrers>))
        }),
        _ => Box::new(|| Ok(None)),
    };
    let verdict = match verify_local_first(&target, second, &digest, &opts, Fallback::WhenUnsigned) {
        Ok(v) => v,
        Err(ImageVerifyError::NotSigned) if registry.is_some() && a.place.local => {
            return Err(miette!(
                "{}@{digest} has no signature in the local store; fetch its referrers with `otters pull --referrers {}`, or check its registry with --remote",
                esc(&a.reference),
                esc(&a.reference)
            ))
        }
        Err(e) => return Err(explain(e, &digest, &opts, &signer, &a.reference)),
    };
    let by = match &verdict {
        Verdict::Key(_) => signer.describe(),
        Verdict::Keyless(v) => format!("{} ({})", esc(&v.identity), esc(&v.issuer)),
    };
    outln!(
        "Verified OK: {by} signs {}@{digest} ({})",
        esc(&a.reference),
        esc(verdict.predicate_type())
    );
    Ok(ExitCode::SUCCESS)
}

/// Why `reference` (`digest`) did not verify, as the report says it.
fn explain(
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

/// The referrers `verify` reads: the local store's, or the registry's.
impl Referrers for Target {
    fn list(&self, subject: &Digest) -> Result<Vec<Descriptor>, String> {
        self.referrers(subject, None).map_err(|e| report_text(&e))
    }

    fn manifest(&self, d: &Descriptor) -> Result<Vec<u8>, String> {
        Target::manifest(self, d).map_err(|e| report_text(&e))
    }

    fn blob(&self, d: &Descriptor, max: u64) -> Result<Vec<u8>, String> {
        Target::blob(self, d, max).map_err(|e| report_text(&e))
    }
}

/// A report and its causes on one line.
fn report_text(e: &miette::Report) -> String {
    e.chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

fn esc(s: &str) -> String {
    otters_core::escape::escape(s).into_owned()
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
        &serde_json::from_slice::<ManifestDoc>(&bytes)
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
        let client = super::pushpull::client(insecure).map_err(|e| report_text(&e))?;
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
