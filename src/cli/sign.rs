//! `otters sign` and `otters verify`: a key-based Sigstore bundle over an image's manifest digest,
//! attached as an OCI 1.1 referrer (artifactType `application/vnd.dev.sigstore.bundle.v0.3+json`,
//! as cosign 3 stores bundles), and its verification against the digest the reference names now.
//!
//! Takes: an image (local store, or `--remote` its registry) and a key. Returns: the signature
//! referrer's digest; "Verified OK" and exit 0, or why not and exit 1. Must never: accept a bundle
//! about another digest than the one the reference resolves to at verification time, or one whose
//! signature does not verify with the given key.
use super::common::{target, target_error, target_for_read, WhereFlags};
use super::{fail_in, CliResult};
use miette::miette;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest};
use otters_pipeline::keyless::{Services, TokenSource};
use otters_pipeline::target::{names_registry, Target};
use otters_supply::bundle::{self, BUNDLE_V03, MAX_BUNDLE};
use otters_supply::keys::{KeyPair, PublicKey};
use otters_supply::statement::{Statement, Subject, SIGN_PREDICATE};
use otters_supply::verify::{
    verify_image, ImageVerifyError, VerifyOptions, ANN_BUNDLE_CONTENT, ANN_BUNDLE_PREDICATE,
};
use otters_supply::{keyless, keyless_verify};
use std::collections::BTreeMap;
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
    #[command(flatten)]
    pub keyless: KeylessFlags,
    #[command(flatten)]
    pub place: WhereFlags,
}

/// Keyless signing: an ephemeral key, a Fulcio certificate for the CI's OIDC identity, a Rekor
/// entry and/or an RFC 3161 timestamp.
#[derive(Debug, clap::Args)]
pub struct KeylessFlags {
    /// Sign keylessly: a short-lived Fulcio certificate for your OIDC identity instead of a key
    #[arg(long)]
    pub keyless: bool,
    /// The OIDC identity token [default: `$SIGSTORE_ID_TOKEN`, else GitHub Actions' token for the
    /// audience `sigstore` (needs `permissions: id-token: write`)]
    #[arg(
        long,
        value_name = "JWT",
        env = "SIGSTORE_ID_TOKEN",
        hide_env_values = true
    )]
    pub identity_token: Option<String>,
    /// Fulcio, the certificate authority
    #[arg(long, value_name = "URL", default_value = keyless::PUBLIC_FULCIO)]
    pub fulcio_url: String,
    /// Rekor, the transparency log (`none`: no log entry; then --tsa-url is needed)
    #[arg(long, value_name = "URL", default_value = keyless::PUBLIC_REKOR)]
    pub rekor_url: String,
    /// An RFC 3161 timestamp authority (for example `https://timestamp.sigstore.dev/api/v1/timestamp`)
    #[arg(long, value_name = "URL")]
    pub tsa_url: Option<String>,
}

impl KeylessFlags {
    /// Where the identity token comes from: the flag or `SIGSTORE_ID_TOKEN`, else GitHub Actions.
    fn token_source(&self) -> miette::Result<TokenSource> {
        if let Some(t) = self
            .identity_token
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        {
            return Ok(TokenSource::Given(t.to_owned()));
        }
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match (var("ACTIONS_ID_TOKEN_REQUEST_URL"), var("ACTIONS_ID_TOKEN_REQUEST_TOKEN")) {
            (Some(url), Some(bearer)) => Ok(TokenSource::GithubActions { url, bearer }),
            _ => Err(miette!(
                "keyless signing needs an OIDC identity token: pass --identity-token, set SIGSTORE_ID_TOKEN \
                 (GitLab: `id_tokens: SIGSTORE_ID_TOKEN: aud: sigstore`), or run in GitHub Actions with \
                 `permissions: id-token: write`"
            )),
        }
    }

    /// Signs the statement `payload` keylessly: the bundle's bytes.
    pub(super) fn sign(&self, payload: &[u8]) -> miette::Result<Vec<u8>> {
        let token = otters_pipeline::keyless::token(&self.token_source()?)
            .map_err(|e| fail_in("cannot get an identity token", e))?;
        let services = Services {
            fulcio: self.fulcio_url.clone(),
            rekor: Some(self.rekor_url.clone()).filter(|u| u != "none"),
            tsa: self.tsa_url.clone(),
        };
        otters_pipeline::keyless::sign(payload, &token, &services)
            .map_err(|e| fail_in("cannot sign keylessly", e))
    }
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
    /// Keyless: the identity the signing certificate must name, exactly (its SAN: a workflow URI or
    /// an email)
    #[arg(long, value_name = "ID", group = "identity", requires_all = ["certificate_oidc_issuer", "trusted_root"])]
    pub certificate_identity: Option<String>,
    /// Keyless: a regular expression the certificate's whole SAN must match (anchored at both ends)
    #[arg(long, value_name = "RE", group = "identity", requires_all = ["certificate_oidc_issuer", "trusted_root"])]
    pub certificate_identity_regexp: Option<String>,
    /// Keyless: the OIDC issuer the signing certificate must name, exactly
    #[arg(long, value_name = "URL", requires = "identity")]
    pub certificate_oidc_issuer: Option<String>,
    /// Keyless: Sigstore's trusted root (`trusted_root.json`: certificate authorities and
    /// transparency logs); verification is offline
    #[arg(long, value_name = "FILE", requires = "identity")]
    pub trusted_root: Option<PathBuf>,
    /// Accept a signed attestation of this predicate type instead of a signature: a URI, or
    /// signature, slsaprovenance1, cyclonedx, spdxjson, vuln
    #[arg(long = "type", value_name = "PREDICATE")]
    pub predicate_type: Option<String>,
    #[command(flatten)]
    pub place: WhereFlags,
}

/// Signs `subject` (named `name`) with `key` and records the bundle as its referrer in the store.
pub(super) fn attach_bundle(
    store: &otters_oci::Store,
    subject: &Descriptor,
    statement: &Statement,
    key: &KeyPair,
) -> miette::Result<Descriptor> {
    attach_bundle_bytes(store, subject, statement, &bundle::sign(statement, key))
}

/// Records the signed `bytes` (a bundle over `statement`) as a referrer of `subject`.
pub(super) fn attach_bundle_bytes(
    store: &otters_oci::Store,
    subject: &Descriptor,
    statement: &Statement,
    bytes: &[u8],
) -> miette::Result<Descriptor> {
    let (digest, size) = store
        .put_blob_bytes(bytes)
        .map_err(|e| fail_in("cannot store the signature", e))?;
    let notes = BTreeMap::from([
        (ANN_BUNDLE_CONTENT.to_owned(), "dsse-envelope".to_owned()),
        (
            ANN_BUNDLE_PREDICATE.to_owned(),
            statement.predicate_type.clone(),
        ),
    ]);
    let mut layer = Descriptor::new(BUNDLE_V03, digest, size).with_annotation(
        otters_oci::spec::descriptor::ANN_TITLE,
        otters_supply::referrer::title(&statement.predicate_type, true),
    );
    layer.annotations.extend(notes.clone());
    store
        .attach(subject, BUNDLE_V03, &[layer], &notes)
        .map_err(|e| fail_in("cannot store the signature", e))
}

pub fn run_sign(a: SignArgs) -> CliResult {
    let key = match &a.key {
        Some(path) => Some(KeyPair::read(path).map_err(|e| miette!("{e}"))?),
        None => None,
    };
    let target = target(&a.reference, &a.place)?;
    let subject = target.descriptor().clone();
    let statement = Statement::signature(Subject {
        name: target.subject_name(&a.reference),
        digest: subject.digest.clone(),
    });
    let d = if let Some(key) = &key {
        attach_bundle(target.store(), &subject, &statement, key)?
    } else {
        let bytes = a.keyless.sign(&statement.to_bytes())?;
        attach_bundle_bytes(target.store(), &subject, &statement, &bytes)?
    };
    target.publish(&d).map_err(target_error)?;
    eprintln!("signed {}@{}", esc(&a.reference), subject.digest);
    outln!("{}", d.digest);
    Ok(ExitCode::SUCCESS)
}

pub fn run_verify(a: VerifyArgs) -> CliResult {
    if let (Some(issuer), Some(root)) = (&a.certificate_oidc_issuer, &a.trusted_root) {
        let identity = match (&a.certificate_identity, &a.certificate_identity_regexp) {
            (Some(id), _) => keyless_verify::Identity::Exact(id),
            (None, Some(re)) => keyless_verify::Identity::regexp(re).map_err(|e| miette!("{e}"))?,
            (None, None) => {
                return Err(miette!(
                    "pass --certificate-identity or --certificate-identity-regexp"
                ))
            }
        };
        return verify_keyless(&a, identity, issuer, root);
    }
    let Some(key_path) = &a.key else {
        return Err(miette!("pass --key PUB, or --certificate-identity ID --certificate-oidc-issuer URL --trusted-root FILE"));
    };
    let key = PublicKey::read(key_path).map_err(|e| miette!("{e}"))?;
    let mut opts = VerifyOptions::signature(&key);
    if let Some(t) = &a.predicate_type {
        opts.predicate_type =
            otters_supply::verify::predicate_type(t).map_err(|e| miette!("{e}"))?;
    }
    let target = target_for_read(&a.reference, &a.place)?;
    let digest = target.descriptor().digest.clone();
    let ok = match verify_image(&target, &digest, &opts) {
        Ok(v) => v,
        // Nothing in the store (a plain `pull` brings no referrers): look where it came from.
        Err(ImageVerifyError::NotSigned) if matches!(target, Target::Local(..)) => {
            match names_registry(&a.reference) {
                Some(r) if !a.place.local => {
                    eprintln!(
                        "note: no signature of {} in the local store; checking {} (pass --local to check only the store)",
                        esc(&a.reference),
                        esc(&r.registry)
                    );
                    let remote = target
                        .in_registry(&r, a.place.insecure)
                        .map_err(target_error)?;
                    verify_target_with(&remote, &digest, &opts, key_path, &a.reference)?
                }
                Some(_) => {
                    return Err(miette!(
                        "{}@{digest} has no signature in the local store; fetch its referrers with `otters pull --referrers {}`, or check its registry with --remote",
                        esc(&a.reference),
                        esc(&a.reference)
                    ))
                }
                None => return Err(explain(ImageVerifyError::NotSigned, &digest, &opts, key_path, &a.reference)),
            }
        }
        Err(e) => return Err(explain(e, &digest, &opts, key_path, &a.reference)),
    };
    outln!(
        "Verified OK: {} signs {}@{digest} ({})",
        key_path.display(),
        esc(&a.reference),
        esc(&ok.predicate_type)
    );
    Ok(ExitCode::SUCCESS)
}

/// The most keyless bundle referrers one `verify` reads.
const KEYLESS_MAX_BUNDLES: usize = 32;

/// `otters verify --certificate-identity ID --certificate-oidc-issuer ISS --trusted-root FILE`: a
/// keyless bundle referrer of the image must verify against the trusted root for exactly that
/// identity and issuer, and be a signature (or the `--type` asked for).
fn verify_keyless(
    a: &VerifyArgs,
    identity: keyless_verify::Identity<'_>,
    issuer: &str,
    root_path: &Path,
) -> CliResult {
    let wanted = match &identity {
        keyless_verify::Identity::Exact(id) => (*id).to_owned(),
        keyless_verify::Identity::Regexp(re) => format!("/{}/", re.as_str()),
    };
    let root = otters_core::files::read_named(root_path, "trusted root", MAX_BUNDLE as u64)
        .map_err(|e| miette!("{e} (the trusted root: Sigstore's trusted_root.json)"))?;
    let target = target(&a.reference, &a.place)?;
    let digest = target.descriptor().digest.clone();
    let expected = keyless_verify::Expected {
        identity,
        issuer,
        sha256: digest.hex(),
    };
    // A signature unless --type asks for an attestation (issue 17.7), as for key-based bundles.
    let wanted_type = match &a.predicate_type {
        Some(t) => otters_supply::verify::predicate_type(t).map_err(|e| miette!("{e}"))?,
        None => SIGN_PREDICATE.to_owned(),
    };
    let found = target
        .referrers(&digest, Some(BUNDLE_V03))
        .map_err(target_error)?;
    let mut reasons = Vec::new();
    // Bounded as key-based verification is (issue 17.14): at most this many bundles are read.
    for r in found.iter().take(KEYLESS_MAX_BUNDLES) {
        let checked = bundle_layer(&target, r, &digest)
            .and_then(|blob| keyless_verify::verify(&blob, &root, &expected))
            .and_then(|v| {
                if v.predicate_type == wanted_type {
                    Ok(v)
                } else {
                    Err(format!(
                        "it is a signed attestation of type {}, not {}",
                        esc(&v.predicate_type),
                        esc(&wanted_type)
                    ))
                }
            });
        match checked {
            Ok(v) => {
                outln!(
                    "Verified OK: {} ({}) signs {}@{digest} ({})",
                    esc(&v.identity),
                    esc(&v.issuer),
                    esc(&a.reference),
                    v.predicate_type
                );
                return Ok(ExitCode::SUCCESS);
            }
            Err(why) => reasons.push(format!("{}: {}", r.digest, esc(&why))),
        }
    }
    let who = format!("{}@{digest}", esc(&a.reference));
    if found.is_empty() {
        return Err(miette!(
            "{who} is not signed: it has no Sigstore bundle referrer"
        ));
    }
    Err(miette!(
        "{who} has no valid keyless signature by {} ({}): {} bundle(s) found, none verifies ({})",
        esc(&wanted),
        esc(issuer),
        found.len(),
        reasons.join("; ")
    ))
}

/// The bundle layer of the referrer `r`, whose manifest must name `digest` as subject.
fn bundle_layer(target: &Target, r: &Descriptor, digest: &Digest) -> Result<Vec<u8>, String> {
    let bytes = target.manifest(r).map_err(|e| e.to_string())?;
    let doc: ManifestDoc =
        serde_json::from_slice(&bytes).map_err(|e| format!("not a manifest: {e}"))?;
    if doc.subject.as_ref().map(|s| &s.digest) != Some(digest) {
        return Err("its manifest does not name this image as subject".into());
    }
    let layer = doc
        .layers
        .iter()
        .find(|l| l.media_type.as_str() == BUNDLE_V03)
        .ok_or("it has no bundle layer")?;
    target
        .blob(layer, MAX_BUNDLE as u64)
        .map_err(|e| e.to_string())
}

/// Checks that a bundle referrer of `digest` is a signature by `key` about `digest` (the run
/// gate's check); the error says what was found and why none held.
pub(super) fn verify_target(
    target: &Target,
    digest: &Digest,
    key: &PublicKey,
    key_path: &Path,
    reference: &str,
) -> miette::Result<bundle::Verified> {
    verify_target_with(
        target,
        digest,
        &VerifyOptions::signature(key),
        key_path,
        reference,
    )
}

/// [`verify_target`] with the options `otters verify` was given (`--type`).
fn verify_target_with(
    target: &Target,
    digest: &Digest,
    opts: &VerifyOptions<'_>,
    key_path: &Path,
    reference: &str,
) -> miette::Result<bundle::Verified> {
    verify_image(target, digest, opts).map_err(|e| explain(e, digest, opts, key_path, reference))
}

/// Why `reference` (`digest`) did not verify, as the report says it.
fn explain(
    e: ImageVerifyError,
    digest: &Digest,
    opts: &VerifyOptions<'_>,
    key_path: &Path,
    reference: &str,
) -> miette::Report {
    let who = format!("{}@{digest}", esc(reference));
    match e {
        ImageVerifyError::NotSigned => miette!(
            "{who} is not signed: it has no Sigstore bundle referrer (sign it with `otters sign {} --key KEY`)",
            esc(reference)
        ),
        e @ ImageVerifyError::List(_) => miette!("{who}: {e}"),
        e if opts.predicate_type == SIGN_PREDICATE => miette!(
            "{who} has no valid signature by {}: {e}",
            key_path.display()
        ),
        e => miette!(
            "{who} has no valid attestation of type {} by {}: {e}",
            esc(&opts.predicate_type),
            key_path.display()
        ),
    }
}

fn esc(s: &str) -> String {
    otters_core::escape::escape(s).into_owned()
}

/// `otters run --verify-key`: the image `digest` (what `reference` resolved to for this run) must
/// carry a signature by `key_path`, found in the local store or, when the run may contact a
/// registry and `reference` names one, in that registry.
pub(super) fn verify_for_run(
    store: &otters_oci::Store,
    reference: &str,
    digest: &Digest,
    key_path: &Path,
    insecure: bool,
    may_contact: bool,
) -> miette::Result<()> {
    let key = PublicKey::read(key_path).map_err(|e| miette!("{e}"))?;
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
    let Err(err) = verify_target(&local, digest, &key, key_path, reference) else {
        return Ok(());
    };
    let remote = otters_oci::reference::Reference::parse(reference)
        .ok()
        // Only a reference that names its registry (never an implied Docker Hub for a local tag).
        .filter(|r| may_contact && reference.starts_with(&format!("{}/", r.registry)));
    let Some(r) = remote else {
        return Err(err.wrap_err("refusing to run an unverified image"));
    };
    let client = super::common::client(insecure)?;
    let remote = Target::Remote(store.clone(), Box::new(client), r.with_digest(digest), d);
    verify_target(&remote, digest, &key, key_path, reference)
        .map(|_| ())
        .map_err(|e| e.wrap_err("refusing to run an unverified image"))
}
