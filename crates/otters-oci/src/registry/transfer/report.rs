//! What a transfer did: the [`TransferReport`] a push, pull or copy fills in, once per blob, and
//! the one place a blob's outcome is recorded (report, sources, progress).

use crate::progress::{Event, Outcome, Progress};
use crate::reference::Reference;
use crate::registry::sources::Sources;
use crate::spec::descriptor::Descriptor;
use crate::spec::digest::Digest;
use crate::spec::media_type::MediaType;
use serde::Serialize;

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
    /// Manifests and indexes fetched so far by a pull, and their bytes (bounded by the pull's
    /// `MAX_DOCUMENTS`).
    #[serde(skip)]
    pub(super) documents: (usize, usize),
}

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
    pub(super) fn record(&mut self, digest: &Digest, outcome: Outcome) {
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
