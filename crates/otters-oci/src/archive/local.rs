//! Images another tool wrote on disk, brought into the store: `otters pull oci:DIR[:tag]` and
//! `oci-archive:FILE[:tag]` (skopeo's transports), and `otters load -i DIR`.
//!
//! Takes: a store and a layout directory or archive file. Returns: the image(s) copied in, with
//! the names they had inside. Must never: copy an image without the checks a registry pull
//! applies (the archive and layout readers verify every blob), or tag anything (the caller chooses
//! the local name).

pub use super::names::{entry_name, ANN_CONTAINERD_NAME};
use super::referrers::{
    admit, catalogue_descriptor, catalogues_named, distinct, read_catalogue, Admitted,
};
use super::{import_layout, layout_entries, load, ArchiveError};
use crate::spec::descriptor::{Descriptor, ANN_REF_NAME};
use crate::store::layout::Store;
use crate::store::refname::new_tag_name;
use std::path::{Path, PathBuf};

/// `oci:DIR[:name]` or `oci-archive:FILE[:name]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalSource {
    pub path: PathBuf,
    /// The image's ref name inside, when one is named.
    pub want: Option<String>,
    /// An oci-archive file (else a layout directory).
    pub is_archive: bool,
}

impl LocalSource {
    /// `None` when `reference` names neither transport. As skopeo splits it, the path ends at the
    /// first `:` (paths with `:` are not supported).
    pub fn parse(reference: &str) -> Option<LocalSource> {
        let (is_archive, rest) = if let Some(r) = reference.strip_prefix("oci-archive:") {
            (true, r)
        } else {
            (false, reference.strip_prefix("oci:")?)
        };
        let (path, want) = match rest.split_once(':') {
            Some((p, t)) => (PathBuf::from(p), Some(t.to_owned())),
            None => (PathBuf::from(rest), None),
        };
        Some(LocalSource {
            path,
            want,
            is_archive,
        })
    }
}

/// Why no image was copied.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("{} has no image named `{want}`", path.display())]
    NoSuchImage {
        path: PathBuf,
        want: String,
        /// The ref names it holds, joined by `, ` (`<none>` for an unnamed one).
        holds: String,
    },
    #[error("{} holds {count} images", path.display())]
    Several {
        path: PathBuf,
        count: usize,
        holds: String,
    },
}

/// An image copied into the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// Its descriptor, without the ref name it had inside.
    pub root: Descriptor,
    /// The ref name it had inside.
    pub inner_name: Option<String>,
}

impl Imported {
    /// The local name: `tag` when given, else the name inside when it is a whole reference
    /// (`meteo:1`, as `otters save` writes), else none (skopeo writes bare tags such as `1.0`).
    pub fn local_name(&self, tag: Option<&str>) -> Option<String> {
        tag.map(str::to_owned).or_else(|| {
            self.inner_name
                .clone()
                .filter(|n| n.contains(':') || n.contains('/'))
                .filter(|n| new_tag_name(n).is_ok())
        })
    }
}

/// Copies the one image `src` names (or, without a name, its only image) into the store.
pub fn import(store: &Store, src: &LocalSource) -> Result<Imported, LocalError> {
    let entries: Vec<Descriptor> = if src.is_archive {
        load(store, &src.path)?
            .images
            .into_iter()
            .map(|(_, d)| d)
            .collect()
    } else {
        // A referrer's entry (as otters writes layouts) is not one of the images to pick from.
        let entries = layout_entries(&src.path)?;
        entries
            .iter()
            .filter(|d| !is_layout_referrer(&src.path, d))
            .cloned()
            .collect()
    };
    let mut root = pick(&src.path, &entries, src.want.as_deref())?;
    if !src.is_archive {
        import_layout(store, &src.path, &root)?;
    }
    let inner_name = entry_name(&root).or_else(|| root.annotations.get(ANN_REF_NAME).cloned());
    root.annotations.remove(ANN_REF_NAME);
    Ok(Imported { root, inner_name })
}

/// Whether the entry `d` of the layout `dir` is there for a referrer, not an image: it has no name
/// and its manifest names a subject the layout holds (or it carries the store's own annotation).
fn is_layout_referrer(dir: &Path, d: &Descriptor) -> bool {
    if crate::store::referrers::is_referrer_entry(d) {
        return true;
    }
    if d.ref_name().is_some() || d.annotations.contains_key(ANN_CONTAINERD_NAME) {
        return false;
    }
    let blobs = dir.join("blobs/sha256");
    super::read_small(&blobs.join(d.digest.hex()), dir)
        .ok()
        .and_then(|bytes| crate::referrers::subject_of(&bytes))
        .is_some_and(|s| blobs.join(s.digest.hex()).is_file())
}

/// The one image `want` (or, without it, the only image) names among `entries`.
fn pick(path: &Path, entries: &[Descriptor], want: Option<&str>) -> Result<Descriptor, LocalError> {
    let holds = || {
        entries
            .iter()
            .map(|d| d.ref_name().unwrap_or("<none>"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let picked: Vec<&Descriptor> = match want {
        Some(w) => entries.iter().filter(|d| d.ref_name() == Some(w)).collect(),
        None => entries.iter().collect(),
    };
    match (picked.as_slice(), want) {
        ([one], _) => Ok((*one).clone()),
        ([], Some(w)) => Err(LocalError::NoSuchImage {
            path: path.to_owned(),
            want: w.to_owned(),
            holds: holds(),
        }),
        _ => Err(LocalError::Several {
            path: path.to_owned(),
            count: picked.len(),
            holds: holds(),
        }),
    }
}

/// Every image of the OCI layout at `dir` (`otters load -i DIR`), with the name [`entry_name`]
/// gives it ("" for none), as an archive's images are loaded; the descriptor keeps the entry's
/// annotations (a bare ref name, for a hint). Referrers are recorded as an archive's are
/// ([`super::referrers::admit`]): only those whose subject the layout holds.
pub fn load_layout(store: &Store, dir: &Path) -> Result<Admitted, ArchiveError> {
    let entries = layout_entries(dir)?;
    // An image named many times (a thousand tags) is read and checked once.
    let mut imported = std::collections::HashSet::new();
    for d in &entries {
        if imported.insert(d.digest.clone()) {
            import_layout(store, dir, d)?;
        }
    }
    let refused = |what: String| ArchiveError::Layout {
        path: dir.to_owned(),
        what,
    };
    let mut catalogued = Vec::new();
    for digest in catalogues_named(&entries).map_err(refused)? {
        let path = dir.join("blobs/sha256").join(digest.hex());
        let size = std::fs::symlink_metadata(&path).map_or(0, |m| m.len());
        // The catalogue alone (an image index of at most 4 MiB, checked), then each referrer.
        let catalogue = catalogue_descriptor(&digest, size);
        if size > crate::validate::MAX_MANIFEST as u64 {
            return Err(refused(format!(
                "the referrers catalogue {digest} is more than the {}-byte limit",
                crate::validate::MAX_MANIFEST
            )));
        }
        let bytes = super::read_small(&path, dir)?;
        if crate::Digest::of(&bytes) != digest {
            return Err(refused(format!(
                "blobs/sha256/{} does not hold the referrers catalogue it is named for",
                digest.hex()
            )));
        }
        crate::validate::validate_manifest(&bytes, Some(catalogue.media_type.as_str()), None)
            .map_err(|why| {
                refused(format!(
                    "the referrers catalogue {digest} is refused: {why}"
                ))
            })?;
        store.put_blob_bytes(&bytes)?;
        catalogued.extend(read_catalogue(store, &digest, dir)?);
    }
    let catalogued = distinct(catalogued).map_err(refused)?;
    for r in &catalogued {
        import_layout(store, dir, r)?;
    }
    Ok(admit(store, &entries, &catalogued)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_split_at_the_first_colon() {
        assert_eq!(
            LocalSource::parse("oci:/tmp/l:1.0"),
            Some(LocalSource {
                path: "/tmp/l".into(),
                want: Some("1.0".into()),
                is_archive: false
            })
        );
        let a = LocalSource::parse("oci-archive:x.tar").unwrap();
        assert!(a.is_archive && a.want.is_none() && a.path == Path::new("x.tar"));
        assert_eq!(LocalSource::parse("ghcr.io/a/b:1"), None);
    }

    fn named(name: Option<&str>) -> Descriptor {
        let mut d = Descriptor::new(
            "application/vnd.oci.image.manifest.v1+json",
            crate::Digest::of(b"x"),
            1,
        );
        if let Some(n) = name {
            d.annotations.insert(ANN_REF_NAME.into(), n.into());
        }
        d
    }

    #[test]
    fn pick_wants_one_image() {
        let p = Path::new("dir");
        let two = [named(Some("1.0")), named(None)];
        assert_eq!(pick(p, &two, Some("1.0")).unwrap(), two[0]);
        match pick(p, &two, None).unwrap_err() {
            LocalError::Several { count, holds, .. } => {
                assert_eq!((count, holds.as_str()), (2, "1.0, <none>"));
            }
            e => panic!("{e}"),
        }
        let e = pick(p, &two, Some("2.0")).unwrap_err();
        assert_eq!(e.to_string(), "dir has no image named `2.0`");
        assert_eq!(pick(p, &two[1..], None).unwrap(), two[1]);
    }

    #[test]
    fn the_local_name_is_the_tag_or_a_whole_reference_inside() {
        let with = |inner: Option<&str>| Imported {
            root: named(None),
            inner_name: inner.map(str::to_owned),
        };
        assert_eq!(
            with(Some("meteo:1")).local_name(None).as_deref(),
            Some("meteo:1")
        );
        assert_eq!(with(Some("1.0")).local_name(None), None);
        assert_eq!(with(Some("BAD NAME:1")).local_name(None), None);
        assert_eq!(
            with(Some("1.0")).local_name(Some("a:2")).as_deref(),
            Some("a:2")
        );
    }

    #[test]
    fn a_missing_layout_is_an_archive_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let src =
            LocalSource::parse(&format!("oci:{}", dir.path().join("none").display())).unwrap();
        assert!(matches!(import(&store, &src), Err(LocalError::Archive(_))));
        assert!(load_layout(&store, &dir.path().join("none")).is_err());
    }
}
