//! The HTTP transport of the registry client: scheme choice, authentication, retries.
//!
//! Takes: a registry host, the token scopes a request needs, and a closure that builds the request
//! (called again for every attempt, so bodies are re-created). Returns: the registry's response.
//! Must never: speak plain HTTP to a non-loopback host without `--insecure`, send credentials to a
//! host other than the registry or its token realm, or retry a request that got a 4xx answer.
//!
//! Auth follows the distribution spec: a `GET /v2/` ping learns the challenge; `Basic` sends the
//! stored credentials; `Bearer` fetches a token from the realm for exactly the scopes a request
//! needs (a cross-repository mount asks for `pull` on the source too) and caches it per scope set.

use super::auth::{Challenge, Credential};
use super::registry::{RegistryError, Retry};
use reqwest::header::{HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, Response, StatusCode};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Per-registry state learnt from the ping and token requests.
#[derive(Default)]
struct RegState {
    base: String,
    challenge: Option<Challenge>,
    /// Credentials once looked up (`Looked(None)` = anonymous).
    creds: Lookup,
    tokens: HashMap<String, String>,
}

/// Whether credentials were looked up yet.
#[derive(Clone, Default)]
enum Lookup {
    #[default]
    Pending,
    Looked(Option<Credential>),
}

/// Where credentials come from; replaceable so tests and `otters login` can inject them.
pub type CredentialSource =
    Box<dyn Fn(&str) -> Result<Option<Credential>, RegistryError> + Send + Sync>;

pub struct Transport {
    pub http: reqwest::Client,
    insecure: bool,
    retry: Retry,
    creds: CredentialSource,
    state: Mutex<HashMap<String, RegState>>,
}

impl Transport {
    pub fn new(
        insecure: bool,
        retry: Retry,
        creds: CredentialSource,
    ) -> Result<Self, RegistryError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("otters/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(120))
            .tls_danger_accept_invalid_certs(insecure)
            .build()
            .map_err(|e| RegistryError::Client(e.to_string()))?;
        Ok(Transport {
            http,
            insecure,
            retry,
            creds,
            state: Mutex::new(HashMap::new()),
        })
    }

    fn with_state<T>(&self, registry: &str, f: impl FnOnce(&mut RegState) -> T) -> T {
        let mut map = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(map.entry(registry.to_owned()).or_default())
    }

    fn credentials(&self, registry: &str) -> Result<Option<Credential>, RegistryError> {
        if let Lookup::Looked(c) = self.with_state(registry, |s| s.creds.clone()) {
            return Ok(c);
        }
        let c = (self.creds)(registry)?;
        self.with_state(registry, |s| s.creds = Lookup::Looked(c.clone()));
        Ok(c)
    }

    /// The user name otters would present to `registry`, for messages.
    pub fn user(&self, registry: &str) -> Option<String> {
        match self.with_state(registry, |s| s.creds.clone()) {
            Lookup::Looked(Some(c)) => Some(c.user().to_owned()),
            _ => None,
        }
    }

    /// `scheme://host` of the registry's API, after a `/v2/` ping on first use.
    pub async fn base(&self, registry: &str, api_host: &str) -> Result<String, RegistryError> {
        let known = self.with_state(registry, |s| s.base.clone());
        if !known.is_empty() {
            return Ok(known);
        }
        let plain_ok = self.insecure || crate::reference::is_loopback_host(registry);
        let https = format!("https://{api_host}");
        let attempt = self.http.get(format!("{https}/v2/")).send().await;
        let (base, resp) = match attempt {
            Ok(r) => (https, r),
            Err(e) if plain_ok => {
                let http = format!("http://{api_host}");
                match self.ping_with_retries(&http).await {
                    Ok(r) => (http, r),
                    Err(e2) => return Err(unreachable(registry, &e2, Some(&e))),
                }
            }
            Err(e) if e.is_connect() && !is_tls(&e) => match self.ping_with_retries(&https).await {
                Ok(r) => (https, r),
                Err(e2) => return Err(unreachable(registry, &e2, None)),
            },
            Err(e) => {
                return Err(RegistryError::Tls {
                    registry: registry.to_owned(),
                    reason: error_chain(&e),
                });
            }
        };
        let challenge = challenge_of(&resp);
        self.with_state(registry, |s| {
            s.base.clone_from(&base);
            s.challenge = challenge;
        });
        Ok(base)
    }

    async fn ping_with_retries(&self, base: &str) -> Result<Response, reqwest::Error> {
        let mut attempt = 0;
        loop {
            match self.http.get(format!("{base}/v2/")).send().await {
                Ok(r) => return Ok(r),
                Err(e) if attempt < self.retry.attempts && (e.is_connect() || e.is_timeout()) => {
                    tokio::time::sleep(self.retry.delay(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends the request `make` builds, authenticating for `scopes` and retrying 5xx answers,
    /// timeouts and dropped connections with backoff. 4xx answers are returned to the caller.
    pub async fn send<F>(
        &self,
        registry: &str,
        api_host: &str,
        scopes: &[String],
        make: F,
    ) -> Result<Response, RegistryError>
    where
        F: Fn(&reqwest::Client, &str) -> Result<RequestBuilder, RegistryError>,
    {
        let base = self.base(registry, api_host).await?;
        let mut attempt = 0;
        let mut reauthed = false;
        loop {
            let mut rb = make(&self.http, &base)?;
            if let Some(h) = self.auth_header(registry, scopes, false).await? {
                rb = rb.header(AUTHORIZATION, h);
            }
            match rb.send().await {
                Ok(resp) if resp.status() == StatusCode::UNAUTHORIZED && !reauthed => {
                    reauthed = true;
                    if let Some(c) = challenge_of(&resp) {
                        self.with_state(registry, |s| s.challenge = Some(c));
                    }
                    self.with_state(registry, |s| s.tokens.clear());
                    // Fetch a fresh token (or find out there is no way to authenticate).
                    if self.auth_header(registry, scopes, true).await?.is_none() {
                        return Ok(resp);
                    }
                }
                Ok(resp) if resp.status().is_server_error() && attempt < self.retry.attempts => {
                    tokio::time::sleep(self.retry.delay(attempt)).await;
                    attempt += 1;
                }
                Ok(resp) => return Ok(resp),
                Err(e) if attempt < self.retry.attempts && retryable(&e) => {
                    tokio::time::sleep(self.retry.delay(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(unreachable(registry, &e, None)),
            }
        }
    }

    /// The `Authorization` value for `scopes`, fetching a bearer token when needed.
    async fn auth_header(
        &self,
        registry: &str,
        scopes: &[String],
        fresh: bool,
    ) -> Result<Option<String>, RegistryError> {
        let Some(challenge) = self.with_state(registry, |s| s.challenge.clone()) else {
            return Ok(None);
        };
        let creds = self.credentials(registry)?;
        match challenge.scheme.as_str() {
            "basic" => Ok(creds.and_then(|c| c.basic_header())),
            "bearer" => {
                let key = scopes.join(" ");
                if !fresh {
                    if let Some(t) = self.with_state(registry, |s| s.tokens.get(&key).cloned()) {
                        return Ok(Some(format!("Bearer {t}")));
                    }
                }
                let token = self
                    .fetch_token(registry, &challenge, scopes, creds.as_ref())
                    .await?;
                self.with_state(registry, |s| s.tokens.insert(key, token.clone()));
                Ok(Some(format!("Bearer {token}")))
            }
            _ => Ok(None),
        }
    }

    async fn fetch_token(
        &self,
        registry: &str,
        ch: &Challenge,
        scopes: &[String],
        creds: Option<&Credential>,
    ) -> Result<String, RegistryError> {
        let Some(realm) = ch.param("realm") else {
            return Err(RegistryError::Protocol {
                registry: registry.to_owned(),
                what: "a bearer challenge without a realm".into(),
            });
        };
        let mut query: Vec<(&str, &str)> = Vec::new();
        if let Some(s) = ch.param("service") {
            query.push(("service", s));
        }
        for s in scopes {
            query.push(("scope", s));
        }
        let mut attempt = 0;
        let resp = loop {
            let mut rb = match creds {
                Some(Credential::IdentityToken(t)) => {
                    let mut form: Vec<(&str, &str)> = vec![
                        ("grant_type", "refresh_token"),
                        ("refresh_token", t),
                        ("client_id", "otters"),
                    ];
                    form.extend(query.iter().copied());
                    self.http.post(realm).body(form_encode(&form)).header(
                        reqwest::header::CONTENT_TYPE,
                        HeaderValue::from_static("application/x-www-form-urlencoded"),
                    )
                }
                _ => self.http.get(url_with_query(realm, &query)),
            };
            if let Some(h) = creds.and_then(Credential::basic_header) {
                rb = rb.header(AUTHORIZATION, h);
            }
            match rb.send().await {
                Ok(r) if r.status().is_server_error() && attempt < self.retry.attempts => {}
                Ok(r) => break r,
                Err(e) if attempt < self.retry.attempts && retryable(&e) => {}
                Err(e) => {
                    return Err(RegistryError::Unreachable {
                        registry: format!("{registry} (token service {realm})"),
                        reason: error_chain(&e),
                    })
                }
            }
            tokio::time::sleep(self.retry.delay(attempt)).await;
            attempt += 1;
        };
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(RegistryError::Denied {
                registry: registry.to_owned(),
                user: creds.map(|c| c.user().to_owned()),
                what: "credentials".into(),
            });
        }
        if !status.is_success() {
            return Err(RegistryError::Protocol {
                registry: registry.to_owned(),
                what: format!("token service {realm} answered {status}"),
            });
        }
        let body: serde_json::Value =
            resp.json_value()
                .await
                .map_err(|e| RegistryError::Protocol {
                    registry: registry.to_owned(),
                    what: format!("token service {realm} sent an unreadable answer: {e}"),
                })?;
        body.get("token")
            .or_else(|| body.get("access_token"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| RegistryError::Protocol {
                registry: registry.to_owned(),
                what: format!("token service {realm} sent no token"),
            })
    }
}

/// Reads a JSON body without reqwest's `json` feature.
trait JsonBody {
    async fn json_value(self) -> Result<serde_json::Value, String>;
}

impl JsonBody for Response {
    async fn json_value(self) -> Result<serde_json::Value, String> {
        let bytes = self.bytes().await.map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())
    }
}

fn challenge_of(resp: &Response) -> Option<Challenge> {
    if resp.status() != StatusCode::UNAUTHORIZED {
        return None;
    }
    resp.headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|h| h.to_str().ok())
        .and_then(Challenge::parse)
}

fn retryable(e: &reqwest::Error) -> bool {
    e.is_connect() || e.is_timeout() || e.is_request() || e.is_body()
}

fn is_tls(e: &reqwest::Error) -> bool {
    let chain = error_chain(e).to_ascii_lowercase();
    chain.contains("tls") || chain.contains("certificate") || chain.contains("handshake")
}

/// The error and its causes, joined, without the request URL's query.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

fn unreachable(
    registry: &str,
    e: &reqwest::Error,
    first: Option<&reqwest::Error>,
) -> RegistryError {
    let mut reason = error_chain(e);
    if let Some(f) = first {
        reason = format!("https: {}; http: {reason}", error_chain(f));
    }
    RegistryError::Unreachable {
        registry: registry.to_owned(),
        reason,
    }
}

/// Percent-encodes a query component (RFC 3986 unreserved characters kept).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn form_encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `url` with `pairs` appended to its query.
pub fn url_with_query(url: &str, pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return url.to_owned();
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", form_encode(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_encoding() {
        assert_eq!(
            url_with_query(
                "http://x/token",
                &[("service", "a b"), ("scope", "repository:a/b:pull,push")]
            ),
            "http://x/token?service=a%20b&scope=repository%3Aa%2Fb%3Apull%2Cpush"
        );
        assert_eq!(
            url_with_query("http://x/u?a=1", &[("digest", "sha256:00")]),
            "http://x/u?a=1&digest=sha256%3A00"
        );
    }
}
