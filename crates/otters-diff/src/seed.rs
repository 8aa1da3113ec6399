//! The FROM parent of an Agentfile directory on one side of a diff, brought from the user's store
//! into the diff's temporary store before the build, so an `--offline` diff of an agent built
//! `FROM` a parent works wherever `otters build --offline` of it works.
//!
//! Takes: the user's store, the temporary store and the directory's `Agentfile.lock`. Returns:
//! how many blobs were brought (a hard link where both stores share a file system, a checked copy
//! elsewhere). Must never: write to the user's store, bring a blob whose bytes do not hash to its
//! digest, or read an unbounded manifest.
use otters_oci::spec::descriptor::{Descriptor, ManifestDoc};
use otters_oci::{Digest, Store};
use otters_pipeline::resolve::{Lockfile, Role};
use std::io::Read;
use std::path::Path;

/// The largest manifest or index read while walking what a pin holds.
const MAX_MANIFEST: u64 = 4 << 20;
/// How deep an index may nest (an index of manifests is one level).
const MAX_DEPTH: usize = 2;

/// Brings every FROM parent `lock` pins (its index, manifests, configs and layers) that `from`
/// holds into `to`, and tags it there under the reference the lock records, so the build finds
/// the parent by the lock's pin as it would in the user's store. Anything missing or unreadable
/// is left out: the build then reports the parent as it would without this step.
pub fn parents(from: &Store, to: &Store, lock: &Path) -> usize {
    let mut brought = 0;
    for entry in Lockfile::read_all(lock)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|l| l.images)
        .filter(|e| e.role == Role::From)
    {
        for d in std::iter::once(&entry.digest).chain(entry.index.as_ref()) {
            if let Some((desc, n)) = image(from, to, d, 0) {
                brought += n;
                let _ = to.tag(&entry.reference, &desc);
            }
        }
    }
    brought
}

/// Brings the manifest or index `d` and everything under it; returns its descriptor and the
/// number of blobs brought, or `None` when `from` does not hold all of it.
fn image(from: &Store, to: &Store, d: &Digest, depth: usize) -> Option<(Descriptor, usize)> {
    if depth > MAX_DEPTH || !from.has_blob(d) {
        return None;
    }
    let mut bytes = Vec::new();
    from.open_blob(d)
        .ok()?
        .take(MAX_MANIFEST + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_MANIFEST || Digest::of(&bytes) != *d {
        return None;
    }
    let doc = ManifestDoc::parse(&bytes).ok()?;
    let mut n = 0;
    for m in &doc.manifests {
        n += image(from, to, &m.digest, depth + 1).map_or(0, |(_, k)| k);
    }
    for b in doc.blobs() {
        n += usize::from(blob(from, to, &b.digest)?);
    }
    n += usize::from(blob(from, to, d)?);
    let media = doc.media_type.clone().unwrap_or_else(|| {
        if doc.manifests.is_empty() {
            otters_oci::spec::descriptor::MANIFEST_V1.into()
        } else {
            otters_oci::spec::descriptor::INDEX_V1.into()
        }
    });
    Some((Descriptor::new(media, d.clone(), bytes.len() as u64), n))
}

/// One blob: `Some(true)` when brought, `Some(false)` when `to` has it already, `None` when
/// `from` does not hold it or it could not be brought.
fn blob(from: &Store, to: &Store, d: &Digest) -> Option<bool> {
    if to.has_blob(d) {
        return Some(false);
    }
    if !from.has_blob(d) {
        return None;
    }
    let target = to.blob_path(d);
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).ok()?;
    }
    // Blobs are never written in place (a store renames a finished temp file over them), so a
    // link shares bytes that cannot change; the temporary store only ever unlinks it.
    if std::fs::hard_link(from.blob_path(d), &target).is_ok() {
        return Some(true);
    }
    let file = from.open_blob(d).ok()?;
    to.put_blob_expecting(file, d, &mut |_| {}).ok()?;
    Some(true)
}
