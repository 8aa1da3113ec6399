//! The HTTP transport of the registry client: scheme choice, authentication, retries, timeouts.
//!
//! Takes: a registry host, the token scopes a request needs, and a closure that builds the request
//! (called again for every attempt, so bodies are re-created). Returns: the registry's response.
//! Must never: speak plain HTTP to a non-loopback host without `--insecure` (or `insecure = true`
//! for that registry in `config.toml`, see [`RegistryConfig`]), send credentials
//! (Basic or a bearer token) to any origin but the registry's own, or to a token realm that fails
//! that transport rule, follow a redirect to a host the transport rule refuses, wait on a request
//! without a deadline, or retry a request that got a 4xx answer.
//!
//! Auth follows the distribution spec: a `GET /v2/` ping learns the challenge; `Basic` sends the
//! stored credentials; `Bearer` fetches a token from the realm for exactly the scopes a request
//! needs (a cross-repository mount asks for `pull` on the source too) and caches it per scope set.
//! A URL the registry hands out on another origin (an upload `Location`, a redirect) is followed
//! without credentials. See docs/registries.md, "Transport".

use crate::reference::is_loopback_host;
use crate::registry::auth::{Challenge, Credential};
use crate::registry::config::{CaError, RegistryConfig, RegistryConfigError};
use crate::registry::error::{RegistryError, UrlRefusal};
use crate::validate::{error_chain, escape_text, read_capped, MAX_TOKEN_BODY};
use reqwest::header::{HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Default for [`TIMEOUT_ENV`]: seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The environment variable that sets the registry timeout, in seconds.
pub const TIMEOUT_ENV: &str = "OTTERS_REGISTRY_TIMEOUT";
/// Most redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;

/// The timeout from [`TIMEOUT_ENV`] (seconds, decimals allowed, 0 < t ≤ 3600), else the default.
pub fn timeout_from_env() -> Result<Duration, RegistryError> {
    parse_timeout(std::env::var(TIMEOUT_ENV).ok())
}

fn parse_timeout(value: Option<String>) -> Result<Duration, RegistryError> {
    match value {
        None => Ok(DEFAULT_TIMEOUT),
        Some(v) if v.trim().is_empty() => Ok(DEFAULT_TIMEOUT),
        Some(v) => match v.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s <= 3600.0 => Ok(Duration::from_secs_f64(s)),
            _ => Err(RegistryError::Client(
                format!(
                    "{TIMEOUT_ENV}={} is not a number of seconds between 0 and 3600",
                    escape_text(&v, 40)
                )
                .into(),
            )),
        },
    }
}

/// What kind of request `send` makes, which decides its client and deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// A small `GET`/`HEAD` (ping, manifest, blob check): the whole exchange, body included,
    /// within the timeout; redirects followed.
    Small,
    /// A blob `GET`: no overall deadline, but no more than the timeout without a byte (and
    /// before the answer's headers); redirects followed.
    Download,
    /// A small `POST`/`PUT` (mount, upload session, finish, manifest): within the timeout, never
    /// redirected.
    Write,
    /// The streamed blob `PATCH`: never redirected, no deadline here (the caller watches
    /// progress).
    Upload,
}

/// Retry policy for 5xx answers, timeouts and dropped connections.
#[derive(Clone, Copy, Debug)]
pub struct Retry {
    /// Retries after the first attempt.
    pub attempts: u32,
    pub base: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 3,
            base: Duration::from_millis(250),
        }
    }
}

impl Retry {
    /// Exponential backoff: base, 2·base, 4·base … capped at 8 s.
    pub fn delay(&self, attempt: u32) -> Duration {
        (self.base * 2u32.saturating_pow(attempt)).min(Duration::from_secs(8))
    }
}

/// Whether `url` may be contacted for `registry`: HTTPS, or plain HTTP to a loopback host or with
/// `insecure`; never a loopback host on behalf of a registry that is not itself on loopback.
pub fn url_allowed(url: &Url, registry_loopback: bool, insecure: bool) -> Result<(), UrlRefusal> {
    let host = url.host_str().unwrap_or_default();
    let loopback = is_loopback_host(host);
    match url.scheme() {
        "https" => {}
        "http" if loopback || insecure => {}
        "http" => return Err(UrlRefusal::PlainHttp(escape_text(host, 100))),
        other => return Err(UrlRefusal::Scheme(escape_text(other, 20))),
    }
    if loopback && !registry_loopback {
        return Err(UrlRefusal::LoopbackFromRemote(escape_text(host, 100)));
    }
    Ok(())
}

/// `scheme://host:port` equality, the default port filled in.
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str().map(str::to_ascii_lowercase) == b.host_str().map(str::to_ascii_lowercase)
        && a.port_or_known_default() == b.port_or_known_default()
}

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
    /// The clients for registries `config.toml` says nothing about.
    default: Clients,
    /// `--insecure`: plain HTTP and unverified TLS for every registry.
    insecure_all: bool,
    /// `$OTTERS_HOME/config.toml`: per-registry settings.
    config: RegistryConfig,
    /// Clients built for registries with their own settings, on first use.
    configured: Mutex<HashMap<String, Clients>>,
    retry: Retry,
    timeout: Duration,
    creds: CredentialSource,
    state: Mutex<HashMap<String, RegState>>,
}

/// The two HTTP clients for one transport setting.
#[derive(Clone)]
struct Clients {
    /// For `GET`/`HEAD`: bounded redirects that pass the transport rule, read timeout.
    http: reqwest::Client,
    /// For `POST`/`PUT`/`PATCH`: never redirected (a 307 would resend the body elsewhere).
    nofollow: reqwest::Client,
    /// Plain HTTP and unverified TLS allowed.
    insecure: bool,
}

impl Clients {
    fn build(
        insecure: bool,
        roots: &[reqwest::Certificate],
        timeout: Duration,
    ) -> Result<Self, RegistryError> {
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            let first_loopback = attempt
                .previous()
                .first()
                .is_some_and(|u| is_loopback_host(u.host_str().unwrap_or_default()));
            match url_allowed(attempt.url(), first_loopback, insecure) {
                Ok(()) => attempt.follow(),
                Err(why) => attempt.error(format!("refused a redirect to {why}")),
            }
        });
        let builder = || {
            roots.iter().fold(
                reqwest::Client::builder()
                    .user_agent(concat!("otters/", env!("CARGO_PKG_VERSION")))
                    .connect_timeout(timeout)
                    .tls_danger_accept_invalid_certs(insecure),
                |b, c| b.add_root_certificate(c.clone()),
            )
        };
        let http = builder()
            .read_timeout(timeout)
            .redirect(policy)
            .build()
            .map_err(|e| RegistryError::Client(e.into()))?;
        let nofollow = builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| RegistryError::Client(e.into()))?;
        Ok(Clients {
            http,
            nofollow,
            insecure,
        })
    }
}

impl Transport {
    pub fn new(
        insecure: bool,
        config: RegistryConfig,
        retry: Retry,
        timeout: Duration,
        creds: CredentialSource,
    ) -> Result<Self, RegistryError> {
        Ok(Transport {
            default: Clients::build(insecure, &[], timeout)?,
            insecure_all: insecure,
            config,
            configured: Mutex::new(HashMap::new()),
            retry,
            timeout,
            creds,
            state: Mutex::new(HashMap::new()),
        })
    }

    /// The clients for `registry`: its own when `config.toml` has settings for it or CA files
    /// are configured for it (`ca =`, `certs.d`); built and cached on first use.
    fn clients(&self, registry: &str) -> Result<Clients, RegistryError> {
        let mut map = self
            .configured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = map.get(registry) {
            return Ok(c.clone());
        }
        let settings = self.config.get(registry);
        let files = self.config.ca_files(registry)?;
        let c = if settings.is_none() && files.is_empty() {
            self.default.clone()
        } else {
            let mut roots = Vec::new();
            for f in files {
                let bad = |source: CaError| RegistryConfigError::Ca {
                    path: f.path.clone(),
                    registry: registry.to_owned(),
                    source,
                };
                let certs = reqwest::Certificate::from_pem_bundle(&f.pem)
                    .map_err(|e| bad(CaError::Pem(e)))?;
                if certs.is_empty() {
                    return Err(bad(CaError::Empty).into());
                }
                roots.extend(certs);
            }
            let insecure = self.insecure_all || settings.is_some_and(|s| s.insecure);
            Clients::build(insecure, &roots, self.timeout)?
        };
        map.insert(registry.to_owned(), c.clone());
        Ok(c)
    }

    pub fn retry(&self) -> Retry {
        self.retry
    }

    /// The per-request timeout (`OTTERS_REGISTRY_TIMEOUT`).
    pub fn timeout(&self) -> Duration {
        self.timeout
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

    /// The auth scheme the registry's challenge named (`basic`, `bearer`), once it was pinged.
    pub fn auth_scheme(&self, registry: &str) -> Option<String> {
        self.with_state(registry, |s| s.challenge.as_ref().map(|c| c.scheme.clone()))
    }

    /// `scheme://host` of the registry's API, after a `/v2/` ping on first use.
    pub async fn base(&self, registry: &str, api_host: &str) -> Result<String, RegistryError> {
        let known = self.with_state(registry, |s| s.base.clone());
        if !known.is_empty() {
            return Ok(known);
        }
        let clients = self.clients(registry)?;
        let plain_ok = clients.insecure || is_loopback_host(registry);
        let https = format!("https://{api_host}");
        let attempt = clients
            .http
            .get(format!("{https}/v2/"))
            .timeout(self.timeout)
            .send()
            .await;
        let (base, resp) = match attempt {
            Ok(r) => (https, r),
            // A certificate that does not verify comes from a TLS server: falling back to plain
            // HTTP would only hide the reason behind a "400 plain HTTP to an HTTPS server".
            Err(e) if plain_ok && !is_certificate_error(&e) => {
                let http = format!("http://{api_host}");
                match self.ping_with_retries(&clients.http, &http).await {
                    Ok(r) => (http, r),
                    Err(e2) => return Err(unreachable(registry, &e2, Some(&e))),
                }
            }
            Err(e) if e.is_connect() && !is_tls(&e) => {
                match self.ping_with_retries(&clients.http, &https).await {
                    Ok(r) => (https, r),
                    Err(e2) => return Err(unreachable(registry, &e2, None)),
                }
            }
            Err(e) => {
                return Err(RegistryError::Tls {
                    registry: registry.to_owned(),
                    reason: error_chain(&e),
                });
            }
        };
        // A challenge counts only from the registry itself, not from where it redirected to.
        let own = Url::parse(&base).is_ok_and(|b| same_origin(resp.url(), &b));
        let challenge = if own { challenge_of(&resp) } else { None };
        self.with_state(registry, |s| {
            s.base.clone_from(&base);
            s.challenge = challenge;
        });
        Ok(base)
    }

    async fn ping_with_retries(
        &self,
        http: &reqwest::Client,
        base: &str,
    ) -> Result<Response, reqwest::Error> {
        let mut attempt = 0;
        loop {
            match http
                .get(format!("{base}/v2/"))
                .timeout(self.timeout)
                .send()
                .await
            {
                Ok(r) => return Ok(r),
                Err(e) if attempt < self.retry.attempts && (e.is_connect() || e.is_timeout()) => {
                    tokio::time::sleep(self.retry.delay(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends the request `make` builds (from the client `call` asks for), authenticating for
    /// `scopes` when the URL is on the registry's own origin, and retrying 5xx answers, timeouts
    /// and dropped connections with backoff. 4xx answers are returned to the caller. A URL the
    /// transport rule refuses is an error before anything is sent.
    pub async fn send<F>(
        &self,
        registry: &str,
        api_host: &str,
        scopes: &[String],
        call: Call,
        make: F,
    ) -> Result<Response, RegistryError>
    where
        F: Fn(&reqwest::Client, &str) -> Result<RequestBuilder, RegistryError>,
    {
        let base = self.base(registry, api_host).await?;
        let base_url = Url::parse(&base).map_err(|e| RegistryError::Client(e.into()))?;
        let registry_loopback = is_loopback_host(registry);
        let clients = self.clients(registry)?;
        let client = match call {
            Call::Small | Call::Download => &clients.http,
            Call::Write | Call::Upload => &clients.nofollow,
        };
        let mut attempt = 0;
        let mut reauthed = false;
        loop {
            let mut rb = make(client, &base)?;
            if matches!(call, Call::Small | Call::Write) {
                rb = rb.timeout(self.timeout);
            }
            let (c, req) = rb.build_split();
            let mut req = req.map_err(|e| RegistryError::Protocol {
                registry: registry.to_owned(),
                what: format!("a URL otters cannot request: {}", error_chain(&e)),
            })?;
            url_allowed(req.url(), registry_loopback, clients.insecure).map_err(|refusal| {
                RegistryError::Refused {
                    registry: registry.to_owned(),
                    what: format!("{refusal}; otters refused to follow it"),
                    refusal,
                }
            })?;
            let own = same_origin(req.url(), &base_url);
            if own {
                if let Some(h) = self.auth_header(registry, scopes, false).await? {
                    req.headers_mut()
                        .insert(AUTHORIZATION, header_value(registry, &h)?);
                }
            }
            match c.execute(req).await {
                Ok(resp) if own && resp.status() == StatusCode::UNAUTHORIZED && !reauthed => {
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
        let protocol = |what: String| RegistryError::Protocol {
            registry: registry.to_owned(),
            what,
        };
        let Some(realm) = ch.param("realm") else {
            return Err(protocol("a bearer challenge without a realm".into()));
        };
        let shown = escape_text(realm, 120);
        let realm_url = Url::parse(realm)
            .map_err(|_| protocol(format!("a token realm \"{shown}\" that is not a URL")))?;
        // The realm gets the credentials: it must pass the same transport rule as the registry.
        let clients = self.clients(registry)?;
        url_allowed(&realm_url, is_loopback_host(registry), clients.insecure).map_err(
            |refusal| RegistryError::Refused {
                registry: registry.to_owned(),
                what: format!("a token realm {shown} that is {refusal}; no credentials were sent"),
                refusal,
            },
        )?;
        let realm = realm_url.as_str();
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
                    // Never redirected: a 307 would carry the refresh token to another host.
                    clients
                        .nofollow
                        .post(realm)
                        .body(form_encode(&form))
                        .header(
                            reqwest::header::CONTENT_TYPE,
                            HeaderValue::from_static("application/x-www-form-urlencoded"),
                        )
                }
                _ => clients.http.get(url_with_query(realm, &query)),
            };
            rb = rb.timeout(self.timeout);
            if let Some(h) = creds.and_then(Credential::basic_header) {
                rb = rb.header(AUTHORIZATION, h);
            }
            match rb.send().await {
                Ok(r) if r.status().is_server_error() && attempt < self.retry.attempts => {}
                Ok(r) => break r,
                Err(e) if attempt < self.retry.attempts && retryable(&e) => {}
                Err(e) => {
                    return Err(RegistryError::Unreachable {
                        registry: format!("{registry} (token service {shown})"),
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
            return Err(protocol(format!("token service {shown} answered {status}")));
        }
        let bytes = match read_capped(resp, MAX_TOKEN_BODY).await {
            Ok(Some(b)) => b,
            Ok(None) => {
                return Err(protocol(format!(
                    "token service {shown} sent an answer larger than {MAX_TOKEN_BODY} bytes"
                )))
            }
            Err(e) => {
                return Err(protocol(format!(
                    "token service {shown} sent an unreadable answer: {}",
                    error_chain(&e)
                )))
            }
        };
        let body: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            protocol(format!(
                "token service {shown} sent an answer that is not JSON: {e}"
            ))
        })?;
        // `expires_in` is not read: a token is kept only for this process and fetched again
        // when the registry answers 401, so a hostile expiry changes nothing.
        let token = body
            .get("token")
            .or_else(|| body.get("access_token"))
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| protocol(format!("token service {shown} sent no token")))?;
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(protocol(format!(
                "token service {shown} sent a token that is not printable ASCII"
            )));
        }
        Ok(token.to_owned())
    }
}

/// An `Authorization` value as a header (tokens were checked to be printable ASCII).
fn header_value(registry: &str, h: &str) -> Result<HeaderValue, RegistryError> {
    let mut v = HeaderValue::from_str(h).map_err(|_| RegistryError::Protocol {
        registry: registry.to_owned(),
        what: "credentials that cannot be sent in a header".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
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

/// Whether one of the error's causes is a refused certificate. Each cause's own text, whole: the
/// joined chain is cut (see [`error_chain`]), and a long URL must not hide the cause.
fn is_certificate_error(e: &reqwest::Error) -> bool {
    std::iter::successors(Some(e as &dyn std::error::Error), |c| c.source()).any(|c| {
        c.to_string()
            .to_ascii_lowercase()
            .contains("invalid peer certificate")
    })
}

fn is_tls(e: &reqwest::Error) -> bool {
    let chain = error_chain(e).to_ascii_lowercase();
    chain.contains("tls") || chain.contains("certificate") || chain.contains("handshake")
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

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn config_insecure_is_per_registry() {
        let cfg = RegistryConfig::parse(
            "[registry.\"a.example:5000\"]\ninsecure = true\n",
            std::path::Path::new("config.toml"),
        )
        .unwrap();
        let none: CredentialSource = Box::new(|_| Ok(None));
        let t = Transport::new(false, cfg, Retry::default(), DEFAULT_TIMEOUT, none).unwrap();
        assert!(t.clients("a.example:5000").unwrap().insecure);
        assert!(!t.clients("a.example:5001").unwrap().insecure);
        assert!(!t.clients("b.example").unwrap().insecure);
        let none: CredentialSource = Box::new(|_| Ok(None));
        let all = RegistryConfig::default();
        let t = Transport::new(true, all, Retry::default(), DEFAULT_TIMEOUT, none).unwrap();
        assert!(t.clients("b.example").unwrap().insecure);
    }

    #[test]
    fn transport_rule() {
        // (url, registry on loopback, --insecure, allowed)
        let cases = [
            ("https://reg.example/v2/", false, false, true),
            ("http://reg.example/v2/", false, false, false),
            ("http://reg.example/v2/", false, true, true),
            ("http://127.0.0.1:5000/x", true, false, true),
            ("http://[::1]:5000/x", true, false, true),
            ("http://localhost:5000/x", true, false, true),
            // A remote registry may not send us to this machine, even over HTTPS.
            ("https://127.0.0.1/x", false, false, false),
            ("http://127.0.0.1/x", false, true, false),
            ("ftp://reg.example/x", false, true, false),
            ("file:///etc/passwd", true, true, false),
        ];
        for (u, lo, insecure, ok) in cases {
            assert_eq!(
                url_allowed(&url(u), lo, insecure).is_ok(),
                ok,
                "{u} {lo} {insecure}"
            );
        }
    }

    #[test]
    fn origins() {
        assert!(same_origin(
            &url("https://r.io/v2/a"),
            &url("https://R.io:443/b")
        ));
        assert!(!same_origin(&url("https://r.io/"), &url("http://r.io/")));
        assert!(!same_origin(
            &url("http://127.0.0.1:5000/"),
            &url("http://127.0.0.1:5001/")
        ));
        assert!(!same_origin(
            &url("https://r.io/"),
            &url("https://s3.r.io/")
        ));
        // userinfo does not change the origin that matters: the host.
        assert!(!same_origin(
            &url("http://r.io@evil.io/"),
            &url("http://r.io/")
        ));
    }

    #[test]
    fn timeout_values() {
        assert_eq!(parse_timeout(None).ok(), Some(DEFAULT_TIMEOUT));
        assert_eq!(parse_timeout(Some(" ".into())).ok(), Some(DEFAULT_TIMEOUT));
        assert_eq!(
            parse_timeout(Some("0.5".into())).ok(),
            Some(Duration::from_millis(500))
        );
        for bad in ["0", "-1", "soon", "1e9", "NaN", "inf"] {
            assert!(parse_timeout(Some(bad.into())).is_err(), "{bad}");
        }
    }

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
