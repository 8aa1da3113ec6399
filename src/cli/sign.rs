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
use super::common::{esc, target, target_error, target_for_read, WhereFlags};
use super::trust::{report_text, IdentityFlags};
use super::{fail, fail_in, CliResult};
use miette::miette;
use otters_pipeline::attest;
use otters_pipeline::target::{names_registry, Target};
use otters_pipeline::trust;
use otters_supply::bundle;
use otters_supply::keys::KeyPair;
use otters_supply::statement::{Statement, Subject};
use otters_supply::verify::{
    verify_local_first, Fallback, ImageVerifyError, OpenSource, Referrers, Verdict, VerifyOptions,
};
use std::path::PathBuf;
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

pub fn run_sign(a: SignArgs) -> CliResult {
    let key = match &a.key {
        Some(path) => Some(KeyPair::read(path).map_err(fail)?),
        None => None,
    };
    let target = target(&a.reference, &a.place)?;
    let subject = target.descriptor().clone();
    let statement = Statement::signature(Subject {
        name: target.subject_name(&a.reference),
        digest: subject.digest.clone(),
    });
    let bytes = match &key {
        Some(key) => bundle::sign(&statement, key),
        None => {
            (a.services.signer()?)(&statement).map_err(|e| fail_in("cannot sign keylessly", e))?
        }
    };
    let d = attest::attach_bundle(target.store(), &subject, &statement, &bytes)
        .map_err(|e| fail_in("cannot store the signature", e))?;
    target.publish(&d).map_err(target_error)?;
    eprintln!("signed {}@{}", esc(&a.reference), subject.digest);
    outln!("{}", d.digest);
    Ok(ExitCode::SUCCESS)
}

pub fn run_verify(a: VerifyArgs) -> CliResult {
    let who = trust::who(a.key.as_deref(), &a.identity.identity()).map_err(fail)?;
    let Some(who) = who else {
        return Err(miette!("pass --key PUB, or --certificate-identity ID --certificate-oidc-issuer URL --trusted-root FILE"));
    };
    let signer = trust::load(who).map_err(fail)?;
    let mut opts = VerifyOptions::by(signer.signer());
    if let Some(t) = &a.predicate_type {
        opts.predicate_type =
            otters_supply::verify::predicate_type(t).map_err(miette::Report::msg)?;
    }
    let target = target_for_read(&a.reference, &a.place)?;
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
                .map_err(|e| report_text(&target_error(e)))?;
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
        Err(e) => {
            let why = trust::explain(&e, &digest, &opts.predicate_type, &signer, &a.reference);
            return Err(fail(why));
        }
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
