//! The client's writes: blob mounts and uploads (streamed, with a watchdog on progress) and
//! manifests. Never sent to a mirror.

use crate::reference::Reference;
use crate::registry::client::{scope, RegistryClient};
use crate::registry::error::{error_body, http_error, summarize, RegistryError};
use crate::registry::http::{url_with_query, Call};
use crate::spec::digest::Digest;
use crate::validate::escape_text;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};
use std::time::Duration;

/// Where a blob upload's bytes come from: a fresh stream per attempt.
pub(crate) type OpenBlob<'a> = dyn Fn() -> Result<BlobStream, RegistryError> + Sync + 'a;
/// A blob's bytes, as a stream.
pub(crate) type BlobStream =
    futures_util::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>;

impl RegistryClient {
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
