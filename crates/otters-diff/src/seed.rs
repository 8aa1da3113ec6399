//! The FROM parent of an Agentfile directory on one side of a diff, brought from the user's store
//! into the diff's temporary store before the build, so an `--offline` diff of an agent built
//! `FROM` a parent works wherever `otters build --offline` of it works.
//!
//! Takes: the user's store, the temporary store and the directory's `Agentfile.lock`. Returns:
//! how many blobs were brought (a hard link where both stores share a file system, a checked copy
//! elsewhere). Must never: write to the user's store, bring a blob whose bytes do not hash to its
//! digest, or read an unbounded manifest.
use otters_oci::spec::descriptor::{Descriptor, ManifestDoc, INDEX_V1, MANIFEST_V1};
use otters_oci::{Digest, Store};
use otters_pipeline::resolve::{Lockfile, Role};
use std::io::Read;
use std::path::Path;

/// The largest top manifest or index read to learn what a pin is.
const MAX_MANIFEST: u64 = 4 << 20;

/// Brings every FROM parent `lock` pins (its index, manifests, configs and layers) that `from`
/// holds whole into `to`, and tags it there under the reference the lock records, so the build
/// finds the parent by the lock's pin as it would in the user's store. A pin `from` lacks any
/// part of is left out: the build then reports the parent as it would without this step.
pub fn parents(from: &Store, to: &Store, lock: &Path) -> usize {
    let mut brought = 0;
    for entry in Lockfile::read_all(lock)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|l| l.images)
        .filter(|e| e.role == Role::From)
    {
        for d in std::iter::once(&entry.digest).chain(entry.index.as_ref()) {
            let Some(root) = descriptor(from, d) else {
                continue;
            };
            // Every blob the pin reaches (the walk `otters save` uses), or none of them.
            let Ok(blobs) = otters_oci::archive::reachable(from, &root) else {
                continue;
            };
            let moved: Option<Vec<bool>> = blobs.iter().map(|(b, _)| blob(from, to, b)).collect();
            if let Some(moved) = moved {
                brought += moved.into_iter().filter(|m| *m).count();
                let _ = to.tag(&entry.reference, &root);
            }
        }
    }
    brought
}

/// The descriptor of the manifest or index `d` that `from` holds: its media type read from it.
fn descriptor(from: &Store, d: &Digest) -> Option<Descriptor> {
    if !from.has_blob(d) {
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
    let media = doc.media_type.unwrap_or_else(|| {
        if doc.manifests.is_empty() {
            MANIFEST_V1.into()
        } else {
            INDEX_V1.into()
        }
    });
    Some(Descriptor::new(media, d.clone(), bytes.len() as u64))
}

/// One blob: `Some(true)` when brought, `Some(false)` when `to` has it already, `None` when it
/// could not be brought.
fn blob(from: &Store, to: &Store, d: &Digest) -> Option<bool> {
    if to.has_blob(d) {
        return Some(false);
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
