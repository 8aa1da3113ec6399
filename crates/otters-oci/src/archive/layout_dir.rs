//! Writing images into an OCI image layout directory that otters does not own: the destination of
//! `otters build -o type=oci-layout,dest=DIR` (and `type=oci,tar=false`).
//!
//! Takes: the store, the images (with their tags) and the directory path. Returns: nothing, or
//! [`ArchiveError`]. Must never: follow a symbolic link (every component of the path, and every
//! name inside it, is opened relative to its parent's handle with `O_NOFOLLOW`), open a FIFO or
//! device (`O_NONBLOCK`, checked with `fstat`), write into a non-empty directory that is not an OCI
//! layout, or remove a file it did not create in this call (there is no temp collector here: a
//! killed export leaves its own `.otters-tmp-*` files, nothing else is touched). Files are written
//! whole under a fresh name created with `O_EXCL`, fsynced and renamed into place, `index.json`
//! last and under `flock(index.json.lock)`.

use super::referrers::{entries_for, Placement};
use super::{all_blobs, ArchiveError};
use crate::path_io::io_err;
use crate::spec::descriptor::Descriptor;
use crate::spec::descriptor::ManifestDoc;
use crate::store::layout::{index_json, Store, COPY_BUFFER};
use crate::validate::{validate_manifest, Kind as DocKind, MAX_MANIFEST};
use crate::Digest;
use otters_core::json::to_compact;
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// What a file in the destination is read or written as.
const FILE_FLAGS: OFlags = OFlags::NOFOLLOW
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

fn refused(dest: &Path, what: impl Into<String>) -> ArchiveError {
    ArchiveError::Destination {
        path: dest.to_owned(),
        what: what.into(),
    }
}

/// Why opening `shown` failed, in words that say what to do.
fn open_error(dest: &Path, shown: &Path, e: Errno) -> ArchiveError {
    match e {
        Errno::LOOP => refused(
            dest,
            format!(
                "{} is a symbolic link, and otters never writes through one",
                shown.display()
            ),
        ),
        Errno::NOTDIR => refused(dest, format!("{} is not a directory", shown.display())),
        other => io_err("open", shown)(other.into()).into(),
    }
}

/// Opens the directory `dest` one component at a time with `O_NOFOLLOW`, creating missing
/// components (mode 0777 less the umask).
pub fn open_dir_nofollow(dest: &Path) -> Result<OwnedFd, ArchiveError> {
    let start = if dest.is_absolute() { "/" } else { "." };
    let mut fd = rfs::open(start, DIR_FLAGS, Mode::empty())
        .map_err(|e| open_error(dest, Path::new(start), e))?;
    let mut shown = PathBuf::from(if dest.is_absolute() { "/" } else { "" });
    for c in dest.components() {
        let name: &OsStr = match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
            Component::ParentDir => OsStr::new(".."),
            Component::Normal(n) => n,
        };
        shown.push(name);
        fd = subdir(fd.as_fd(), name, true)
            .map_err(|e| open_error(dest, &shown, link_or(fd.as_fd(), name, e)))?;
    }
    Ok(fd)
}

/// Opens (creating when asked and missing) the directory `name` under `dir`, never following a
/// link.
fn subdir(dir: BorrowedFd<'_>, name: &OsStr, create: bool) -> Result<OwnedFd, Errno> {
    match rfs::openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Err(Errno::NOENT) if create => {
            match rfs::mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e),
            }
            rfs::openat(dir, name, DIR_FLAGS, Mode::empty())
        }
        other => other,
    }
}

/// `ELOOP` when `name` under `dir` is a symbolic link (which `O_DIRECTORY | O_NOFOLLOW` reports as
/// `ENOTDIR`), else `e`.
fn link_or(dir: BorrowedFd<'_>, name: &OsStr, e: Errno) -> Errno {
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => Errno::LOOP,
        _ => e,
    }
}

fn kind_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<FileType>> {
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn names(dir: BorrowedFd<'_>) -> io::Result<Vec<OsString>> {
    let mut d = rfs::Dir::read_from(dir)?;
    let mut out = Vec::new();
    while let Some(e) = d.read() {
        let name = e?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            out.push(std::os::unix::ffi::OsStringExt::from_vec(name));
        }
    }
    Ok(out)
}

/// Opens the regular file `name` under `dir` for reading: never through a link, never blocking on
/// a FIFO; anything but a regular file is refused. `None` when it does not exist.
pub fn open_regular_at(
    dir: BorrowedFd<'_>,
    name: &str,
    shown: &Path,
) -> Result<Option<File>, ArchiveError> {
    let fd = match rfs::openat(dir, name, OFlags::RDONLY | FILE_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => {
            return Err(refused(
                shown,
                format!("{name} is a symbolic link, and otters never follows one here"),
            ))
        }
        Err(e) => return Err(io_err("open", &shown.join(name))(e.into()).into()),
    };
    let file = File::from(fd);
    let meta = file.metadata().map_err(io_err("read", &shown.join(name)))?;
    if !meta.is_file() {
        return Err(refused(shown, format!("{name} is not a regular file")));
    }
    Ok(Some(file))
}

/// A file this call created (under a name no one else uses) and will rename into place or remove.
struct NewFile<'d> {
    dir: BorrowedFd<'d>,
    name: String,
    file: File,
    done: bool,
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

impl<'d> NewFile<'d> {
    fn create(dir: BorrowedFd<'d>, shown: &Path) -> Result<NewFile<'d>, ArchiveError> {
        for _ in 0..16 {
            let name = format!(
                ".otters-tmp-{}-{}",
                std::process::id(),
                SERIAL.fetch_add(1, Ordering::Relaxed)
            );
            match rfs::openat(
                dir,
                name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | FILE_FLAGS,
                Mode::from_raw_mode(0o666),
            ) {
                Ok(fd) => {
                    return Ok(NewFile {
                        dir,
                        name,
                        file: File::from(fd),
                        done: false,
                    })
                }
                Err(Errno::EXIST) => {}
                Err(e) => return Err(io_err("create a file in", shown)(e.into()).into()),
            }
        }
        Err(io_err("create a file in", shown)(io::Error::other("every name tried exists")).into())
    }

    /// Fsyncs the file and renames it to `to` (replacing a file or link of that name, never
    /// following it).
    fn persist(mut self, to: &str, shown: &Path) -> Result<(), ArchiveError> {
        let path = shown.join(to);
        self.file.sync_all().map_err(io_err("sync", &path))?;
        rfs::renameat(self.dir, self.name.as_str(), self.dir, to)
            .map_err(|e| io_err("rename into", &path)(e.into()))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for NewFile<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = rfs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

fn write_whole(
    dir: BorrowedFd<'_>,
    name: &str,
    bytes: &[u8],
    shown: &Path,
) -> Result<(), ArchiveError> {
    let mut f = NewFile::create(dir, shown)?;
    f.file
        .write_all(bytes)
        .map_err(io_err("write", &shown.join(name)))?;
    f.persist(name, shown)
}

/// Whether `hex` under `blobs` is already a regular file holding exactly that blob.
fn holds(blobs: BorrowedFd<'_>, digest: &Digest, size: u64, shown: &Path) -> bool {
    let Ok(Some(file)) = open_regular_at(blobs, digest.hex(), shown) else {
        return false;
    };
    if file.metadata().map(|m| m.len()).ok() != Some(size) {
        return false;
    }
    let mut w = crate::spec::digest::HashingWriter::new(io::sink());
    io::copy(&mut io::BufReader::with_capacity(COPY_BUFFER, file), &mut w).is_ok()
        && w.finish().0 == *digest
}

/// Writes the images `(root, tags)` (and the referrers the store holds for them, as untagged
/// entries naming their subject, as [`super::save_many`] does) into the OCI layout `dest`, which
/// is created when missing, or added to when it already is a layout: entries of the same ref
/// names are replaced, others kept. `dest` is untrusted (see the module header).
pub fn export_layout(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
    dest: &Path,
) -> Result<(), ArchiveError> {
    let blobs = all_blobs(store, images)?;
    let new_entries = entries_for(store, images, Placement::Entries)?.entries;
    let dir = open_dir_nofollow(dest)?;
    let dir = dir.as_fd();
    let present = names(dir).map_err(io_err("list", dest))?;
    let is_layout = kind_at(dir, "oci-layout")
        .map_err(io_err("read", dest))?
        .is_some();
    if !present.is_empty() && !is_layout {
        return Err(refused(
            dest,
            "the directory is not empty and is not an OCI image layout (it has no `oci-layout` file); name a new or empty directory, or an existing layout",
        ));
    }
    let lock = rfs::openat(
        dir,
        "index.json.lock",
        OFlags::WRONLY | OFlags::CREATE | FILE_FLAGS,
        Mode::from_raw_mode(0o666),
    )
    .map_err(|e| open_error(dest, &dest.join("index.json.lock"), e))?;
    let lock = File::from(lock);
    if !lock.metadata().is_ok_and(|m| m.is_file()) {
        return Err(refused(dest, "index.json.lock is not a regular file"));
    }
    lock.lock()
        .map_err(io_err("lock", &dest.join("index.json.lock")))?;

    let blobs_dir = subdir(dir, OsStr::new("blobs"), true).map_err(|e| {
        open_error(
            dest,
            &dest.join("blobs"),
            link_or(dir, OsStr::new("blobs"), e),
        )
    })?;
    let shown_blobs = dest.join("blobs/sha256");
    let sha = subdir(blobs_dir.as_fd(), OsStr::new("sha256"), true).map_err(|e| {
        let e = link_or(blobs_dir.as_fd(), OsStr::new("sha256"), e);
        open_error(dest, &shown_blobs, e)
    })?;
    let sha = sha.as_fd();
    for (digest, size) in &blobs {
        if holds(sha, digest, *size, &shown_blobs) {
            continue;
        }
        let mut out = NewFile::create(sha, &shown_blobs)?;
        let mut blob = store.open_verified(digest)?;
        let copied = io::copy(
            &mut io::BufReader::with_capacity(COPY_BUFFER, &mut blob),
            &mut out.file,
        );
        blob.finish()?;
        copied.map_err(io_err("write", &shown_blobs.join(digest.hex())))?;
        out.persist(digest.hex(), &shown_blobs)?;
    }
    File::from(
        rfs::openat(sha, ".", DIR_FLAGS, Mode::empty())
            .map_err(|e| open_error(dest, &shown_blobs, e))?,
    )
    .sync_all()
    .map_err(io_err("sync", &shown_blobs))?;

    let mut entries = if is_layout {
        read_index_at(dir, dest)?
    } else {
        Vec::new()
    };
    merge_entries(&mut entries, new_entries);
    if !is_layout {
        write_whole(
            dir,
            "oci-layout",
            br#"{"imageLayoutVersion":"1.0.0"}"#,
            dest,
        )?;
    }
    let bytes = to_compact(&index_json(&entries)).unwrap_or_default();
    write_whole(dir, "index.json", &bytes, dest)?;
    File::from(
        rfs::openat(dir, ".", DIR_FLAGS, Mode::empty()).map_err(|e| open_error(dest, dest, e))?,
    )
    .sync_all()
    .map_err(io_err("sync", dest))?;
    drop(lock);
    Ok(())
}

/// The entries of the layout's `index.json`, read through `dir` (at most [`MAX_MANIFEST`] bytes,
/// a regular file, validated as an image index).
fn read_index_at(dir: BorrowedFd<'_>, shown: &Path) -> Result<Vec<Descriptor>, ArchiveError> {
    let Some(file) = open_regular_at(dir, "index.json", shown)? else {
        return Ok(Vec::new());
    };
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err("read", &shown.join("index.json")))?;
    let bad = |what: String| ArchiveError::Layout {
        path: shown.to_owned(),
        what,
    };
    if bytes.len() > MAX_MANIFEST {
        return Err(bad(format!(
            "index.json is more than the {MAX_MANIFEST}-byte limit"
        )));
    }
    validate_manifest(&bytes, None, Some(DocKind::Index))
        .map_err(|why| bad(format!("index.json is refused: {why}")))?;
    let doc = ManifestDoc::parse(&bytes).map_err(|e| bad(format!("index.json: {e}")))?;
    Ok(doc.manifests)
}

/// Adds `new` to `entries`: a tagged entry replaces the entry of that ref name, an untagged one is
/// added once per digest; sorted by ref name then digest, as the store keeps its index.
fn merge_entries(entries: &mut Vec<Descriptor>, new: Vec<Descriptor>) {
    for d in new {
        match d.ref_name() {
            Some(name) => entries.retain(|e| e.ref_name() != Some(name)),
            None => entries.retain(|e| !(e.ref_name().is_none() && e.digest == d.digest)),
        }
        entries.push(d);
    }
    entries.sort_by(|a, b| (a.ref_name(), &a.digest).cmp(&(b.ref_name(), &b.digest)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::descriptor::MANIFEST_V1;
    use std::fs;

    fn image(store: &Store) -> Descriptor {
        let (layer, n) = store.put_blob_bytes(b"data").unwrap();
        let (cfg, cn) = store.put_blob_bytes(b"{}").unwrap();
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"x/c","digest":"{cfg}","size":{cn}}},"layers":[{{"mediaType":"x/l","digest":"{layer}","size":{n}}}]}}"#
        );
        store
            .put_manifest(manifest.as_bytes(), MANIFEST_V1)
            .unwrap()
    }

    #[test]
    fn writes_and_adds_to_a_layout_and_refuses_links_and_foreign_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s")).unwrap();
        let root = image(&store);
        let out = dir.path().join("a/b");
        export_layout(&store, &[(root.clone(), vec!["m:1".into()])], &out).unwrap();
        export_layout(&store, &[(root.clone(), vec!["m:2".into()])], &out).unwrap();
        let index = fs::read_to_string(out.join("index.json")).unwrap();
        assert!(
            index.contains("\"m:1\"") && index.contains("\"m:2\""),
            "{index}"
        );
        assert!(out.join("oci-layout").is_file());
        let left: Vec<_> = fs::read_dir(out.join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{left:?}");

        let other = dir.path().join("other");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("notes"), b"mine").unwrap();
        let e = export_layout(&store, &[(root.clone(), vec![])], &other).unwrap_err();
        assert!(e.to_string().contains("not an OCI image layout"), "{e}");
        assert_eq!(fs::read_dir(&other).unwrap().count(), 1);

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        let e = export_layout(&store, &[(root, vec![])], &link.join("x")).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
    }
}
