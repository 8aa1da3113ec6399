//! Push: an image from the store to a registry. Blobs first (each `HEAD`-checked, mounted from
//! another repository of the registry where the pusher may, else uploaded, up to
//! [`UPLOADS_AT_ONCE`] at once), then child manifests, then the top manifest under its tag.
//!
//! [`UPLOADS_AT_ONCE`]: super::at_once::UPLOADS_AT_ONCE

use super::at_once::at_once;
use super::manifest::{check_depth, parse, parse_manifest, read_doc};
use super::report::{blob_done, TransferReport};
use crate::path_io::io_err;
use crate::progress::{Event, Outcome, Progress};
use crate::reference::Reference;
use crate::registry::client::RegistryClient;
use crate::registry::error::RegistryError;
use crate::registry::sources::Sources;
use crate::registry::write::{BlobStream, OpenBlob};
use crate::spec::descriptor::Descriptor;
use crate::spec::digest::Digest;
use crate::store::layout::{Store, StoreError};
use futures_util::StreamExt as _;
use std::io::Read as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Uploads the image `local` (a store descriptor) to `dest` (its tag, or its digest when `dest`
/// has none). `sources` tells where blobs were pulled from, for cross-repository mounts.
pub fn push_image(
    client: &RegistryClient,
    store: &Store,
    local: &Descriptor,
    dest: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
) -> Result<TransferReport, RegistryError> {
    let mut report = TransferReport::new(
        dest.to_string(),
        local.digest.clone(),
        local.media_type.clone(),
    );
    push_node(
        client,
        store,
        local,
        dest,
        sources,
        progress,
        &mut report,
        0,
    )?;
    let bytes = read_doc(store, &local.digest)?;
    let selector = dest.tag.clone().unwrap_or_else(|| local.digest.to_string());
    client.block_on(client.put_manifest_async(
        dest,
        &selector,
        local.media_type.as_str(),
        &bytes,
    ))?;
    sources.add(&local.digest, dest);
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn push_node(
    client: &RegistryClient,
    store: &Store,
    node: &Descriptor,
    dest: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
    depth: usize,
) -> Result<(), RegistryError> {
    check_depth(depth, dest)?;
    let bytes = read_doc(store, &node.digest)?;
    if node.media_type.is_index() {
        let index = parse(&bytes, dest)?;
        for child in &index.manifests {
            push_node(
                client,
                store,
                child,
                dest,
                sources,
                progress,
                report,
                depth + 1,
            )?;
            let child_bytes = read_doc(store, &child.digest)?;
            client.block_on(client.put_manifest_async(
                dest,
                child.digest.as_str(),
                child.media_type.as_str(),
                &child_bytes,
            ))?;
        }
        return Ok(());
    }
    let m = parse_manifest(&bytes, dest)?;
    let blobs: Vec<&Descriptor> = m.blobs().collect();
    push_blobs(client, store, &blobs, dest, sources, progress, report)
}

/// What the `HEAD` pass decided for one blob of a manifest.
enum Plan {
    /// Already there or mounted: nothing to send.
    Done(Outcome),
    /// To upload.
    Send,
    /// The same digest appears earlier in the manifest: handled with that one.
    Repeat,
}

/// Pushes the blobs of one manifest: each is first looked up (`HEAD`, then a mount from a
/// repository `sources` knows), one after the other, so a bearer token is fetched once; then up
/// to [`UPLOADS_AT_ONCE`] of those the registry lacks are uploaded at once. Every blob is
/// reported started when looked up, and done in manifest order, as a sequential push would.
/// The first upload that fails (in the order failures happen) ends the push at once: the uploads
/// still running are stopped and dropped, so none of them completes afterwards (see [`at_once`]).
///
/// [`UPLOADS_AT_ONCE`]: super::at_once::UPLOADS_AT_ONCE
fn push_blobs(
    client: &RegistryClient,
    store: &Store,
    blobs: &[&Descriptor],
    dest: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
) -> Result<(), RegistryError> {
    let mut plans = Vec::with_capacity(blobs.len());
    for (i, blob) in blobs.iter().enumerate() {
        if blobs[..i].iter().any(|b| b.digest == blob.digest) {
            plans.push(Plan::Repeat);
            continue;
        }
        progress(Event::blob_started(blob));
        // From the store: the bytes are here to send, so a mount only saves the upload.
        let from = mountable(sources, &blob.digest, dest, store.has_blob(&blob.digest));
        let plan = match present_or_mounted(client, dest, &blob.digest, &from)? {
            Some(outcome) => Plan::Done(outcome),
            None => Plan::Send,
        };
        plans.push(plan);
    }
    let sink = std::cell::RefCell::new(progress);
    let emit: &dyn Fn(Event<'_>) = &|e| (*sink.borrow_mut())(e);
    let stop = Arc::new(AtomicBool::new(false));
    let sends = blobs
        .iter()
        .zip(&plans)
        .map(|(blob, plan)| {
            let stop = &stop;
            async move {
                match plan {
                    Plan::Done(outcome) => Ok(Some(*outcome)),
                    Plan::Repeat => Ok(None),
                    Plan::Send => send_blob(client, store, blob, dest, emit, stop)
                        .await
                        .map(|()| Some(Outcome::Uploaded)),
                }
            }
        })
        .collect();
    client.block_on(at_once(sends, &stop, |i, outcome| {
        let blob = blobs[i];
        // A digest listed twice: reported found, right after its first listing, as the `HEAD` a
        // sequential push sends for it would say.
        let outcome = outcome.unwrap_or_else(|| {
            emit(Event::blob_started(blob));
            Outcome::Skipped
        });
        blob_done(blob, dest, outcome, sources, &mut |e| emit(e), report);
    }))
}

/// Size of the chunks a blob is read and sent in.
const CHUNK: usize = 1 << 20;

/// Uploads one store blob to `dest`, hashed as it streams (the store is checked like any input: a
/// blob whose size or digest differs from its descriptor fails with the store's own "corrupt"
/// error and never reaches the registry under a digest it does not have). Once `stop` is set
/// (another blob of the push failed) the body ends at its next chunk, with an error.
async fn send_blob(
    client: &RegistryClient,
    store: &Store,
    blob: &Descriptor,
    dest: &Reference,
    emit: &dyn Fn(Event<'_>),
    stop: &Arc<AtomicBool>,
) -> Result<(), RegistryError> {
    let digest = blob.digest.clone();
    let path = store.blob_path(&digest);
    let size = std::fs::metadata(&path)
        .map_err(io_err("read", &path))?
        .len();
    if size != blob.size {
        return Err(StoreError::Corrupt {
            path: path.clone(),
            expected: format!("{} ({} bytes)", blob.digest, blob.size),
            actual: format!("a file of {size} bytes"),
        }
        .into());
    }
    // Progress is reported from the body stream; a retried upload reports its bytes again.
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    // Why a body ended early, when the store is at fault: the transport sees only "the body
    // failed", which reads as a lost connection.
    let fault: Arc<std::sync::Mutex<Option<StoreError>>> = Arc::default();
    let seen = fault.clone();
    let open = move || -> Result<BlobStream, RegistryError> {
        let file = std::fs::File::open(&path).map_err(io_err("open", &path))?;
        let file = crate::store::verify::VerifiedBlob::new(file, digest.clone(), path.clone());
        let (tx, stop, fault) = (tx.clone(), stop.clone(), fault.clone());
        // One buffer per stream, reused once the transport has sent (dropped) the last chunk:
        // a fresh 1 MiB allocation per chunk cost page faults and zeroing on every MiB.
        let buf = bytes::BytesMut::new();
        let size = blob.size;
        let start = (Some(file), buf, 0u64);
        let stream = futures_util::stream::unfold(start, move |(state, mut buf, sent)| {
            let (tx, stop, fault) = (tx.clone(), stop.clone(), fault.clone());
            async move {
                let mut file = state?;
                if stop.load(Ordering::Relaxed) {
                    let why = "the push stopped: another blob failed";
                    return Some((Err(std::io::Error::other(why)), (None, buf, sent)));
                }
                buf.resize(CHUNK, 0);
                let n = match file.read(&mut buf) {
                    Ok(0) => return None,
                    Ok(n) => n,
                    Err(e) => return Some((Err(e), (None, buf, sent))),
                };
                buf.truncate(n);
                let sent = sent + n as u64;
                let _ = tx.send(n as u64);
                let chunk = buf.split().freeze();
                if sent < size {
                    return Some((Ok::<_, std::io::Error>(chunk), (Some(file), buf, sent)));
                }
                // The transport stops reading at the declared size, before the end of the file
                // where `VerifiedBlob` checks the digest: at the blob's last byte, check it now,
                // so a blob damaged in the store fails here with its last chunk held back,
                // whether or not the registry checks what it receives.
                if let Err(e) = file.finish() {
                    let why = std::io::Error::other(e.to_string());
                    *fault
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                    return Some((Err(why), (None, buf, sent)));
                }
                Some((Ok(chunk), (None, buf, sent)))
            }
        });
        Ok(stream.boxed())
    };
    let sent = upload_progress(client, dest, blob, &open, &rx, emit).await;
    let fault = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match fault {
        Some(e) => Err(e.into()),
        None => sent,
    }
}

/// `Skipped` when `dest`'s repository has `digest` already (`HEAD`), `Mounted` when its registry
/// mounted it from one of the repositories `from` (of `dest`'s registry), `None` when it must be
/// sent. A mount links a blob into `dest` without anyone sending its bytes: the caller names only
/// repositories it may link from, for a blob it has proven it holds (see [`mountable`]).
pub(crate) fn present_or_mounted(
    client: &RegistryClient,
    dest: &Reference,
    digest: &Digest,
    from: &[String],
) -> Result<Option<Outcome>, RegistryError> {
    if client.block_on(client.blob_exists_async(dest, digest))? {
        return Ok(Some(Outcome::Skipped));
    }
    mount_any(client, dest, digest, from)
}

/// `Mounted` when `dest`'s registry mounted `digest` from one of `from`, else `None`.
pub(crate) fn mount_any(
    client: &RegistryClient,
    dest: &Reference,
    digest: &Digest,
    from: &[String],
) -> Result<Option<Outcome>, RegistryError> {
    for from in from {
        if *from != dest.repository && client.block_on(client.mount_async(dest, digest, from))? {
            return Ok(Some(Outcome::Mounted));
        }
    }
    Ok(None)
}

/// The repositories of `dest`'s registry a push may mount `digest` from: those `sources` knows
/// to hold it, when the pusher holds the blob itself (`held`: the store has its bytes). A
/// manifest that merely lists a digest proves nothing: mounting it would link a blob from a
/// repository the image's author may not read into one they can (issue 31).
pub(crate) fn mountable(
    sources: &Sources,
    digest: &Digest,
    dest: &Reference,
    held: bool,
) -> Vec<String> {
    if held {
        sources.repositories_on(digest, &dest.registry)
    } else {
        Vec::new()
    }
}

/// Uploads `blob` to `dest` from `open` inside the client's runtime, turning the byte counts its
/// streams send on `counts` into progress events through `emit` while the upload runs and after it
/// ends (several uploads at once may share one sink).
pub(crate) async fn upload_progress(
    client: &RegistryClient,
    dest: &Reference,
    blob: &Descriptor,
    open: &OpenBlob<'_>,
    counts: &std::sync::mpsc::Receiver<u64>,
    emit: &dyn Fn(Event<'_>),
) -> Result<(), RegistryError> {
    let drain = || {
        while let Ok(n) = counts.try_recv() {
            emit(Event::BlobAdvanced {
                digest: &blob.digest,
                n,
            });
        }
    };
    let upload = client.upload_async(dest, &blob.digest, blob.size, open);
    futures_util::pin_mut!(upload);
    let result = loop {
        let tick = tokio::time::sleep(std::time::Duration::from_millis(50));
        tokio::select! {
            r = &mut upload => break r,
            () = tick => drain(),
        }
    };
    drain();
    result
}
