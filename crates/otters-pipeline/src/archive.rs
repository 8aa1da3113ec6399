//! `otters save` and `otters load`: images of the local store to and from an oci-archive (a
//! file or a stream) or, for `load`, an OCI layout directory, over `otters_oci::archive`.
//!
//! Takes: the store, the references or the input. Returns: what was saved or loaded and how it
//! was named, or a [`SaveError`]/[`LoadError`] that speaks of values (the front end adds its flag
//! names and hints). Must never: move a local tag to a loaded image unless asked, or print.
use crate::copy::CopyError;
use otters_oci::archive::{self, local, ArchiveError};
use otters_oci::store::layout::MovedTag;
use otters_oci::store::query::{self, QueryError};
use otters_oci::{Descriptor, Store, StoreError};
use std::io::Write;
use std::path::Path;

/// Images to save, each with the names it has in the archive.
pub type Images = Vec<(Descriptor, Vec<String>)>;

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("cannot gather the images they pin: {0}")]
    Deps(#[source] CopyError),
    #[error(transparent)]
    Archive(#[from] ArchiveError),
}

/// The images `references` name, with (`with_deps`) everything they pin, fetching what the
/// store lacks (`insecure`: `--insecure`; `from_registries`: `--from-registry`, the registries
/// other than those of the images named whose pins may be read).
pub fn select(
    store: &Store,
    references: &[String],
    with_deps: bool,
    (insecure, from_registries): (bool, &[String]),
    policy: &otters_policy::Policy,
) -> Result<Images, SaveError> {
    if with_deps {
        crate::copy::pull_missing(store, references, insecure).map_err(SaveError::Deps)?;
    }
    let images = query::select(store, references)?;
    if !with_deps {
        return Ok(images);
    }
    crate::copy::with_deps(store, &images, insecure, from_registries, policy)
        .map_err(SaveError::Deps)
}

/// Writes `images` into the oci-archive `dest`, or (none) to `out`, named `label` in messages.
pub fn save(
    store: &Store,
    images: &Images,
    dest: Option<&Path>,
    out: impl Write,
    label: &Path,
) -> Result<(), SaveError> {
    match dest {
        Some(path) => archive::save_many(store, images, path)?,
        None => archive::save_stream(store, images, out, label)?,
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("{0} holds no images")]
    Empty(String),
    /// Loading would move local tags that name other images (and `force` was not given).
    #[error("{from} would move {} local tag(s): {}", moved.len(), moved.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    WouldMove { from: String, moved: Vec<MovedTag> },
    #[error("cannot tag the loaded images: {0}")]
    Tag(#[source] StoreError),
}

/// What a load stored: each image with the name it got (empty: untagged) and the ref name it
/// had inside, and the local tags it moved.
pub struct Loaded {
    pub images: Vec<(String, Descriptor)>,
    pub moved: Vec<MovedTag>,
    /// Referrers left out: their subject is not in the archive (never recorded, so never found by
    /// `verify`, `kube` or `push` as that image's).
    pub orphans: usize,
}

/// Loads the oci-archive or OCI layout at `path`, or (none) the archive on `stdin`, and names
/// its images, in one index update. `from` names the source in messages.
pub fn load(
    store: &Store,
    path: Option<&Path>,
    stdin: impl std::io::Read,
    from: &str,
    force: bool,
) -> Result<Loaded, LoadError> {
    let admitted = match path {
        Some(path) if path.is_dir() => local::load_layout(store, path)?,
        Some(path) => archive::load(store, path)?,
        None => archive::load_stream(store, stdin, Path::new(from))?,
    };
    let orphans = admitted.orphans.len();
    let loaded = admitted.images;
    if loaded.is_empty() {
        return Err(LoadError::Empty(from.to_owned()));
    }
    // One index update for every name, however many (the blobs are in; nothing is tagged yet).
    let (names, moved) = match store.tag_all(&loaded, force) {
        Err(StoreError::WouldMove(moved)) => {
            return Err(LoadError::WouldMove {
                from: from.to_owned(),
                moved,
            })
        }
        other => other.map_err(LoadError::Tag)?,
    };
    let images = names
        .into_iter()
        .zip(loaded)
        .map(|(n, (_, d))| (n, d))
        .collect();
    Ok(Loaded {
        images,
        moved,
        orphans,
    })
}
