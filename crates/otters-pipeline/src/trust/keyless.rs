//! Keyless signing end to end: an ephemeral P-256 key, an OIDC identity token (given, or asked
//! of GitHub Actions), a certificate from Fulcio, a Rekor `dsse` entry and/or an RFC 3161
//! timestamp, and the Sigstore bundle v0.3 they make.
//!
//! Takes: the in-toto statement's bytes, the token source and the services' URLs. Returns: the
//! bundle's bytes. Must never: write the ephemeral key anywhere (it is dropped when this returns),
//! or return a bundle without a trusted time (a tlog entry or a timestamp). The requests and the
//! checks of the answers are `otters_supply::keyless`; the calls are `otters_oci::web`.

use otters_oci::web::{self, Answer, Request, WebError};
use otters_supply::keyless::{self, KeylessError};
use otters_supply::keys::KeyPair;
use std::time::Duration;

/// Where the identity token comes from.
#[derive(Clone, Debug)]
pub enum TokenSource {
    /// `--identity-token`, `SIGSTORE_ID_TOKEN` (GitLab's `id_tokens:` too).
    Given(String),
    /// GitHub Actions' token endpoint (`ACTIONS_ID_TOKEN_REQUEST_URL` and `_TOKEN`), asked for
    /// the audience `sigstore`; needs `permissions: id-token: write`.
    GithubActions { url: String, bearer: String },
}

/// The services a keyless signature uses.
#[derive(Clone, Debug)]
pub struct Services {
    pub fulcio: String,
    /// Rekor v1 (`None`: no transparency-log entry; then `tsa` must be set).
    pub rekor: Option<String>,
    /// An RFC 3161 timestamp authority (`…/api/v1/timestamp`).
    pub tsa: Option<String>,
}

/// Why keyless signing failed.
#[derive(Debug, thiserror::Error)]
pub enum KeylessSignError {
    #[error(transparent)]
    Web(#[from] WebError),
    #[error(transparent)]
    Answer(#[from] KeylessError),
    #[error("{service} refused the request (HTTP {status}): {body}")]
    Refused {
        service: &'static str,
        status: u16,
        body: String,
    },
    #[error(
        "no trusted time: keyless signing needs a Rekor URL, a timestamp authority URL, or both"
    )]
    NoTime,
}

const TIMEOUT: Duration = Duration::from_secs(30);

fn expect(service: &'static str, a: Answer, ok: &[u16]) -> Result<Vec<u8>, KeylessSignError> {
    if ok.contains(&a.status) {
        Ok(a.body)
    } else {
        Err(KeylessSignError::Refused {
            service,
            status: a.status,
            body: a.excerpt(),
        })
    }
}

/// The identity token: as given, or asked of GitHub Actions for the audience `sigstore`.
pub fn token(source: &TokenSource) -> Result<String, KeylessSignError> {
    match source {
        TokenSource::Given(t) => Ok(t.trim().to_owned()),
        TokenSource::GithubActions { url, bearer } => {
            let sep = if url.contains('?') { '&' } else { '?' };
            let url = format!("{url}{sep}audience=sigstore");
            let a = web::call(
                &Request {
                    url: &url,
                    body: None,
                    bearer: Some(bearer),
                    accept: "application/json",
                },
                TIMEOUT,
            )?;
            let body = expect("the GitHub Actions token endpoint", a, &[200])?;
            serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("value").and_then(|t| t.as_str()).map(str::to_owned))
                .ok_or_else(|| {
                    KeylessError::Token("the GitHub Actions answer has no `value`".into()).into()
                })
        }
    }
}

fn post(url: &str, content_type: &str, body: Vec<u8>) -> Result<Answer, WebError> {
    web::call(
        &Request {
            url,
            body: Some((content_type, body)),
            bearer: None,
            accept: "application/json",
        },
        TIMEOUT,
    )
}

/// Signs the in-toto statement `payload` keylessly with `token`: a bundle v0.3.
pub fn sign(payload: &[u8], token: &str, services: &Services) -> Result<Vec<u8>, KeylessSignError> {
    if services.rekor.is_none() && services.tsa.is_none() {
        return Err(KeylessSignError::NoTime);
    }
    // The ephemeral key: in memory only, dropped on return.
    let key = KeyPair::generate();
    let request = keyless::fulcio_request(token, &key)?;
    let url = format!(
        "{}/api/v2/signingCert",
        services.fulcio.trim_end_matches('/')
    );
    let a = post(&url, "application/json", request)?;
    let leaf = keyless::fulcio_leaf(&expect("Fulcio", a, &[200, 201])?)?;
    let sig = keyless::sign_dsse(payload, &key);
    drop(key);
    let tlog = match &services.rekor {
        Some(rekor) => {
            let url = format!("{}/api/v1/log/entries", rekor.trim_end_matches('/'));
            let a = post(
                &url,
                "application/json",
                keyless::rekor_dsse_request(payload, &sig, &leaf),
            )?;
            Some(keyless::rekor_entry(&expect("Rekor", a, &[201])?, &sig)?)
        }
        None => None,
    };
    let timestamp = match &services.tsa {
        Some(tsa) => {
            let a = post(tsa, "application/json", keyless::tsa_request(&sig))?;
            Some(expect("the timestamp authority", a, &[200, 201])?)
        }
        None => None,
    };
    Ok(keyless::bundle(
        payload,
        &sig,
        &leaf,
        tlog,
        timestamp.as_deref(),
    ))
}
