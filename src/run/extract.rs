//! Safe reading of tar / tar+gzip layers: a full unpack into a directory, and the bin lookup of
//! spec §f.3 (first regular file whose name or basename matches).
//!
//! Takes: a layer reader, its media type, a destination and [`Limits`]. Returns: what was
//! written. Must never: write outside the destination, follow or write through a symlink, create a
//! device node, honour a whiteout, or read more than the limits allow. Any entry with `..`, an
//! absolute path, an escaping link, a device/fifo type or a `.wh.` name refuses the whole layer.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

/// Bounds on what one layer may contain.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest single file (default 512 MiB).
    pub max_file: u64,
    /// Largest sum of file sizes in one layer (default 4 GiB).
    pub max_total: u64,
    /// Most entries in one layer (default 100 000).
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file: 512 << 20,
            max_total: 4 << 30,
            max_entries: 100_000,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("layer {layer}: entry {entry:?} {reason}; the image is unsafe to unpack, rebuild it without that entry")]
    Unsafe {
        layer: String,
        entry: String,
        reason: &'static str,
    },
    #[error("layer {layer}: entry {entry:?} is {size} bytes, more than the {limit}-byte limit")]
    TooLarge {
        layer: String,
        entry: String,
        size: u64,
        limit: u64,
    },
    #[error("layer {layer}: more than {limit} bytes in total, or more than the entry limit")]
    TooMuch { layer: String, limit: u64 },
    #[error("layer {layer}: cannot read the tar stream: {source}")]
    Read { layer: String, source: io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
}

/// Wrap a layer reader in gunzip when the media type says gzip.
pub fn decoder<'a>(media_type: &str, r: Box<dyn Read + 'a>) -> Box<dyn Read + 'a> {
    if media_type.contains("gzip") {
        Box::new(flate2::read::GzDecoder::new(r))
    } else {
        r
    }
}

/// True for layer media types that hold a tar stream.
pub fn is_tar(media_type: &str) -> bool {
    media_type.contains("tar")
}

/// Normalise an entry path: strip a leading `./`, refuse absolute and `..` paths.
/// Returns `None` for the archive root itself (`./`).
fn entry_path(layer: &str, raw: &Path) -> Result<Option<PathBuf>, ExtractError> {
    let unsafe_ = |reason| ExtractError::Unsafe {
        layer: layer.to_owned(),
        entry: raw.display().to_string(),
        reason,
    };
    let mut out = PathBuf::new();
    for c in raw.components() {
        match c {
            Component::Normal(p) => {
                if p.to_string_lossy().starts_with(".wh.") {
                    return Err(unsafe_("is a whiteout (an instruction to delete files)"));
                }
                out.push(p);
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(unsafe_("contains `..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(unsafe_("is an absolute path"))
            }
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Resolve a link target written at `link` (relative to the layer root) lexically, substituting
/// symlinks already seen; `None` when it escapes the root or is absolute.
fn resolve_inside(
    link_dir: &Path,
    target: &Path,
    symlinks: &std::collections::BTreeMap<PathBuf, PathBuf>,
    depth: usize,
) -> Option<PathBuf> {
    if depth > 40 || target.is_absolute() {
        return None;
    }
    let mut cur: Vec<std::ffi::OsString> = link_dir
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    for c in target.components() {
        match c {
            Component::Normal(p) => {
                cur.push(p.to_owned());
                let here: PathBuf = cur.iter().collect();
                if let Some(t) = symlinks.get(&here) {
                    cur.pop();
                    let base: PathBuf = cur.iter().collect();
                    let resolved = resolve_inside(&base, t, symlinks, depth + 1)?;
                    cur = resolved
                        .components()
                        .map(|c| c.as_os_str().to_owned())
                        .collect();
                }
            }
            Component::CurDir => {}
            Component::ParentDir => {
                cur.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(cur.iter().collect())
}

/// Check the type and size of one entry; returns its kind.
fn check_entry(
    layer: &str,
    path: &Path,
    header: &tar::Header,
    limits: &Limits,
) -> Result<tar::EntryType, ExtractError> {
    let unsafe_ = |reason| ExtractError::Unsafe {
        layer: layer.to_owned(),
        entry: path.display().to_string(),
        reason,
    };
    let kind = header.entry_type();
    match kind {
        tar::EntryType::Regular
        | tar::EntryType::Continuous
        | tar::EntryType::Directory
        | tar::EntryType::Symlink
        | tar::EntryType::Link => {}
        tar::EntryType::Char | tar::EntryType::Block => return Err(unsafe_("is a device node")),
        tar::EntryType::Fifo => return Err(unsafe_("is a fifo")),
        _ => return Err(unsafe_("has an unsupported entry type")),
    }
    let size = header.size().map_err(|e| ExtractError::Read {
        layer: layer.to_owned(),
        source: e,
    })?;
    if size > limits.max_file {
        return Err(ExtractError::TooLarge {
            layer: layer.to_owned(),
            entry: path.display().to_string(),
            size,
            limit: limits.max_file,
        });
    }
    Ok(kind)
}

/// Walk every entry of a layer, validating all of them, and hand the safe ones to `visit`
/// (path relative to the layer root, entry). `visit` returns `Ok(true)` to stop early.
fn walk<R: Read>(
    layer: &str,
    reader: R,
    limits: &Limits,
    mut visit: impl FnMut(
        &Path,
        tar::EntryType,
        Option<PathBuf>,
        &mut tar::Entry<'_, R>,
    ) -> Result<bool, ExtractError>,
) -> Result<(), ExtractError> {
    let read_err = |e| ExtractError::Read {
        layer: layer.to_owned(),
        source: e,
    };
    let mut archive = tar::Archive::new(reader);
    let mut total = 0u64;
    let mut symlinks = std::collections::BTreeMap::new();
    for (count, entry) in archive.entries().map_err(read_err)?.enumerate() {
        if count >= limits.max_entries {
            return Err(ExtractError::TooMuch {
                layer: layer.to_owned(),
                limit: limits.max_total,
            });
        }
        let mut entry = entry.map_err(read_err)?;
        let raw = entry.path().map_err(read_err)?.into_owned();
        let Some(path) = entry_path(layer, &raw)? else {
            continue;
        };
        let kind = check_entry(layer, &path, entry.header(), limits)?;
        total += entry.header().size().map_err(read_err)?;
        if total > limits.max_total {
            return Err(ExtractError::TooMuch {
                layer: layer.to_owned(),
                limit: limits.max_total,
            });
        }
        // Never write through (or look up below) a symlink seen earlier in this layer.
        if path.ancestors().skip(1).any(|a| symlinks.contains_key(a)) {
            return Err(ExtractError::Unsafe {
                layer: layer.to_owned(),
                entry: raw.display().to_string(),
                reason: "lies below a symlink",
            });
        }
        let link = match kind {
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry
                    .link_name()
                    .map_err(read_err)?
                    .map(std::borrow::Cow::into_owned)
                    .unwrap_or_default();
                let escape = ExtractError::Unsafe {
                    layer: layer.to_owned(),
                    entry: raw.display().to_string(),
                    reason: "is a link that points outside the layer",
                };
                let resolved = if kind == tar::EntryType::Symlink {
                    let dir = path.parent().unwrap_or(Path::new(""));
                    resolve_inside(dir, &target, &symlinks, 0)
                } else {
                    // Hard links name a path from the archive root.
                    entry_path(layer, &target).ok().flatten()
                };
                let resolved = resolved.ok_or(escape)?;
                if kind == tar::EntryType::Symlink {
                    symlinks.insert(path.clone(), target.clone());
                }
                Some(if kind == tar::EntryType::Symlink {
                    target
                } else {
                    resolved
                })
            }
            _ => {
                symlinks.remove(&path);
                None
            }
        };
        if visit(&path, kind, link, &mut entry)? {
            return Ok(());
        }
    }
    Ok(())
}

/// Unpack a whole tar layer into `dest` (which must exist). Files keep their executable bit only.
pub fn unpack(
    layer: &str,
    reader: impl Read,
    dest: &Path,
    limits: &Limits,
) -> Result<(), ExtractError> {
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    walk(layer, reader, limits, |path, kind, link, entry| {
        let out = dest.join(path);
        let werr = |e| ExtractError::Write {
            path: out.display().to_string(),
            source: e,
        };
        if let Some(parent) = out.parent() {
            fs::create_dir_all(parent).map_err(werr)?;
        }
        match kind {
            tar::EntryType::Directory => {
                if fs::symlink_metadata(&out).is_ok_and(|m| !m.is_dir()) {
                    fs::remove_file(&out).map_err(werr)?;
                }
                fs::create_dir_all(&out).map_err(werr)?;
            }
            tar::EntryType::Symlink => {
                remove_existing(&out).map_err(werr)?;
                std::os::unix::fs::symlink(link.unwrap_or_default(), &out).map_err(werr)?;
                files.remove(path);
            }
            tar::EntryType::Link => {
                let target = link.unwrap_or_default();
                if !files.contains(&target) {
                    return Err(ExtractError::Unsafe {
                        layer: layer.to_owned(),
                        entry: path.display().to_string(),
                        reason: "is a hard link to a file not earlier in the layer",
                    });
                }
                remove_existing(&out).map_err(werr)?;
                fs::hard_link(dest.join(&target), &out).map_err(werr)?;
                files.insert(path.to_owned());
            }
            _ => {
                let mode = entry.header().mode().unwrap_or(0o644);
                write_file(
                    entry,
                    &out,
                    if mode & 0o111 != 0 { 0o755 } else { 0o644 },
                    limits.max_file,
                )
                .map_err(werr)?;
                files.insert(path.to_owned());
            }
        }
        Ok(false)
    })
}

fn remove_existing(p: &Path) -> io::Result<()> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(p),
        Ok(_) => fs::remove_file(p),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Write `r` to a new file at `out` (never following a symlink there), bounded by `max`.
pub fn write_file(r: &mut impl Read, out: &Path, mode: u32, max: u64) -> io::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    remove_existing(out)?;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(out)?;
    let n = io::copy(&mut r.take(max + 1), &mut f)?;
    if n > max {
        drop(f);
        let _ = fs::remove_file(out);
        return Err(io::Error::other(format!("more than {max} bytes")));
    }
    f.flush()?;
    std::fs::set_permissions(out, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    Ok(n)
}

/// Strip leading `/` and `./` so tar names and annotation paths compare equal.
pub fn normalise_name(s: &str) -> String {
    Path::new(s)
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Pass 1 of spec §f.3 on one tar layer: write the first regular file whose path equals `target`
/// or whose basename equals `basename(target)` to `out` (mode 0755). Every entry of the layer is
/// validated up to the match. Returns whether a file was written.
pub fn find_binary(
    layer: &str,
    reader: impl Read,
    target: &str,
    out: &Path,
    limits: &Limits,
) -> Result<bool, ExtractError> {
    let want = normalise_name(target);
    let base = want.rsplit('/').next().unwrap_or_default().to_owned();
    let mut found = false;
    walk(layer, reader, limits, |path, kind, _link, entry| {
        let name = path.to_string_lossy();
        let matches = name == want
            || path
                .file_name()
                .is_some_and(|f| f.to_string_lossy() == base);
        if !matches || !matches!(kind, tar::EntryType::Regular | tar::EntryType::Continuous) {
            return Ok(false);
        }
        write_file(entry, out, 0o755, limits.max_file).map_err(|e| ExtractError::Write {
            path: out.display().to_string(),
            source: e,
        })?;
        found = true;
        Ok(true)
    })?;
    Ok(found)
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
