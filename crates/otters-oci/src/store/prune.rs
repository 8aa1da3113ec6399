//! Store hygiene: removes the blobs that no `index.json` entry reaches (`otters prune`).
//!
//! Takes: a [`Store`] and [`PruneOptions`]. Returns: a [`PruneReport`] (what went, what was kept
//! because it is recent). Must never: remove a blob reachable from any `index.json` entry, tagged
//! or not (manifests, the manifests of an index, configs, layers, and the referrers of any of
//! those manifests); run without holding the store's index lock; or remove a blob whose mtime is
//! within the grace period. A subject's referrers file goes when the subject is no longer reached.
//!
//! Why that is safe against a concurrent build: a build, pull or load writes through a leased
//! handle ([`Store::leased`]), which records every blob it writes or reuses in its lease file
//! *before* it renames the blob into place or looks for it, and keeps the lease (a `flock`ed file)
//! until it has tagged its image, under the same lock prune holds. Prune keeps every blob a live
//! lease lists. A blob leased after prune read the leases is caught too: the blob is renamed into
//! `.tmp/` first, then the leases are read again (and its mtime checked, for `--min-age`), and it
//! is put back when a lease now lists it. An optional grace period (`--min-age`, default none)
//! also keeps blobs written or reused recently, for writers that hold no lease.

use crate::path_io::{io_err, PathIoError};
use crate::spec::descriptor::ManifestDoc;
use crate::spec::digest::Digest;
use crate::spec::graph;
use crate::store::layout::{Store, StoreError};
use std::collections::HashSet;
use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The default grace period: none. A running build, pull or load holds a lease on the blobs it
/// has not tagged yet (see [`Store::leased`]), and those are kept whatever their age; `--min-age`
/// adds an age rule on top (for writers that predate leases).
pub const DEFAULT_GRACE: Duration = Duration::ZERO;

/// What else a manifest keeps alive beyond its config, layers and child manifests: the digests of
/// the images it pins (an agent's RUNTIME and BINs, named only in its `agent.yaml`). This crate
/// knows nothing of agents, so the caller says; an `Err` (pins that cannot be read) stops the
/// prune before anything is removed.
pub type PinsOf<'a> = &'a dyn Fn(&Store, &ManifestDoc) -> Result<Vec<Digest>, String>;

#[derive(Clone, Copy)]
pub struct PruneOptions<'a> {
    /// List what would go; remove nothing.
    pub dry_run: bool,
    /// Unreferenced blobs younger than this are kept.
    pub grace: Duration,
    /// The images each reachable manifest pins, kept with everything they reach.
    pub pins: Option<PinsOf<'a>>,
}

/// One blob removed (or, with `dry_run`, to be removed) or kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunedBlob {
    pub digest: Digest,
    pub size: u64,
}

#[derive(Debug, Default)]
pub struct PruneReport {
    /// Unreferenced blobs removed (with `dry_run`: that would be removed), in digest order.
    pub removed: Vec<PrunedBlob>,
    /// Unreferenced blobs kept because they are younger than the grace period.
    pub kept_recent: Vec<PrunedBlob>,
    /// Unreferenced blobs kept because a running build, pull or load holds a lease on them.
    pub kept_in_use: Vec<PrunedBlob>,
    /// How many digests the index entries reach.
    pub reachable: usize,
}

impl PruneReport {
    /// Bytes freed (or, with `dry_run`, that would be freed).
    pub fn freed(&self) -> u64 {
        self.removed.iter().map(|b| b.size).sum()
    }

    /// Bytes held by the unreferenced blobs kept for their age.
    pub fn kept_recent_bytes(&self) -> u64 {
        self.kept_recent.iter().map(|b| b.size).sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error("manifest {digest} in the store is not a valid manifest or index ({source}), so what it references is unknown; nothing was removed: remove its tag with `otters rm` or pull the image again")]
    BadManifest {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("the images manifest {digest} pins cannot be read ({why}), so what it needs is unknown; nothing was removed: remove its tag with `otters rm` or pull the image again")]
    BadPins { digest: Digest, why: String },
}

/// Removes every blob under `blobs/sha256/` that no `index.json` entry reaches and that is older
/// than `opts.grace`, holding the index lock throughout (tags wait until it is done).
pub fn prune(store: &Store, opts: PruneOptions<'_>) -> Result<PruneReport, PruneError> {
    let _lock = store.lock_index()?;
    // Computed once the lock is held: anything refreshed from here on is newer than the cutoff.
    let cutoff = SystemTime::now()
        .checked_sub(opts.grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let keep = reachable(store, opts.pins)?;
    let leased = store.leased_digests();
    let mut report = PruneReport {
        reachable: keep.len(),
        ..PruneReport::default()
    };
    let dir = store.root().join("blobs/sha256");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .map_err(io_err("list", &dir))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        // Anything but a sha256 blob name is not the store's, and is left alone.
        .filter(|n| n.len() == 64 && n.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .collect();
    names.sort();
    for name in names {
        let Ok(digest) = Digest::from_hex(&name) else {
            continue;
        };
        if keep.contains(&digest) {
            continue;
        }
        let path = dir.join(&name);
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_file() {
            continue;
        }
        let blob = PrunedBlob {
            digest,
            size: meta.len(),
        };
        if leased.contains(&blob.digest) {
            report.kept_in_use.push(blob);
        } else if is_recent(&meta, cutoff) {
            report.kept_recent.push(blob);
        } else if opts.dry_run || remove_unless_reused(store, &path, &blob.digest, cutoff)? {
            report.removed.push(blob);
        } else {
            report.kept_recent.push(blob);
        }
    }
    if !opts.dry_run {
        // A subject that is gone takes its referrers file with it (its referrers' blobs went above,
        // or go once they are older than the grace period).
        for subject in store.referrer_subjects() {
            if !keep.contains(&subject) {
                store.drop_referrers(&subject)?;
            }
        }
    }
    Ok(report)
}

/// The digests reachable from the entries of `index.json`. A manifest that is not stored (an index
/// of which only one platform was pulled) reaches nothing; one that cannot be read is an error,
/// since what it references is then unknown.
fn reachable(store: &Store, pins: Option<PinsOf<'_>>) -> Result<HashSet<Digest>, PruneError> {
    // (digest, whether it is a manifest or index to look into)
    let roots = store.read_index()?.into_iter().map(|d| (d.digest, true));
    let keep = graph::walk(
        roots,
        |(digest, _)| digest.clone(),
        |(digest, is_manifest), _| {
            if !is_manifest {
                return Ok(Vec::new());
            }
            let bytes = match store.read_blob(digest) {
                Ok(b) => b,
                Err(StoreError::MissingBlob(_)) => return Ok(Vec::new()),
                Err(e) => return Err(PruneError::from(e)),
            };
            let doc = ManifestDoc::parse(&bytes).map_err(|source| PruneError::BadManifest {
                digest: digest.clone(),
                source,
            })?;
            let mut next = Vec::new();
            if let Some(pins) = pins {
                let pinned = pins(store, &doc).map_err(|why| PruneError::BadPins {
                    digest: digest.clone(),
                    why,
                })?;
                next.extend(pinned.into_iter().map(|d| (d, true)));
            }
            next.extend(doc.blobs().map(|b| (b.digest.clone(), false)));
            next.extend(doc.manifests.iter().map(|m| (m.digest.clone(), true)));
            // A referrer (signature, SBOM) lives as long as its subject.
            next.extend(
                store
                    .referrers(digest)?
                    .into_iter()
                    .map(|r| (r.digest, true)),
            );
            Ok(next)
        },
    )?;
    Ok(keep.into_iter().collect())
}

fn is_recent(meta: &fs::Metadata, cutoff: SystemTime) -> bool {
    // A file without a usable mtime is treated as recent: when in doubt, keep.
    meta.modified().map_or(true, |m| m > cutoff)
}

/// Removes the blob at `path` unless a writer reused it since it was looked at. The blob is
/// locked (so the `.tmp/` collector leaves it alone) and renamed into `.tmp/`, where no writer
/// finds it; then the leases are read again (a writer records a blob in its lease before it looks
/// for it, so one that found it before the rename is listed now) and its mtime is read again from
/// the open file. Returns whether it was removed.
fn remove_unless_reused(
    store: &Store,
    path: &Path,
    digest: &Digest,
    cutoff: SystemTime,
) -> Result<bool, PruneError> {
    let Ok(file) = File::open(path) else {
        return Ok(false);
    };
    file.lock().map_err(io_err("lock", path))?;
    let trash = store.tmp_dir().join(format!("prune-{}", digest.hex()));
    if fs::rename(path, &trash).is_err() {
        return Ok(false);
    }
    let meta = file.metadata().map_err(io_err("stat", &trash))?;
    if is_recent(&meta, cutoff) || store.leased_digests().contains(digest) {
        // A writer reused it between the first look and the rename. If it saw the blob missing
        // and wrote its own copy meanwhile, that copy has the same bytes: either may stay.
        fs::rename(&trash, path).map_err(io_err("put back", path))?;
        return Ok(false);
    }
    fs::remove_file(&trash).map_err(io_err("remove", &trash))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::descriptor::MANIFEST_V1;
    use crate::Descriptor;

    fn age(store: &Store, digest: &Digest) {
        let old = SystemTime::now() - Duration::from_secs(7200);
        File::options()
            .write(true)
            .open(store.blob_path(digest))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    fn image(store: &Store, layer: &[u8]) -> (Descriptor, Vec<Digest>) {
        let (l, ln) = store.put_blob_bytes(layer).unwrap();
        let (c, cn) = store.put_blob_bytes(b"{}").unwrap();
        let m = format!(
            r#"{{"schemaVersion":2,"config":{{"mediaType":"x","digest":"{c}","size":{cn}}},"layers":[{{"mediaType":"y","digest":"{l}","size":{ln}}}]}}"#
        );
        let d = store.put_manifest(m.as_bytes(), MANIFEST_V1).unwrap();
        let md = d.digest.clone();
        (d, vec![l, c, md])
    }

    #[test]
    fn removes_only_unreachable_old_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (a, a_blobs) = image(&store, b"layer a");
        let (_b, b_blobs) = image(&store, b"layer b");
        store.tag("a:1", &a).unwrap();
        let (stray, _) = store.put_blob_bytes(b"young stray").unwrap();
        for d in a_blobs.iter().chain(&b_blobs) {
            age(&store, d);
        }
        let opts = |dry_run| PruneOptions {
            dry_run,
            grace: Duration::from_secs(3600),
            pins: None,
        };
        let dry = prune(&store, opts(true)).unwrap();
        let gone: Vec<&str> = dry.removed.iter().map(|b| b.digest.as_str()).collect();
        let mut want = vec![b_blobs[0].as_str(), b_blobs[2].as_str()];
        want.sort_unstable();
        assert_eq!(
            gone, want,
            "b's layer and manifest; the shared config stays"
        );
        assert!(
            store.blob_path(&b_blobs[0]).exists(),
            "dry run removes nothing"
        );
        assert_eq!(dry.kept_recent[0].digest, stray.as_str());

        let done = prune(&store, opts(false)).unwrap();
        assert_eq!(done.removed, dry.removed);
        assert_eq!(done.freed(), dry.freed());
        assert!(!store.blob_path(&b_blobs[0]).exists());
        for d in &a_blobs {
            assert!(store.has_blob(d));
        }
        assert!(store.has_blob(&stray));
        assert!(
            fs::read_dir(dir.path().join(".tmp"))
                .unwrap()
                .next()
                .is_none(),
            "no trash left"
        );
    }

    #[test]
    fn referrers_live_as_long_as_their_subject() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (a, _) = image(&store, b"subject layer");
        store.tag("a:1", &a).unwrap();
        let (sig_layer, n) = store.put_blob_bytes(b"signature").unwrap();
        let layer = Descriptor::new("application/x.sig", sig_layer.clone(), n);
        let bytes = crate::referrers::artifact_manifest(
            &a,
            "application/x.sig",
            &[layer],
            &std::collections::BTreeMap::new(),
        );
        store.put_blob_bytes(crate::referrers::EMPTY_JSON).unwrap();
        let r = store.put_manifest(&bytes, MANIFEST_V1).unwrap();
        store.add_referrer(&a.digest, &r).unwrap();
        for d in [&sig_layer, &r.digest] {
            age(&store, d);
        }
        let opts = PruneOptions {
            dry_run: false,
            grace: Duration::from_secs(3600),
            pins: None,
        };
        let report = prune(&store, opts).unwrap();
        assert!(report.removed.is_empty(), "{:?}", report.removed);
        assert!(store.has_blob(&sig_layer) && store.has_blob(&r.digest));
        // The subject goes: so do its referrers and their file.
        store.untag("a:1").unwrap();
        for d in [&sig_layer, &r.digest, &a.digest] {
            age(&store, d);
        }
        let report = prune(&store, opts).unwrap();
        let gone: Vec<&Digest> = report.removed.iter().map(|b| &b.digest).collect();
        assert!(
            gone.contains(&&sig_layer) && gone.contains(&&r.digest),
            "{gone:?}"
        );
        assert!(store.referrers(&a.digest).unwrap().is_empty());
        assert!(!dir
            .path()
            .join("referrers/sha256")
            .join(a.digest.hex())
            .exists());
    }

    #[test]
    fn reusing_a_blob_refreshes_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (d, _) = store.put_blob_bytes(b"reused").unwrap();
        age(&store, &d);
        // A build finding the blob in place (instead of writing it) keeps it alive.
        store.put_blob_bytes(b"reused").unwrap();
        let report = prune(
            &store,
            PruneOptions {
                dry_run: false,
                grace: Duration::from_secs(3600),
                pins: None,
            },
        )
        .unwrap();
        assert!(report.removed.is_empty());
        assert!(store.has_blob(&d));
    }

    #[test]
    fn an_unreadable_manifest_stops_the_prune() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let d = store.put_manifest(b"not json", MANIFEST_V1).unwrap();
        store.tag("bad", &d).unwrap();
        let (stray, _) = store.put_blob_bytes(b"old").unwrap();
        age(&store, &stray);
        let e = prune(
            &store,
            PruneOptions {
                dry_run: false,
                grace: Duration::ZERO,
                pins: None,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("nothing was removed"), "{e}");
        assert!(store.has_blob(&stray));
    }

    #[test]
    fn a_live_lease_keeps_its_blobs_and_a_dead_one_counts_for_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let opts = PruneOptions {
            dry_run: false,
            grace: Duration::ZERO,
            pins: None,
        };
        let leased = store.leased().unwrap();
        let (in_flight, _) = leased.batched().put_blob_bytes(b"in flight").unwrap();
        let (garbage, _) = store.put_blob_bytes(b"garbage").unwrap();
        // A lease left by a process that died: nobody holds its lock.
        let dead = dir.path().join("leases/dead");
        fs::write(&dead, format!("{}\n", garbage.hex())).unwrap();
        let r = prune(&store, opts).unwrap();
        let digests = |v: &[PrunedBlob]| v.iter().map(|b| b.digest.clone()).collect::<Vec<_>>();
        assert_eq!(digests(&r.removed), [garbage]);
        assert_eq!(digests(&r.kept_in_use), std::slice::from_ref(&in_flight));
        assert!(!dead.exists(), "a dead lease is removed");
        // Reused through the lease (found, not written): still kept.
        assert!(leased.has_blob(&in_flight));
        assert!(prune(&store, opts).unwrap().removed.is_empty());
        drop(leased);
        assert_eq!(fs::read_dir(dir.path().join("leases")).unwrap().count(), 0);
        let r = prune(&store, opts).unwrap();
        assert_eq!(digests(&r.removed), [in_flight]);
    }
}
