//! The deterministic tar+gzip layers of a runnable export.
//!
//! Takes: a materialised agent tree (a directory this process just wrote) and the groups of
//! entries each layer holds. Returns: each layer's descriptor and diff id, written to the store.
//! The bytes depend only on the entries' paths, contents, kinds, exec bits and owners: entries in
//! byte order of their paths, directories 0755, files 0755 with any x bit else 0644, uid/gid 0
//! except the agent's writable directories and what they hold (owned by [`super::USER_ID`] and
//! group 0, group-writable, `tmp/` sticky: 0775, 01775, 0664 or 0775), mtime 0, empty
//! user/group names, paths over 100 bytes in a PAX `path` record, gzip by `build::pgzip` (the
//! build's deterministic block-parallel compressor: a layer of at most one block is one stream
//! at `GZIP_LEVEL`, as before; a longer one does not depend on the core count). Must never:
//! follow a symlink, write a world-writable directory, or read the clock, owner, umask or locale.

use otters_oci::spec::descriptor::{Descriptor, ANN_TITLE, TAR_GZIP_LAYER};
use otters_oci::spec::digest::HashingWriter;
use otters_oci::{Digest, Store, StoreError};
use otters_pipeline::build::pgzip;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What one entry of a layer is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    /// A regular file of the tree, read from `source`.
    File {
        source: PathBuf,
        exec: bool,
    },
}

/// One entry: its path in the image (relative, no trailing `/`), kind and owner. The path is
/// bytes, as the tree's names are: a name that is not UTF-8 is kept as it is (a tar header holds
/// raw bytes), never replaced, so two such names never collapse into one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: Vec<u8>,
    pub kind: Kind,
    pub uid: u32,
}

/// The entries of one layer, by image path (so a path is there once and they come out sorted).
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub title: String,
    entries: BTreeMap<Vec<u8>, Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is neither a file nor a directory (the export holds only those)", .0.display())]
    Odd(PathBuf),
    #[error("cannot write layer {title}: {source}")]
    Write { title: String, source: io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Group {
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            entries: BTreeMap::new(),
        }
    }

    /// Adds the parent directories of `path` (root-owned unless already there).
    fn parents(&mut self, path: &[u8]) {
        let mut at = Vec::new();
        for part in path
            .split(|b| *b == b'/')
            .collect::<Vec<_>>()
            .split_last()
            .map_or(&[][..], |(_, p)| p)
        {
            if !at.is_empty() {
                at.push(b'/');
            }
            at.extend_from_slice(part);
            self.entries.entry(at.clone()).or_insert(Entry {
                path: at.clone(),
                kind: Kind::Dir,
                uid: 0,
            });
        }
    }

    /// Adds an empty directory at `path`, owned by `uid`.
    pub fn dir(&mut self, path: &[u8], uid: u32) {
        self.parents(path);
        self.entries.insert(
            path.to_owned(),
            Entry {
                path: path.to_owned(),
                kind: Kind::Dir,
                uid,
            },
        );
    }

    /// Adds `source` (a file or a directory of the tree, walked in sorted order without following
    /// links) at `path`, owned by `uid`.
    pub fn add(&mut self, source: &Path, path: &[u8], uid: u32) -> Result<(), LayerError> {
        let meta = fs::symlink_metadata(source).map_err(|e| LayerError::Read {
            path: source.to_owned(),
            source: e,
        })?;
        if meta.is_file() {
            self.parents(path);
            self.entries.insert(
                path.to_owned(),
                Entry {
                    path: path.to_owned(),
                    kind: Kind::File {
                        source: source.to_owned(),
                        exec: meta.permissions().mode() & 0o111 != 0,
                    },
                    uid,
                },
            );
            return Ok(());
        }
        if !meta.is_dir() {
            return Err(LayerError::Odd(source.to_owned()));
        }
        self.dir(path, uid);
        let read = |e: io::Error| LayerError::Read {
            path: source.to_owned(),
            source: e,
        };
        let mut names: Vec<_> = fs::read_dir(source)
            .map_err(read)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(read)?;
        names.sort();
        for n in names {
            let mut child = path.to_vec();
            child.push(b'/');
            child.extend_from_slice(n.as_bytes());
            self.add(&source.join(&n), &child, uid)?;
        }
        Ok(())
    }

    /// True when the layer holds a regular file at `path` (relative, as entries are).
    pub fn has_file(&self, path: &[u8]) -> bool {
        self.entries
            .get(path)
            .is_some_and(|e| matches!(e.kind, Kind::File { .. }))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A layer as written: its descriptor (titled with the group's title) and the digest of its
/// uncompressed tar (`rootfs.diff_ids`).
#[derive(Clone, Debug)]
pub struct Written {
    pub descriptor: Descriptor,
    pub diff_id: Digest,
}

/// Writes `group` as a tar+gzip blob into `store`, compressed as a build compresses its
/// directory layers (`build::pgzip`: on every core, the same bytes for any number of them).
pub fn write(store: &Store, group: &Group) -> Result<Written, LayerError> {
    write_with(store, group, pgzip::default_workers())
}

/// [`write`] on `workers` compression threads.
fn write_with(store: &Store, group: &Group, workers: usize) -> Result<Written, LayerError> {
    let werr = |source: io::Error| LayerError::Write {
        title: group.title.clone(),
        source,
    };
    let blob = store.blob_writer()?;
    let filled = pgzip::gzip(blob, workers, |gz| -> Result<Digest, Fill> {
        let mut tar = tar::Builder::new(HashingWriter::new(gz));
        for e in group.entries.values() {
            append(&mut tar, e).map_err(|err| match err {
                AppendError::Read(source) => Fill::Layer(LayerError::Read {
                    path: match &e.kind {
                        Kind::File { source, .. } => source.clone(),
                        Kind::Dir => PathBuf::from(OsStr::from_bytes(&e.path)),
                    },
                    source,
                }),
                AppendError::Write(source) => Fill::Io(source),
            })?;
        }
        let (diff_id, _, _) = tar.into_inner()?.finish();
        Ok(diff_id)
    });
    let (blob, diff_id) = filled.map_err(|e| match e {
        Fill::Layer(e) => e,
        Fill::Io(e) => werr(e),
    })?;
    let (digest, size) = blob.commit()?;
    Ok(Written {
        descriptor: Descriptor::new(TAR_GZIP_LAYER, digest, size)
            .with_annotation(ANN_TITLE, group.title.clone()),
        diff_id,
    })
}

/// What ends the filling of a layer's stream: a source that cannot be read, or the stream's write.
enum Fill {
    Layer(LayerError),
    Io(io::Error),
}

impl From<io::Error> for Fill {
    fn from(e: io::Error) -> Self {
        Fill::Io(e)
    }
}

enum AppendError {
    Read(io::Error),
    Write(io::Error),
}

fn append<W: io::Write>(tar: &mut tar::Builder<W>, e: &Entry) -> Result<(), AppendError> {
    let mut name = e.path.clone();
    if e.kind == Kind::Dir {
        name.push(b'/');
    }
    let mut header = tar::Header::new_ustar();
    if name.len() > 100 {
        tar.append_pax_extensions([("path", name.as_slice())])
            .map_err(AppendError::Write)?;
        name.truncate(100);
    }
    header.as_old_mut().name[..name.len()].copy_from_slice(&name);
    header.set_uid(u64::from(e.uid));
    // A writable entry (the agent user's) is group 0's and group-writable: a platform that runs
    // the pod as an arbitrary UID in group 0 (OpenShift's restricted-v2) can write it too.
    let writable = e.uid != 0;
    let group_write = if writable { 0o020 } else { 0 };
    header.set_gid(0);
    header.set_mtime(0);
    match &e.kind {
        Kind::Dir => {
            header.set_entry_type(tar::EntryType::Directory);
            // `tmp/` is sticky, as a shared temp directory is: no one removes another's files.
            let sticky = if writable && e.path == b"tmp" {
                0o1000
            } else {
                0
            };
            header.set_mode(0o755 | group_write | sticky);
            header.set_size(0);
            header.set_cksum();
            tar.append(&header, io::empty()).map_err(AppendError::Write)
        }
        Kind::File { source, exec } => {
            // The file is this process's own, freshly written tree; it is still opened without
            // following a link, and its size is the one the header says.
            let file = fs::OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
                .open(source)
                .map_err(AppendError::Read)?;
            let size = file.metadata().map_err(AppendError::Read)?.len();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if *exec { 0o755 } else { 0o644 } | group_write);
            header.set_size(size);
            header.set_cksum();
            tar.append(&header, io::Read::take(file, size))
                .map_err(AppendError::Write)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_come_first_and_once() {
        let mut g = Group::new("t");
        g.dir(b"a/b/c", 7);
        g.dir(b"a/d", 0);
        let paths: Vec<(&str, u32)> = g
            .entries
            .values()
            .map(|e| (std::str::from_utf8(&e.path).unwrap(), e.uid))
            .collect();
        assert_eq!(paths, [("a", 0), ("a/b", 0), ("a/b/c", 7), ("a/d", 0)]);
    }

    #[test]
    fn same_entries_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let src = dir.path().join("x");
        fs::write(&src, b"hello").unwrap();
        fs::set_permissions(&src, fs::Permissions::from_mode(0o700)).unwrap();
        let mut group = Group::new("bin/x");
        group.add(&src, b"opt/bins/x", 0).unwrap();
        let first = write(&store, &group).unwrap();
        fs::set_permissions(&src, fs::Permissions::from_mode(0o751)).unwrap();
        let second = write(&store, &group).unwrap();
        assert_eq!(first.descriptor.digest, second.descriptor.digest);
        let bytes = store.read_blob(&first.descriptor.digest).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
        let got: Vec<(String, u32, u64)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.mtime().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("opt/".to_owned(), 0o755, 0),
                ("opt/bins/".to_owned(), 0o755, 0),
                ("opt/bins/x".to_owned(), 0o755, 0)
            ]
        );
    }

    /// A layer of several compression blocks: the same bytes on one thread as on three, and
    /// they unpack to the files.
    #[test]
    fn a_layer_of_several_blocks_has_the_same_bytes_on_any_number_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let src = dir.path().join("data");
        fs::create_dir(&src).unwrap();
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("line {i}: {}\n", i.wrapping_mul(2_654_435_761)).into_bytes())
            .collect();
        assert!(text.len() > 3 * pgzip::BLOCK);
        fs::write(src.join("a.txt"), &text).unwrap();
        fs::write(src.join("b.txt"), &text[..12_345]).unwrap();
        let mut group = Group::new("agent");
        group.add(&src, b"data", 0).unwrap();
        let one = write_with(&store, &group, 1).unwrap();
        let three = write_with(&store, &group, 3).unwrap();
        assert_eq!(one.descriptor.digest, three.descriptor.digest);
        assert_eq!(one.diff_id, three.diff_id);
        let bytes = store.read_blob(&one.descriptor.digest).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
        let mut sizes = Vec::new();
        for e in archive.entries().unwrap() {
            let mut e = e.unwrap();
            let mut body = Vec::new();
            io::Read::read_to_end(&mut e, &mut body).unwrap();
            sizes.push((e.path().unwrap().display().to_string(), body.len()));
        }
        assert_eq!(
            sizes,
            [
                ("data/".to_owned(), 0),
                ("data/a.txt".to_owned(), text.len()),
                ("data/b.txt".to_owned(), 12_345)
            ]
        );
    }

    /// The writable entries (the agent user's) are group 0's and group-writable, `tmp/` sticky;
    /// the rest root's and not group-writable; nothing world-writable.
    #[test]
    fn writable_directories_are_group_zero_and_group_writable() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let src = dir.path().join("ws");
        fs::create_dir(&src).unwrap();
        fs::write(src.join("note"), b"x").unwrap();
        let mut group = Group::new("agent");
        group.dir(b"tmp", 65532);
        group.dir(b"var/lib", 65532);
        group.add(&src, b"workspace", 65532).unwrap();
        let written = write(&store, &group).unwrap();
        let bytes = store.read_blob(&written.descriptor.digest).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
        let got: Vec<(String, u32, u64, u64)> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.uid().unwrap(),
                    h.gid().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("tmp/".to_owned(), 0o1775, 65532, 0),
                ("var/".to_owned(), 0o755, 0, 0),
                ("var/lib/".to_owned(), 0o775, 65532, 0),
                ("workspace/".to_owned(), 0o775, 65532, 0),
                ("workspace/note".to_owned(), 0o664, 65532, 0),
            ]
        );
    }

    #[test]
    fn names_that_are_not_utf8_keep_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let src = dir.path().join("data");
        fs::create_dir(&src).unwrap();
        for (name, body) in [(&b"\xff.txt"[..], "one"), (&b"\xfe.txt"[..], "two")] {
            fs::write(src.join(OsStr::from_bytes(name)), body).unwrap();
        }
        let mut group = Group::new("agent");
        group.add(&src, b"etc/data", 0).unwrap();
        let written = write(&store, &group).unwrap();
        let bytes = store.read_blob(&written.descriptor.digest).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
        let names: Vec<Vec<u8>> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path_bytes().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                b"etc/".to_vec(),
                b"etc/data/".to_vec(),
                b"etc/data/\xfe.txt".to_vec(),
                b"etc/data/\xff.txt".to_vec()
            ]
        );
    }
}
