//! Deterministic tar+gzip of a directory ADD.
//!
//! Takes: a directory, the layer title, `.agentignore` rules and the mtime to stamp. Returns: the
//! sorted entry list ([`walk`]) and the gzip stream ([`write_tar_gz`]). The bytes depend only on
//! the names, contents, kinds and exec bits of the files: entries in byte order of their paths, all
//! under `<title>/` (the oras convention, so `oras pull` unpacks them into `<title>/`); mode 0755
//! for directories and for files with any x bit, 0644 for other files, 0777 for symlinks; uid/gid
//! 0, empty user/group names, one mtime for all; paths over 100 bytes (and link targets) go in a
//! PAX `path`/`linkpath` record; gzip by the pinned zlib-rs backend with mtime 0: a stream of at
//! most 1 MiB at level 6 in one piece, a longer one in 1 MiB blocks at level 2 compressed in
//! parallel ([`pgzip`]: the same bytes on any number of threads).
//! Symlinks are stored as symlinks when their target, resolved inside the added directory, stays
//! in it; absolute targets or targets that climb out of it are refused. Sockets, FIFOs and devices
//! are refused, and so are names with control characters and trees deeper than [`MAX_DEPTH`].
//! A hard link is a regular file like any other (its content is stored; the link is not).
//!
//! Both the walk and the write go through directory handles ([`crate::build::nofollow`]): every
//! directory is opened relative to its parent with `O_NOFOLLOW`, every file is opened the same way
//! and checked on its handle against what the walk saw (device, inode, size, mtime, ctime) before
//! and after it is read, so a file or directory swapped for a symlink, or a file that changes
//! while it is read, fails the build ("changed while being read") instead of putting other bytes
//! in the layer. Must never: follow a symlink, or read the clock, owner, umask or locale.

use crate::build::hash_cache::Stamp;
use crate::build::ignore::Ignore;
use crate::build::nofollow::{self, Kind};
use crate::build::pgzip;
use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How many directory levels a directory ADD may have below the added directory.
pub const MAX_DEPTH: usize = 256;

/// What one tar entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File { size: u64, exec: bool },
    Symlink(Vec<u8>),
}

/// One entry, with its path inside the archive (`<title>/…`, no trailing slash).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: Vec<u8>,
    /// The added directory on the first (root) entry; empty on the others, which are opened
    /// through `rel` below it, never by a path.
    pub path: PathBuf,
    /// The path below the added directory, `/`-separated (empty for the added directory).
    pub rel: Vec<u8>,
    pub kind: EntryKind,
    /// For regular files: the metadata stamp the hash cache keys on.
    pub stamp: Option<Stamp>,
}

/// Why a directory cannot be archived.
#[derive(Debug, thiserror::Error)]
pub enum TarError {
    #[error("`{rel}` is a symlink to `{target}`, which leads outside the added directory")]
    SymlinkEscapes { rel: String, target: String },
    #[error("`{rel}` is not a regular file, directory or symlink")]
    Special { rel: String },
    #[error("cannot read `{rel}`: {source}")]
    Io { rel: String, source: io::Error },
    #[error("`{rel}` changed while being read; build again when the context is stable")]
    Changed { rel: String },
    #[error("`{rel}` has a control character in its name; rename it or list it in .agentignore")]
    BadName { rel: String },
    #[error("`{rel}` is more than {MAX_DEPTH} directories deep; flatten the tree or list it in .agentignore")]
    TooDeep { rel: String },
    #[error("cannot write the layer: {0}")]
    Write(io::Error),
}

impl TarError {
    /// True for the errors that mean "leaves the build context" (AF302) rather than unreadable.
    pub fn is_escape(&self) -> bool {
        matches!(self, TarError::SymlinkEscapes { .. })
    }
}

/// Lists `dir` (absolute and canonical) recursively in sorted byte order, applying `ignore` to
/// `ctx_rel/<path>`.
pub fn walk(
    dir: &Path,
    ctx_rel: &str,
    title: &str,
    ignore: &Ignore,
) -> Result<Vec<Entry>, TarError> {
    let mut out = vec![Entry {
        name: title.as_bytes().to_vec(),
        path: dir.to_owned(),
        rel: Vec::new(),
        kind: EntryKind::Dir,
        stamp: None,
    }];
    let fd = nofollow::open_dir(dir).map_err(|source| TarError::Io {
        rel: shown(ctx_rel),
        source,
    })?;
    let mut w = Walk {
        ctx_rel,
        ignore,
        out: &mut out,
    };
    w.dir(fd.as_fd(), title.as_bytes(), &[])?;
    Ok(out)
}

struct Walk<'a> {
    ctx_rel: &'a str,
    ignore: &'a Ignore,
    out: &'a mut Vec<Entry>,
}

impl Walk<'_> {
    fn dir(
        &mut self,
        fd: BorrowedFd<'_>,
        prefix: &[u8],
        parts: &[Vec<u8>],
    ) -> Result<(), TarError> {
        let io_err = |rel: String| move |source| TarError::Io { rel, source };
        let here = join_rel(self.ctx_rel, parts, None);
        if parts.len() > MAX_DEPTH {
            return Err(TarError::TooDeep { rel: shown(&here) });
        }
        for (name, listed) in nofollow::list(fd).map_err(io_err(shown(&here)))? {
            let raw = name.as_bytes();
            let rel = join_rel(self.ctx_rel, parts, Some(raw));
            // A file is `lstat`ed for its stamp (one call, the kind with it); other kinds the
            // listing names are taken as listed, and each is checked again when it is opened.
            let (kind, stat) = match listed {
                Some(k) if k != Kind::File => (k, None),
                _ => {
                    let (k, st) = nofollow::stat_at(fd, &name).map_err(io_err(shown(&rel)))?;
                    (k, (k == Kind::File).then_some(st))
                }
            };
            let excluded = !self.ignore.is_empty() && self.ignore.is_excluded(&rel);
            let mut entry_name = prefix.to_vec();
            entry_name.push(b'/');
            entry_name.extend_from_slice(raw);
            let mut sub = parts.to_vec();
            sub.push(raw.to_vec());
            let entry = |kind, stamp| Entry {
                name: entry_name.clone(),
                path: PathBuf::new(),
                rel: sub.join(&b'/'),
                kind,
                stamp,
            };
            if kind == Kind::Dir && excluded && !self.ignore.has_exceptions() {
                continue;
            }
            if excluded && kind != Kind::Dir {
                continue;
            }
            if !excluded && raw.iter().any(|b| *b < 0x20 || *b == 0x7f) {
                return Err(TarError::BadName { rel: shown(&rel) });
            }
            match kind {
                Kind::Dir => {
                    let child = nofollow::open_dir_at(fd, &name).map_err(io_err(shown(&rel)))?;
                    if !excluded {
                        let e = entry(EntryKind::Dir, None);
                        self.out.push(e);
                    }
                    self.dir(child.as_fd(), &entry_name, &sub)?;
                }
                Kind::File => {
                    // Only `lstat`ed: a rebuild whose stamps the hash cache knows opens nothing.
                    // Before anything is written, `check_readable` opens each file of a layer
                    // the cache does not know.
                    let Some(st) = stat else {
                        return Err(TarError::Changed { rel: shown(&rel) });
                    };
                    let e = entry(
                        EntryKind::File {
                            size: u64::try_from(st.st_size).unwrap_or(0),
                            exec: st.st_mode & 0o111 != 0,
                        },
                        Some(Stamp::of_stat(&st)),
                    );
                    self.out.push(e);
                }
                Kind::Symlink => {
                    let target = nofollow::read_link_at(fd, &name).map_err(io_err(shown(&rel)))?;
                    if !link_stays_inside(parts.len(), &target) {
                        return Err(TarError::SymlinkEscapes {
                            rel: shown(&rel),
                            target: shown(&String::from_utf8_lossy(&target)),
                        });
                    }
                    let e = entry(EntryKind::Symlink(target), None);
                    self.out.push(e);
                }
                Kind::Special => return Err(TarError::Special { rel: shown(&rel) }),
            }
        }
        Ok(())
    }
}

/// A context path as shown in a message: control characters escaped.
fn shown(rel: &str) -> String {
    rel.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn join_rel(ctx_rel: &str, parts: &[Vec<u8>], last: Option<&[u8]>) -> String {
    let mut s = ctx_rel.to_owned();
    for p in parts.iter().map(Vec::as_slice).chain(last) {
        if !s.is_empty() {
            s.push('/');
        }
        s.push_str(&String::from_utf8_lossy(p));
    }
    s
}

/// A link at `depth` directories below the added directory stays inside it when its target,
/// resolved lexically, never climbs above the added directory.
fn link_stays_inside(depth: usize, target: &[u8]) -> bool {
    if target.is_empty() || target.starts_with(b"/") {
        return false;
    }
    let mut level = depth;
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                if level == 0 {
                    return false;
                }
                level -= 1;
            }
            _ => level += 1,
        }
    }
    true
}

/// Reads an opened input file for exactly the size that was checked, and fails (setting
/// `changed`) when fewer bytes come, or when the handle's stamp differs from the checked one once
/// they are read: the file was modified while it was being read.
pub struct Checked<'a> {
    inner: io::Take<std::fs::File>,
    want: Stamp,
    n: u64,
    done: bool,
    changed: &'a std::cell::Cell<bool>,
}

impl<'a> Checked<'a> {
    /// `file` must have been opened through [`nofollow`], and `meta` read from it; `None` (and
    /// `changed` set) when its stamp is no longer `want`.
    pub fn new(
        file: std::fs::File,
        meta: &std::fs::Metadata,
        want: Stamp,
        changed: &'a std::cell::Cell<bool>,
    ) -> Option<Self> {
        if Stamp::of(meta) != want {
            changed.set(true);
            return None;
        }
        // Unbuffered: every caller reads into large buffers of its own (the store's copy, the tar
        // writer's), so a buffer per file would only be allocated and freed.
        Some(Self {
            inner: file.take(want.size),
            want,
            n: 0,
            done: false,
            changed,
        })
    }

    fn fail(&self) -> io::Error {
        self.changed.set(true);
        io::Error::other("the input changed while being read")
    }
}

impl Read for Checked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        if n == 0 || self.n == self.want.size {
            self.done = true;
            let now = self.inner.get_ref().metadata()?;
            if self.n != self.want.size || Stamp::of(&now) != self.want {
                return Err(self.fail());
            }
        }
        Ok(n)
    }
}

/// Opens `rel` (below the directory `root` is a handle of) through directory handles, reusing the
/// last parent directory opened.
struct Opener {
    root: OwnedFd,
    parent: Option<(Vec<u8>, OwnedFd)>,
}

impl Opener {
    fn open(&mut self, rel: &[u8]) -> io::Result<(std::fs::File, std::fs::Metadata)> {
        let (dir, leaf) = match rel.iter().rposition(|b| *b == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&rel[..0], rel),
        };
        if dir.is_empty() {
            return nofollow::open_walked_at(self.root.as_fd(), OsStr::from_bytes(leaf));
        }
        if self.parent.as_ref().is_none_or(|(p, _)| p != dir) {
            let mut fd: Option<OwnedFd> = None;
            for part in dir.split(|b| *b == b'/') {
                let base = fd.as_ref().map_or(self.root.as_fd(), AsFd::as_fd);
                let next = nofollow::open_dir_at(base, OsStr::from_bytes(part))?;
                fd = Some(next);
            }
            self.parent = fd.map(|fd| (dir.to_vec(), fd));
        }
        let Some((_, fd)) = &self.parent else {
            return Err(io::Error::other("no parent directory"));
        };
        nofollow::open_walked_at(fd.as_fd(), OsStr::from_bytes(leaf))
    }
}

impl From<io::Error> for TarError {
    fn from(e: io::Error) -> Self {
        TarError::Write(e)
    }
}

/// Writes the entries as tar+gzip into `out`, calling `progress` with file bytes as they go,
/// compressing on as many threads as the machine has cores ([`pgzip`]: the bytes are the same
/// for any number).
pub fn write_tar_gz<W: Write + Send>(
    entries: &[Entry],
    mtime: u64,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<W, TarError> {
    write_tar_gz_with(entries, mtime, out, progress, pgzip::default_workers())
}

/// [`write_tar_gz`] on `workers` compression threads.
pub fn write_tar_gz_with<W: Write + Send>(
    entries: &[Entry],
    mtime: u64,
    out: W,
    progress: &mut dyn FnMut(u64),
    workers: usize,
) -> Result<W, TarError> {
    let (out, ()) = pgzip::gzip(out, workers, |gz| write_tar(entries, mtime, gz, progress))?;
    Ok(out)
}

/// The opener of `entries`' files, below their root (the first entry's path).
fn opener_of(entries: &[Entry]) -> Result<Option<Opener>, TarError> {
    let Some(root) = entries.first() else {
        return Ok(None);
    };
    let fd = nofollow::open_dir(&root.path).map_err(|source| TarError::Io {
        rel: shown(&root.path.display().to_string()),
        source,
    })?;
    Ok(Some(Opener {
        root: fd,
        parent: None,
    }))
}

/// Opens every file of a walked tree and checks its handle against the stamp the walk saw: an
/// unreadable file, or one that changed since the walk, fails here, before anything is written.
/// (The walk only `lstat`s, so that a rebuild the hash cache answers opens nothing.) A large tree
/// is checked on every core, each thread with its own directory handles over one run of the
/// files; the error is the one of the first failing file in the tree's order, as one thread gives.
pub fn check_readable(entries: &[Entry]) -> Result<(), TarError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(CHECK_THREADS);
    check_readable_on(entries, threads)
}

fn check_readable_on(entries: &[Entry], threads: usize) -> Result<(), TarError> {
    let files: Vec<&Entry> = entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::File { .. }))
        .collect();
    if threads < 2 || files.len() < CHECK_PARALLEL_FROM {
        return check_files(entries, &files);
    }
    std::thread::scope(|s| {
        let runs: Vec<_> = files
            .chunks(files.len().div_ceil(threads))
            .map(|run| s.spawn(move || check_files(entries, run)))
            .collect();
        let mut first = Ok(());
        for run in runs {
            let result = run.join().unwrap_or_else(|_| {
                Err(TarError::Io {
                    rel: shown(&entries[0].path.display().to_string()),
                    source: io::Error::other("a thread checking the files stopped"),
                })
            });
            if first.is_ok() {
                first = result;
            }
        }
        first
    })
}

/// At most this many threads check a tree's files; fewer files than
/// [`CHECK_PARALLEL_FROM`] are checked on the calling thread.
const CHECK_THREADS: usize = 8;
const CHECK_PARALLEL_FROM: usize = 2048;

fn check_files(entries: &[Entry], files: &[&Entry]) -> Result<(), TarError> {
    let mut opener = opener_of(entries)?;
    for e in files {
        let rel = || shown(&String::from_utf8_lossy(&e.name));
        let (Some(opener), Some(stamp)) = (opener.as_mut(), e.stamp) else {
            return Err(TarError::Changed { rel: rel() });
        };
        let (_, meta) = opener
            .open(&e.rel)
            .map_err(|source| TarError::Io { rel: rel(), source })?;
        if Stamp::of(&meta) != stamp {
            return Err(TarError::Changed { rel: rel() });
        }
    }
    Ok(())
}

/// The tar writer's copy buffer: a file's data moves through it in reads of this size.
const TAR_COPY_BUFFER: usize = 256 * 1024;

/// A file's member as `tar::Builder::append` writes it: the header, the data, zeros to the next
/// 512-byte boundary.
fn append_file(
    out: &mut dyn Write,
    header: &tar::Header,
    data: &mut Checked<'_>,
    buf: &mut [u8],
) -> io::Result<()> {
    out.write_all(header.as_bytes())?;
    let mut len = 0u64;
    loop {
        let n = match data.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        len += n as u64;
    }
    let pad = (512 - len % 512) % 512;
    out.write_all(&[0u8; 512][..usize::try_from(pad).unwrap_or(0)])
}

fn write_tar(
    entries: &[Entry],
    mtime: u64,
    gz: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<(), TarError> {
    let mut builder = tar::Builder::new(gz);
    let mut opener = opener_of(entries)?;
    // One copy buffer for every file, initialised once (tar's `append` copies through a fresh
    // stack buffer that `io::copy` zeroes for each file: 14% of a small-file build's instructions).
    let mut buf = vec![0u8; TAR_COPY_BUFFER];
    for e in entries {
        let rel = || shown(&String::from_utf8_lossy(&e.name));
        let mut header = tar::Header::new_ustar();
        let mut pax: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut name = e.name.clone();
        if e.kind == EntryKind::Dir {
            name.push(b'/');
        }
        if name.len() > 100 {
            pax.push(("path", name.clone()));
            name.truncate(100);
        }
        header.as_old_mut().name[..name.len()].copy_from_slice(&name);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        match &e.kind {
            EntryKind::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
            }
            EntryKind::File { size, exec } => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if *exec { 0o755 } else { 0o644 });
                header.set_size(*size);
            }
            EntryKind::Symlink(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                let mut t = target.clone();
                if t.len() > 100 {
                    pax.push(("linkpath", t.clone()));
                    t.truncate(100);
                }
                header.as_old_mut().linkname[..t.len()].copy_from_slice(&t);
            }
        }
        header.set_cksum();
        if !pax.is_empty() {
            builder
                .append_pax_extensions(pax.iter().map(|(k, v)| (*k, v.as_slice())))
                .map_err(TarError::Write)?;
        }
        match &e.kind {
            EntryKind::File { size, .. } => {
                let changed = std::cell::Cell::new(false);
                let (Some(opener), Some(stamp)) = (opener.as_mut(), e.stamp) else {
                    return Err(TarError::Changed { rel: rel() });
                };
                let (file, meta) = opener
                    .open(&e.rel)
                    .map_err(|source| TarError::Io { rel: rel(), source })?;
                let Some(mut reader) = Checked::new(file, &meta, stamp, &changed) else {
                    return Err(TarError::Changed { rel: rel() });
                };
                let appended = append_file(builder.get_mut(), &header, &mut reader, &mut buf);
                if changed.get() {
                    return Err(TarError::Changed { rel: rel() });
                }
                appended.map_err(TarError::Write)?;
                progress(*size);
            }
            _ => builder
                .append(&header, io::empty())
                .map_err(TarError::Write)?,
        }
    }
    builder.into_inner().map_err(TarError::Write)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_oci::spec::digest::Digest;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn build(dir: &Path, ignore: &Ignore, mtime: u64) -> Vec<u8> {
        let entries = walk(dir, "data", "data", ignore).unwrap();
        write_tar_gz(&entries, mtime, Vec::new(), &mut |_| {}).unwrap()
    }

    fn fixture(root: &Path, reversed: bool) {
        let mut files = vec![
            ("b.txt", "bee"),
            ("a/x.txt", "x"),
            ("a/very/deep/".to_owned().leak(), ""),
            ("run.sh", "#!/bin/sh\n"),
        ];
        let long = format!("{}/f", "n".repeat(120)).leak();
        files.push((long, "long"));
        if reversed {
            files.reverse();
        }
        for (p, c) in files {
            let path = root.join(p);
            if p.ends_with('/') {
                fs::create_dir_all(&path).unwrap();
            } else {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, c).unwrap();
            }
        }
        let mode = if reversed { 0o775 } else { 0o700 };
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::symlink("../b.txt", root.join("a/link")).unwrap();
    }

    #[test]
    fn same_tree_same_bytes_whatever_order_and_modes() {
        let t1 = tempfile::tempdir().unwrap();
        let t2 = tempfile::tempdir().unwrap();
        fixture(t1.path(), false);
        fixture(t2.path(), true);
        fs::set_permissions(t2.path().join("b.txt"), fs::Permissions::from_mode(0o600)).unwrap();
        let a = build(t1.path(), &Ignore::default(), 0);
        let b = build(t2.path(), &Ignore::default(), 0);
        assert_eq!(Digest::of(&a), Digest::of(&b));
        assert_ne!(
            Digest::of(&a),
            Digest::of(&build(t1.path(), &Ignore::default(), 1))
        );

        let mut names = Vec::new();
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(&a[..]));
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            let h = e.header();
            names.push(format!(
                "{} {:o} {}",
                e.path().unwrap().display(),
                h.mode().unwrap(),
                h.mtime().unwrap()
            ));
        }
        let long = format!("data/{}/f 644 0", "n".repeat(120));
        assert_eq!(
            names,
            [
                "data/ 755 0",
                "data/a/ 755 0",
                "data/a/link 777 0",
                "data/a/very/ 755 0",
                "data/a/very/deep/ 755 0",
                "data/a/x.txt 644 0",
                "data/b.txt 644 0",
                &format!("data/{}/ 755 0", "n".repeat(120)),
                &long,
                "data/run.sh 755 0",
            ]
        );
    }

    #[test]
    fn swaps_and_changes_between_walk_and_write_fail_the_layer() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let dir = root.join("ctx");
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("sub/a.txt"), "aaaa").unwrap();
        fs::write(root.join("canary"), "SECRET!!").unwrap();
        let write = |entries: &[Entry]| write_tar_gz(entries, 0, Vec::new(), &mut |_| {});

        // A file swapped for a symlink to an outside file.
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        fs::remove_file(dir.join("sub/a.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("canary"), dir.join("sub/a.txt")).unwrap();
        let e = write(&entries).unwrap_err().to_string();
        assert!(e.contains("was replaced"), "{e}");

        // An intermediate directory swapped for a symlink to an outside directory.
        fs::remove_file(dir.join("sub/a.txt")).unwrap();
        fs::write(dir.join("sub/a.txt"), "aaaa").unwrap();
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        fs::create_dir(root.join("out")).unwrap();
        fs::write(root.join("out/a.txt"), "SECR").unwrap();
        fs::rename(dir.join("sub"), root.join("sub-away")).unwrap();
        std::os::unix::fs::symlink(root.join("out"), dir.join("sub")).unwrap();
        let e = write(&entries).unwrap_err().to_string();
        assert!(e.contains("was replaced"), "{e}");
        fs::remove_file(dir.join("sub")).unwrap();
        fs::rename(root.join("sub-away"), dir.join("sub")).unwrap();

        // Same size, new content: the stamp moved.
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(dir.join("sub/a.txt"), "bbbb").unwrap();
        let e = write(&entries).unwrap_err();
        assert!(matches!(e, TarError::Changed { .. }), "{e}");
        assert!(e.to_string().contains("changed while being read"), "{e}");

        // The check before writing sees the same swaps and changes the write does.
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(dir.join("sub/a.txt"), "cccc").unwrap();
        let e = check_readable(&entries).unwrap_err();
        assert!(matches!(e, TarError::Changed { .. }), "{e}");
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        fs::remove_file(dir.join("sub/a.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("canary"), dir.join("sub/a.txt")).unwrap();
        let e = check_readable(&entries).unwrap_err().to_string();
        assert!(e.contains("was replaced"), "{e}");
        fs::remove_file(dir.join("sub/a.txt")).unwrap();
        let e = check_readable(&entries).unwrap_err().to_string();
        assert!(e.contains("disappeared after it was checked"), "{e}");
        fs::write(dir.join("sub/a.txt"), "aaaa").unwrap();

        // Unchanged: the check and the write succeed.
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        assert!(check_readable(&entries).is_ok());
        assert!(write(&entries).is_ok());
    }

    #[test]
    fn a_large_tree_checked_on_several_threads_names_the_first_failing_file() {
        let t = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(t.path()).unwrap();
        for d in 0..30 {
            fs::create_dir(dir.join(format!("d{d:02}"))).unwrap();
            for f in 0..100 {
                fs::write(dir.join(format!("d{d:02}/f{f:03}")), "x").unwrap();
            }
        }
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        for threads in [1, 2, 3, 8] {
            assert!(check_readable_on(&entries, threads).is_ok(), "{threads}");
        }
        // Two files change, in different runs of the split: every split names the first.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(dir.join("d27/f050"), "yy").unwrap();
        fs::write(dir.join("d12/f007"), "yy").unwrap();
        for threads in [1, 2, 3, 8] {
            let e = check_readable_on(&entries, threads).unwrap_err();
            assert!(matches!(e, TarError::Changed { .. }), "{e}");
            assert!(e.to_string().contains("d12/f007"), "{threads}: {e}");
        }
        // One gone: the error says so, whichever thread met it.
        let entries = walk(&dir, "ctx", "ctx", &Ignore::default()).unwrap();
        fs::remove_file(dir.join("d29/f099")).unwrap();
        for threads in [1, 2] {
            let e = check_readable_on(&entries, threads)
                .unwrap_err()
                .to_string();
            assert!(e.contains("d29/f099") && e.contains("disappeared"), "{e}");
        }
    }

    #[test]
    fn special_files_control_characters_and_deep_trees_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(t.path()).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, dir.join("fifo"), 0o600.into()).unwrap();
        let e = walk(&dir, "d", "d", &Ignore::default()).unwrap_err();
        assert!(matches!(e, TarError::Special { .. }), "{e}");
        // .agentignore can leave it out.
        assert!(walk(&dir, "d", "d", &Ignore::parse("d/fifo\n").unwrap()).is_ok());
        fs::remove_file(dir.join("fifo")).unwrap();

        fs::write(dir.join("a\nb\x1b[2J"), "x").unwrap();
        let e = walk(&dir, "d", "d", &Ignore::default()).unwrap_err();
        assert!(matches!(e, TarError::BadName { .. }), "{e}");
        assert!(e.to_string().contains("a\\nb\\u{1b}[2J"), "{e}");
        fs::remove_file(dir.join("a\nb\x1b[2J")).unwrap();

        let mut deep = dir.clone();
        for _ in 0..=MAX_DEPTH {
            deep.push("d");
        }
        fs::create_dir_all(&deep).unwrap();
        let e = walk(&dir, "d", "d", &Ignore::default()).unwrap_err();
        assert!(matches!(e, TarError::TooDeep { .. }), "{e}");
    }

    #[test]
    fn golden_digest_of_a_small_tree() {
        // Pins the whole byte format: tar layout, PAX policy, gzip backend and level.
        let t = tempfile::tempdir().unwrap();
        fixture(t.path(), false);
        let d = Digest::of(&build(t.path(), &Ignore::default(), 0));
        insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots/build"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!("tarball_golden_digest", d.as_str());
        });
    }

    #[test]
    fn a_tree_over_several_blocks_has_one_digest_on_any_number_of_threads() {
        // 2.5 MiB of random bytes and 1.5 MiB of text: several `pgzip::BLOCK`s, stored and
        // deflated ones. Pins the block format (its digest changes only with the format).
        let t = tempfile::tempdir().unwrap();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let random: Vec<u8> = (0..5 << 19)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect();
        let text = (0..48_000)
            .map(|i| format!("{i:05} a line of text\n"))
            .collect::<Vec<_>>()
            .concat();
        fs::create_dir_all(t.path().join("sub")).unwrap();
        fs::write(t.path().join("random.bin"), &random).unwrap();
        fs::write(t.path().join("sub/text.txt"), &text).unwrap();
        let entries = walk(t.path(), "data", "data", &Ignore::default()).unwrap();
        let gz =
            |workers| write_tar_gz_with(&entries, 0, Vec::new(), &mut |_| {}, workers).unwrap();
        let one = gz(1);
        for n in [2, 3, 8] {
            assert!(gz(n) == one, "{n} threads wrote other bytes");
        }
        assert!(one.len() < random.len() + text.len() / 2, "{}", one.len());
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(&one[..]));
        let mut got = Vec::new();
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            got.push((e.path().unwrap().display().to_string(), bytes.len()));
        }
        assert_eq!(
            got,
            [
                ("data/".to_owned(), 0),
                ("data/random.bin".to_owned(), random.len()),
                ("data/sub/".to_owned(), 0),
                ("data/sub/text.txt".to_owned(), text.len()),
            ]
        );
        let d = Digest::of(&one);
        insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots/build"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!("tarball_golden_digest_blocks", d.as_str());
        });
    }

    #[test]
    fn ignore_rules_and_escaping_links() {
        let t = tempfile::tempdir().unwrap();
        fixture(t.path(), false);
        let ig = Ignore::parse("data/a\n*.sh\n").unwrap();
        let entries = walk(t.path(), "data", "data", &ig).unwrap();
        let names: Vec<String> = entries
            .iter()
            .map(|e| String::from_utf8_lossy(&e.name).into_owned())
            .collect();
        assert_eq!(
            names[..3],
            ["data", "data/b.txt", &format!("data/{}", "n".repeat(120))]
        );
        std::os::unix::fs::symlink("../../outside", t.path().join("a/bad")).unwrap();
        let err = walk(t.path(), "data", "data", &Ignore::default()).unwrap_err();
        assert!(err.is_escape(), "{err}");
        assert!(link_stays_inside(1, b"../x"));
        assert!(!link_stays_inside(0, b"../x"));
        assert!(!link_stays_inside(3, b"/etc/passwd"));
    }
}
