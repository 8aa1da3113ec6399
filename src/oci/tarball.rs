//! Deterministic tar+gzip of a directory ADD.
//!
//! Takes: a directory, the layer title, `.agentignore` rules and the mtime to stamp. Returns: the
//! sorted entry list ([`walk`]) and the gzip stream ([`write_tar_gz`]). The bytes depend only on
//! the names, contents, kinds and exec bits of the files: entries in byte order of their paths, all
//! under `<title>/` (the oras convention, so `oras pull` unpacks them into `<title>/`); mode 0755
//! for directories and for files with any x bit, 0644 for other files, 0777 for symlinks; uid/gid
//! 0, empty user/group names, one mtime for all; paths over 100 bytes (and link targets) go in a
//! PAX `path`/`linkpath` record; gzip by the pinned zlib-rs backend at level 6 with mtime 0.
//! Symlinks are stored as symlinks when their target, resolved inside the added directory, stays
//! in it; absolute targets or targets that climb out of it are refused. Sockets, FIFOs and devices
//! are refused. Must never: follow a symlink, or read the clock, owner, umask or locale.

use super::hash_cache::Stamp;
use super::ignore::Ignore;
use flate2::{Compression, GzBuilder};
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The gzip level of directory layers. Changing it changes every directory layer's digest.
pub const GZIP_LEVEL: u32 = 6;

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
    pub path: PathBuf,
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
    #[error("`{rel}` changed size while it was being archived; build again when it is stable")]
    Changed { rel: String },
    #[error("cannot write the layer: {0}")]
    Write(io::Error),
}

impl TarError {
    /// True for the errors that mean "leaves the build context" (AF302) rather than unreadable.
    pub fn is_escape(&self) -> bool {
        matches!(self, TarError::SymlinkEscapes { .. })
    }
}

/// Lists `dir` recursively in sorted byte order, applying `ignore` to `ctx_rel/<path>`.
pub fn walk(
    dir: &Path,
    ctx_rel: &str,
    title: &str,
    ignore: &Ignore,
) -> Result<Vec<Entry>, TarError> {
    let mut out = vec![Entry {
        name: title.as_bytes().to_vec(),
        path: dir.to_owned(),
        kind: EntryKind::Dir,
        stamp: None,
    }];
    walk_into(dir, ctx_rel, title.as_bytes(), &[], ignore, &mut out)?;
    Ok(out)
}

fn walk_into(
    dir: &Path,
    ctx_rel: &str,
    prefix: &[u8],
    depth_parts: &[Vec<u8>],
    ignore: &Ignore,
    out: &mut Vec<Entry>,
) -> Result<(), TarError> {
    let io_err = |source| TarError::Io {
        rel: join_rel(ctx_rel, depth_parts, None),
        source,
    };
    let mut names: Vec<std::ffi::OsString> = fs::read_dir(dir)
        .map_err(io_err)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(io_err)?;
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    for name in names {
        let path = dir.join(&name);
        let rel = join_rel(ctx_rel, depth_parts, Some(name.as_bytes()));
        let meta = fs::symlink_metadata(&path).map_err(|source| TarError::Io {
            rel: rel.clone(),
            source,
        })?;
        let excluded = !ignore.is_empty() && ignore.is_excluded(&rel);
        let mut entry_name = prefix.to_vec();
        entry_name.push(b'/');
        entry_name.extend_from_slice(name.as_bytes());
        let ft = meta.file_type();
        if ft.is_dir() {
            if excluded && !ignore.has_exceptions() {
                continue;
            }
            if !excluded {
                out.push(Entry {
                    name: entry_name.clone(),
                    path: path.clone(),
                    kind: EntryKind::Dir,
                    stamp: None,
                });
            }
            let mut parts = depth_parts.to_vec();
            parts.push(name.as_bytes().to_vec());
            walk_into(&path, ctx_rel, &entry_name, &parts, ignore, out)?;
            continue;
        }
        if excluded {
            continue;
        }
        let kind = if ft.is_file() {
            EntryKind::File {
                size: meta.len(),
                exec: meta.permissions().mode() & 0o111 != 0,
            }
        } else if ft.is_symlink() {
            let target = fs::read_link(&path).map_err(|source| TarError::Io {
                rel: rel.clone(),
                source,
            })?;
            let target = target.as_os_str().as_bytes().to_vec();
            if !link_stays_inside(depth_parts.len(), &target) {
                return Err(TarError::SymlinkEscapes {
                    rel,
                    target: String::from_utf8_lossy(&target).into_owned(),
                });
            }
            EntryKind::Symlink(target)
        } else {
            return Err(TarError::Special { rel });
        };
        let stamp = matches!(kind, EntryKind::File { .. }).then(|| Stamp::of(&meta));
        out.push(Entry {
            name: entry_name,
            path,
            kind,
            stamp,
        });
    }
    Ok(())
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

/// Counts what passes through, to catch a file that changes size under us.
struct Counting<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

/// Writes the entries as tar+gzip into `out`, calling `progress` with file bytes as they go.
pub fn write_tar_gz<W: Write>(
    entries: &[Entry],
    mtime: u64,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<W, TarError> {
    let gz = GzBuilder::new()
        .mtime(0)
        .write(out, Compression::new(GZIP_LEVEL));
    let mut builder = tar::Builder::new(gz);
    for e in entries {
        let rel = String::from_utf8_lossy(&e.name).into_owned();
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
                let file = fs::File::open(&e.path).map_err(|source| TarError::Io {
                    rel: rel.clone(),
                    source,
                })?;
                let mut reader = Counting {
                    inner: io::BufReader::with_capacity(super::layout::COPY_BUFFER, file)
                        .take(*size),
                    n: 0,
                };
                builder
                    .append(&header, &mut reader)
                    .map_err(TarError::Write)?;
                if reader.n != *size {
                    return Err(TarError::Changed { rel });
                }
                progress(*size);
            }
            _ => builder
                .append(&header, io::empty())
                .map_err(TarError::Write)?,
        }
    }
    let gz = builder.into_inner().map_err(TarError::Write)?;
    gz.finish().map_err(TarError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oci::digest::Digest;

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
    fn golden_digest_of_a_small_tree() {
        // Pins the whole byte format: tar layout, PAX policy, gzip backend and level.
        let t = tempfile::tempdir().unwrap();
        fixture(t.path(), false);
        let d = Digest::of(&build(t.path(), &Ignore::default(), 0));
        insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/build"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!("tarball_golden_digest", d.as_str());
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
