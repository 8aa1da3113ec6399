//! Registry to registry without the local store: each blob goes from the source's `GET` straight
//! into the destination's upload, hashed and size-checked on the way (`otters copy`).
//!
//! Takes: one [`RegistryClient`] for both sides (credentials, transport rules and mirrors are per
//! host, as for push and pull), a source and a destination reference. Returns: the top
//! descriptor, every manifest digest of the image, and a [`TransferReport`].
//! Must never: let the destination complete a blob whose bytes were not checked (the last chunk
//! of a blob is held back until the whole body matched its descriptor's size and digest, so the
//! upload fails before the registry has it all), write a manifest before every blob of the image
//! is there (the documents are all read and checked first, the tag written last: a blob that
//! fails leaves no manifest and no tag), or hold more than one chunk of a blob in memory.
//!
//! A blob the destination has is skipped (`HEAD`); one that lives in another repository of the
//! destination's registry is mounted, but only from where this copy may take it: the source's own
//! repository when both are one registry (the registry checks it holds the blob), or another
//! repository once the source answered a `HEAD` for the blob (a manifest listing a digest proves
//! nothing; see `skip_or_mount`). The blobs of
//! a manifest are looked up one after the other (so a bearer token is fetched once), then up to
//! `UPLOADS_AT_ONCE` (4, `transfer::at_once`) of those the destination lacks are relayed at once,
//! as a push uploads them (memory: at most that many chunks in flight). Progress and the report
//! stay in manifest order: every blob is reported started when looked up and done in manifest
//! order. A lost connection on either side restarts that blob (a new `GET`, a new upload), within
//! the client's retry budget; what arrived before is skipped when the copy is run again. The first
//! blob that fails (in the order failures happen) ends the copy: the relays still running are
//! stopped at their next chunk and dropped, so none of them completes its upload afterwards
//! (`transfer::at_once`, shared with push).

use super::at_once::at_once;
use super::manifest::{check_depth, parse};
use super::pull::fetch_child;
use super::push::{mount_any, present_or_mounted, upload_progress};
use super::report::{blob_done, TransferReport};
use crate::progress::{Event, Outcome, Progress};
use crate::reference::Reference;
use crate::registry::client::RegistryClient;
use crate::registry::error::RegistryError;
use crate::registry::read::Fetched;
use crate::registry::sources::Sources;
use crate::registry::write::BlobStream;
use crate::spec::descriptor::Descriptor;
use crate::spec::digest::{Digest, Hasher};
use crate::validate::error_chain;
use futures_util::StreamExt as _;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// An image copied by [`stream_image`].
pub struct Streamed {
    /// The top document (index or manifest) as it now is at the destination.
    pub top: Descriptor,
    /// Every manifest and index of the image, the top first: the subjects whose referrers go
    /// along.
    pub manifests: Vec<Digest>,
    pub report: TransferReport,
}

/// Copies the image `src` names (an index with every manifest it lists, or a manifest) to `dest`,
/// under `dest`'s tag or else by digest.
pub fn stream_image(
    client: &RegistryClient,
    src: &Reference,
    dest: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
) -> Result<Streamed, RegistryError> {
    let top = client.fetch_manifest(src)?;
    let mut report =
        TransferReport::new(dest.to_string(), top.digest.clone(), top.media_type.clone());
    let mut docs = Vec::new();
    collect(client, src, top, 0, &mut docs, &mut report)?;
    let mut seen = HashSet::new();
    for doc in docs.iter().filter(|d| !d.media_type.is_index()) {
        let m = parse(&doc.bytes, src)?;
        // A blob listed again (in this manifest or an earlier one of the image) moved already.
        let blobs: Vec<&Descriptor> = m
            .blobs()
            .filter(|b| seen.insert(b.digest.clone()))
            .collect();
        relay_blobs(client, src, dest, &blobs, sources, progress, &mut report)?;
    }
    let (top, children) = docs
        .split_last()
        .expect("collect puts the top document last");
    for child in children {
        client.block_on(client.put_manifest_async(
            dest,
            child.digest.as_str(),
            child.media_type.as_str(),
            &child.bytes,
        ))?;
        sources.add(&child.digest, dest);
    }
    let selector = dest.tag.clone().unwrap_or_else(|| top.digest.to_string());
    client.block_on(client.put_manifest_async(
        dest,
        &selector,
        top.media_type.as_str(),
        &top.bytes,
    ))?;
    sources.add(&top.digest, dest);
    Ok(Streamed {
        top: Descriptor::new(
            top.media_type.clone(),
            top.digest.clone(),
            top.bytes.len() as u64,
        ),
        manifests: docs.iter().rev().map(|d| d.digest.clone()).collect(),
        report,
    })
}

/// Reads `doc` and, for an index, every document it lists (within a pull's depth and budget,
/// each checked as a pull checks it) into `docs`: children before the index that lists them, so
/// the destination is written in that order.
fn collect(
    client: &RegistryClient,
    src: &Reference,
    doc: Fetched,
    depth: usize,
    docs: &mut Vec<Fetched>,
    report: &mut TransferReport,
) -> Result<(), RegistryError> {
    check_depth(depth, src)?;
    if doc.media_type.is_index() {
        let index = parse(&doc.bytes, src)?;
        for child in &index.manifests {
            if docs.iter().any(|d| d.digest == child.digest) {
                continue;
            }
            let fetched = fetch_child(client, src, child, report)?;
            collect(client, src, fetched, depth + 1, docs, report)?;
        }
    }
    docs.push(doc);
    Ok(())
}

/// Why one attempt at a blob stopped.
enum Step {
    /// A connection was lost (to the registry named): try again if the budget allows.
    Lost(String, String),
    /// A mirror of the source sent a wrong body: never ask it again, try the next host.
    Mirror(String, String),
    Fail(RegistryError),
}

impl From<RegistryError> for Step {
    /// Request failures were already retried by the transport.
    fn from(e: RegistryError) -> Self {
        Step::Fail(e)
    }
}

/// Skips, mounts or streams the blobs of one manifest (each digest once): each looked up in turn
/// (`HEAD`, then a mount where [`skip_or_mount`] allows one), then up to
/// [`UPLOADS_AT_ONCE`] of the missing ones relayed at once, reported done in manifest order.
///
/// [`UPLOADS_AT_ONCE`]: super::at_once::UPLOADS_AT_ONCE
fn relay_blobs(
    client: &RegistryClient,
    src: &Reference,
    dest: &Reference,
    blobs: &[&Descriptor],
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
) -> Result<(), RegistryError> {
    let mut found = Vec::with_capacity(blobs.len());
    for blob in blobs {
        progress(Event::blob_started(blob));
        found.push(skip_or_mount(client, src, dest, &blob.digest, sources)?);
    }
    let sink = std::cell::RefCell::new(progress);
    let emit: &dyn Fn(Event<'_>) = &|e| (*sink.borrow_mut())(e);
    let relay = Relay {
        client,
        src,
        dest,
        emit,
        stop: Arc::new(AtomicBool::new(false)),
    };
    let relays = blobs
        .iter()
        .zip(&found)
        .map(|(blob, found)| {
            let relay = &relay;
            async move {
                match found {
                    Some(outcome) => Ok(*outcome),
                    None => relay.blob(blob).await.map(|()| Outcome::Uploaded),
                }
            }
        })
        .collect();
    client.block_on(at_once(relays, &relay.stop, |i, outcome| {
        blob_done(blobs[i], dest, outcome, sources, &mut |e| emit(e), report);
    }))
}

/// `Skipped` when the destination has `digest`, `Mounted` when its registry linked it from a
/// repository the copy may take it from, `None` when it must be relayed. A source manifest that
/// lists a digest proves nothing (anyone can list any digest), so a blob is mounted only from:
/// the source's own repository, when both are one registry (the registry checks that the
/// repository holds it, with the user's pull access there); or another repository of the
/// destination known to hold it (`sources`), once the source itself answered a `HEAD` for it in
/// this copy. Otherwise the blob comes from the source's `GET`, checked on the way, or not at all.
fn skip_or_mount(
    client: &RegistryClient,
    src: &Reference,
    dest: &Reference,
    digest: &Digest,
    sources: &mut Sources,
) -> Result<Option<Outcome>, RegistryError> {
    let same_registry = src.registry == dest.registry;
    let own = if same_registry {
        vec![src.repository.clone()]
    } else {
        Vec::new()
    };
    if let Some(outcome) = present_or_mounted(client, dest, digest, &own)? {
        return Ok(Some(outcome));
    }
    let others: Vec<String> = sources
        .repositories_on(digest, &dest.registry)
        .into_iter()
        .filter(|r| *r != dest.repository && !own.contains(r))
        .collect();
    if others.is_empty() || !client.block_on(client.source_has_blob_async(src, digest))? {
        return Ok(None);
    }
    sources.add(digest, src);
    mount_any(client, dest, digest, &others)
}

/// What every relay of one manifest's blobs shares.
struct Relay<'a> {
    client: &'a RegistryClient,
    src: &'a Reference,
    dest: &'a Reference,
    /// The progress sink, shared by the relays running at once.
    emit: &'a dyn Fn(Event<'_>),
    /// Set when one relay failed: the others' bodies end at their next chunk (see `Check`).
    stop: Arc<AtomicBool>,
}

impl Relay<'_> {
    /// Streams one blob the destination lacks, restarting it after a lost connection.
    async fn blob(&self, blob: &Descriptor) -> Result<(), RegistryError> {
        let retry = self.client.retry();
        let mut attempt = 0;
        loop {
            match self.once(blob).await {
                Ok(()) => return Ok(()),
                Err(Step::Lost(_, _)) if attempt < retry.attempts => {
                    tokio::time::sleep(retry.delay(attempt)).await;
                    attempt += 1;
                }
                Err(Step::Lost(registry, reason)) => {
                    return Err(RegistryError::Interrupted {
                        registry,
                        digest: blob.digest.clone(),
                        reason: format!("{reason} (after {} retries)", retry.attempts),
                    })
                }
                Err(Step::Mirror(host, why)) => {
                    self.client.distrust(&host, &self.src.registry, why);
                }
                Err(Step::Fail(e)) => return Err(e),
            }
        }
    }

    /// One `GET` from the source, streamed into one upload at the destination.
    async fn once(&self, blob: &Descriptor) -> Result<(), Step> {
        let Relay {
            client, src, dest, ..
        } = *self;
        let resp = client.get_blob(src, &blob.digest, 0).await?;
        // The host that answered: the registry or one of its mirrors. Read with no `.await`
        // between it and the `GET`'s answer, so no other relay's read can have come in between
        // (the client's runtime is one thread).
        let host = client.last_served().unwrap_or_else(|| src.registry.clone());
        let judged = |e: RegistryError| {
            if host == src.registry {
                Step::Fail(e)
            } else {
                Step::Mirror(host.clone(), e.to_string())
            }
        };
        if let Some(n) = resp.content_length().filter(|n| *n != blob.size) {
            return Err(judged(refused(
                src,
                dest,
                format!(
                    "{host} declares {n} bytes for blob {} where its descriptor says {}",
                    blob.digest, blob.size
                ),
            )));
        }
        let shared = Arc::new(Mutex::new(Shared {
            body: Some(resp),
            ..Shared::default()
        }));
        // Progress is reported from the body stream (see `upload_progress`).
        let (tx, rx) = std::sync::mpsc::channel::<u64>();
        let check = Check {
            blob: blob.clone(),
            host: host.clone(),
            src: src.clone(),
            dest: dest.clone(),
            shared: shared.clone(),
            counts: tx,
            stop: self.stop.clone(),
        };
        let open = move || -> Result<BlobStream, RegistryError> {
            let mut s = lock(&check.shared);
            if let Some(resp) = s.body.take() {
                return Ok(check.clone().stream(resp));
            }
            s.replayed = true;
            Err(RegistryError::Protocol {
                registry: check.dest.registry.clone(),
                what: "a lost upload (its body is sent again from a new download)".into(),
            })
        };
        let result = upload_progress(client, dest, blob, &open, &rx, self.emit).await;
        let mut s = lock(&shared);
        if let Some(v) = s.verdict.take() {
            return Err(judged(v));
        }
        if let Some(reason) = s.lost.take() {
            return Err(Step::Lost(host, reason));
        }
        match result {
            Ok(()) => Ok(()),
            Err(_) if s.replayed => Err(Step::Lost(
                dest.registry.clone(),
                "the upload's connection was lost".into(),
            )),
            Err(e) => Err(Step::Fail(e)),
        }
    }
}

/// What the body stream and the upload learn of each other.
#[derive(Default)]
struct Shared {
    /// The source's answer, until the upload takes it (a body can be sent once).
    body: Option<reqwest::Response>,
    /// The upload asked for the body a second time (it restarted after a lost connection).
    replayed: bool,
    /// The source's body broke its descriptor: final.
    verdict: Option<RegistryError>,
    /// The source's connection was lost mid-body.
    lost: Option<String>,
}

fn lock(s: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A source blob refused for what it is: its size.
fn refused(src: &Reference, dest: &Reference, why: String) -> RegistryError {
    RegistryError::BadDocument {
        reference: src.familiar(),
        reason: format!(
            "{why}; the upload to {} was abandoned and nothing was tagged",
            dest.registry
        ),
    }
}

/// The checks a source body passes on its way to the destination.
#[derive(Clone)]
struct Check {
    blob: Descriptor,
    /// The host that sent it (the source registry or a mirror).
    host: String,
    src: Reference,
    dest: Reference,
    shared: Arc<Mutex<Shared>>,
    counts: std::sync::mpsc::Sender<u64>,
    /// Another blob of the copy failed: end this body too, so its upload never completes, even
    /// if the transport still holds the body after the copy gave up.
    stop: Arc<AtomicBool>,
}

/// The state of one body on its way.
struct Flow {
    inner: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    hasher: Hasher,
    got: u64,
    /// The latest chunk, sent on only once the next one (or the checked end) arrived.
    held: Option<bytes::Bytes>,
    check: Check,
}

impl Check {
    /// The source's body as an upload body: at most the descriptor's size, hashed, its last
    /// chunk released only when size and digest both match. A failure is recorded in `shared`
    /// (what the upload's caller reports) and ends the stream with an error, which aborts the
    /// upload; so does a stop of the whole copy.
    fn stream(self, resp: reqwest::Response) -> BlobStream {
        let flow = Flow {
            inner: resp.bytes_stream().boxed(),
            hasher: Hasher::new(),
            got: 0,
            held: None,
            check: self,
        };
        futures_util::stream::unfold(Some(flow), |state| async move {
            let mut f = state?;
            loop {
                let next = f.inner.next().await;
                // Checked after each wait for the source, before anything goes on (the held
                // chunk included).
                if f.check.stop.load(Ordering::Relaxed) {
                    let why = "the copy stopped: another blob failed";
                    return Some((Err(std::io::Error::other(why)), None));
                }
                let Some(next) = next else {
                    return f.end();
                };
                let chunk = match next {
                    Ok(c) => c,
                    Err(e) => return Some((Err(f.check.lost(error_chain(&e))), None)),
                };
                let (size, got) = (f.check.blob.size, f.got);
                if chunk.len() as u64 > size - got {
                    let why = format!(
                        "{} sent more than the {size} bytes the descriptor of blob {} declares",
                        f.check.host, f.check.blob.digest
                    );
                    let e = refused(&f.check.src, &f.check.dest, why);
                    return Some((Err(f.check.refuse(e)), None));
                }
                f.hasher.update(&chunk);
                f.got += chunk.len() as u64;
                if let Some(prev) = f.held.replace(chunk) {
                    let _ = f.check.counts.send(prev.len() as u64);
                    return Some((Ok(prev), Some(f)));
                }
            }
        })
        .boxed()
    }

    fn lost(&self, reason: String) -> std::io::Error {
        lock(&self.shared).lost = Some(reason.clone());
        std::io::Error::other(reason)
    }

    fn refuse(&self, e: RegistryError) -> std::io::Error {
        let text = e.to_string();
        lock(&self.shared).verdict = Some(e);
        std::io::Error::other(text)
    }
}

impl Flow {
    /// The source's body ended: the held chunk goes on only if all of it was right.
    fn end(mut self) -> Option<(std::io::Result<bytes::Bytes>, Option<Flow>)> {
        let (size, got) = (self.check.blob.size, self.got);
        if got < size {
            let reason = format!("the connection closed after {got} of {size} bytes");
            return Some((Err(self.check.lost(reason)), None));
        }
        let actual = std::mem::replace(&mut self.hasher, Hasher::new()).finish();
        if actual != self.check.blob.digest {
            let e = RegistryError::DigestMismatch {
                registry: self.check.host.clone(),
                what: "blob",
                expected: self.check.blob.digest.to_string(),
                actual: actual.to_string(),
            };
            return Some((Err(self.check.refuse(e)), None));
        }
        let last = self.held.take()?;
        let _ = self.check.counts.send(last.len() as u64);
        Some((Ok(last), None))
    }
}
