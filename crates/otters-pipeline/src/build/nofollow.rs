//! Opening build-context files and directories without ever following a symlink, so that what the
//! build checked is what it reads even when the context changes underneath it.
//!
//! Takes: absolute canonical paths (as the build's input resolver gives them: no symlink in
//! any component) or a directory handle and one name in it. Returns: open handles. Every
//! component is opened relative to its parent's handle with `O_NOFOLLOW`, so a symlink (or a
//! non-directory) put in place of any component after the check makes the open fail instead of
//! leading elsewhere; leaves are opened `O_NONBLOCK | O_NOCTTY`, so a FIFO or terminal put in
//! place of a file can neither block the build nor become its terminal, and a leaf's type is
//! checked on the opened handle (`fstat`). Must never: follow a symlink, or open a device, FIFO or
//! socket found while listing.

use rustix::fs::{openat, statat, AtFlags, FileType, Mode, OFlags, CWD};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// What a context entry is, by `lstat`, before anything is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device: never opened.
    Special,
}

/// Flags of a directory that is only walked through (`O_PATH` where the system has it, so a
/// directory with search but no read permission can still be crossed).
fn through_flags() -> OFlags {
    let base = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        base | OFlags::PATH
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        base | OFlags::RDONLY
    }
}

/// `ELOOP`/`ENOTDIR` from an `O_NOFOLLOW`/`O_DIRECTORY` open mean a symlink or another kind of
/// file now stands where the check saw a directory or a file.
fn replaced(name: &OsStr, e: rustix::io::Errno) -> io::Error {
    if e == rustix::io::Errno::NOENT {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "`{}` disappeared after it was checked; build again when the context is stable",
                name.to_string_lossy().escape_debug()
            ),
        )
    } else if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
        io::Error::other(format!(
            "`{}` was replaced (by a symlink or another kind of file) after it was checked; build again when the context is stable",
            name.to_string_lossy().escape_debug()
        ))
    } else {
        e.into()
    }
}

/// Opens the directories of absolute `path` from `/`, one component at a time; returns the
/// handle of the parent of the last component and the last component.
fn walk_to_parent(path: &Path) -> io::Result<(OwnedFd, &OsStr)> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(n) => parts.push(n),
            _ => {
                return Err(io::Error::other(format!(
                    "{} is not an absolute canonical path",
                    path.display()
                )))
            }
        }
    }
    if !path.is_absolute() {
        return Err(io::Error::other(format!(
            "{} is not an absolute canonical path",
            path.display()
        )));
    }
    let Some((leaf, dirs)) = parts.split_last() else {
        return Err(io::Error::other("the root directory is not a build input"));
    };
    let mut dir: OwnedFd = openat(CWD, "/", through_flags(), Mode::empty())?;
    for d in dirs {
        dir = openat(&dir, *d, through_flags(), Mode::empty()).map_err(|e| replaced(d, e))?;
    }
    Ok((dir, leaf))
}

/// The kind of `name` in `dir`, without following it.
pub fn kind_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Kind> {
    Ok(stat_at(dir, name)?.0)
}

/// Opens directory `name` in `dir` for listing; a symlink or non-directory there is an error.
pub fn open_dir_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| replaced(name, e))
}

/// Opens regular file `name` in `dir` for reading; returns it with its metadata (from the handle).
pub fn open_file_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<(File, std::fs::Metadata)> {
    if kind_at(dir, name)? == Kind::Special {
        return Err(not_regular(name));
    }
    open_walked_at(dir, name)
}

fn not_regular(name: &OsStr) -> io::Error {
    io::Error::other(format!(
        "`{}` is not a regular file or directory",
        name.to_string_lossy().escape_debug()
    ))
}

/// Opens the directory at absolute canonical `path` for listing.
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let (parent, leaf) = walk_to_parent(path)?;
    open_dir_at(parent.as_fd(), leaf)
}

/// Opens the regular file at absolute canonical `path`.
pub fn open_file(path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    let (parent, leaf) = walk_to_parent(path)?;
    open_file_at(parent.as_fd(), leaf)
}

/// The kind of the entry at absolute canonical `path`, reached without following links.
pub fn kind(path: &Path) -> io::Result<Kind> {
    let (parent, leaf) = walk_to_parent(path)?;
    kind_at(parent.as_fd(), leaf)
}

/// The names in directory `dir` (without `.` and `..`), sorted by bytes, each with the kind the
/// listing gives (`None` where the file system does not say: ask [`stat_at`]). A hint only: the
/// entry can be replaced after it is listed, so whatever is opened is checked again.
pub fn list(dir: BorrowedFd<'_>) -> io::Result<Vec<(std::ffi::OsString, Option<Kind>)>> {
    let mut names = Vec::new();
    let mut d = rustix::fs::Dir::read_from(dir)?;
    while let Some(e) = d.read() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            let kind = match e.file_type() {
                FileType::Unknown => None,
                t => Some(kind_of(t)),
            };
            names.push((OsStr::from_bytes(n).to_owned(), kind));
        }
    }
    names.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(names)
}

/// `name` in `dir`, not followed (`lstat`): its kind and its metadata.
pub fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<(Kind, rustix::fs::Stat)> {
    let st = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| replaced(name, e))?;
    Ok((kind_of(FileType::from_raw_mode(st.st_mode)), st))
}

fn kind_of(t: FileType) -> Kind {
    match t {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Special,
    }
}

/// Opens `name` in `dir`, which a walk found to be a regular file a moment ago, without asking
/// its kind again: `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`, then checked on the handle to be a regular
/// file. The caller compares the handle's stamp with the one the walk saw.
pub fn open_walked_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<(File, std::fs::Metadata)> {
    let fd = openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| replaced(name, e))?;
    let file = File::from(fd);
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular(name));
    }
    Ok((file, meta))
}

/// The target of symlink `name` in `dir`.
pub fn read_link_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Vec<u8>> {
    match rustix::fs::readlinkat(dir, name, Vec::new()) {
        Ok(t) => Ok(t.into_bytes()),
        // EINVAL: it is no longer a symlink.
        Err(e) if e == rustix::io::Errno::INVAL => Err(replaced(name, rustix::io::Errno::LOOP)),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn follows_nothing() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        fs::create_dir_all(root.join("d/e")).unwrap();
        fs::write(root.join("d/e/f"), "f").unwrap();
        fs::write(root.join("outside"), "secret").unwrap();
        symlink(root.join("outside"), root.join("d/link")).unwrap();
        symlink(root.join("d/e"), root.join("dlink")).unwrap();

        let (mut file, meta) = open_file(&root.join("d/e/f")).unwrap();
        assert_eq!(meta.len(), 1);
        let mut text = String::new();
        io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!(text, "f");
        for bad in ["d/link", "dlink/f"] {
            let e = open_file(&root.join(bad)).unwrap_err();
            assert!(e.to_string().contains("was replaced"), "{bad}: {e}");
        }
        assert!(open_dir(&root.join("dlink")).is_err());
        assert!(open_dir(&root.join("d/e")).is_ok());
        assert_eq!(kind(&root.join("d/link")).unwrap(), Kind::Symlink);
        assert_eq!(kind(&root.join("d")).unwrap(), Kind::Dir);
        let d = open_dir(&root.join("d")).unwrap();
        let listed = list(d.as_fd()).unwrap();
        let names: Vec<_> = listed.iter().map(|(n, _)| n.as_bytes()).collect();
        assert_eq!(names, [b"e".as_slice(), b"link"]);
        // The listing's kinds, where the file system gives them, agree with `lstat`.
        for (name, listed) in &listed {
            if let Some(k) = listed {
                assert_eq!(*k, stat_at(d.as_fd(), name).unwrap().0, "{name:?}");
            }
        }
        assert_eq!(
            read_link_at(d.as_fd(), OsStr::new("link")).unwrap(),
            root.join("outside").as_os_str().as_bytes()
        );
        assert!(open_file(Path::new("relative/x")).is_err());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        rustix::fs::mkfifoat(CWD, root.join("fifo"), Mode::from_raw_mode(0o600)).unwrap();
        assert_eq!(kind(&root.join("fifo")).unwrap(), Kind::Special);
        let e = open_file(&root.join("fifo")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // Even when the lstat saw a file, the open does not block and the handle is refused.
        let dir = open_dir(&root).unwrap();
        let e = open_file_at(dir.as_fd(), OsStr::new("fifo")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
