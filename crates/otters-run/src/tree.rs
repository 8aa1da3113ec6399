//! Confined writes into an agent tree: every path is walked from a directory handle one
//! component at a time with `O_NOFOLLOW`, so no write, link, removal or chown ever passes through
//! a symlink, whatever a layer put on disk before (in this layer, an earlier one, or a parent's).
//!
//! Takes: a directory (opened once) and relative paths made of plain names. Returns: what was
//! written, or [`TreeError`]. Must never: follow a symlink below the root (intermediate
//! components are opened with `O_NOFOLLOW | O_DIRECTORY`; final ones are created with
//! `O_EXCL | O_NOFOLLOW`, removed with `unlinkat`, linked with `linkat` without
//! `AT_SYMLINK_FOLLOW`, chowned with `AT_SYMLINK_NOFOLLOW`), or recurse deeper than
//! [`MAX_DEPTH`] directories.

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Deepest directory nesting [`Tree::remove`] and [`Tree::chown_all`] descend into.
pub const MAX_DEPTH: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("cannot write {}: {} is a symlink, and otters never writes through one", path.display(), link.display())]
    ThroughLink { path: PathBuf, link: PathBuf },
    #[error("cannot write {}: {} is not a directory", path.display(), at.display())]
    NotDir { path: PathBuf, at: PathBuf },
    #[error("cannot link {} to {}: {why}", path.display(), target.display())]
    BadHardLink {
        path: PathBuf,
        target: PathBuf,
        why: &'static str,
    },
    #[error("{} is not a path of plain names inside the tree", .0.display())]
    BadPath(PathBuf),
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

/// A directory that confined writes start from.
#[derive(Debug)]
pub struct Tree {
    fd: OwnedFd,
    shown: PathBuf,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

fn names(rel: &Path) -> Result<Vec<&OsStr>, TreeError> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(n) if !n.as_bytes().contains(&0) => Ok(n),
            _ => Err(TreeError::BadPath(rel.to_owned())),
        })
        .collect()
}

fn kind_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Option<FileType>> {
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<OsString>> {
    let mut d = rfs::Dir::read_from(dir)?;
    let mut out = Vec::new();
    while let Some(e) = d.read() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            out.push(OsStr::from_bytes(n).to_owned());
        }
    }
    Ok(out)
}

/// Removes `name` in `dir` (recursively for a directory), never following a symlink.
fn remove_at(dir: BorrowedFd<'_>, name: &OsStr, depth: usize) -> io::Result<()> {
    match kind_at(dir, name)? {
        None => Ok(()),
        Some(FileType::Directory) => {
            if depth >= MAX_DEPTH {
                return Err(io::Error::other(format!(
                    "directories nested deeper than {MAX_DEPTH} levels"
                )));
            }
            let sub = rfs::openat(dir, name, DIR_FLAGS, Mode::empty())?;
            for n in list(sub.as_fd())? {
                remove_at(sub.as_fd(), &n, depth + 1)?;
            }
            Ok(rfs::unlinkat(dir, name, AtFlags::REMOVEDIR)?)
        }
        Some(_) => Ok(rfs::unlinkat(dir, name, AtFlags::empty())?),
    }
}

/// Chowns `name` in `dir` and, for a directory opened without following links, everything below.
fn chown_at(dir: BorrowedFd<'_>, name: &OsStr, ids: (u32, u32), depth: usize) -> io::Result<()> {
    let uid = Some(rfs::Uid::from_raw(ids.0));
    let gid = Some(rfs::Gid::from_raw(ids.1));
    match rfs::openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Ok(sub) => {
            // The handle is the directory itself: swapping the name for a link changes nothing.
            rfs::fchown(&sub, uid, gid)?;
            if depth >= MAX_DEPTH {
                return Err(io::Error::other(format!(
                    "directories nested deeper than {MAX_DEPTH} levels"
                )));
            }
            for n in list(sub.as_fd())? {
                chown_at(sub.as_fd(), &n, ids, depth + 1)?;
            }
            Ok(())
        }
        Err(Errno::LOOP | Errno::NOTDIR) => Ok(rfs::chownat(
            dir,
            name,
            uid,
            gid,
            AtFlags::SYMLINK_NOFOLLOW,
        )?),
        Err(e) => Err(e.into()),
    }
}

impl Tree {
    /// Opens `dir` (which must exist and is trusted: the caller made it or the user named it).
    pub fn open(dir: &Path) -> Result<Tree, TreeError> {
        let fd = rfs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| TreeError::Io {
            action: "open",
            path: dir.to_owned(),
            source: e.into(),
        })?;
        Ok(Tree {
            fd,
            shown: dir.to_owned(),
        })
    }

    /// The directory this tree writes into (for messages).
    pub fn path(&self) -> &Path {
        &self.shown
    }

    fn io(&self, action: &'static str, rel: &Path) -> impl FnOnce(io::Error) -> TreeError {
        let path = self.shown.join(rel);
        move |source| TreeError::Io {
            action,
            path,
            source,
        }
    }

    /// Opens the directory `names` (creating missing ones when `create`), one name at a time.
    fn dir_at(&self, names: &[&OsStr], create: bool, whole: &Path) -> Result<OwnedFd, TreeError> {
        let mut cur: Option<OwnedFd> = None;
        let mut walked = PathBuf::new();
        for name in names {
            walked.push(name);
            let base = cur.as_ref().map_or(self.fd.as_fd(), AsFd::as_fd);
            let mut res = rfs::openat(base, *name, DIR_FLAGS, Mode::empty());
            if create && matches!(res, Err(Errno::NOENT)) {
                match rfs::mkdirat(base, *name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(self.io("create", &walked)(e.into())),
                }
                res = rfs::openat(base, *name, DIR_FLAGS, Mode::empty());
            }
            cur = Some(match res {
                Ok(fd) => fd,
                Err(Errno::LOOP) => {
                    return Err(TreeError::ThroughLink {
                        path: self.shown.join(whole),
                        link: self.shown.join(&walked),
                    })
                }
                Err(Errno::NOTDIR) => {
                    if kind_at(base, name).ok().flatten() == Some(FileType::Symlink) {
                        return Err(TreeError::ThroughLink {
                            path: self.shown.join(whole),
                            link: self.shown.join(&walked),
                        });
                    }
                    return Err(TreeError::NotDir {
                        path: self.shown.join(whole),
                        at: self.shown.join(&walked),
                    });
                }
                Err(e) => return Err(self.io("open", &walked)(e.into())),
            });
        }
        match cur {
            Some(fd) => Ok(fd),
            None => rfs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty())
                .map_err(|e| self.io("open", whole)(e.into())),
        }
    }

    /// The parent directory of `rel` (created when `create`) and its last name.
    fn parent_of<'p>(
        &self,
        rel: &'p Path,
        create: bool,
    ) -> Result<(OwnedFd, &'p OsStr), TreeError> {
        let n = names(rel)?;
        let (last, parents) = n
            .split_last()
            .ok_or_else(|| TreeError::BadPath(rel.to_owned()))?;
        Ok((self.dir_at(parents, create, rel)?, last))
    }

    /// A tree rooted at `rel`, which is created (with its parents) when `create`.
    pub fn subdir(&self, rel: &Path, create: bool) -> Result<Tree, TreeError> {
        let fd = self.dir_at(&names(rel)?, create, rel)?;
        Ok(Tree {
            fd,
            shown: self.shown.join(rel),
        })
    }

    /// `mkdir -p rel`; a non-directory at the last name is an error.
    pub fn create_dir_all(&self, rel: &Path) -> Result<(), TreeError> {
        self.dir_at(&names(rel)?, true, rel).map(drop)
    }

    /// A directory at `rel`, replacing a file or symlink there (never following it).
    pub fn mkdir(&self, rel: &Path) -> Result<(), TreeError> {
        let (dir, name) = self.parent_of(rel, true)?;
        match kind_at(dir.as_fd(), name).map_err(self.io("stat", rel))? {
            Some(FileType::Directory) => return Ok(()),
            Some(_) => rfs::unlinkat(&dir, name, AtFlags::empty())
                .map_err(|e| self.io("remove", rel)(e.into()))?,
            None => {}
        }
        rfs::mkdirat(&dir, name, Mode::from_raw_mode(0o755))
            .map_err(|e| self.io("create", rel)(e.into()))
    }

    /// Removes whatever is at `rel` (recursively); nothing there is fine.
    pub fn remove(&self, rel: &Path) -> Result<(), TreeError> {
        let (dir, name) = self.parent_of(rel, false)?;
        remove_at(dir.as_fd(), name, 0).map_err(self.io("remove", rel))
    }

    /// Writes `r` to a new file at `rel` (replacing what was there), at most `max` bytes, with
    /// permission bits `mode`. Returns the bytes written.
    pub fn write_file(
        &self,
        rel: &Path,
        r: &mut dyn Read,
        mode: u32,
        max: u64,
    ) -> Result<u64, TreeError> {
        let (dir, name) = self.parent_of(rel, true)?;
        remove_at(dir.as_fd(), name, 0).map_err(self.io("replace", rel))?;
        let fd = rfs::openat(
            &dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| self.io("create", rel)(e.into()))?;
        let mut f = File::from(fd);
        let n =
            io::copy(&mut r.take(max.saturating_add(1)), &mut f).map_err(self.io("write", rel))?;
        if n > max {
            drop(f);
            let _ = rfs::unlinkat(&dir, name, AtFlags::empty());
            return Err(self.io("write", rel)(io::Error::other(format!(
                "more than {max} bytes"
            ))));
        }
        f.flush().map_err(self.io("write", rel))?;
        rfs::fchmod(&f, Mode::from_raw_mode(mode)).map_err(|e| self.io("chmod", rel)(e.into()))?;
        Ok(n)
    }

    /// A symlink at `rel` pointing to `target` (never resolved here). With `replace`, whatever
    /// was at `rel` goes first; without, an existing entry is an error.
    pub fn symlink(&self, rel: &Path, target: &Path, replace: bool) -> Result<(), TreeError> {
        let (dir, name) = self.parent_of(rel, true)?;
        if replace {
            remove_at(dir.as_fd(), name, 0).map_err(self.io("replace", rel))?;
        }
        rfs::symlinkat(target, &dir, name).map_err(|e| self.io("create the symlink", rel)(e.into()))
    }

    /// A hard link at `rel` to the regular file at `target`, both inside this tree; the target
    /// is found without following any symlink.
    pub fn hard_link(&self, target: &Path, rel: &Path) -> Result<(), TreeError> {
        let bad = |why| TreeError::BadHardLink {
            path: self.shown.join(rel),
            target: self.shown.join(target),
            why,
        };
        let (tdir, tname) = match self.parent_of(target, false) {
            Ok(x) => x,
            Err(TreeError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(bad("the target does not exist"))
            }
            Err(e) => return Err(e),
        };
        match kind_at(tdir.as_fd(), tname).map_err(self.io("stat", target))? {
            Some(FileType::RegularFile) => {}
            None => return Err(bad("the target does not exist")),
            Some(_) => return Err(bad("the target is not a regular file")),
        }
        let (dir, name) = self.parent_of(rel, true)?;
        let same_dir = rfs::fstat(&tdir)
            .and_then(|a| rfs::fstat(&dir).map(|b| (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)))
            .map_err(|e| self.io("stat", rel)(e.into()))?;
        if same_dir && tname == name {
            return Ok(());
        }
        remove_at(dir.as_fd(), name, 0).map_err(self.io("replace", rel))?;
        rfs::linkat(&tdir, tname, &dir, name, AtFlags::empty())
            .map_err(|e| self.io("link", rel)(e.into()))
    }

    /// The type of whatever is at `rel` (not following a symlink there), `None` when nothing is,
    /// or when the way there is not plain directories.
    pub fn kind(&self, rel: &Path) -> Option<FileType> {
        let (dir, name) = self.parent_of(rel, false).ok()?;
        kind_at(dir.as_fd(), name).ok().flatten()
    }

    /// `chown -R` of `rel` without following symlinks (links themselves are chowned).
    pub fn chown_all(&self, rel: &Path, uid: u32, gid: u32) -> Result<(), TreeError> {
        let (dir, name) = self.parent_of(rel, false)?;
        chown_at(dir.as_fd(), name, (uid, gid), 0).map_err(self.io("chown", rel))
    }

    /// Moves `rel` of this tree to `to_rel` of `to` (both parents opened without following
    /// links); what is at the destination must not exist or be an empty directory.
    pub fn rename_to(&self, rel: &Path, to: &Tree, to_rel: &Path) -> Result<(), TreeError> {
        let (from_dir, from_name) = self.parent_of(rel, false)?;
        let (to_dir, to_name) = to.parent_of(to_rel, true)?;
        rfs::renameat(&from_dir, from_name, &to_dir, to_name)
            .map_err(|e| self.io("move", rel)(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};

    fn setup() -> (tempfile::TempDir, Tree) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("root")).unwrap();
        fs::write(dir.path().join("canary"), "original").unwrap();
        let t = Tree::open(&dir.path().join("root")).unwrap();
        (dir, t)
    }

    #[test]
    fn writes_files_dirs_and_links_inside() {
        let (dir, t) = setup();
        t.write_file(Path::new("a/b/c.txt"), &mut &b"hi"[..], 0o755, 10)
            .unwrap();
        let p = dir.path().join("root/a/b/c.txt");
        assert_eq!(fs::read(&p).unwrap(), b"hi");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        t.hard_link(Path::new("a/b/c.txt"), Path::new("h")).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().nlink(), 2);
        t.symlink(Path::new("s"), Path::new("a/b/c.txt"), false)
            .unwrap();
        assert!(t.symlink(Path::new("s"), Path::new("x"), false).is_err());
        t.mkdir(Path::new("s")).unwrap();
        assert_eq!(t.kind(Path::new("s")), Some(FileType::Directory));
        let e = t
            .write_file(Path::new("a/b/c.txt/x"), &mut &b""[..], 0o644, 1)
            .unwrap_err();
        assert!(matches!(e, TreeError::NotDir { .. }), "{e}");
        let e = t
            .write_file(Path::new("big"), &mut &b"12345"[..], 0o644, 4)
            .unwrap_err();
        assert!(e.to_string().contains("more than 4 bytes"), "{e}");
        assert!(!dir.path().join("root/big").exists());
        t.remove(Path::new("a")).unwrap();
        assert!(!dir.path().join("root/a").exists());
    }

    #[test]
    fn never_goes_through_a_symlink() {
        let (dir, t) = setup();
        symlink(dir.path(), dir.path().join("root/up")).unwrap();
        symlink("../canary", dir.path().join("root/c")).unwrap();
        for rel in ["up/canary", "up/new/x"] {
            let e = t
                .write_file(Path::new(rel), &mut &b"pwned"[..], 0o644, 10)
                .unwrap_err();
            assert!(matches!(e, TreeError::ThroughLink { .. }), "{rel}: {e}");
            assert!(e.to_string().contains("is a symlink"), "{e}");
        }
        assert!(t.subdir(Path::new("up/x"), true).is_err());
        assert!(t.create_dir_all(Path::new("up/y")).is_err());
        assert!(t.symlink(Path::new("up/l"), Path::new("x"), true).is_err());
        assert!(t.chown_all(Path::new("up/canary"), 0, 0).is_err());
        let e = t
            .hard_link(Path::new("up/canary"), Path::new("h"))
            .unwrap_err();
        assert!(matches!(e, TreeError::ThroughLink { .. }), "{e}");
        let e = t.hard_link(Path::new("c"), Path::new("h")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // Replacing the link itself is fine: the link goes, the file it named stays.
        t.write_file(Path::new("c"), &mut &b"mine"[..], 0o644, 10)
            .unwrap();
        t.remove(Path::new("up")).unwrap();
        assert_eq!(fs::read(dir.path().join("canary")).unwrap(), b"original");
        assert_eq!(fs::metadata(dir.path().join("canary")).unwrap().nlink(), 1);
        assert!(!dir.path().join("new").exists() && !dir.path().join("y").exists());
        assert!(matches!(
            t.write_file(Path::new("../x"), &mut &b""[..], 0o644, 1),
            Err(TreeError::BadPath(_))
        ));
    }

    #[test]
    fn removes_and_chowns_without_following_links() {
        let (dir, t) = setup();
        fs::create_dir_all(dir.path().join("root/d/e")).unwrap();
        fs::write(dir.path().join("root/d/e/f"), "x").unwrap();
        symlink(dir.path(), dir.path().join("root/d/out")).unwrap();
        let uid = fs::metadata(dir.path()).unwrap().uid();
        let gid = fs::metadata(dir.path()).unwrap().gid();
        t.chown_all(Path::new("d"), uid, gid).unwrap();
        t.remove(Path::new("d")).unwrap();
        assert!(!dir.path().join("root/d").exists());
        assert_eq!(fs::read(dir.path().join("canary")).unwrap(), b"original");
    }
}
