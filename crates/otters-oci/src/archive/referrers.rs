//! Referrers in archives and layouts: where `save` puts an image's signatures, SBOMs and
//! attestations, and which of an archive's referrers `load` records.
//!
//! Takes: the store, the images saved, or the entries of an archive or layout already in the
//! store. Returns: the `index.json` entries and blobs to write, or what was loaded: each image
//! with its name, and how many referrers were recorded or left out.
//! Must never: record a referrer whose subject is not in the same archive (a planted "export" or
//! signature for an image the archive does not carry would become that image's referrer, found by
//! `kube`, `verify` and the next `push`), or read a catalogue of referrers past the manifest
//! limits.
//!
//! Two placements. A layout directory (`copy … oci:DIR`, `build -o type=oci-layout`) lists each
//! referrer as an untagged `index.json` entry, as the store does, so `umoci gc` keeps them. An
//! oci-archive lists only its images in `index.json` (an engine loading a one-image archive,
//! `podman load`, wants exactly one entry) and carries its referrers in one more blob, an image
//! index (the catalogue) that each image entry names by [`ANN_ARCHIVE_REFERRERS`]. Either way a
//! referrer's subject is read from its own manifest, never from an annotation.

use super::{check_graph, ArchiveError};
use crate::referrers::{descriptor_of, index_bytes, subject_of, MAX_DEPTH};
use crate::spec::descriptor::{Descriptor, ManifestDoc, ANN_REF_NAME};
use crate::spec::graph;
use crate::store::layout::{Store, StoreError};
use crate::store::referrers::ANN_REFERRER_SUBJECT;
use crate::validate::{validate_manifest, Kind, MAX_DESCRIPTORS, MAX_MANIFEST};
use crate::{Digest, MediaType};
use std::collections::BTreeSet;
use std::path::Path;

/// The annotation on an oci-archive's image entries: the digest of the catalogue, an image index
/// listing every referrer the archive carries (each entry annotated with its subject).
pub const ANN_ARCHIVE_REFERRERS: &str = "io.openotters.archive.referrers";

/// Most distinct catalogues one archive or layout may name (otters writes one).
const MAX_CATALOGUES: usize = 16;

/// Where a writer puts the referrers of the images it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Untagged `index.json` entries naming their subject (layouts: GC-safe).
    Entries,
    /// One catalogue blob named by each image entry (archives: one entry per image).
    Catalogue,
}

/// Deepest nesting of indexes followed (as a pull follows them).
const MAX_NESTING: usize = 4;

/// Every manifest and index of the image `root` in the store: `root`, then each index entry, in
/// order (the subjects whose referrers travel with the image).
pub fn manifests_of(store: &Store, root: &Descriptor) -> Result<Vec<Digest>, StoreError> {
    let mut out = Vec::new();
    graph::walk(
        [root.clone()],
        |d| d.digest.clone(),
        |d: &Descriptor, depth| -> Result<Vec<Descriptor>, StoreError> {
            out.push(d.digest.clone());
            if !d.media_type.is_index() || depth >= MAX_NESTING {
                return Ok(Vec::new());
            }
            let bytes = store.read_blob(&d.digest)?;
            // Reversed: the walk takes the child pushed last first, so entries come out in order.
            Ok(ManifestDoc::parse(&bytes)
                .map(|doc| doc.manifests.into_iter().rev().collect())
                .unwrap_or_default())
        },
    )?;
    Ok(out)
}

/// The referrers the store has for every manifest of the images (an index and each of its
/// platform manifests, where per-platform signing puts signatures), and theirs, as deep as a
/// registry transfer follows; each once, with the subject it refers to, in digest order.
pub fn referrers_of(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
) -> Result<Vec<(Digest, Descriptor)>, StoreError> {
    let mut out: Vec<(Digest, Descriptor)> = Vec::new();
    let mut starts: Vec<(Digest, Descriptor)> = Vec::new();
    for (root, _) in images {
        for m in manifests_of(store, root)? {
            let d = Descriptor::new(root.media_type.clone(), m.clone(), 0);
            starts.push((m, d));
        }
    }
    graph::walk(
        starts.into_iter().map(|(m, d)| (m, d, 0usize)),
        |(_, d, _)| d.digest.clone(),
        |(subject, d, level), _| -> Result<Vec<(Digest, Descriptor, usize)>, StoreError> {
            if *level > 0 {
                out.push((subject.clone(), d.clone()));
            }
            if *level >= MAX_DEPTH {
                return Ok(Vec::new());
            }
            Ok(store
                .referrers(&d.digest)?
                .into_iter()
                .map(|r| (d.digest.clone(), r, level + 1))
                .collect())
        },
    )?;
    out.sort_by(|a, b| a.1.digest.cmp(&b.1.digest));
    out.dedup_by(|a, b| a.1.digest == b.1.digest);
    Ok(out)
}

/// A referrer as an entry of a layout's `index.json` or an archive's catalogue: its descriptor as
/// a referrers index lists it, without a name (its manifest names its subject; the store's own
/// annotation stays in the store).
fn entry_of(referrer: &Descriptor) -> Descriptor {
    let mut e = referrer.clone();
    e.annotations.remove(ANN_REF_NAME);
    e.annotations.remove(ANN_REFERRER_SUBJECT);
    e
}

/// What an archive or layout writer writes: its `index.json` entries, and the catalogue blob
/// (for [`Placement::Catalogue`], when there are referrers).
pub struct Written {
    pub entries: Vec<Descriptor>,
    pub catalogue: Option<Vec<u8>>,
}

/// The `index.json` entries for `images`: one per tag of each image (with its ref name), or one
/// without a name for an image without tags; and the images' referrers, placed as `placement`
/// says. More referrers than one index may list are written as entries whatever the placement.
pub fn entries_for(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
    placement: Placement,
) -> Result<Written, StoreError> {
    let mut entries = super::named_entries(images);
    let referrers: Vec<Descriptor> = referrers_of(store, images)?
        .iter()
        .map(|(_, r)| entry_of(r))
        .collect();
    if referrers.is_empty() {
        return Ok(Written {
            entries,
            catalogue: None,
        });
    }
    if placement == Placement::Entries || referrers.len() > MAX_DESCRIPTORS {
        entries.extend(referrers);
        return Ok(Written {
            entries,
            catalogue: None,
        });
    }
    let catalogue = index_bytes(&referrers);
    let digest = Digest::of(&catalogue).to_string();
    for e in &mut entries {
        e.annotations
            .insert(ANN_ARCHIVE_REFERRERS.to_owned(), digest.clone());
    }
    Ok(Written {
        entries,
        catalogue: Some(catalogue),
    })
}

/// The catalogues the entries of an archive or layout name (each digest once).
pub(crate) fn catalogues_named(entries: &[Descriptor]) -> Result<Vec<Digest>, String> {
    let mut out = BTreeSet::new();
    for e in entries {
        if let Some(text) = e.annotations.get(ANN_ARCHIVE_REFERRERS) {
            let d = Digest::parse(text).map_err(|_| {
                format!(
                    "index.json names a referrers catalogue `{}`, which is not a digest",
                    crate::validate::escape_text(text, 80)
                )
            })?;
            out.insert(d);
        }
    }
    if out.len() > MAX_CATALOGUES {
        return Err(format!(
            "index.json names {} referrers catalogues, more than the limit of {MAX_CATALOGUES}",
            out.len()
        ));
    }
    Ok(out.into_iter().collect())
}

/// The referrers of all the catalogues read, each once; refused past [`MAX_DESCRIPTORS`].
pub(crate) fn distinct(all: Vec<Descriptor>) -> Result<Vec<Descriptor>, String> {
    let mut seen = BTreeSet::new();
    let out: Vec<Descriptor> = all
        .into_iter()
        .filter(|d| seen.insert(d.digest.clone()))
        .collect();
    if out.len() > MAX_DESCRIPTORS {
        return Err(format!(
            "its referrers catalogues list {} referrers, more than the limit of {MAX_DESCRIPTORS}",
            out.len()
        ));
    }
    Ok(out)
}

/// The entries of a catalogue (already in the store): an image index within the manifest limits
/// whose entries are manifests or indexes.
pub(crate) fn read_catalogue(
    store: &Store,
    digest: &Digest,
    src: &Path,
) -> Result<Vec<Descriptor>, ArchiveError> {
    let malformed = |what: String| ArchiveError::Malformed {
        path: src.to_owned(),
        what,
    };
    let Some(size) = store.stored_size(digest) else {
        return Err(malformed(format!(
            "index.json names the referrers catalogue {digest}, which the archive does not hold"
        )));
    };
    if size > MAX_MANIFEST as u64 {
        return Err(malformed(format!(
            "the referrers catalogue {digest} is more than the {MAX_MANIFEST}-byte limit"
        )));
    }
    let bytes = store.read_blob(digest)?;
    validate_manifest(
        &bytes,
        Some(MediaType::OciIndex.as_str()),
        Some(Kind::Index),
    )
    .map_err(|why| {
        malformed(format!(
            "the referrers catalogue {digest} is refused: {why}"
        ))
    })?;
    let doc = ManifestDoc::parse(&bytes)
        .map_err(|e| malformed(format!("the referrers catalogue {digest}: {e}")))?;
    Ok(doc.manifests)
}

/// The catalogue as a descriptor (for a layout reader that copies it into the store first).
pub(crate) fn catalogue_descriptor(digest: &Digest, size: u64) -> Descriptor {
    Descriptor::new(MediaType::OciIndex, digest.clone(), size)
}

/// What a load brought in.
#[derive(Clone, Debug, Default)]
pub struct Admitted {
    /// Each image entry with the name [`super::names::entry_name`] gives it ("" for none).
    pub images: Vec<(String, Descriptor)>,
    /// Referrers recorded (their subject is in the archive).
    pub recorded: usize,
    /// Referrers left out: their subject is not in the archive.
    pub orphans: Vec<Descriptor>,
}

/// Sorts what an archive or layout holds, all of it already in the store and checked: `entries`
/// (its `index.json`) and `catalogued` (the referrers its catalogues list). A manifest that names
/// a `subject` is recorded as a referrer only when that subject is one of the archive's own
/// manifests (an image's, an index entry's, or an admitted referrer's); an `index.json` entry is
/// an image when it names no subject, when its subject is not in the archive (a runnable export
/// saved alone), or when it carries a name. Orphan referrers of the catalogue are left out.
pub fn admit(
    store: &Store,
    entries: &[Descriptor],
    catalogued: &[Descriptor],
) -> Result<Admitted, StoreError> {
    // Every manifest the archive's own entries reach (an index's platform manifests too).
    let mut present: BTreeSet<Digest> = BTreeSet::new();
    for e in entries {
        for m in manifests_of(store, e)? {
            present.insert(m);
        }
    }
    // Only a manifest or index (checked within the manifest limit) may name a subject: another
    // entry is never read into memory here.
    let subject = |d: &Descriptor| -> Result<Option<Digest>, StoreError> {
        if Kind::of(&d.media_type).is_none() || d.size > MAX_MANIFEST as u64 {
            return Ok(None);
        }
        Ok(subject_of(&store.read_blob(&d.digest)?).map(|s| s.digest))
    };
    let mut out = Admitted::default();
    let record = |s: &Digest, d: &Descriptor| -> Result<(), StoreError> {
        let bytes = store.read_blob(&d.digest)?;
        store.add_referrer(s, &descriptor_of(&bytes, &d.media_type))
    };
    let mut seen = BTreeSet::new();
    for e in entries {
        let named = e.ref_name().is_some()
            || e.annotations
                .contains_key(super::names::ANN_CONTAINERD_NAME);
        let mut image = true;
        if let Some(s) = subject(e)?.filter(|s| present.contains(s)) {
            if seen.insert(e.digest.clone()) {
                record(&s, e)?;
                out.recorded += 1;
            }
            image = named;
        }
        if image {
            let mut d = e.clone();
            d.annotations.remove(ANN_ARCHIVE_REFERRERS);
            d.annotations.remove(ANN_REFERRER_SUBJECT);
            out.images
                .push((super::names::entry_name(&d).unwrap_or_default(), d));
        }
    }
    // Catalogued referrers, as many rounds as a chain may be deep (a signature of an SBOM).
    let mut todo: Vec<(&Descriptor, Option<Digest>)> = Vec::new();
    for c in catalogued {
        // One the archive also lists as an entry was judged above.
        if !entries.iter().any(|e| e.digest == c.digest) {
            todo.push((c, subject(c)?));
        }
    }
    loop {
        let before = todo.len();
        let mut rest = Vec::new();
        for (c, s) in todo {
            match s.as_ref().filter(|s| present.contains(s)) {
                Some(s) if seen.insert(c.digest.clone()) => {
                    record(s, c)?;
                    out.recorded += 1;
                    for m in manifests_of(store, c)? {
                        present.insert(m);
                    }
                }
                Some(_) => {}
                None => rest.push((c, s)),
            }
        }
        todo = rest;
        if todo.len() == before || todo.is_empty() {
            break;
        }
    }
    out.orphans = todo.into_iter().map(|(c, _)| c.clone()).collect();
    Ok(out)
}

/// Checks each catalogue the entries name, and every referrer it lists, as [`check_graph`]
/// checks an entry; returns the referrers.
pub(crate) fn checked_catalogues(
    store: &Store,
    entries: &[Descriptor],
    src: &Path,
) -> Result<Vec<Descriptor>, ArchiveError> {
    let malformed = |what: String| ArchiveError::Malformed {
        path: src.to_owned(),
        what,
    };
    let mut all = Vec::new();
    for digest in catalogues_named(entries).map_err(malformed)? {
        all.extend(read_catalogue(store, &digest, src)?);
    }
    let out = distinct(all).map_err(malformed)?;
    for r in &out {
        check_graph(store, r, src)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{load, save_many};
    use crate::spec::descriptor::{INDEX_V1, MANIFEST_V1};
    use std::collections::BTreeMap;

    fn store(dir: &Path, name: &str) -> Store {
        Store::open(dir.join(name)).unwrap()
    }

    /// A manifest with one layer.
    fn image(s: &Store, layer: &[u8]) -> Descriptor {
        let (cd, cs) = s.put_blob_bytes(b"{}").unwrap();
        let (ld, ls) = s.put_blob_bytes(layer).unwrap();
        let m = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{cd}","size":{cs}}},"layers":[{{"mediaType":"application/octet-stream","digest":"{ld}","size":{ls}}}]}}"#
        );
        s.put_manifest(m.as_bytes(), MANIFEST_V1).unwrap()
    }

    fn sign(s: &Store, subject: &Descriptor, what: &[u8]) -> Descriptor {
        let (d, n) = s.put_blob_bytes(what).unwrap();
        let layer = Descriptor::new("application/vnd.dev.sigstore.bundle.v0.3+json", d, n);
        s.attach(
            subject,
            "application/vnd.dev.sigstore.bundle.v0.3+json",
            &[layer],
            &BTreeMap::new(),
        )
        .unwrap()
    }

    fn index_entries(file: &Path) -> Vec<Descriptor> {
        let out = std::process::Command::new("tar")
            .args(["-xOf", file.to_str().unwrap(), "./index.json", "index.json"])
            .output()
            .unwrap();
        ManifestDoc::parse(&out.stdout).unwrap().manifests
    }

    #[test]
    fn an_archive_lists_its_images_only_and_carries_the_referrers_of_every_platform() {
        let dir = tempfile::tempdir().unwrap();
        let a = store(dir.path(), "a");
        let (amd, arm) = (image(&a, b"amd64"), image(&a, b"arm64"));
        let idx = format!(
            r#"{{"schemaVersion":2,"mediaType":"{INDEX_V1}","manifests":[{},{}]}}"#,
            String::from_utf8(otters_core::json::to_compact(&amd.to_json()).unwrap()).unwrap(),
            String::from_utf8(otters_core::json::to_compact(&arm.to_json()).unwrap()).unwrap()
        );
        let top = a.put_manifest(idx.as_bytes(), INDEX_V1).unwrap();
        let on_index = sign(&a, &top, b"signature of the index");
        let on_platform = sign(&a, &arm, b"signature of arm64");
        let of_signature = sign(&a, &on_platform, b"a signature's own referrer");
        let file = dir.path().join("x.tar");
        save_many(&a, &[(top.clone(), vec!["m:1".into()])], &file).unwrap();

        let entries = index_entries(&file);
        assert_eq!(entries.len(), 1, "one image, one entry: {entries:?}");
        assert!(entries[0].annotations.contains_key(ANN_ARCHIVE_REFERRERS));

        let b = store(dir.path(), "b");
        let loaded = load(&b, &file).unwrap();
        assert_eq!(loaded.images.len(), 1);
        assert_eq!(loaded.images[0].0, "m:1");
        assert!(!loaded.images[0]
            .1
            .annotations
            .contains_key(ANN_ARCHIVE_REFERRERS));
        assert_eq!((loaded.recorded, loaded.orphans.len()), (3, 0));
        let digests = |s: &Digest| -> Vec<Digest> {
            b.referrers(s)
                .unwrap()
                .into_iter()
                .map(|d| d.digest)
                .collect()
        };
        assert_eq!(digests(&top.digest), [on_index.digest]);
        assert_eq!(
            digests(&arm.digest),
            std::slice::from_ref(&on_platform.digest)
        );
        assert_eq!(digests(&on_platform.digest), [of_signature.digest]);
    }

    #[test]
    fn a_referrer_whose_subject_is_not_in_the_archive_is_never_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let a = store(dir.path(), "a");
        let victim = image(&a, b"someone else's agent");
        let carried = image(&a, b"the image the archive carries");
        let planted = sign(&a, &victim, b"planted");
        let junk = sign(&a, &victim, b"junk");
        // An archive naming the planted referrer as an image, and listing the junk in a
        // catalogue beside an unrelated image, as a hostile archive can.
        let entries = vec![carried.clone(), planted.clone()];
        let catalogued = vec![junk.clone()];
        let b = store(dir.path(), "b");
        for d in [&carried, &planted, &junk] {
            for (blob, _) in crate::archive::reachable(&a, d).unwrap() {
                b.put_blob_bytes(&a.read_blob(&blob).unwrap()).unwrap();
            }
        }
        let got = admit(&b, &entries, &catalogued).unwrap();
        assert_eq!(got.recorded, 0);
        assert_eq!(got.orphans.len(), 1);
        assert!(b.referrers(&victim.digest).unwrap().is_empty());
        // The planted entry, whose subject is absent, is an image (an export saved alone).
        let images: Vec<&Digest> = got.images.iter().map(|(_, d)| &d.digest).collect();
        assert_eq!(images, [&carried.digest, &planted.digest]);
    }

    #[test]
    fn catalogues_and_their_referrers_are_bounded() {
        let named = |i: usize| {
            let mut d = Descriptor::new(MANIFEST_V1, Digest::of(b"image"), 1);
            d.annotations.insert(
                ANN_ARCHIVE_REFERRERS.into(),
                Digest::of(i.to_string().as_bytes()).to_string(),
            );
            d
        };
        let same: Vec<Descriptor> = (0..100).map(|_| named(0)).collect();
        assert_eq!(catalogues_named(&same).unwrap().len(), 1);
        let many: Vec<Descriptor> = (0..=MAX_CATALOGUES).map(named).collect();
        assert!(catalogues_named(&many)
            .unwrap_err()
            .contains("more than the limit"));
        let mut bad = named(0);
        bad.annotations
            .insert(ANN_ARCHIVE_REFERRERS.into(), "sha256:zz\u{1b}".into());
        assert!(catalogues_named(&[bad])
            .unwrap_err()
            .contains("not a digest"));
        let referrer =
            |i: usize| Descriptor::new(MANIFEST_V1, Digest::of(i.to_string().as_bytes()), 1);
        let twice: Vec<Descriptor> = (0..10).chain(0..10).map(referrer).collect();
        assert_eq!(distinct(twice).unwrap().len(), 10);
        let over: Vec<Descriptor> = (0..=MAX_DESCRIPTORS).map(referrer).collect();
        assert!(distinct(over).unwrap_err().contains("more than the limit"));
    }

    #[test]
    fn only_a_manifest_may_name_a_subject() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), "s");
        let image = image(&s, b"carried");
        // A blob listed with a layer's media type, whose bytes would name the image as subject:
        // never read as a manifest, never recorded.
        let text = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"x/c","digest":"{}","size":1}},"layers":[],"subject":{}}}"#,
            image.digest,
            String::from_utf8(otters_core::json::to_compact(&image.to_json()).unwrap()).unwrap()
        );
        let (d, n) = s.put_blob_bytes(text.as_bytes()).unwrap();
        let layer = Descriptor::new("application/vnd.oci.image.layer.v1.tar", d, n);
        let got = admit(&s, &[image.clone(), layer], &[]).unwrap();
        assert_eq!((got.recorded, got.images.len()), (0, 2));
        assert!(s.referrers(&image.digest).unwrap().is_empty());
    }
}
