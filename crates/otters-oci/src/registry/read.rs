//! The client's reads: manifests and indexes (resolved for a platform), blobs, and `HEAD`s of
//! blobs, each read through the registry's mirrors where it may be.

use crate::reference::Reference;
use crate::registry::client::{scope, RegistryClient};
use crate::registry::error::{http_error, RegistryError};
use crate::registry::http::Call;
use crate::registry::mirror::MirrorFailure;
use crate::spec::descriptor::ManifestDoc;
use crate::spec::digest::Digest;
use crate::spec::media_type::MediaType;
use crate::spec::platform::Platform;
use crate::validate::{
    error_chain, escape_text, read_capped, validate_manifest, Kind, MAX_MANIFEST,
};
use reqwest::header::{ACCEPT, CONTENT_TYPE, RANGE};
use reqwest::StatusCode;

/// The media types a manifest request accepts, OCI first.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

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

impl RegistryClient {
    /// Fetches the manifest or index `r` names (by digest when pinned, else by tag), verifying
    /// the digest when one was asked for.
    pub fn fetch_manifest(&self, r: &Reference) -> Result<Fetched, RegistryError> {
        self.block_on(self.fetch_manifest_async(r, r.selector(), None))
    }

    /// Fetches the manifest or index `selector` names in `r`'s repository: at most
    /// [`MAX_MANIFEST`] bytes, digest-checked when `selector` is a digest, and validated
    /// (`expected`: the kind the referring index entry declared) before anyone can store it.
    /// Mirrors of `r`'s registry are asked first (see [`mirror`](super::mirror)).
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
    /// registry are asked first (see [`mirror`](super::mirror)).
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
    pub(super) async fn pull_get(
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
    /// merely lists from another repository of the destination (`transfer::relay`). Asks for pull
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

impl RegistryClient {
    /// Runs `read` against each usable mirror of `r`'s registry in order, then against `r`
    /// itself: the first success wins; the registry's own result is final.
    pub(crate) async fn read_through<T>(
        &self,
        r: &Reference,
        read: impl AsyncFn(&Reference) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        for at in self.m.candidates(r) {
            match read(&at).await {
                Ok(v) => {
                    self.m.served(&at.registry);
                    return Ok(v);
                }
                Err(RegistryError::NotFound { .. } | RegistryError::BlobNotFound { .. }) => {}
                Err(e) => self.m.give_up(&at.registry, &r.registry, e.to_string()),
            }
        }
        let v = read(r).await?;
        self.m.served(&r.registry);
        Ok(v)
    }

    /// The hosts (registries or mirrors) that answered this client's reads, in first-use order.
    pub fn served_from(&self) -> Vec<String> {
        self.m.served_hosts()
    }

    /// The mirrors this client gave up on, and why.
    pub fn mirror_failures(&self) -> Vec<MirrorFailure> {
        self.m.failures()
    }

    /// The host that answered the latest read.
    pub(crate) fn last_served(&self) -> Option<String> {
        self.m.last()
    }

    /// Stops asking `mirror` (it sent content that does not match its digest).
    pub(crate) fn distrust(&self, mirror: &str, registry: &str, reason: String) {
        self.m.give_up(mirror, registry, reason);
    }
}
