//! Writing a [`RunPlan`]'s tree: built in a temp dir beside the root, then swapped in, carrying
//! the previous tree's `workspace/`, `home/` and `var/lib/` over.
//!
//! Takes: a plan, the store and a [`Fetcher`] for runtime/BIN images. Returns: the plan with the
//! binaries' resolved digests, or an error that leaves the previous tree untouched. Must never:
//! write outside `<parent>/<root>` and `<parent>/.<root>.tmp-*`, or leave a half-written tree.

use super::bins::{self, BinError};
use super::extract::{self, ExtractError, Limits};
use super::plan::{RunPlan, TreeEntry};
use super::source::{self, BinImage, Fetcher, SourceError};
use crate::oci::path_io::{io_err, PathIoError};
use crate::oci::{Digest, Store, StoreError};
use std::collections::BTreeMap;
use std::fs;
use std::io;
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
    #[error("agent root {} has no parent directory; pass --root with a directory below /", .0.display())]
    NoParent(PathBuf),
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
    let base = root
        .file_name()
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    fs::create_dir_all(parent).map_err(io_err("create", parent))?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{base}.tmp-"))
        .tempdir_in(parent)
        .map_err(io_err("create a temp dir in", parent))?;
    write_tree(plan, tmp.path(), store, fetcher, limits)?;
    if let Some((uid, gid)) = owner {
        for d in ["workspace", "home", "tmp", "var/lib"] {
            chown_tree(&tmp.path().join(d), uid, gid)?;
        }
    }
    swap(tmp, root, owner)
}

fn write_tree(
    plan: &RunPlan,
    dir: &Path,
    store: &Store,
    fetcher: &dyn Fetcher,
    limits: &Limits,
) -> Result<(), MaterialiseError> {
    let mut images: BTreeMap<(String, Option<String>), BinImage> = BTreeMap::new();
    for entry in &plan.tree {
        let out = dir.join(entry.path());
        if let Some(p) = out.parent() {
            fs::create_dir_all(p).map_err(io_err("create", p))?;
        }
        match entry {
            TreeEntry::Dir { .. } => fs::create_dir_all(&out).map_err(io_err("create", &out))?,
            TreeEntry::Layer {
                digest,
                media_type,
                unpack,
                ..
            } => {
                let d =
                    Digest::parse(digest).map_err(|_| StoreError::MissingBlob(digest.clone()))?;
                let file = io::BufReader::new(store.open_blob(&d)?);
                if *unpack {
                    fs::create_dir_all(&out).map_err(io_err("create", &out))?;
                    extract::unpack(
                        &format!("{}@{digest}", plan.image.reference),
                        extract::decoder(media_type, Box::new(file)),
                        &out,
                        limits,
                    )?;
                } else {
                    let mut r = file;
                    extract::write_file(&mut r, &out, 0o644, limits.max_file)
                        .map_err(io_err("write", &out))?;
                }
            }
            TreeEntry::Generated { content, .. } => {
                extract::write_file(&mut content.as_bytes(), &out, 0o644, u64::MAX - 1)
                    .map_err(io_err("write", &out))?;
            }
            TreeEntry::Binary {
                reference,
                digest,
                name,
                ..
            } => {
                let img = bin_image(
                    &mut images,
                    store,
                    fetcher,
                    plan,
                    reference,
                    digest.as_deref(),
                )?;
                bins::install(store, img, name, &out, limits)?;
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
                    digest.as_deref(),
                )?;
                let bytes = bins::usage(store, img)
                    .or_else(|| fallback.as_ref().map(|f| f.clone().into_bytes()));
                if let Some(b) = bytes {
                    extract::write_file(&mut &b[..], &out, 0o644, u64::MAX - 1)
                        .map_err(io_err("write", &out))?;
                }
            }
            TreeEntry::Symlink { target, .. } => {
                std::os::unix::fs::symlink(target, &out)
                    .map_err(io_err("create the symlink", &out))?;
            }
        }
    }
    Ok(())
}

fn bin_image<'a>(
    cache: &'a mut BTreeMap<(String, Option<String>), BinImage>,
    store: &Store,
    fetcher: &dyn Fetcher,
    plan: &RunPlan,
    reference: &str,
    digest: Option<&str>,
) -> Result<&'a BinImage, MaterialiseError> {
    let key = (reference.to_owned(), digest.map(str::to_owned));
    if !cache.contains_key(&key) {
        let top = fetcher.ensure(store, reference, digest, &plan.platform)?;
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

fn chown_tree(p: &Path, uid: u32, gid: u32) -> Result<(), MaterialiseError> {
    std::os::unix::fs::lchown(p, Some(uid), Some(gid)).map_err(io_err("chown", p))?;
    let meta = fs::symlink_metadata(p).map_err(io_err("stat", p))?;
    if meta.is_dir() {
        for e in fs::read_dir(p).map_err(io_err("read", p))? {
            let e = e.map_err(io_err("read", p))?;
            chown_tree(&e.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Move the carried directories from the old tree into the new one, then swap the trees.
fn swap(
    tmp: tempfile::TempDir,
    root: &Path,
    owner: Option<(u32, u32)>,
) -> Result<(), MaterialiseError> {
    let new = tmp.path().to_owned();
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
    let mut moved: Vec<&str> = Vec::new();
    for d in CARRIED {
        let old_d = root.join(d);
        if !old_d.is_dir() {
            continue;
        }
        let new_d = new.join(d);
        let step = fs::remove_dir_all(&new_d).and_then(|()| fs::rename(&old_d, &new_d));
        if let Err(e) = step {
            // Put back what was already moved; the old tree stays as it was.
            for m in &moved {
                let _ = fs::rename(new.join(m), root.join(m));
            }
            return Err(MaterialiseError::from(PathIoError {
                action: "carry over",
                path: old_d,
                source: e,
            }));
        }
        moved.push(d);
        if let Some((uid, gid)) = owner {
            chown_tree(&new_d, uid, gid)?;
        }
    }
    let parent = root.parent().unwrap_or(Path::new("/"));
    let base = root
        .file_name()
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    let old = tempfile::Builder::new()
        .prefix(&format!(".{base}.old-"))
        .tempdir_in(parent)
        .map_err(io_err("create a temp dir in", parent))?;
    let old_tree = old.path().join("tree");
    fs::rename(root, &old_tree).map_err(io_err("move aside", root))?;
    let kept = tmp.keep();
    if let Err(e) = fs::rename(&kept, root) {
        let _ = fs::rename(&old_tree, root);
        return Err(MaterialiseError::from(PathIoError {
            action: "move the new tree to",
            path: root.to_owned(),
            source: e,
        }));
    }
    drop(old);
    Ok(())
}
