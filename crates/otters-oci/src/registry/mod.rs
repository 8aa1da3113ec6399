//! A synchronous OCI distribution client: resolve references, fetch manifests and blobs, upload
//! blobs and manifests.
//!
//! Takes: [`Reference`]s and a [`ClientOptions`]. Returns: verified bytes, descriptors and typed
//! errors that name the registry and repository and say what to do. Must never: print, hand out
//! bytes whose digest was not checked, or expose async in its API (a current-thread tokio runtime
//! runs inside). Whole-image transfers to and from the local store live in `registry_transfer`.
//!
//! Built directly on reqwest rather than oci-client: oci-client cannot mount across repositories
//! under token auth (its token has only the target repository's scope), has no retries, and its
//! blob download does not let us verify before the store's rename. See docs/registries.md.

pub mod auth;
pub mod config;
pub(crate) mod http;
pub use http::UrlRefusal;
pub mod login;
pub mod mirror;
pub mod referrers;
pub mod sources;
pub mod transfer;

use crate::reference::Reference;
use crate::registry::config::RegistryConfig;
use crate::registry::http::{error_chain, url_with_query, Call, CredentialSource, Transport};
use crate::spec::descriptor::ManifestDoc;
use crate::spec::digest::Digest;
use crate::spec::media_type::MediaType;
use crate::spec::platform::Platform;
use crate::validate::{
    escape_text, read_capped, validate_manifest, Kind, MAX_ERROR_BODY, MAX_ERROR_TEXT,
};
use auth::Credential;
use reqwest::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RANGE};
use reqwest::{StatusCode, Url};
use std::path::PathBuf;
use std::time::Duration;

pub use crate::validate::MAX_MANIFEST;

/// The media types a manifest request accepts, OCI first.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

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

/// How a client is set up.
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// Allow plain HTTP and unverified TLS for every registry (loopback registries always may).
    pub insecure: bool,
    pub retry: Retry,
    /// Where `config.json` is read from; default `$DOCKER_CONFIG` or `~/.docker`.
    pub docker_config: Option<PathBuf>,
    /// Use these credentials for every registry instead of `config.json` (`otters login`).
    pub credentials: Option<Credential>,
    /// Connect, idle and per-request timeout; default `OTTERS_REGISTRY_TIMEOUT` or 30 s.
    pub timeout: Option<Duration>,
    /// Per-registry settings; default: read from `$OTTERS_HOME/config.toml`.
    pub registry_config: Option<RegistryConfig>,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The client cannot be built: its runtime, TLS setup, base URL or timeout setting.
    #[error("cannot set up the HTTP client: {0}")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("{}", unreachable_message(registry, reason))]
    Unreachable { registry: String, reason: String },
    #[error("TLS with registry {registry} failed: {reason}; if its certificate comes from a private CA, trust that CA for it (`ca = \"FILE\"` under [registry.\"{registry}\"] in $OTTERS_HOME/config.toml, or certs.d/{registry}/ca.crt); if it uses a self-signed certificate or plain HTTP, set `insecure = true` there")]
    Tls { registry: String, reason: String },
    #[error("{}", denied_message(registry, user.as_deref()))]
    Denied {
        registry: String,
        user: Option<String>,
        what: String,
    },
    #[error("{registry} denied {action} access to repository {repository}{}: check the repository name, or ask its owner for access", user.as_ref().map(|u| format!(" for user {u}")).unwrap_or_default())]
    Forbidden {
        registry: String,
        repository: String,
        user: Option<String>,
        action: &'static str,
    },
    #[error("image {reference} not found: check the name and tag, or push it first")]
    NotFound { reference: String },
    #[error("blob {digest} of {reference} not found in the registry: the image is incomplete; push it again")]
    BlobNotFound { reference: String, digest: Digest },
    #[error("digest mismatch: {what} {expected} from {registry} has digest {actual}; the registry sent corrupt or different content and nothing was stored")]
    DigestMismatch {
        registry: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("image {reference} has no manifest for platform {wanted} (available: {available})")]
    Platform {
        reference: String,
        wanted: String,
        available: String,
    },
    #[error("registry {registry} sent {what}")]
    Protocol { registry: String, what: String },
    /// A URL the transport rule refuses (`http::url_allowed`): `what` says where it came from.
    #[error("registry {registry} sent {what}")]
    Refused {
        registry: String,
        what: String,
        refusal: http::UrlRefusal,
    },
    #[error("{registry} answered {status} to {action}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Http {
        registry: String,
        action: String,
        status: u16,
        body: String,
    },
    #[error("{reference}: {reason}")]
    BadDocument { reference: String, reason: String },
    #[error(transparent)]
    Store(#[from] crate::store::layout::StoreError),
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIoError),
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    #[error(transparent)]
    Config(#[from] crate::registry::config::RegistryConfigError),
    #[error("connection to {registry} lost while transferring blob {digest}: {reason}; run the command again to transfer only what is missing")]
    Interrupted {
        registry: String,
        digest: Digest,
        reason: String,
    },
}

/// Why a registry cannot be reached, and what to check: `insecure` only for a registry that is
/// not on this machine (a loopback registry is already asked over plain HTTP).
fn unreachable_message(registry: &str, reason: &str) -> String {
    let advice = if is_on_this_machine(registry) {
        ""
    } else {
        " (a plain-HTTP registry that is not on this machine needs `insecure = true` for it in $OTTERS_HOME/config.toml)"
    };
    format!("cannot reach registry {registry}: {reason}; check that it is running and the address is right{advice}")
}

/// Whether the registry an [`RegistryError::Unreachable`] names (`HOST[:PORT]`, perhaps followed
/// by ` (token service URL)`) is on loopback, which otters already asks over plain HTTP.
pub fn is_on_this_machine(registry: &str) -> bool {
    let host = registry.split(' ').next().unwrap_or(registry);
    crate::reference::is_loopback_host(host)
}

fn denied_message(registry: &str, user: Option<&str>) -> String {
    match user {
        Some(u) => format!("{registry} refused credentials for user {u}: run `otters login {registry}` with the right password"),
        None => format!("{registry} requires credentials and none are stored: run `otters login {registry}`"),
    }
}

/// A manifest or index as fetched, with its verified digest.
#[derive(Clone, Debug)]
pub struct Fetched {
    pub digest: Digest,
    pub media_type: MediaType,
    pub bytes: Vec<u8>,
}

/// What a reference resolved to for one platform.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The document the tag (or digest) names: an index or a manifest.
    pub top: Fetched,
    /// The image manifest for the platform (the same as `top` when `top` is a manifest).
    pub manifest: Fetched,
    /// The index entry's platform, when `top` was an index.
    pub platform: Option<Platform>,
}

/// The synchronous registry client.
pub struct RegistryClient {
    rt: tokio::runtime::Runtime,
    t: Transport,
    m: mirror::Mirrors,
}

impl RegistryClient {
    pub fn new(opts: ClientOptions) -> Result<Self, RegistryError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RegistryError::Client(e.into()))?;
        let dir = opts
            .docker_config
            .clone()
            .unwrap_or_else(auth::docker_config_dir);
        let fixed = opts.credentials.clone();
        let mirrors_on = fixed.is_none();
        let creds: CredentialSource = Box::new(move |registry: &str| match &fixed {
            Some(c) => Ok(Some(c.clone())),
            None => Ok(auth::credentials_in(&dir, registry)?),
        });
        let timeout = match opts.timeout {
            Some(t) => t,
            None => crate::registry::http::timeout_from_env()?,
        };
        let config = match opts.registry_config {
            Some(c) => c,
            None => RegistryConfig::load(&RegistryConfig::default_path())?,
        };
        let m = mirror::Mirrors::new(config.clone(), mirrors_on);
        let t = Transport::new(opts.insecure, config, opts.retry, timeout, creds)?;
        Ok(RegistryClient { rt, t, m })
    }

    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The retry policy (a blob download that loses its connection resumes within it).
    pub(crate) fn retry(&self) -> Retry {
        self.t.retry()
    }

    /// The per-request timeout, also the longest a transfer may go without progress.
    pub(crate) fn timeout(&self) -> Duration {
        self.t.timeout()
    }

    /// Checks that the stored (or given) credentials are accepted by `registry`.
    pub fn check_login(&self, registry: &Reference) -> Result<(), RegistryError> {
        let reg = &registry.registry;
        self.block_on(async {
            let resp = self
                .t
                .send(reg, registry.api_host(), &[], Call::Small, |c, base| {
                    Ok(c.get(format!("{base}/v2/")))
                })
                .await?;
            match resp.status() {
                s if s.is_success() => Ok(()),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(RegistryError::Denied {
                    registry: reg.clone(),
                    user: self.t.user(reg),
                    what: "credentials".into(),
                }),
                s => Err(http_error(reg, "GET /v2/", s, resp).await),
            }
        })
    }

    /// Fetches the manifest or index `r` names (by digest when pinned, else by tag), verifying
    /// the digest when one was asked for.
    pub fn fetch_manifest(&self, r: &Reference) -> Result<Fetched, RegistryError> {
        self.block_on(self.fetch_manifest_async(r, r.selector(), None))
    }

    /// Fetches the manifest or index `selector` names in `r`'s repository: at most
    /// [`MAX_MANIFEST`] bytes, digest-checked when `selector` is a digest, and validated
    /// (`expected`: the kind the referring index entry declared) before anyone can store it.
    /// Mirrors of `r`'s registry are asked first (see [`mirror`]).
    pub(crate) async fn fetch_manifest_async(
        &self,
        r: &Reference,
        selector: &str,
        expected: Option<Kind>,
    ) -> Result<Fetched, RegistryError> {
        self.read_through(r, async |at: &Reference| {
            self.fetch_manifest_at(at, selector, expected).await
        })
        .await
    }

    /// [`Self::fetch_manifest_async`] from `r`'s registry itself, never a mirror: for reads whose
    /// answer is written back (a tag-schema index) or names what is written about.
    pub(crate) async fn fetch_manifest_upstream(
        &self,
        r: &Reference,
        selector: &str,
        expected: Option<Kind>,
    ) -> Result<Fetched, RegistryError> {
        self.fetch_manifest_at(r, selector, expected).await
    }

    async fn fetch_manifest_at(
        &self,
        r: &Reference,
        selector: &str,
        expected: Option<Kind>,
    ) -> Result<Fetched, RegistryError> {
        let pinned = selector.contains(':');
        if pinned {
            crate::spec::digest::Digest::parse(selector).map_err(|e| {
                RegistryError::BadDocument {
                    reference: r.familiar(),
                    reason: e.to_string(),
                }
            })?;
        }
        let url_path = format!("/v2/{}/manifests/{selector}", r.repository);
        let resp = self
            .pull_get(
                r,
                &url_path,
                Some(MANIFEST_ACCEPT),
                Call::Small,
                None,
                || RegistryError::NotFound {
                    reference: display_at(r, selector),
                },
            )
            .await?;
        let header_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.split(';').next().unwrap_or(s).trim().to_owned());
        let bytes = match read_capped(resp, MAX_MANIFEST).await {
            Ok(Some(b)) => b,
            Ok(None) => return Err(too_large(r, selector)),
            Err(e) => {
                return Err(RegistryError::Unreachable {
                    registry: r.registry.clone(),
                    reason: error_chain(&e),
                })
            }
        };
        let digest = Digest::of(&bytes);
        if pinned && digest != selector {
            return Err(RegistryError::DigestMismatch {
                registry: r.registry.clone(),
                what: "manifest",
                expected: selector.to_owned(),
                actual: digest.to_string(),
            });
        }
        let media_type =
            validate_manifest(&bytes, header_type.as_deref(), expected).map_err(|why| {
                RegistryError::BadDocument {
                    reference: display_at(r, selector),
                    reason: format!(
                        "the registry sent a manifest otters cannot use: {why}; nothing was stored"
                    ),
                }
            })?;
        Ok(Fetched {
            digest,
            media_type: MediaType::parse(&media_type),
            bytes,
        })
    }

    /// Resolves `r` for `platform`: an index is followed to the matching manifest.
    pub fn resolve(&self, r: &Reference, platform: &Platform) -> Result<Resolved, RegistryError> {
        self.block_on(async {
            let top = self.fetch_manifest_async(r, r.selector(), None).await?;
            if !top.media_type.is_index() {
                return Ok(Resolved {
                    manifest: top.clone(),
                    top,
                    platform: None,
                });
            }
            let index = ManifestDoc::parse(&top.bytes).map_err(|e| RegistryError::BadDocument {
                reference: r.to_string(),
                reason: format!("the index is not valid JSON: {e}"),
            })?;
            let candidates = Platform::candidates(&index.manifests);
            let Some((p, digest)) = platform.pick(&candidates) else {
                // Platform names come from the registry: escaped, and the list bounded.
                let available = candidates
                    .iter()
                    .take(32)
                    .map(|(p, _)| escape_text(&p.to_string(), 60))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(RegistryError::Platform {
                    reference: r.familiar(),
                    wanted: platform.to_string(),
                    available: if available.is_empty() {
                        "none".into()
                    } else {
                        available
                    },
                });
            };
            let manifest = self
                .fetch_manifest_async(r, digest.as_str(), Some(Kind::Manifest))
                .await?;
            Ok(Resolved {
                top,
                manifest,
                platform: Some(p),
            })
        })
    }

    /// Fetches a small blob (a config or a usage document) into memory, verified.
    pub fn fetch_blob(
        &self,
        r: &Reference,
        digest: &Digest,
        max: u64,
    ) -> Result<Vec<u8>, RegistryError> {
        self.block_on(async {
            let resp = self.get_blob(r, digest, 0).await?;
            let cap = usize::try_from(max).unwrap_or(usize::MAX);
            let bytes = match read_capped(resp, cap).await {
                Ok(Some(b)) => b,
                Ok(None) => {
                    return Err(RegistryError::BadDocument {
                        reference: r.to_string(),
                        reason: format!("blob {digest} is larger than {max} bytes"),
                    })
                }
                Err(e) => {
                    return Err(RegistryError::Interrupted {
                        registry: r.registry.clone(),
                        digest: digest.clone(),
                        reason: error_chain(&e),
                    })
                }
            };
            let actual = Digest::of(&bytes);
            if actual != *digest {
                return Err(RegistryError::DigestMismatch {
                    registry: r.registry.clone(),
                    what: "blob",
                    expected: digest.to_string(),
                    actual: actual.to_string(),
                });
            }
            Ok(bytes)
        })
    }

    /// `GET` of a blob (a `digest` already checked to be well formed), from byte `from` on when
    /// it is not 0 (`Range`; the registry may ignore it and send everything). Mirrors of `r`'s
    /// registry are asked first (see [`mirror`]).
    pub(crate) async fn get_blob(
        &self,
        r: &Reference,
        digest: &Digest,
        from: u64,
    ) -> Result<reqwest::Response, RegistryError> {
        self.read_through(r, async |at: &Reference| {
            self.get_blob_at(at, digest, from).await
        })
        .await
    }

    async fn get_blob_at(
        &self,
        r: &Reference,
        digest: &Digest,
        from: u64,
    ) -> Result<reqwest::Response, RegistryError> {
        let path = format!("/v2/{}/blobs/{digest}", r.repository);
        let range = (from > 0).then(|| format!("bytes={from}-"));
        self.pull_get(r, &path, None, Call::Download, range.as_deref(), || {
            RegistryError::BlobNotFound {
                reference: r.to_string(),
                digest: digest.clone(),
            }
        })
        .await
    }

    /// `GET path` (with `accept` and `range`, if any) in `r`'s repository with pull scope: a 404
    /// is `not_found()`, a refusal is `Denied`, any other failure an HTTP error.
    async fn pull_get(
        &self,
        r: &Reference,
        path: &str,
        accept: Option<&str>,
        call: Call,
        range: Option<&str>,
        not_found: impl FnOnce() -> RegistryError,
    ) -> Result<reqwest::Response, RegistryError> {
        let resp = self
            .t
            .send(
                &r.registry,
                r.api_host(),
                &[scope(&r.repository, "pull")],
                call,
                |c, base| {
                    let mut get = c.get(format!("{base}{path}"));
                    if let Some(a) = accept {
                        get = get.header(ACCEPT, a);
                    }
                    if let Some(rg) = range {
                        get = get.header(RANGE, rg);
                    }
                    Ok(get)
                },
            )
            .await?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Err(not_found());
        }
        self.check_access(r, status, "pull")?;
        if !status.is_success() {
            return Err(http_error(&r.registry, &format!("GET {path}"), status, resp).await);
        }
        Ok(resp)
    }

    pub(crate) async fn blob_exists_async(
        &self,
        r: &Reference,
        digest: &Digest,
    ) -> Result<bool, RegistryError> {
        self.head_blob(r, digest, "push").await
    }

    /// True when `r`'s repository on its registry itself (never a mirror) answers a `HEAD` for
    /// `digest`: the proof a registry-to-registry copy needs before it mounts a blob the source
    /// merely lists from another repository of the destination (`copy::stream`). Asks for pull
    /// access only.
    pub(crate) async fn source_has_blob_async(
        &self,
        r: &Reference,
        digest: &Digest,
    ) -> Result<bool, RegistryError> {
        self.head_blob(r, digest, "pull").await
    }

    /// A `HEAD` of a blob in `r`'s repository, with `access` (`push`: pull and push scope;
    /// `pull`: pull scope).
    async fn head_blob(
        &self,
        r: &Reference,
        digest: &Digest,
        access: &'static str,
    ) -> Result<bool, RegistryError> {
        let path = format!("/v2/{}/blobs/{digest}", r.repository);
        let actions = if access == "push" {
            "pull,push"
        } else {
            "pull"
        };
        let resp = self
            .t
            .send(
                &r.registry,
                r.api_host(),
                &[scope(&r.repository, actions)],
                Call::Small,
                |c, base| Ok(c.head(format!("{base}{path}"))),
            )
            .await?;
        match resp.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            s => {
                self.check_access(r, s, access)?;
                Err(http_error(&r.registry, &format!("HEAD {path}"), s, resp).await)
            }
        }
    }

    /// Asks the registry to mount `digest` from repository `from` into `r`'s repository.
    /// Returns false when the registry did not mount (it then opened an upload, or refused).
    pub(crate) async fn mount_async(
        &self,
        r: &Reference,
        digest: &Digest,
        from: &str,
    ) -> Result<bool, RegistryError> {
        let path = format!("/v2/{}/blobs/uploads/", r.repository);
        let scopes = [scope(&r.repository, "pull,push"), scope(from, "pull")];
        let resp = self
            .t
            .send(
                &r.registry,
                r.api_host(),
                &scopes,
                Call::Write,
                |c, base| {
                    Ok(c.post(url_with_query(
                        &format!("{base}{path}"),
                        &[("mount", digest.as_str()), ("from", from)],
                    ))
                    .header(CONTENT_LENGTH, 0))
                },
            )
            .await?;
        Ok(resp.status() == StatusCode::CREATED)
    }

    /// Uploads a blob whose bytes come from `open` (called again for each retry): `POST` an upload,
    /// `PATCH` the whole stream, `PUT ?digest=` to finish. `progress` gets byte counts.
    pub(crate) async fn upload_async(
        &self,
        r: &Reference,
        digest: &Digest,
        size: u64,
        open: &OpenBlob<'_>,
    ) -> Result<(), RegistryError> {
        let scopes = [scope(&r.repository, "pull,push")];
        let post_path = format!("/v2/{}/blobs/uploads/", r.repository);
        let mut attempt = 0;
        loop {
            let resp = self
                .t
                .send(
                    &r.registry,
                    r.api_host(),
                    &scopes,
                    Call::Write,
                    |c, base| {
                        Ok(c.post(format!("{base}{post_path}"))
                            .header(CONTENT_LENGTH, 0))
                    },
                )
                .await?;
            let status = resp.status();
            self.check_access(r, status, "push")?;
            if status != StatusCode::ACCEPTED && !status.is_success() {
                return Err(
                    http_error(&r.registry, &format!("POST {post_path}"), status, resp).await,
                );
            }
            let location = location_of(&resp, &r.registry)?;
            match self
                .upload_to(r, &location, digest, size, &scopes, open)
                .await
            {
                Err(RegistryError::Interrupted { .. } | RegistryError::Unreachable { .. })
                    if attempt < 2 =>
                {
                    // The upload session may be gone with the connection: start a new one.
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn upload_to(
        &self,
        r: &Reference,
        location: &str,
        digest: &Digest,
        size: u64,
        scopes: &[String],
        open: &OpenBlob<'_>,
    ) -> Result<(), RegistryError> {
        use futures_util::StreamExt as _;
        use std::sync::atomic::{AtomicU64, Ordering};
        let interrupted = |reason: String| RegistryError::Interrupted {
            registry: r.registry.clone(),
            digest: digest.clone(),
            reason,
        };
        // The PATCH body is a one-shot stream, so a failed PATCH restarts the whole upload (see
        // `upload_async`). A registry that stops reading (or stops answering once the body is
        // sent) for longer than the timeout is a lost connection, not an endless wait: the body
        // stream stamps the time of its last progress, and a watchdog compares.
        let start = tokio::time::Instant::now();
        let stamp = std::sync::Arc::new(AtomicU64::new(0));
        let loc = location.to_owned();
        let patch = self
            .t
            .send(&r.registry, r.api_host(), scopes, Call::Upload, |c, _| {
                let (s1, s2) = (stamp.clone(), stamp.clone());
                let mark = move |s: &AtomicU64| {
                    s.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
                };
                mark(&s1);
                let body =
                    open()?
                        .inspect(move |_| mark(&s1))
                        .chain(futures_util::stream::poll_fn(move |_| {
                            mark(&s2);
                            std::task::Poll::Ready(None)
                        }));
                Ok(c.patch(&loc)
                    .header(CONTENT_TYPE, "application/octet-stream")
                    .header(CONTENT_LENGTH, size)
                    .body(reqwest::Body::wrap_stream(body)))
            });
        let limit = self.timeout();
        let watchdog = async {
            loop {
                tokio::time::sleep((limit / 4).max(Duration::from_millis(50))).await;
                let last = Duration::from_millis(stamp.load(Ordering::Relaxed));
                if start.elapsed().saturating_sub(last) > limit {
                    break;
                }
            }
        };
        let resp = tokio::select! {
            resp = patch => resp.map_err(|e| match e {
                RegistryError::Unreachable { reason, .. } => interrupted(reason),
                e => e,
            })?,
            () = watchdog => {
                return Err(interrupted(format!(
                    "no progress for {} s (OTTERS_REGISTRY_TIMEOUT)",
                    limit.as_secs_f64()
                )))
            }
        };
        let status = resp.status();
        self.check_access(r, status, "push")?;
        if status != StatusCode::ACCEPTED
            && status != StatusCode::NO_CONTENT
            && !status.is_success()
        {
            // The upload client has no read timeout: bound the error body's read here.
            let err = http_error(&r.registry, "PATCH (blob upload)", status, resp);
            return Err(tokio::time::timeout(limit, err).await.unwrap_or_else(|_| {
                RegistryError::Http {
                    registry: r.registry.clone(),
                    action: "PATCH (blob upload)".into(),
                    status: status.as_u16(),
                    body: String::new(),
                }
            }));
        }
        let put_loc = location_of(&resp, &r.registry).unwrap_or_else(|_| location.to_owned());
        let put_url = url_with_query(&put_loc, &[("digest", digest.as_str())]);
        let resp = self
            .t
            .send(&r.registry, r.api_host(), scopes, Call::Write, |c, _| {
                Ok(c.put(&put_url).header(CONTENT_LENGTH, 0))
            })
            .await
            .map_err(|e| match e {
                RegistryError::Unreachable { reason, .. } => interrupted(reason),
                e => e,
            })?;
        let status = resp.status();
        self.check_access(r, status, "push")?;
        if status == StatusCode::BAD_REQUEST {
            let body = error_body(resp).await;
            if body.contains("DIGEST_INVALID") {
                return Err(RegistryError::DigestMismatch {
                    registry: r.registry.clone(),
                    what: "uploaded blob",
                    expected: digest.to_string(),
                    actual: "something else (the local file changed while it was sent)".into(),
                });
            }
            return Err(RegistryError::Http {
                registry: r.registry.clone(),
                action: "PUT (finish upload)".into(),
                status: 400,
                body: summarize(&body),
            });
        }
        if !status.is_success() {
            return Err(http_error(&r.registry, "PUT (finish upload)", status, resp).await);
        }
        Ok(())
    }

    /// Uploads a manifest or index under `selector` (a tag, or its digest). Returns whether the
    /// registry answered with an `OCI-Subject` header: it indexed the manifest's `subject` itself
    /// (OCI 1.1 referrers API), so no tag-schema index is needed.
    pub(crate) async fn put_manifest_async(
        &self,
        r: &Reference,
        selector: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<bool, RegistryError> {
        let path = format!("/v2/{}/manifests/{selector}", r.repository);
        let body = bytes.to_vec();
        let resp = self
            .t
            .send(
                &r.registry,
                r.api_host(),
                &[scope(&r.repository, "pull,push")],
                Call::Write,
                |c, base| {
                    Ok(c.put(format!("{base}{path}"))
                        .header(CONTENT_TYPE, media_type)
                        .body(body.clone()))
                },
            )
            .await?;
        let status = resp.status();
        self.check_access(r, status, "push")?;
        if !status.is_success() {
            return Err(http_error(&r.registry, &format!("PUT {path}"), status, resp).await);
        }
        Ok(resp.headers().contains_key("oci-subject"))
    }

    /// Turns 401/403 into errors that name the registry, repository and user.
    ///
    /// A 401 to a request that carried credentials means the registry refused them (a stale or
    /// wrong password), whatever the action — except under bearer auth, where the token service
    /// already accepted them (it answers 401 itself to a wrong password) and a 401 means the token
    /// lacks the scope: no access to that repository, like a 403.
    fn check_access(
        &self,
        r: &Reference,
        status: StatusCode,
        action: &'static str,
    ) -> Result<(), RegistryError> {
        let user = self.t.user(&r.registry);
        let bearer = self.t.auth_scheme(&r.registry).as_deref() == Some("bearer");
        match status {
            StatusCode::UNAUTHORIZED if user.is_some() && (action == "pull" || !bearer) => {
                Err(RegistryError::Denied {
                    registry: r.registry.clone(),
                    user,
                    what: "credentials".into(),
                })
            }
            StatusCode::UNAUTHORIZED if user.is_none() => Err(RegistryError::Denied {
                registry: r.registry.clone(),
                user: None,
                what: "credentials".into(),
            }),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(RegistryError::Forbidden {
                registry: r.registry.clone(),
                repository: r.repository.clone(),
                user,
                action,
            }),
            _ => Ok(()),
        }
    }
}

/// `repository:NAME:ACTIONS`.
pub fn scope(repository: &str, actions: &str) -> String {
    format!("repository:{repository}:{actions}")
}

fn display_at(r: &Reference, selector: &str) -> String {
    if selector.contains(':') {
        format!("{}@{selector}", r.name())
    } else {
        format!("{}:{selector}", r.name())
    }
}

fn too_large(r: &Reference, selector: &str) -> RegistryError {
    RegistryError::BadDocument {
        reference: display_at(r, selector),
        reason: format!("the manifest is larger than {MAX_MANIFEST} bytes; nothing was stored"),
    }
}

/// The answer's `Location`, resolved against the URL that answered (RFC 3986), so a relative
/// value can never change the host (`@evil/…` stays a path). Whether the result may be contacted,
/// and with what, is the transport's decision.
fn location_of(resp: &reqwest::Response, registry: &str) -> Result<String, RegistryError> {
    let protocol = |what: String| RegistryError::Protocol {
        registry: registry.to_owned(),
        what,
    };
    let loc = resp
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| protocol("an upload answer without a Location header".into()))?;
    let url: Url = resp.url().join(loc).map_err(|_| {
        protocol(format!(
            "an upload Location {:?} that is not a URL",
            escape_text(loc, 120)
        ))
    })?;
    Ok(url.into())
}

/// The first [`MAX_ERROR_BODY`] bytes of an error answer, as text.
async fn error_body(resp: reqwest::Response) -> String {
    let mut resp = resp;
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = MAX_ERROR_BODY.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn http_error(
    registry: &str,
    action: &str,
    status: StatusCode,
    resp: reqwest::Response,
) -> RegistryError {
    let body = error_body(resp).await;
    RegistryError::Http {
        registry: registry.to_owned(),
        action: action.to_owned(),
        status: status.as_u16(),
        body: summarize(&body),
    }
}

/// The registry's error message (the `errors[0]` code and message of a distribution error body),
/// or the start of the body: at most [`MAX_ERROR_TEXT`] characters, control characters escaped.
fn summarize(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        if let Some(e) = v.get("errors").and_then(|e| e.get(0)) {
            let code = e.get("code").and_then(|c| c.as_str()).unwrap_or_default();
            let msg = e
                .get("message")
                .and_then(|c| c.as_str())
                .unwrap_or_default();
            let text = format!("{code} {msg}").trim().to_lowercase();
            return escape_text(&text, MAX_ERROR_TEXT);
        }
    }
    escape_text(body.trim(), MAX_ERROR_TEXT)
}

/// Where a blob upload's bytes come from: a fresh stream per attempt.
pub(crate) type OpenBlob<'a> = dyn Fn() -> Result<BlobStream, RegistryError> + Sync + 'a;
/// A blob's bytes, as a stream.
pub(crate) type BlobStream =
    futures_util::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_escaped_and_bounded() {
        let long = "x".repeat(5000);
        assert_eq!(summarize(&long).chars().count(), MAX_ERROR_TEXT + 1);
        assert_eq!(summarize("bad\x1b[2J\nthing"), "bad\\u{1b}[2J\\nthing");
        let json = format!(r#"{{"errors":[{{"code":"DENIED","message":"no\u001b{long}"}}]}}"#);
        let s = summarize(&json);
        assert!(s.starts_with("denied no\\u{1b}xx"), "{s}");
        assert!(s.chars().count() <= MAX_ERROR_TEXT + 1);
    }

    #[test]
    fn only_a_registry_off_this_machine_is_told_about_insecure() {
        let e = |registry: &str| {
            RegistryError::Unreachable {
                registry: registry.to_owned(),
                reason: "connection refused".to_owned(),
            }
            .to_string()
        };
        for local in [
            "127.0.0.1:5000",
            "localhost:5000",
            "[::1]:5000",
            "127.0.0.1:1 (token service http://127.0.0.1:2/t)",
        ] {
            assert!(!e(local).contains("insecure"), "{}", e(local));
            assert!(
                e(local).contains("check that it is running"),
                "{}",
                e(local)
            );
        }
        assert!(e("registry.example:5000").contains("needs `insecure = true`"));
    }
}
