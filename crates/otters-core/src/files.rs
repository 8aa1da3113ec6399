//! Reading the project's own small files — the Agentfile, `Agentfile.lock`, `otters.toml`,
//! `.agentignore`, a capability list — with the limits every untrusted input gets.
//!
//! Takes: a path (and, for files inside a project, the directory they must stay in) or a stream,
//! and a size limit. Returns: the bytes, or a [`ReadError`] that names the file, what was wrong
//! and how to fix it. Must never: read more than the limit plus one byte, open anything but a
//! regular file (a FIFO would block, a device never ends), or follow a symlink of a confined
//! file out of its directory (an Agentfile linked to `/proc/self/environ` would otherwise be
//! printed in diagnostics, or embedded as the Agentfile layer).
//!
//! Confinement uses a directory handle (`cap-std`): the path is resolved below it by the kernel
//! one component at a time, so swapping a directory for a symlink during the read cannot lead
//! out either. Files are opened `O_NONBLOCK` and checked with `fstat` before the first read.

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt as _};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

/// The largest Agentfile otters reads: 1 MiB. A real Agentfile is a few kilobytes; long
/// prompts belong in files the Agentfile ADDs or references with `file://`.
pub const MAX_AGENTFILE: u64 = 1024 * 1024;
/// The largest `Agentfile.lock`: 4 MiB (tens of thousands of pins).
pub const MAX_LOCK: u64 = 4 * 1024 * 1024;
/// The largest `otters.toml`, `.agentignore` or `--capabilities` list: 1 MiB.
pub const MAX_SMALL_FILE: u64 = 1024 * 1024;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {}", path.display(), reason(source))]
    Io { path: PathBuf, source: io::Error },
    #[error("{} is larger than {}, the {what} limit{}", path.display(), size(*limit), too_large_hint(what))]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        limit: u64,
    },
    #[error("{} is a {kind}, not a regular file; give the path of the {what} itself", path.display())]
    NotRegular {
        path: PathBuf,
        what: &'static str,
        kind: &'static str,
    },
    #[error("{} is a symlink that leads outside {}; otters follows a symlinked {what} only inside that directory: copy the file there, or name the file it points to", path.display(), root.display())]
    Escapes {
        path: PathBuf,
        root: PathBuf,
        what: &'static str,
    },
}

impl ReadError {
    /// True when the file does not exist (callers for which a missing file is normal check it).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

fn too_large_hint(what: &str) -> &'static str {
    if what == "Agentfile" {
        "; move long text into files the Agentfile references (`CONTEXT NAME file://PATH`, `ADD`)"
    } else {
        ""
    }
}

/// An I/O error in lower case without the `(os error N)` suffix.
pub fn reason(e: &io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s).to_owned();
    let mut c = s.chars();
    c.next()
        .map_or(s.clone(), |f| f.to_lowercase().chain(c).collect())
}

/// `1 MiB`, `4 MiB`, `512 KiB`: a limit as people read it.
pub fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads at most `limit` bytes from a stream (standard input); more is [`ReadError::TooLarge`].
pub fn read_stream(
    r: impl Read,
    shown: &Path,
    what: &'static str,
    limit: u64,
) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: shown.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: shown.to_owned(),
            what,
            limit,
        });
    }
    Ok(bytes)
}

/// Reads a file the user named on the command line (`--config`, `--capabilities`): symlinks are
/// followed (the user chose the path), but it must be a regular file within `limit`.
pub fn read_named(path: &Path, what: &'static str, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nonblocking())
        .open(path)
        .map_err(io)?;
    read_open(file, path, what, limit)
}

/// Opens a file the user named on the command line to stream it whole (an attachment, a file to
/// hash): symlinks are followed, but it must be a regular file, so a FIFO or a device is refused
/// at once instead of blocking or never ending.
pub fn open_named(path: &Path, what: &'static str) -> Result<std::fs::File, ReadError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nonblocking())
        .open(path)
        .map_err(|source| ReadError::Io {
            path: path.to_owned(),
            source,
        })?;
    check_regular(&file, path, what)?;
    Ok(file)
}

/// Reads `root/rel`, following symlinks only while they stay inside `root`. `shown` is the path
/// to name in errors. `rel` must be relative and free of `..` (see [`split_inside`]).
pub fn read_confined(
    root: &Path,
    rel: &Path,
    shown: &Path,
    what: &'static str,
    limit: u64,
) -> Result<Vec<u8>, ReadError> {
    let io = |source| ReadError::Io {
        path: shown.to_owned(),
        source,
    };
    let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(io)?;
    let escapes = || ReadError::Escapes {
        path: shown.to_owned(),
        root: root.to_owned(),
        what,
    };
    // A symlink that leads out is refused with its own message; the same check is made again,
    // race-free, by the kernel-backed resolution of `open_with` below.
    if let (Ok(target), Ok(root_c)) = (
        std::fs::canonicalize(root.join(rel)),
        std::fs::canonicalize(root),
    ) {
        if !target.starts_with(&root_c) {
            return Err(escapes());
        }
    }
    let file = dir
        .open_with(
            rel,
            OpenOptions::new().read(true).custom_flags(nonblocking()),
        )
        .map_err(|e| {
            // cap-std refuses absolute link targets and `..` past the root with
            // PermissionDenied; say which link was refused rather than "permission denied".
            let is_link = dir
                .symlink_metadata(rel)
                .is_ok_and(|m| m.file_type().is_symlink());
            if e.kind() == io::ErrorKind::PermissionDenied && is_link {
                escapes()
            } else {
                io(e)
            }
        })?;
    read_open(file.into_std(), shown, what, limit)
}

/// Splits `path` into a directory that contains `root` lexically and the rest, when `path` is
/// `root` joined with plain names (`.` allowed); `None` when it lies elsewhere (`..`, another
/// absolute path).
pub fn split_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix(root).ok()?;
    let mut rel = PathBuf::new();
    for c in rest.components() {
        match c {
            Component::Normal(n) => rel.push(n),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!rel.as_os_str().is_empty()).then_some(rel)
}

/// The directory holding `path` and its file name, for confining a file to its own directory.
pub fn parent_and_name(path: &Path) -> (PathBuf, PathBuf) {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| path.to_owned(), PathBuf::from);
    (parent.to_owned(), name)
}

fn nonblocking() -> i32 {
    // Opening a FIFO without O_NONBLOCK waits for a writer; the type check then refuses it.
    rustix::fs::OFlags::NONBLOCK.bits().cast_signed()
}

/// Checks the opened file with `fstat` (a regular file within `limit`), then reads it.
fn read_open(
    file: std::fs::File,
    shown: &Path,
    what: &'static str,
    limit: u64,
) -> Result<Vec<u8>, ReadError> {
    let meta = check_regular(&file, shown, what)?;
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            path: shown.to_owned(),
            what,
            limit,
        });
    }
    read_stream(file, shown, what, limit)
}

/// The opened file's metadata, when it is a regular file (`fstat`: no race with the open).
fn check_regular(
    file: &std::fs::File,
    shown: &Path,
    what: &'static str,
) -> Result<std::fs::Metadata, ReadError> {
    use std::os::unix::fs::FileTypeExt as _;
    let meta = file.metadata().map_err(|source| ReadError::Io {
        path: shown.to_owned(),
        source,
    })?;
    let t = meta.file_type();
    let kind = if t.is_file() {
        None
    } else if t.is_dir() {
        Some("directory")
    } else if t.is_fifo() {
        Some("named pipe")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else if t.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    };
    if let Some(kind) = kind {
        return Err(ReadError::NotRegular {
            path: shown.to_owned(),
            what,
            kind,
        });
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn reads_within_the_limit_and_refuses_past_it() {
        let t = tmp();
        std::fs::write(t.path().join("a"), b"12345").unwrap();
        let got = read_confined(t.path(), Path::new("a"), Path::new("a"), "test", 5).unwrap();
        assert_eq!(got, b"12345");
        let e = read_confined(t.path(), Path::new("a"), Path::new("a"), "test", 4).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { limit: 4, .. }), "{e}");
        let e = read_stream(&b"123456"[..], Path::new("<stdin>"), "test", 5).unwrap_err();
        assert_eq!(
            e.to_string(),
            "<stdin> is larger than 5 bytes, the test limit"
        );
    }

    #[test]
    fn symlinks_are_followed_only_inside_the_root() {
        let t = tmp();
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/real"), b"inside").unwrap();
        std::fs::write(t.path().join("secret"), b"outside").unwrap();
        std::os::unix::fs::symlink("sub/real", root.join("in")).unwrap();
        std::os::unix::fs::symlink("../secret", root.join("out")).unwrap();
        std::os::unix::fs::symlink(t.path().join("secret"), root.join("abs")).unwrap();
        let read = |rel: &str| read_confined(&root, Path::new(rel), Path::new(rel), "test", 100);
        assert_eq!(read("in").unwrap(), b"inside");
        for rel in ["out", "abs"] {
            let e = read(rel).unwrap_err();
            assert!(matches!(e, ReadError::Escapes { .. }), "{rel}: {e}");
        }
    }

    #[test]
    fn only_regular_files_are_read() {
        let t = tmp();
        let e = read_named(Path::new("/dev/zero"), "test", 10).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::NotRegular {
                    kind: "character device",
                    ..
                }
            ),
            "{e}"
        );
        let e = read_confined(t.path(), Path::new("."), Path::new("."), "test", 10).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::NotRegular {
                    kind: "directory",
                    ..
                }
            ),
            "{e}"
        );
        let fifo = t.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let e = read_named(&fifo, "test", 10).unwrap_err();
        // Opened to stream (an attachment): refused the same way, before any read.
        assert!(matches!(
            open_named(&fifo, "test").unwrap_err(),
            ReadError::NotRegular {
                kind: "named pipe",
                ..
            }
        ));
        assert!(open_named(t.path(), "test").is_err());
        assert!(
            matches!(
                e,
                ReadError::NotRegular {
                    kind: "named pipe",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn split_inside_takes_plain_names_only() {
        let root = Path::new("ctx");
        assert_eq!(
            split_inside(root, Path::new("ctx/./a/Agentfile")),
            Some(PathBuf::from("a/Agentfile"))
        );
        assert_eq!(split_inside(root, Path::new("ctx/../x")), None);
        assert_eq!(split_inside(root, Path::new("other/x")), None);
        assert_eq!(split_inside(root, Path::new("ctx")), None);
    }
}
