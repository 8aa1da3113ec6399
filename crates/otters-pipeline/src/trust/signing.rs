//! The signers `otters build` and `otters sign` make from their flags' values: a key read from a
//! file, or keyless (the identity token found and fetched once, then for each statement an
//! ephemeral key and a Fulcio certificate).
//!
//! Also attaches a build's SBOM and provenance with them, and pushes those after the image; and
//! signs one image (`otters sign`, `otters export --sign-key`) where it is ([`sign_image`]).
//!
//! Takes: a key path, or a token given and the environment, and the services' URLs. Returns: an
//! [`attest::Sign`] callback; the attached documents' digests. Must never: read the environment itself (the caller passes a
//! lookup), or keep the ephemeral keys.
use crate::build::BuildOutput;
use crate::target::{Shared, Target, TargetError};
use crate::trust::attest;
use crate::trust::keyless::{KeylessSignError, Services, TokenSource};
use otters_oci::registry::{ClientOptions, RegistryClient, RegistryError};
use otters_oci::{Descriptor, Digest, Store, StoreError};
use otters_supply::bundle;
use otters_supply::keys::{KeyError, KeyPair};
use otters_supply::statement::{Statement, Subject};
use std::path::Path;

/// No identity token could be found.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("keyless signing needs an OIDC identity token: set SIGSTORE_ID_TOKEN (GitLab: `id_tokens: SIGSTORE_ID_TOKEN: aud: sigstore`), or run in GitHub Actions with `permissions: id-token: write`")]
pub struct NoToken;

/// Where the identity token comes from: `given` (the flag or `SIGSTORE_ID_TOKEN`) when not
/// blank, else GitHub Actions' token endpoint when `var` names it.
pub fn token_source(
    given: Option<&str>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<TokenSource, NoToken> {
    if let Some(t) = given.filter(|t| !t.trim().is_empty()) {
        return Ok(TokenSource::Given(t.to_owned()));
    }
    let var = |k: &str| var(k).filter(|v| !v.is_empty());
    match (
        var("ACTIONS_ID_TOKEN_REQUEST_URL"),
        var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
    ) {
        (Some(url), Some(bearer)) => Ok(TokenSource::GithubActions { url, bearer }),
        _ => Err(NoToken),
    }
}

/// The services named by URL; a Rekor URL of `none` means no transparency-log entry.
pub fn services(fulcio: &str, rekor: &str, tsa: Option<&str>) -> Services {
    Services {
        fulcio: fulcio.to_owned(),
        rekor: Some(rekor.to_owned()).filter(|u| u != "none"),
        tsa: tsa.map(str::to_owned),
    }
}

/// Signs with the private key in the file at `path`.
pub fn key_signer(path: &Path) -> Result<Box<attest::Sign<'static>>, KeyError> {
    let key = KeyPair::read(path)?;
    Ok(Box::new(move |s: &Statement| Ok(bundle::sign(s, &key))))
}

/// Signs keylessly: the identity token is fetched now, once; each statement then gets its own
/// ephemeral key and certificate.
pub fn keyless_signer(
    source: &TokenSource,
    services: Services,
) -> Result<Box<attest::Sign<'static>>, KeylessSignError> {
    let token = crate::trust::keyless::token(source)?;
    Ok(Box::new(move |statement: &Statement| {
        crate::trust::keyless::sign(&statement.to_bytes(), &token, &services)
            .map_err(attest::SignError::from)
    }))
}

/// Why an image was not signed.
#[derive(Debug, thiserror::Error)]
pub enum SignImageError {
    #[error("cannot sign {image}")]
    Sign {
        image: String,
        #[source]
        source: attest::SignError,
    },
    #[error("cannot store the signature")]
    Store(#[source] StoreError),
    #[error(transparent)]
    Share(#[from] TargetError),
}

/// Signs the image `target` names (`reference`, as the user wrote it) with `sign`: a signature
/// statement over its digest, its bundle stored in the local store as a referrer, then shared
/// where the image is ([`Target::share`], `local_only` and `insecure` as there). Returns the
/// referrer and where it went.
pub fn sign_image(
    target: &Target,
    reference: &str,
    sign: &mut attest::Sign<'_>,
    local_only: bool,
    insecure: bool,
) -> Result<(Descriptor, Shared), SignImageError> {
    let subject = target.descriptor().clone();
    let statement = Statement::signature(Subject {
        name: target.subject_name(reference),
        digest: subject.digest.clone(),
    });
    let bytes = sign(&statement).map_err(|source| SignImageError::Sign {
        image: otters_oci::reference::pinned(reference, &subject.digest),
        source,
    })?;
    let d = attest::attach_bundle(target.store(), &subject, &statement, &bytes)
        .map_err(SignImageError::Store)?;
    let shared = target.share(&d, reference, local_only, insecure)?;
    Ok((d, shared))
}

/// Attaching a build's documents, or pushing them, failed.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(transparent)]
    Attest(#[from] attest::AttestError),
    #[error(transparent)]
    Client(#[from] RegistryError),
}

/// Attaches what `wanted` asks for to the built image (signed with `sign`), and when the build
/// pushed, pushes them after the image with a client made with `client`.
pub fn attach_and_push(
    store: &Store,
    out: &BuildOutput,
    wanted: attest::Wanted,
    sign: Option<&mut attest::Sign<'_>>,
    client: &ClientOptions,
) -> Result<Vec<(&'static str, Digest)>, AttachError> {
    let done = attest::attach_build(store, out, wanted, sign)?;
    if !done.is_empty() && !out.pushed.is_empty() {
        let client = RegistryClient::new(client.clone())?;
        attest::push_build_referrers(&client, store, out)?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_token_wins_then_github_actions() {
        let actions = |k: &str| match k {
            "ACTIONS_ID_TOKEN_REQUEST_URL" => Some("https://t".to_owned()),
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN" => Some("b".to_owned()),
            _ => None,
        };
        assert!(matches!(
            token_source(Some("jwt"), actions),
            Ok(TokenSource::Given(t)) if t == "jwt"
        ));
        assert!(matches!(
            token_source(Some("  "), actions),
            Ok(TokenSource::GithubActions { url, .. }) if url == "https://t"
        ));
        assert_eq!(token_source(None, |_| None).unwrap_err(), NoToken);
        assert_eq!(
            token_source(None, |k| actions(k).filter(|_| k.ends_with("URL"))).unwrap_err(),
            NoToken
        );
    }

    #[test]
    fn rekor_none_means_no_log() {
        assert_eq!(services("f", "none", Some("t")).rekor, None);
        assert_eq!(services("f", "r", None).rekor.as_deref(), Some("r"));
    }
}
