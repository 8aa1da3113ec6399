//! Whole-image transfers between the local store and a registry: `push` and `pull`.
//!
//! Takes: a [`RegistryClient`], a [`Store`], a reference, and a progress callback. Returns: a
//! [`TransferReport`] saying what was uploaded, skipped, mounted or downloaded. Must never: put a
//! blob in the store before its digest has been checked (downloads go to a temp file that is
//! renamed only after verification), upload a blob the registry already has, or print.
//!
//! Push order: blobs (config and layers, each `HEAD`-checked first; a blob known to live in another
//! repository of the same registry is mounted), then child manifests, then the top manifest under
//! its tag. A push that was interrupted can simply be run again: what arrived is skipped.

use crate::path_io::io_err;
use crate::reference::Reference;
use crate::registry::http::error_chain;
use crate::registry::sources::Sources;
use crate::registry::{BlobStream, RegistryClient, RegistryError, MAX_MANIFEST};
use crate::spec::descriptor::{Descriptor, ManifestDoc};
use crate::spec::digest::{Digest, Hasher};
use crate::spec::media_type::MediaType;
use crate::store::layout::{Store, StoreError};
use crate::validate::Kind;
use futures_util::StreamExt as _;
use serde::Serialize;
use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use crate::progress::{Event, Outcome, Progress};

/// The result of a push or pull.
#[derive(Clone, Debug, Serialize)]
pub struct TransferReport {
    pub reference: String,
    /// Digest of the top manifest (or index).
    pub digest: Digest,
    pub media_type: MediaType,
    pub uploaded: Vec<Digest>,
    pub skipped: Vec<Digest>,
    pub mounted: Vec<Digest>,
    pub downloaded: Vec<Digest>,
    /// Bytes sent or received for blobs (not manifests).
    pub bytes: u64,
    /// Referrers (signatures, SBOMs, attestations) pushed or pulled with the image.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub referrers: Vec<Digest>,
    /// For a pull: the hosts that served it (mirrors, the registry), in first-use order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<String>,
    /// Manifests and indexes fetched so far by a pull, and their bytes (see [`MAX_DOCUMENTS`]).
    #[serde(skip)]
    documents: (usize, usize),
}

/// Most manifests and indexes one pull fetches, and their total bytes: an index may list 4096
/// entries, nested 4 deep, which must not become 4096⁴ requests or gigabytes of manifests.
pub const MAX_DOCUMENTS: (usize, usize) = (1024, 64 << 20);

impl TransferReport {
    pub fn new(reference: String, digest: Digest, media_type: MediaType) -> Self {
        Self {
            reference,
            digest,
            media_type,
            uploaded: Vec::new(),
            skipped: Vec::new(),
            mounted: Vec::new(),
            downloaded: Vec::new(),
            bytes: 0,
            referrers: Vec::new(),
            from: Vec::new(),
            documents: (0, 0),
        }
    }

    /// Adds what another transfer (a referrer's) did to this report.
    pub(crate) fn absorb(&mut self, other: TransferReport) {
        for (list, outcome) in [
            (other.uploaded, Outcome::Uploaded),
            (other.mounted, Outcome::Mounted),
            (other.downloaded, Outcome::Downloaded),
            (other.skipped, Outcome::Skipped),
        ] {
            for d in &list {
                self.record(d, outcome);
            }
        }
        self.bytes += other.bytes;
    }

    /// Records what happened to a blob, once per digest: a blob that several manifests share
    /// (the empty config of every referrer, layers of an index's platforms) is counted where it
    /// was first moved; a later "already there" for it is not counted again.
    fn record(&mut self, digest: &Digest, outcome: Outcome) {
        let seen = |l: &Vec<Digest>| l.contains(digest);
        if seen(&self.uploaded) || seen(&self.mounted) || seen(&self.downloaded) {
            return;
        }
        if outcome != Outcome::Skipped {
            self.skipped.retain(|d| d != digest);
        } else if seen(&self.skipped) {
            return;
        }
        let list = match outcome {
            Outcome::Uploaded => &mut self.uploaded,
            Outcome::Skipped => &mut self.skipped,
            Outcome::Mounted => &mut self.mounted,
            Outcome::Downloaded => &mut self.downloaded,
        };
        list.push(digest.clone());
    }
}

/// Deepest nesting of indexes a push or pull follows.
const MAX_DEPTH: usize = 4;

pub(crate) fn check_depth(depth: usize, r: &Reference) -> Result<(), RegistryError> {
    if depth > MAX_DEPTH {
        return Err(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: "indexes are nested too deeply".into(),
        });
    }
    Ok(())
}

/// Records a blob's outcome: in the report (an upload's bytes counted), as now living in `r`'s
/// repository, and as a progress event.
pub(crate) fn blob_done(
    blob: &Descriptor,
    r: &Reference,
    outcome: Outcome,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
) {
    if outcome == Outcome::Uploaded {
        report.bytes += blob.size;
    }
    report.record(&blob.digest, outcome);
    sources.add(&blob.digest, r);
    progress(Event::BlobDone {
        digest: &blob.digest,
        outcome,
    });
}

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

/// Most blobs of one manifest uploaded at once, by a push and by a copy between registries: the
/// small ones (config, small layers) then ride alongside the large one instead of each adding its
/// round trips (`POST`, `PATCH`, `PUT`, of which the registry makes the last durable) to the
/// transfer; 4 keeps the registry's load and the open connections small (a copy holds one
/// connection to each side per blob), and a copy's memory at 4 chunks in flight.
pub(crate) const UPLOADS_AT_ONCE: usize = 4;

/// Runs `tasks` (one per blob of a manifest, in manifest order) up to [`UPLOADS_AT_ONCE`] at
/// once, and hands each one's result to `done` in manifest order, whichever ends first. The first
/// task that fails (in the order failures happen, not in manifest order) ends the run at once: it
/// sets `stop`, so the bodies still on their way end at their next chunk (even one the transport
/// would go on sending), drops the tasks still running (none of them sends the `PUT` that
/// completes an upload), and returns its error.
pub(crate) async fn at_once<T>(
    tasks: Vec<impl std::future::Future<Output = Result<T, RegistryError>>>,
    stop: &AtomicBool,
    mut done: impl FnMut(usize, T),
) -> Result<(), RegistryError> {
    let mut order = InOrder::new(tasks.len());
    let numbered = tasks
        .into_iter()
        .enumerate()
        .map(|(i, task)| async move { task.await.map(|t| (i, t)) });
    let mut running = futures_util::stream::iter(numbered).buffer_unordered(UPLOADS_AT_ONCE);
    while let Some(ended) = running.next().await {
        let (i, t) = ended.inspect_err(|_| stop.store(true, Ordering::Relaxed))?;
        for (i, t) in order.arrived(i, t) {
            done(i, t);
        }
    }
    Ok(())
}

/// The results of tasks that end in any order, handed on in manifest order.
struct InOrder<T> {
    /// Results that arrived before an earlier blob's, held until they are due.
    held: Vec<Option<T>>,
    /// The first blob not handed on yet.
    next: usize,
}

impl<T> InOrder<T> {
    fn new(blobs: usize) -> Self {
        InOrder {
            held: std::iter::repeat_with(|| None).take(blobs).collect(),
            next: 0,
        }
    }

    /// Records that blob `i` ended with `t`; returns the blobs now due (their index and result),
    /// in manifest order: none while an earlier blob is still on its way.
    fn arrived(&mut self, i: usize, t: T) -> Vec<(usize, T)> {
        self.held[i] = Some(t);
        let mut due = Vec::new();
        while let Some(t) = self.held.get_mut(self.next).and_then(Option::take) {
            due.push((self.next, t));
            self.next += 1;
        }
        due
    }
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
    open: &crate::registry::OpenBlob<'_>,
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
) -> Result<crate::registry::Fetched, RegistryError> {
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

pub(crate) fn read_doc(store: &Store, digest: &Digest) -> Result<Vec<u8>, RegistryError> {
    let bytes = store.read_blob(digest)?;
    if bytes.len() > MAX_MANIFEST {
        return Err(RegistryError::BadDocument {
            reference: digest.to_string(),
            reason: "manifest too large".into(),
        });
    }
    debug_assert_eq!(&Digest::of(&bytes), digest);
    Ok(bytes)
}

pub(crate) fn parse(
    bytes: &[u8],
    r: &impl std::fmt::Display,
) -> Result<ManifestDoc, RegistryError> {
    ManifestDoc::parse(bytes).map_err(|e| RegistryError::BadDocument {
        reference: r.to_string(),
        reason: format!("not a valid OCI manifest or index: {e}"),
    })
}

/// An image manifest, which must name a config (its blobs are the config, then the layers).
fn parse_manifest(bytes: &[u8], r: &impl std::fmt::Display) -> Result<ManifestDoc, RegistryError> {
    let m = parse(bytes, r)?;
    if m.config.is_none() {
        return Err(RegistryError::BadDocument {
            reference: r.to_string(),
            reason: "not a valid OCI manifest or index: missing field `config`".into(),
        });
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_handed_on_in_manifest_order_whatever_order_they_end_in() {
        let mut order = InOrder::new(4);
        assert_eq!(order.arrived(2, Outcome::Uploaded), []);
        assert_eq!(order.arrived(0, Outcome::Skipped), [(0, Outcome::Skipped)]);
        assert_eq!(
            order.arrived(1, Outcome::Mounted),
            [(1, Outcome::Mounted), (2, Outcome::Uploaded)]
        );
        assert_eq!(
            order.arrived(3, Outcome::Uploaded),
            [(3, Outcome::Uploaded)]
        );
    }
}
