//! Writing a [`RunPlan`]'s tree: built in a temp dir beside the root, then swapped in, carrying
//! the previous tree's `workspace/`, `home/` and `var/lib/` over.
//!
//! Takes: a plan, the store and a [`Fetcher`] for runtime/BIN images. Returns: the plan with the
//! binaries' resolved digests, or an error that leaves the previous tree untouched. Must never:
//! write outside `<parent>/<root>` and `<parent>/.<root>.tmp-*`, or leave a half-written tree.
//! Every write goes through one `Tree` handle on the temp dir (no symlink is ever followed,
//! across all layers, binaries and generated files), every store blob is checked against its
//! digest while it is read, and one [`Budget`] bounds the whole tree. A failed swap puts the
//! carried directories back on every error path.

use super::bins::{self, BinError};
use super::extract::{self, Budget, ExtractError, Limits};
use super::marker::{Marker, MARKER};
use super::plan::{RunPlan, TreeEntry};
use super::source::{self, BinImage, Fetcher, SourceError};
use super::tree::{Tree, TreeError};
use otters_oci::path_io::{io_err, PathIoError};
use otters_oci::store::verify::with_verified;
use otters_oci::{Digest, Store, StoreError};
use rustix::fs::FileType;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Directories kept from one run to the next.
pub const CARRIED: &[&str] = &["workspace", "home", "var/lib"];

#[derive(Debug, thiserror::Error)]
pub enum MaterialiseError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Bin(#[from] BinError),
    #[error(transparent)]
    Extract(#[from] ExtractError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("{source}; {what} could not be put back and is kept in {}: move it back by hand", kept.display())]
    Stranded {
        source: Box<MaterialiseError>,
        what: String,
        kept: PathBuf,
    },
    #[error("agent root {} has no parent directory", .0.display())]
    NoParent(PathBuf),
    /// A RUNTIME or BIN image the agent pins by digest could not be fetched from the registry
    /// it names (an agent copied with `otters copy -r` still names the old one: its pins are
    /// part of its digest).
    #[error("cannot fetch {image}, the agent's pinned {what}")]
    Pinned {
        /// `RUNTIME`, or `BIN name`.
        what: String,
        image: String,
        /// The registry the pin names.
        registry: String,
        #[source]
        source: Box<SourceError>,
    },
}

/// A failed fetch of `reference` for `what`: when it is pinned (`digest`) and a registry could
/// not give it, [`MaterialiseError::Pinned`], which says whose image it is.
fn fetch_error(
    e: SourceError,
    what: &str,
    reference: &str,
    digest: Option<&Digest>,
) -> MaterialiseError {
    let registry = otters_oci::reference::Reference::parse(reference).map(|r| r.registry);
    match (e, digest, registry) {
        (source @ SourceError::Fetch { .. }, Some(d), Ok(registry)) => MaterialiseError::Pinned {
            what: what.to_owned(),
            image: otters_oci::reference::pinned(reference, d),
            registry,
            source: Box::new(source),
        },
        (e, ..) => e.into(),
    }
}

/// Write the tree and swap it in. `owner` chowns the writable directories (docker executor run
/// as root, so the unprivileged container user can write them).
pub fn materialise(
    plan: &RunPlan,
    store: &Store,
    fetcher: &dyn Fetcher,
    limits: &Limits,
    owner: Option<(u32, u32)>,
) -> Result<(), MaterialiseError> {
    let root = &plan.root;
    let parent = root
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| MaterialiseError::NoParent(root.clone()))?;
    let base = root.file_name().unwrap_or_default();
    fs::create_dir_all(parent).map_err(io_err("create", parent))?;
    let _lock = lock_agent(parent)?;
    collect_stale_trees(parent, base);
    let tmp = tempfile::Builder::new()
        .prefix(&beside(base, "tmp"))
        .tempdir_in(parent)
        .map_err(io_err("create a temp dir in", parent))?;
    let tree = Tree::open(tmp.path())?;
    write_tree(plan, &tree, store, fetcher, limits)?;
    if let Some((uid, gid)) = owner {
        for d in ["workspace", "home", "tmp", "var/lib"] {
            if tree.kind(Path::new(d)).is_some() {
                tree.chown_all(Path::new(d), uid, gid)?;
            }
        }
    }
    drop(tree);
    swap(tmp, root, owner)
}

/// The prefix `.<base>.<what>-` of a directory beside the root named `base` (its bytes kept: a
/// root whose name is not UTF-8 still finds its own temp trees, and only those).
fn beside(base: &OsStr, what: &str) -> OsString {
    let mut p = OsString::from(".");
    p.push(base);
    p.push(format!(".{what}-"));
    p
}

/// Holds an exclusive flock on the root's parent directory (released by the kernel if the process
/// dies) while a tree is written and swapped, so two `otters run` of one agent never interleave
/// their swaps: the second waits. Locking the directory itself leaves no file beside the root.
fn lock_agent(parent: &Path) -> Result<fs::File, MaterialiseError> {
    let dir = fs::OpenOptions::new()
        .read(true)
        // The parent is the user's own path (`--root` or `$OTTERS_HOME/agents`): it may be a link.
        .custom_flags(rustix::fs::OFlags::DIRECTORY.bits().cast_signed())
        .open(parent)
        .map_err(io_err("open", parent))?;
    dir.lock().map_err(io_err("lock", parent))?;
    Ok(dir)
}

/// Removes `.<base>.tmp-*` trees that killed runs left beside the root. Called under the agent
/// lock, so none of them is being written. `.<base>.old-*` directories are kept: one may hold
/// the only copy of a workspace whose swap was cut short (the error named it).
fn collect_stale_trees(parent: &Path, base: &OsStr) {
    let prefix = beside(base, "tmp");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let is_stale = e.file_name().as_bytes().starts_with(prefix.as_bytes())
            && e.file_type().is_ok_and(|t| t.is_dir());
        if is_stale {
            // std's remove_dir_all never follows a symlink out of the tree.
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

fn write_tree(
    plan: &RunPlan,
    tree: &Tree,
    store: &Store,
    fetcher: &dyn Fetcher,
    limits: &Limits,
) -> Result<(), MaterialiseError> {
    let mut images: BTreeMap<(String, Option<Digest>), BinImage> = BTreeMap::new();
    let mut budget = Budget::new(limits);
    for entry in &plan.tree {
        let out = Path::new(entry.path());
        match entry {
            TreeEntry::Dir { .. } => tree.create_dir_all(out)?,
            TreeEntry::Layer {
                digest,
                media_type,
                unpack,
                title,
                ..
            } => {
                let layer = format!("{}@{digest}", plan.image.reference);
                with_verified(store, digest, |blob| {
                    if *unpack {
                        let dest = tree
                            .subdir(out, true)
                            .map_err(|source| ExtractError::Tree {
                                layer: layer.clone(),
                                source,
                            })?;
                        extract::unpack_dir(
                            &layer,
                            extract::decoder(&layer, media_type.as_str(), Box::new(blob))?,
                            &dest,
                            title.as_deref().unwrap_or_default(),
                            limits,
                            &mut budget,
                        )?;
                    } else {
                        budget.charge(&format!("layer {layer}"), 1, blob.size())?;
                        tree.write_file(out, blob, 0o644, limits.max_file)?;
                    }
                    Ok::<_, MaterialiseError>(())
                })?;
            }
            TreeEntry::Generated { content, .. } => {
                budget.charge(entry.path(), 1, content.len() as u64)?;
                tree.write_file(out, &mut content.as_bytes(), 0o644, u64::MAX - 1)?;
            }
            TreeEntry::Binary {
                reference,
                digest,
                name,
                path,
            } => {
                let what = if path.starts_with("usr/local/bin/") {
                    "RUNTIME".to_owned()
                } else {
                    format!("BIN {name}")
                };
                let img = bin_image(
                    &mut images,
                    store,
                    fetcher,
                    plan,
                    reference,
                    digest.as_ref(),
                    &what,
                )?;
                bins::install(store, img, name, tree, out, limits, &mut budget)?;
            }
            TreeEntry::Usage {
                reference,
                digest,
                fallback,
                ..
            } => {
                let img = bin_image(
                    &mut images,
                    store,
                    fetcher,
                    plan,
                    reference,
                    digest.as_ref(),
                    "BIN",
                )?;
                let bytes = bins::usage(store, img)?
                    .or_else(|| fallback.as_ref().map(|f| f.clone().into_bytes()));
                if let Some(b) = bytes {
                    budget.charge(entry.path(), 1, b.len() as u64)?;
                    tree.write_file(out, &mut &b[..], 0o644, u64::MAX - 1)?;
                }
            }
            TreeEntry::Symlink { target, .. } => {
                budget.charge(entry.path(), 1, 0)?;
                tree.symlink(out, target, false)?;
            }
        }
    }
    // Last, so only a complete tree carries it: what makes the root reusable by a later run.
    let marker = Marker::new(&plan.image.reference, &plan.image.digest).to_bytes();
    budget.charge(MARKER, 1, marker.len() as u64)?;
    tree.write_file(Path::new(MARKER), &mut &marker[..], 0o644, u64::MAX - 1)?;
    Ok(())
}

fn bin_image<'a>(
    cache: &'a mut BTreeMap<(String, Option<Digest>), BinImage>,
    store: &Store,
    fetcher: &dyn Fetcher,
    plan: &RunPlan,
    reference: &str,
    digest: Option<&Digest>,
    what: &str,
) -> Result<&'a BinImage, MaterialiseError> {
    let key = (reference.to_owned(), digest.cloned());
    if !cache.contains_key(&key) {
        let top = fetcher
            .ensure(store, reference, digest, &plan.platform)
            .map_err(|e| fetch_error(e, what, reference, digest))?;
        let img = source::bin_image(store, reference, &top, &plan.platform)?;
        cache.insert(key.clone(), img);
    }
    cache.get(&key).ok_or_else(|| {
        MaterialiseError::from(PathIoError {
            action: "cache",
            path: PathBuf::from(reference),
            source: io::Error::other("image vanished from the cache"),
        })
    })
}

/// Moves the carried directories `moved` from the new tree back to the old one; returns those
/// that could not be moved.
fn put_back<'d>(new: &Tree, old: &Tree, moved: &[&'d str]) -> Vec<&'d str> {
    moved
        .iter()
        .filter(|d| new.rename_to(Path::new(d), old, Path::new(d)).is_err())
        .copied()
        .collect()
}

/// The error of a failed swap after `put_back`: when something could not be put back, the new
/// tree (which holds it) is kept rather than deleted.
fn failed(e: MaterialiseError, stranded: &[&str], tmp: tempfile::TempDir) -> MaterialiseError {
    if stranded.is_empty() {
        return e;
    }
    MaterialiseError::Stranded {
        source: Box::new(e),
        what: format!("the previous tree's {}", stranded.join(", ")),
        kept: tmp.keep(),
    }
}

/// Move the carried directories from the old tree into the new one, then swap the trees. Every
/// step that can fail without moving anything (the chown) runs first; after that, every error
/// path puts the carried directories back before the new tree is deleted. The directories are
/// moved through handles opened without following links, which stay valid while the trees are
/// renamed.
fn swap(
    tmp: tempfile::TempDir,
    root: &Path,
    owner: Option<(u32, u32)>,
) -> Result<(), MaterialiseError> {
    if fs::symlink_metadata(root).is_err() {
        let kept = tmp.keep();
        return fs::rename(&kept, root).map_err(|e| {
            let _ = fs::remove_dir_all(&kept);
            MaterialiseError::from(PathIoError {
                action: "move the new tree to",
                path: root.to_owned(),
                source: e,
            })
        });
    }
    let old = Tree::open(root)?;
    let new = Tree::open(tmp.path())?;
    let carried: Vec<&str> = CARRIED
        .iter()
        .copied()
        .filter(|d| old.kind(Path::new(d)) == Some(FileType::Directory))
        .collect();
    if let Some((uid, gid)) = owner {
        for d in &carried {
            old.chown_all(Path::new(d), uid, gid)?;
        }
    }
    let mut moved: Vec<&str> = Vec::new();
    for d in &carried {
        let p = Path::new(d);
        if let Err(e) = new.remove(p).and_then(|()| old.rename_to(p, &new, p)) {
            let stranded = put_back(&new, &old, &moved);
            let e = MaterialiseError::from(PathIoError {
                action: "carry over",
                path: root.join(d),
                source: io::Error::other(e),
            });
            return Err(failed(e, &stranded, tmp));
        }
        moved.push(d);
    }
    // One atomic exchange where the filesystem has it: the root always names a whole tree, so a
    // concurrent run of the same agent never execs into the gap between two renames. The old tree
    // is left at the temp path, whose guard deletes it.
    match rustix::fs::renameat_with(
        rustix::fs::CWD,
        tmp.path(),
        rustix::fs::CWD,
        root,
        rustix::fs::RenameFlags::EXCHANGE,
    ) {
        Ok(()) => return Ok(()),
        Err(e)
            if e == rustix::io::Errno::INVAL
                || e == rustix::io::Errno::NOSYS
                || e == rustix::io::Errno::OPNOTSUPP => {}
        Err(e) => {
            let stranded = put_back(&new, &old, &moved);
            let e = MaterialiseError::from(PathIoError {
                action: "swap the new tree in at",
                path: root.to_owned(),
                source: e.into(),
            });
            return Err(failed(e, &stranded, tmp));
        }
    }
    // No exchange here (an old kernel or a filesystem without it): move aside, then move in.
    let parent = root.parent().unwrap_or(Path::new("/"));
    let base = root.file_name().unwrap_or_default();
    let aside = match tempfile::Builder::new()
        .prefix(&beside(base, "old"))
        .tempdir_in(parent)
    {
        Ok(a) => a,
        Err(e) => {
            let stranded = put_back(&new, &old, &moved);
            let e = io_err("create a temp dir in", parent)(e).into();
            return Err(failed(e, &stranded, tmp));
        }
    };
    let old_tree = aside.path().join("tree");
    if let Err(e) = fs::rename(root, &old_tree) {
        let stranded = put_back(&new, &old, &moved);
        return Err(failed(io_err("move aside", root)(e).into(), &stranded, tmp));
    }
    if let Err(e) = fs::rename(tmp.path(), root) {
        let e = MaterialiseError::from(PathIoError {
            action: "move the new tree to",
            path: root.to_owned(),
            source: e,
        });
        // The handles still name the trees where they are now: carried dirs go back first.
        let stranded = put_back(&new, &old, &moved);
        if fs::rename(&old_tree, root).is_err() {
            let _ = aside.keep();
            let e = failed(e, &stranded, tmp);
            return Err(MaterialiseError::Stranded {
                source: Box::new(e),
                what: "the previous tree".into(),
                kept: old_tree,
            });
        }
        return Err(failed(e, &stranded, tmp));
    }
    // The new tree is the root now: disarm its temp-dir guard.
    let _ = tmp.keep();
    drop(aside);
    Ok(())
}
