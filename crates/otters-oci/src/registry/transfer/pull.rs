//! Pull: an image from a registry (or its mirrors) into the store, every digest checked before a
//! blob is renamed into place, a lost connection resumed, within [`MAX_DOCUMENTS`].

use super::manifest::{check_depth, parse, parse_manifest};
use super::report::{blob_done, TransferReport};
use crate::path_io::io_err;
use crate::progress::{Event, Outcome, Progress};
use crate::reference::Reference;
use crate::registry::client::RegistryClient;
use crate::registry::error::RegistryError;
use crate::registry::read::Fetched;
use crate::registry::sources::Sources;
use crate::spec::descriptor::Descriptor;
use crate::spec::digest::Hasher;
use crate::spec::media_type::MediaType;
use crate::store::layout::Store;
use crate::validate::{error_chain, Kind};
use futures_util::StreamExt as _;
use std::io::Write as _;

/// Most manifests and indexes one pull fetches, and their total bytes: an index may list 4096
/// entries, nested 4 deep, which must not become 4096⁴ requests or gigabytes of manifests.
pub const MAX_DOCUMENTS: (usize, usize) = (1024, 64 << 20);

/// Downloads `r` (an index with every manifest it lists, or a manifest) into the store, verifying
/// every digest, and returns the top descriptor. Blobs already in the store are skipped.
pub fn pull_image(
    client: &RegistryClient,
    store: &Store,
    r: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
) -> Result<(Descriptor, TransferReport), RegistryError> {
    let top = client.fetch_manifest(r)?;
    let mut report = TransferReport::new(r.to_string(), top.digest.clone(), top.media_type.clone());
    // Every blob the image needs, written now or found already stored (perhaps renamed into place
    // by a concurrent build that has not synced it yet), is made durable in one pass before the
    // caller can tag the image: no tag ever points at a blob that is not durable.
    let batch = store.batched();
    pull_node(
        client,
        &batch,
        r,
        &top.bytes,
        &top.media_type,
        sources,
        progress,
        &mut report,
        0,
    )?;
    let desc = batch.put_manifest(&top.bytes, &top.media_type)?;
    batch.sync_batch()?;
    sources.add(&desc.digest, r);
    report.from = client.served_from();
    Ok((desc, report))
}

#[allow(clippy::too_many_arguments)]
fn pull_node(
    client: &RegistryClient,
    store: &Store,
    r: &Reference,
    bytes: &[u8],
    media_type: &MediaType,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
    depth: usize,
) -> Result<(), RegistryError> {
    check_depth(depth, r)?;
    if media_type.is_index() {
        let index = parse(bytes, r)?;
        for child in &index.manifests {
            let fetched = fetch_child(client, r, child, report)?;
            pull_node(
                client,
                store,
                r,
                &fetched.bytes,
                &fetched.media_type,
                sources,
                progress,
                report,
                depth + 1,
            )?;
            store.put_manifest(&fetched.bytes, &fetched.media_type)?;
            sources.add(&child.digest, r);
        }
        return Ok(());
    }
    let m = parse_manifest(bytes, r)?;
    for blob in m.blobs() {
        let outcome = pull_blob(client, store, r, blob, progress, report)?;
        blob_done(blob, r, outcome, sources, progress, report);
    }
    Ok(())
}

/// Fetches the manifest an index entry names, within the pull's budget ([`MAX_DOCUMENTS`]):
/// validated against the entry's media type (a claim: the fetched document's own, checked type is
/// what counts) and refused when its size is not the entry's.
pub(crate) fn fetch_child(
    client: &RegistryClient,
    r: &Reference,
    child: &Descriptor,
    report: &mut TransferReport,
) -> Result<Fetched, RegistryError> {
    let expected = Kind::of(&child.media_type);
    report.documents.0 += 1;
    if report.documents.0 > MAX_DOCUMENTS.0 {
        return Err(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: format!(
                "it needs more than {} manifests; nothing more was fetched",
                MAX_DOCUMENTS.0
            ),
        });
    }
    let fetched =
        client.block_on(client.fetch_manifest_async(r, child.digest.as_str(), expected))?;
    report.documents.1 += fetched.bytes.len();
    if report.documents.1 > MAX_DOCUMENTS.1 {
        return Err(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: format!(
                "its manifests add up to more than {} bytes; nothing more was fetched",
                MAX_DOCUMENTS.1
            ),
        });
    }
    if fetched.bytes.len() as u64 != child.size {
        return Err(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: format!(
                "index entry {} says {} bytes but the manifest is {}; nothing was stored",
                child.digest,
                child.size,
                fetched.bytes.len()
            ),
        });
    }
    Ok(fetched)
}

/// Streams one blob into the store: written to a temp file while hashed, never past the size its
/// descriptor declares, renamed into place only when size and digest match. A connection lost
/// mid-blob is retried within the client's retry budget, resuming with `Range` when the registry
/// honours it (else from the start). Every error path drops the temp file.
pub fn pull_blob(
    client: &RegistryClient,
    store: &Store,
    r: &Reference,
    blob: &Descriptor,
    progress: Progress<'_>,
    report: &mut TransferReport,
) -> Result<Outcome, RegistryError> {
    let digest = &blob.digest;
    progress(Event::blob_started(blob));
    if store.has_blob(digest) {
        return Ok(Outcome::Skipped);
    }
    loop {
        let Partial {
            writer,
            hasher,
            got,
        } = match fetch_blob(client, store, r, blob, progress) {
            Ok(part) => part,
            // A mirror that sent a malformed answer or dropped the transfer: the next host.
            Err(e @ (RegistryError::BadDocument { .. } | RegistryError::Interrupted { .. })) => {
                match client.last_served() {
                    Some(host) if host != r.registry => {
                        client.distrust(&host, &r.registry, e.to_string());
                        continue;
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let actual = hasher.finish();
        if actual == blob.digest {
            writer.commit()?;
            report.bytes += got;
            return Ok(Outcome::Downloaded);
        }
        // Dropping the writer removes the temp file: nothing corrupt reaches the store.
        drop(writer);
        let mismatch = |registry: String| RegistryError::DigestMismatch {
            registry,
            what: "blob",
            expected: blob.digest.to_string(),
            actual: actual.to_string(),
        };
        match client.last_served() {
            // A mirror sent other bytes: never ask it again, and try the next host.
            Some(host) if host != r.registry => {
                let why = mismatch(host.clone()).to_string();
                client.distrust(&host, &r.registry, why);
            }
            _ => return Err(mismatch(r.registry.clone())),
        }
    }
}

/// Downloads one blob into a temp file of the store, hashing it, with resumed retries.
fn fetch_blob<'s>(
    client: &RegistryClient,
    store: &'s Store,
    r: &Reference,
    blob: &Descriptor,
    progress: Progress<'_>,
) -> Result<Partial<'s>, RegistryError> {
    let mut part = Partial {
        writer: store.blob_writer()?,
        hasher: Hasher::new(),
        got: 0,
    };
    let retry = client.retry();
    let mut attempt = 0;
    loop {
        match client.block_on(download(client, store, r, blob, &mut part, progress)) {
            Ok(()) => return Ok(part),
            Err(Step::Lost(reason)) if attempt >= retry.attempts => {
                return Err(RegistryError::Interrupted {
                    registry: r.registry.clone(),
                    digest: blob.digest.clone(),
                    reason: format!("{reason} (after {} retries)", retry.attempts),
                })
            }
            Err(Step::Lost(_)) => {
                std::thread::sleep(retry.delay(attempt));
                attempt += 1;
            }
            Err(Step::Fail(e)) => return Err(e),
        }
    }
}

/// A blob download in progress.
struct Partial<'s> {
    writer: crate::store::layout::BlobWriter<'s>,
    hasher: Hasher,
    got: u64,
}

/// Why one download attempt stopped.
enum Step {
    /// The connection was lost or closed early: retry (resume) if the budget allows.
    Lost(String),
    /// A final error.
    Fail(RegistryError),
}

impl From<RegistryError> for Step {
    /// Request failures were already retried by the transport.
    fn from(e: RegistryError) -> Self {
        Step::Fail(e)
    }
}

/// One attempt: `GET` the blob from `part.got` on and append to `part`, at most `blob.size` bytes
/// in all.
async fn download<'s>(
    client: &RegistryClient,
    store: &'s Store,
    r: &Reference,
    blob: &Descriptor,
    part: &mut Partial<'s>,
    progress: Progress<'_>,
) -> Result<(), Step> {
    let bad = |reason: String| {
        Step::Fail(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: format!("{reason}; nothing was stored"),
        })
    };
    let resp = client.get_blob(r, &blob.digest, part.got).await?;
    // The host that answered: the registry or one of its mirrors.
    let host = client.last_served().unwrap_or_else(|| r.registry.clone());
    let resumed = resp.status() == reqwest::StatusCode::PARTIAL_CONTENT;
    if part.got > 0 && !resumed {
        // No range support: the answer is the whole blob again; start over (the old temp file
        // goes with the old writer).
        *part = Partial {
            writer: store.blob_writer().map_err(|e| Step::Fail(e.into()))?,
            hasher: Hasher::new(),
            got: 0,
        };
    }
    if resumed {
        let start = resp
            .headers()
            .get(reqwest::header::CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("bytes "))
            .and_then(|v| v.split('-').next())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if start != Some(part.got) {
            return Err(bad(format!(
                "{host} answered a resumed download of blob {} with another range",
                blob.digest
            )));
        }
    }
    let remaining = blob.size - part.got;
    if let Some(n) = resp.content_length().filter(|n| *n != remaining) {
        return Err(bad(format!(
            "{host} declares {n} bytes for blob {} where {remaining} are due (its descriptor says {} in all)",
            blob.digest, blob.size
        )));
    }
    let tmp_path = store.root().join(".tmp");
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Step::Lost(error_chain(&e)))?;
        if chunk.len() as u64 > blob.size - part.got {
            return Err(bad(format!(
                "{host} sent more than the {} bytes the descriptor of blob {} declares",
                blob.size, blob.digest
            )));
        }
        part.hasher.update(&chunk);
        part.got += chunk.len() as u64;
        part.writer
            .write_all(&chunk)
            .map_err(|e| Step::Fail(io_err("write", &tmp_path)(e).into()))?;
        progress(Event::BlobAdvanced {
            digest: &blob.digest,
            n: chunk.len() as u64,
        });
    }
    if part.got < blob.size {
        return Err(Step::Lost(format!(
            "the connection closed after {} of {} bytes",
            part.got, blob.size
        )));
    }
    Ok(())
}
