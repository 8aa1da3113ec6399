//! Writing a project file back with new contents: `otters fmt` and `otters lint --fix`.
//!
//! Takes: the path of an existing regular file (callers resolve or refuse symlinks first) and
//! its new bytes. Returns: how the file was written ([`Rewritten`]), or a [`RewriteError`] that
//! names the file, what stopped the write and how to go on. Must never: write a file that is
//! read-only (a rename needs only the directory's permission, so the old temp-and-rename writer
//! replaced `chmod a-w` files, even as a normal user), or break a hard link (a rename gives the
//! path a new inode and leaves the other links on the old text).
//!
//! A file with one link is replaced atomically: a temporary file beside it, given its mode (and,
//! when allowed, its owner and group), synced, renamed over it, the directory synced — a crash
//! leaves the old file or the new one. A file with other hard links is written in place, through
//! the same inode, so every link sees the new text: new bytes from offset 0, the file cut to
//! their length, synced. That write is not atomic (a crash in it can leave a mix of old and new
//! text); `docs/fmt.md` says so.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// How a file was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewritten {
    /// A new file renamed over the old one (the file had one link).
    Replaced,
    /// The same inode written in place (the file had other hard links).
    InPlace { links: u64 },
}

/// Why a file was not written.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("{} is read-only (mode {mode:04o}), so otters did not change it; make it writable (`chmod u+w {}`) and run again", path.display(), path.display())]
    ReadOnly { path: PathBuf, mode: u32 },
    #[error("{} is not a regular file, so otters did not change it", path.display())]
    NotRegular { path: PathBuf },
    #[error("cannot {action} {}: {}", path.display(), crate::files::reason(source))]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

/// Writes `bytes` as the new contents of the regular file at `path` (see the module header).
pub fn rewrite(path: &Path, bytes: &[u8]) -> Result<Rewritten, RewriteError> {
    let io = |action: &'static str| {
        move |source| RewriteError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    };
    // Opened without following a final symlink and without blocking (a FIFO), then checked on
    // the handle, so the checks and the in-place write are about the same file.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(open_flags())
        .open(path)
        .map_err(io("open"))?;
    let meta = file.metadata().map_err(io("inspect"))?;
    if !meta.file_type().is_file() {
        return Err(RewriteError::NotRegular {
            path: path.to_owned(),
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    // No write bit at all is read-only for everyone, root included (root passes `access`); a
    // file another user owns without a write bit for us fails `access`.
    let writable =
        mode & 0o222 != 0 && rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok();
    if !writable {
        return Err(RewriteError::ReadOnly {
            path: path.to_owned(),
            mode,
        });
    }
    if meta.nlink() > 1 {
        drop(file);
        write_in_place(path, bytes).map_err(io("write"))?;
        return Ok(Rewritten::InPlace {
            links: meta.nlink(),
        });
    }
    replace(path, bytes, &meta)?;
    Ok(Rewritten::Replaced)
}

/// No final symlink, no waiting on a FIFO (the type check then refuses it).
fn open_flags() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK)
        .bits()
        .cast_signed()
}

/// New bytes from offset 0 through the same inode, then the file cut to their length and synced.
fn write_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .custom_flags(open_flags())
        .open(path)?;
    f.write_all(bytes)?;
    f.set_len(bytes.len() as u64)?;
    f.sync_all()
}

/// A temporary file beside `path` with its mode (and owner, when allowed), synced, renamed over
/// it; then the directory synced.
fn replace(path: &Path, bytes: &[u8], meta: &std::fs::Metadata) -> Result<(), RewriteError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let err = |action: &'static str, p: &Path| {
        let p = p.to_owned();
        move |source| RewriteError::Io {
            action,
            path: p,
            source,
        }
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".otters-write-")
        .tempfile_in(dir)
        .map_err(err("write a temporary file in", dir))?;
    tmp.write_all(bytes)
        .and_then(|()| keep_owner(tmp.as_file(), meta))
        .and_then(|()| tmp.as_file().set_permissions(meta.permissions()))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(err("write a temporary file in", dir))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .map_err(err("replace", path))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Gives the new file the old one's owner and group where that is allowed (root; or a group
/// the user is in). Refused changes leave the new file as created: the user's own.
fn keep_owner(f: &File, meta: &std::fs::Metadata) -> io::Result<()> {
    use rustix::fs::{fchown, Gid, Uid};
    let new = f.metadata()?;
    if (new.uid(), new.gid()) == (meta.uid(), meta.gid()) {
        return Ok(());
    }
    let uid = Uid::from_raw(meta.uid());
    let gid = Gid::from_raw(meta.gid());
    if fchown(f, Some(uid), Some(gid)).is_err() {
        let _ = fchown(f, None, Some(gid));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_single_link_file_is_replaced_with_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("Agentfile");
        fs::write(&p, "old text that is longer\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(rewrite(&p, b"new\n").unwrap(), Rewritten::Replaced);
        assert_eq!(fs::read_to_string(&p).unwrap(), "new\n");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn a_hard_linked_file_is_written_through_its_inode() {
        let d = tempfile::tempdir().unwrap();
        let (p, q) = (d.path().join("Agentfile"), d.path().join("other"));
        fs::write(&p, "old text that is longer\n").unwrap();
        fs::hard_link(&p, &q).unwrap();
        let ino = fs::metadata(&p).unwrap().ino();
        assert_eq!(
            rewrite(&p, b"new\n").unwrap(),
            Rewritten::InPlace { links: 2 }
        );
        assert_eq!(fs::metadata(&p).unwrap().ino(), ino);
        assert_eq!(fs::read_to_string(&q).unwrap(), "new\n");
    }

    #[test]
    fn a_read_only_file_is_refused_and_untouched() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("Agentfile");
        fs::write(&p, "old\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
        let e = rewrite(&p, b"new\n").unwrap_err();
        assert!(
            matches!(e, RewriteError::ReadOnly { mode: 0o444, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("chmod u+w"), "{e}");
        assert_eq!(fs::read_to_string(&p).unwrap(), "old\n");
    }

    #[test]
    fn a_symlink_or_a_fifo_is_not_written() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("real");
        fs::write(&p, "old\n").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink("real", &link).unwrap();
        assert!(rewrite(&link, b"new\n").is_err());
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        assert!(matches!(
            rewrite(&fifo, b"new\n"),
            Err(RewriteError::NotRegular { .. })
        ));
        assert_eq!(fs::read_to_string(&p).unwrap(), "old\n");
    }
}
