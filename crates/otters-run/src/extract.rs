//! Safe reading of tar / tar+gzip layers: a full unpack into a `Tree`, and the bin lookup of
//! spec §f.3 (first regular file whose name or basename matches).
//!
//! Takes: a layer reader, its media type, a destination `Tree`, [`Limits`] and the agent's
//! [`Budget`]. Returns: what was written. Must never: write outside the destination, follow or
//! write through a symlink (the `Tree` opens every component with `O_NOFOLLOW`, so links left
//! by earlier entries or layers are never traversed), create a device node, honour a whiteout,
//! or read more than the limits allow (headers go through the bounded
//! [`otters_oci::archive::tar_reader`]). Any entry with `..`, an absolute path, an escaping link, a
//! device/fifo type or a `.wh.` name refuses the whole layer.
//!
//! Symlinks: a link is kept only when its target is relative and made of leading `..` (no more
//! than the link's depth inside the layer) followed by plain names. A `..` after a name is
//! refused, because that name could become a link later (`p -> q/q/../..`, then `q -> .`). By
//! induction every link then resolves inside its layer, whatever else the tree holds, and the
//! extraction itself never uses a link as a path.

use super::decompress::{self, Compression};
use super::tree::{Tree, TreeError};
use otters_oci::archive::tar_reader::{Kind, TarError, TarReader};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Longest entry path or link target accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// Deepest entry path accepted, in directories.
pub const MAX_PATH_DEPTH: usize = 256;

/// Bounds on what one layer, and one whole agent tree, may contain.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest single file (default 512 MiB).
    pub max_file: u64,
    /// Largest sum of entry sizes in one layer (default 4 GiB).
    pub max_total: u64,
    /// Most entries in one layer (default 100 000).
    pub max_entries: usize,
    /// Largest sum of everything written for one agent tree: every layer, raw file, binary and
    /// generated file (default 8 GiB).
    pub max_tree_bytes: u64,
    /// Most entries written for one agent tree (default 250 000).
    pub max_tree_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file: 512 << 20,
            max_total: 4 << 30,
            max_entries: 100_000,
            max_tree_bytes: 8 << 30,
            max_tree_entries: 250_000,
        }
    }
}

/// What is left of an agent tree's [`Limits::max_tree_bytes`] / [`Limits::max_tree_entries`].
#[derive(Debug)]
pub struct Budget {
    bytes: u64,
    entries: u64,
    limits: Limits,
}

impl Budget {
    pub fn new(limits: &Limits) -> Self {
        Self {
            bytes: 0,
            entries: 0,
            limits: *limits,
        }
    }

    /// Counts `entries` entries of `bytes` bytes written at `at`; refuses past the limits.
    pub fn charge(&mut self, at: &str, entries: u64, bytes: u64) -> Result<(), ExtractError> {
        self.entries = self.entries.saturating_add(entries);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.entries > self.limits.max_tree_entries {
            return Err(ExtractError::TreeTooLarge {
                at: at.to_owned(),
                limit: self.limits.max_tree_entries,
                unit: "entries",
            });
        }
        if self.bytes > self.limits.max_tree_bytes {
            return Err(ExtractError::TreeTooLarge {
                at: at.to_owned(),
                limit: self.limits.max_tree_bytes,
                unit: "bytes",
            });
        }
        Ok(())
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
    #[error("layer {layer}: more than {limit} {unit} in one layer")]
    TooMuch {
        layer: String,
        limit: u64,
        unit: &'static str,
    },
    #[error("{at}: the agent tree would hold more than {limit} {unit} (the most otters writes for one agent, across all its layers and binaries); the image is too large to run")]
    TreeTooLarge {
        at: String,
        limit: u64,
        unit: &'static str,
    },
    #[error("layer {layer} has media type {media_type}, a compression otters cannot read (it reads tar layers uncompressed, gzip and zstd); push the image with one of those")]
    Compression { layer: String, media_type: String },
    #[error("layer {layer}: cannot read the tar stream: {source}")]
    Read { layer: String, source: TarError },
    #[error("layer {layer}: {source}")]
    Tree { layer: String, source: TreeError },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
}

/// The tar stream of the layer `layer`: `r` decompressed as its media type says (none, gzip or
/// zstd: [`super::decompress`]); a compression otters cannot read is refused by name, never read
/// as a tar.
pub fn decoder<'a>(
    layer: &str,
    media_type: &str,
    r: Box<dyn Read + 'a>,
) -> Result<Box<dyn Read + 'a>, ExtractError> {
    let compression = Compression::of(media_type).ok_or_else(|| ExtractError::Compression {
        layer: layer.to_owned(),
        media_type: otters_oci::validate::escape_text(media_type, 200),
    })?;
    Ok(decompress::reader(compression, r))
}

/// True for layer media types that hold a tar stream.
pub fn is_tar(media_type: &str) -> bool {
    media_type.contains("tar")
}

/// Normalise an entry path: strip a leading `./`, refuse absolute and `..` paths, whiteouts,
/// NUL bytes and paths longer or deeper than the limits. `None` for the archive root (`./`).
fn entry_path(layer: &str, raw: &[u8]) -> Result<Option<PathBuf>, ExtractError> {
    let shown = shown_name(raw);
    let unsafe_ = |reason| ExtractError::Unsafe {
        layer: layer.to_owned(),
        entry: shown.clone(),
        reason,
    };
    if raw.contains(&0) {
        return Err(unsafe_("contains a NUL byte"));
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(unsafe_("has a path longer than 4096 bytes"));
    }
    let mut out = PathBuf::new();
    let mut depth = 0;
    for c in Path::new(OsStr::from_bytes(raw)).components() {
        match c {
            Component::Normal(p) => {
                if p.as_bytes().starts_with(b".wh.") {
                    return Err(unsafe_("is a whiteout (an instruction to delete files)"));
                }
                depth += 1;
                if depth > MAX_PATH_DEPTH {
                    return Err(unsafe_("is nested deeper than 256 directories"));
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

/// An entry name for messages: lossy UTF-8, at most the first 200 bytes.
fn shown_name(raw: &[u8]) -> String {
    const MAX: usize = 200;
    if raw.len() <= MAX {
        return String::from_utf8_lossy(raw).into_owned();
    }
    format!(
        "{}… ({} bytes)",
        String::from_utf8_lossy(&raw[..MAX]),
        raw.len()
    )
}

/// True when a symlink at `link` (relative to the layer root) with this target can only ever
/// resolve inside the layer: relative, leading `..` no deeper than the link's directory, then
/// plain names (see the module docs).
fn symlink_stays_inside(link: &Path, target: &[u8]) -> bool {
    if target.is_empty() || target.contains(&0) || target.len() > MAX_PATH_BYTES {
        return false;
    }
    let depth = link.components().count().saturating_sub(1);
    let mut ups = 0;
    let mut named = false;
    for c in Path::new(OsStr::from_bytes(target)).components() {
        match c {
            Component::Normal(_) => named = true,
            Component::CurDir => {}
            Component::ParentDir if !named => ups += 1,
            _ => return false,
        }
    }
    ups <= depth
}

/// How the entry paths of a directory ADD layer relate to its title. otters, oras (Go) and
/// oras-py archive a directory with every entry under `<title>/` (oras-py: `basename(title)/`),
/// the directory itself first; that prefix is removed so the files land in `etc/data/<title>/`.
/// A layer whose first entry is not under the prefix (another tool archived the directory's
/// contents) is unpacked as it is.
#[derive(Debug)]
pub enum Strip {
    /// Entries are used as they are (bin lookups, plain layers).
    Off,
    /// Not yet known: the first entry decides between these prefixes and [`Strip::AsIs`].
    Undecided(Vec<PathBuf>),
    /// Every entry must lie under this prefix, which is removed.
    Prefix(PathBuf),
    /// The layer does not use a prefix.
    AsIs,
}

impl Strip {
    /// The prefixes a directory layer titled `title` may use: the title, and its last component
    /// (what oras-py writes for a nested title).
    pub fn for_title(title: &str) -> Strip {
        let full = PathBuf::from(normalise_name(title));
        let mut cands = vec![full.clone()];
        if let Some(base) = full.file_name().map(PathBuf::from) {
            if base != full {
                cands.push(base);
            }
        }
        cands.retain(|c| !c.as_os_str().is_empty());
        if cands.is_empty() {
            Strip::AsIs
        } else {
            Strip::Undecided(cands)
        }
    }

    /// Maps an entry path; `None` skips the entry (the prefix directory itself or one of its
    /// parents). The first entry decides an undecided layer.
    fn entry(&mut self, path: PathBuf, is_dir: bool) -> Result<Option<PathBuf>, &'static str> {
        if let Strip::Undecided(cands) = self {
            if let Some(c) = cands.iter().find(|c| path.starts_with(c)) {
                *self = Strip::Prefix(c.clone());
            } else if is_dir && cands.iter().any(|c| c.starts_with(&path)) {
                return Ok(None);
            } else {
                *self = Strip::AsIs;
            }
        }
        match self {
            Strip::Prefix(c) => match path.strip_prefix(&*c) {
                Ok(rest) if !rest.as_os_str().is_empty() => Ok(Some(rest.to_owned())),
                // The directory itself, or one of its parents: nothing to write.
                Ok(_) if is_dir => Ok(None),
                Err(_) if is_dir && c.starts_with(&path) => Ok(None),
                Ok(_) => Err("is named like the layer's directory but is not a directory"),
                Err(_) => Err("lies outside the directory the layer's title names (every entry of this layer starts with that directory)"),
            },
            _ => Ok(Some(path)),
        }
    }

    /// Maps a hard link's target (an archive path) the way its entry was mapped.
    fn link(&self, path: PathBuf) -> Option<PathBuf> {
        match self {
            Strip::Prefix(c) => path
                .strip_prefix(c)
                .ok()
                .filter(|r| !r.as_os_str().is_empty())
                .map(Path::to_owned),
            _ => Some(path),
        }
    }
}

/// One validated entry.
struct Item {
    path: PathBuf,
    kind: Kind,
    /// Symlink target as written, or hard-link target as a path from the layer root.
    link: Option<PathBuf>,
    mode: u32,
}

/// Walk every entry of a layer, validating all of them, and hand the safe ones to `visit` with
/// a reader for their data. `visit` returns `Ok(true)` to stop early. Every entry (the skipped
/// root included) is charged to `budget`.
fn walk<R: Read>(
    layer: &str,
    reader: R,
    limits: &Limits,
    budget: &mut Budget,
    strip: &mut Strip,
    mut visit: impl FnMut(&Item, &mut dyn Read) -> Result<bool, ExtractError>,
) -> Result<(), ExtractError> {
    let read_err = |source| ExtractError::Read {
        layer: layer.to_owned(),
        source,
    };
    let mut tar = TarReader::new(reader);
    let mut total = 0u64;
    let mut count = 0usize;
    while let Some(entry) = tar.next_entry().map_err(read_err)? {
        count += 1;
        if count > limits.max_entries {
            return Err(ExtractError::TooMuch {
                layer: layer.to_owned(),
                limit: limits.max_entries as u64,
                unit: "entries",
            });
        }
        let shown = shown_name(&entry.path);
        let unsafe_ = |reason| ExtractError::Unsafe {
            layer: layer.to_owned(),
            entry: shown.clone(),
            reason,
        };
        match entry.kind {
            Kind::Regular | Kind::Directory | Kind::Symlink | Kind::HardLink => {}
            Kind::Char | Kind::Block => return Err(unsafe_("is a device node")),
            Kind::Fifo => return Err(unsafe_("is a fifo")),
            Kind::Other(_) => return Err(unsafe_("has an unsupported entry type")),
        }
        if entry.size > limits.max_file {
            return Err(ExtractError::TooLarge {
                layer: layer.to_owned(),
                entry: shown,
                size: entry.size,
                limit: limits.max_file,
            });
        }
        // Extension records count too: they bound the decompression work, not just the disk.
        total = total.saturating_add(entry.size).saturating_add(entry.meta);
        if total > limits.max_total {
            return Err(ExtractError::TooMuch {
                layer: layer.to_owned(),
                limit: limits.max_total,
                unit: "bytes",
            });
        }
        budget.charge(&format!("layer {layer}"), 1, entry.size)?;
        let Some(path) = entry_path(layer, &entry.path)? else {
            continue;
        };
        let Some(path) = strip
            .entry(path, entry.kind == Kind::Directory)
            .map_err(unsafe_)?
        else {
            continue;
        };
        let link = match entry.kind {
            Kind::Symlink => {
                if !symlink_stays_inside(&path, &entry.link) {
                    return Err(unsafe_(
                        "is a symlink that is absolute, leaves the layer, or has `..` after a name",
                    ));
                }
                Some(PathBuf::from(OsStr::from_bytes(&entry.link)))
            }
            Kind::HardLink => Some(
                entry_path(layer, &entry.link)
                    .ok()
                    .flatten()
                    .and_then(|p| strip.link(p))
                    .ok_or_else(|| unsafe_("is a link that points outside the layer"))?,
            ),
            _ => None,
        };
        let item = Item {
            path,
            kind: entry.kind,
            link,
            mode: entry.mode,
        };
        if visit(&item, &mut tar.data())? {
            return Ok(());
        }
    }
    Ok(())
}

/// Unpack a whole tar layer into `dest`. Files keep their executable bit only.
pub fn unpack(
    layer: &str,
    reader: impl Read,
    dest: &Tree,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<(), ExtractError> {
    unpack_with(layer, reader, dest, &mut Strip::Off, limits, budget)
}

/// Unpack the tar layer of a directory ADD titled `title` into `dest` (`etc/data/<title>`),
/// removing the `<title>/` prefix its entries carry (see [`Strip`]).
pub fn unpack_dir(
    layer: &str,
    reader: impl Read,
    dest: &Tree,
    title: &str,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<(), ExtractError> {
    unpack_with(
        layer,
        reader,
        dest,
        &mut Strip::for_title(title),
        limits,
        budget,
    )
}

fn unpack_with(
    layer: &str,
    reader: impl Read,
    dest: &Tree,
    strip: &mut Strip,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<(), ExtractError> {
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    let tree_err = |source: TreeError, entry: &Path| match source {
        TreeError::ThroughLink { .. } => ExtractError::Unsafe {
            layer: layer.to_owned(),
            entry: entry.display().to_string(),
            reason: "lies below a symlink",
        },
        TreeError::NotDir { .. } => ExtractError::Unsafe {
            layer: layer.to_owned(),
            entry: entry.display().to_string(),
            reason: "lies below a file",
        },
        TreeError::BadHardLink { why, .. } => ExtractError::Unsafe {
            layer: layer.to_owned(),
            entry: entry.display().to_string(),
            reason: if why.contains("regular") {
                "is a hard link to something that is not a regular file"
            } else {
                "is a hard link to a file not earlier in the layer"
            },
        },
        source => ExtractError::Tree {
            layer: layer.to_owned(),
            source,
        },
    };
    walk(layer, reader, limits, budget, strip, |item, data| {
        let path = item.path.as_path();
        match item.kind {
            Kind::Directory => dest.mkdir(path).map_err(|e| tree_err(e, path))?,
            Kind::Symlink => {
                dest.symlink(path, item.link.as_deref().unwrap_or(Path::new("")), true)
                    .map_err(|e| tree_err(e, path))?;
                files.remove(path);
            }
            Kind::HardLink => {
                let target = item.link.as_deref().unwrap_or(Path::new(""));
                if !files.contains(target) {
                    return Err(ExtractError::Unsafe {
                        layer: layer.to_owned(),
                        entry: path.display().to_string(),
                        reason: "is a hard link to a file not earlier in the layer",
                    });
                }
                dest.hard_link(target, path)
                    .map_err(|e| tree_err(e, path))?;
                files.insert(path.to_owned());
            }
            _ => {
                let mode = if item.mode & 0o111 != 0 { 0o755 } else { 0o644 };
                dest.write_file(path, data, mode, limits.max_file)
                    .map_err(|e| tree_err(e, path))?;
                files.insert(path.to_owned());
            }
        }
        Ok(false)
    })
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

/// Pass 1 of spec §f.3 on one tar layer, without writing: the path (in the image) of the regular
/// file [`find_binary`] would install, if the layer has one. Every entry is validated as there.
pub fn locate_binary(
    layer: &str,
    reader: impl Read,
    target: &str,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<Option<PathBuf>, ExtractError> {
    let want = normalise_name(target);
    let base = want.rsplit('/').next().unwrap_or_default().to_owned();
    let mut found = None;
    walk(layer, reader, limits, budget, &mut Strip::Off, |item, _| {
        let matches = item.path.as_os_str().as_bytes() == want.as_bytes()
            || item
                .path
                .file_name()
                .is_some_and(|f| f.as_bytes() == base.as_bytes());
        if matches && item.kind == Kind::Regular {
            found = Some(item.path.clone());
        }
        Ok(false)
    })?;
    Ok(found)
}

/// Pass 1 of spec §f.3 on one tar layer: write the first regular file whose path equals `target`
/// or whose basename equals `basename(target)` to `out` in `tree` (mode 0755). Every entry of the
/// layer is validated up to the match. Returns whether a file was written.
pub fn find_binary(
    layer: &str,
    reader: impl Read,
    target: &str,
    tree: &Tree,
    out: &Path,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<bool, ExtractError> {
    let want = normalise_name(target);
    let base = want.rsplit('/').next().unwrap_or_default().to_owned();
    let mut found = false;
    walk(
        layer,
        reader,
        limits,
        budget,
        &mut Strip::Off,
        |item, data| {
            // Bytes, not a lossy string: a name that is not UTF-8 never passes for another.
            let matches = item.path.as_os_str().as_bytes() == want.as_bytes()
                || item
                    .path
                    .file_name()
                    .is_some_and(|f| f.as_bytes() == base.as_bytes());
            if !matches || item.kind != Kind::Regular {
                return Ok(false);
            }
            tree.write_file(out, data, 0o755, limits.max_file)
                .map_err(|source| ExtractError::Tree {
                    layer: layer.to_owned(),
                    source,
                })?;
            found = true;
            Ok(true)
        },
    )?;
    Ok(found)
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
