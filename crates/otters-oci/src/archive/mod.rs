//! oci-archive files: an OCI image layout in one tar (what `skopeo copy … oci-archive:` reads and
//! writes), for `otters save`, `otters load` and `otters build --output type=oci-archive`.
//!
//! Takes: a store and a manifest descriptor (save), or an archive file (load). Returns: the written
//! file, or the descriptors and tags loaded. Must never: hold a blob in memory (blobs stream), write
//! the destination in place (temp + fsync + rename), or load a blob whose bytes do not match its
//! name. Archives are deterministic: entries sorted, mode 0644/0755, uid/gid 0, mtime 0.

pub mod layout_dir;
pub mod local;
mod names;
pub mod referrers;
pub mod tar_reader;

use crate::archive::tar_reader::{Kind as EntryKind, TarError, TarReader};
use crate::path_io::{io_err, PathIoError};
use crate::spec::descriptor::{Descriptor, ManifestDoc, ANN_REF_NAME};
use crate::spec::graph;
use crate::store::layout::{index_json, Store, StoreError, COPY_BUFFER};
use crate::validate::{validate_manifest, Kind as DocKind, MAX_MANIFEST};
use crate::{Digest, MediaType};
use otters_core::json::to_compact;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error("{}: {what}; is it an oci-archive (as written by `otters save` or `skopeo copy … oci-archive:`)?", path.display())]
    Malformed { path: PathBuf, what: String },
    #[error("{}: {what}; is it an OCI image layout (as written by `skopeo copy … oci:DIR`)?", path.display())]
    Layout { path: PathBuf, what: String },
    #[error("cannot write an oci-archive to {}: {what}; name a regular file (or a FIFO or character device, which is written as a stream)", path.display())]
    Output { path: PathBuf, what: String },
    #[error("cannot write the OCI layout {}: {what}", path.display())]
    Destination { path: PathBuf, what: String },
}

/// Every blob reachable from `root` (the manifest itself, its config and layers, and for an
/// index every child manifest), in a stable order.
pub fn reachable(store: &Store, root: &Descriptor) -> Result<BTreeSet<(Digest, u64)>, StoreError> {
    graph::walk(
        [root.clone()],
        |d| (d.digest.clone(), d.size),
        |d, _| {
            if !d.media_type.is_manifest_or_index() {
                if !store.has_blob(&d.digest) {
                    return Err(StoreError::MissingBlob(d.digest.clone()));
                }
                return Ok(Vec::new());
            }
            let bytes = store.read_blob(&d.digest)?;
            let doc = ManifestDoc::parse(&bytes).map_err(|e| StoreError::BadIndex {
                path: store.blob_path(&d.digest),
                source: e,
            })?;
            Ok(doc.children().cloned().collect())
        },
    )
}

fn tar_header(name: &str, size: u64, dir: bool) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    let _ = h.set_path(name);
    h.set_entry_type(if dir {
        tar::EntryType::Directory
    } else {
        tar::EntryType::Regular
    });
    h.set_mode(if dir { 0o755 } else { 0o644 });
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h.set_size(size);
    h.set_cksum();
    h
}

/// Writes the image `root` (tagged with `tags` inside the archive) to `dest`.
pub fn save(
    store: &Store,
    root: &Descriptor,
    tags: &[String],
    dest: &Path,
) -> Result<(), ArchiveError> {
    save_many(store, &[(root.clone(), tags.to_vec())], dest)
}

/// Writes several images, each `(root, tags)`, into one archive at `dest` (a temp file beside
/// it, fsynced, then renamed: `dest` is never left half written). A FIFO or character device at
/// `dest` is written as a stream, never replaced (see [`open_stream_dest`]).
pub fn save_many(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
    dest: &Path,
) -> Result<(), ArchiveError> {
    let dir = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Checked before the temp file exists: a missing blob leaves nothing behind.
    let blobs = all_blobs(store, images)?;
    if let Some(stream) = open_stream_dest(dest)? {
        write_archive(
            store,
            images,
            &blobs,
            BufWriter::with_capacity(COPY_BUFFER, stream),
            dest,
        )?
        .into_inner()
        .map_err(|e| io_err("write", dest)(e.into_error()))?;
        return Ok(());
    }
    let tmp = tempfile::Builder::new()
        // 0666 less the umask, as `cp` or `docker save` would create it: others may read what is
        // shared (a CI step, another user); the credentials file is the one kept 0600.
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .prefix(".otters-save-")
        .tempfile_in(dir)
        .map_err(io_err("create a temporary file in", dir))?;
    let file = tmp.reopen().map_err(io_err("open", tmp.path()))?;
    let buffered = write_archive(
        store,
        images,
        &blobs,
        BufWriter::with_capacity(COPY_BUFFER, file),
        dest,
    )?;
    let file = buffered
        .into_inner()
        .map_err(|e| io_err("write", dest)(e.into_error()))?;
    file.sync_all().map_err(io_err("sync", dest))?;
    tmp.persist(dest)
        .map_err(|e| io_err("rename into", dest)(e.error))?;
    Ok(())
}

/// Writes `bytes` to the output file `dest` as [`save_many`] writes an archive: into a FIFO or
/// character device as a stream, otherwise through a temp file beside it, fsynced and renamed (a
/// link at `dest` is replaced, never followed; `dest` is never left half written).
pub fn write_output(dest: &Path, bytes: &[u8]) -> Result<(), ArchiveError> {
    if let Some(mut stream) = open_stream_dest(dest)? {
        stream.write_all(bytes).map_err(io_err("write", dest))?;
        return Ok(());
    }
    let dir = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .prefix(".otters-out-")
        .tempfile_in(dir)
        .map_err(io_err("create a temporary file in", dir))?;
    tmp.write_all(bytes).map_err(io_err("write", dest))?;
    tmp.as_file().sync_all().map_err(io_err("sync", dest))?;
    tmp.persist(dest)
        .map_err(|e| io_err("rename into", dest)(e.error))?;
    Ok(())
}

/// What `dest` is, for a writer that replaces files by renaming: `None` when it may be replaced
/// (nothing there, a regular file, or a link that leads to neither a FIFO nor a character
/// device); the opened stream when it is a FIFO or character device (`/dev/null`, a named pipe),
/// which is written into, never replaced; an error for anything else (a directory, a block
/// device, a socket) or a terminal.
pub fn open_stream_dest(dest: &Path) -> Result<Option<File>, ArchiveError> {
    use std::os::unix::fs::FileTypeExt;
    let kind = match std::fs::metadata(dest) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("look at", dest)(e).into()),
    };
    let refuse = |what: &str| ArchiveError::Output {
        path: dest.to_owned(),
        what: what.to_owned(),
    };
    if kind.is_file() {
        return Ok(None);
    }
    if !kind.is_fifo() && !kind.is_char_device() {
        return Err(refuse(if kind.is_dir() {
            "it is a directory"
        } else if kind.is_block_device() {
            "it is a block device, which otters never replaces or writes"
        } else {
            "it is neither a regular file, a FIFO nor a character device"
        }));
    }
    // Opened for writing without creating or truncating: the node itself stays as it is.
    let file = File::options()
        .write(true)
        .open(dest)
        .map_err(io_err("open", dest))?;
    if std::io::IsTerminal::is_terminal(&file) {
        return Err(refuse("it is a terminal"));
    }
    Ok(Some(file))
}

/// Writes several images into one archive on `out` (standard output: `otters save a b | …`).
/// Every blob is checked to be in the store before the first byte is written; a blob found
/// damaged while copied ends the stream early with an error, which a reader sees as a truncated
/// archive. `label` names the destination in messages.
pub fn save_stream<W: Write>(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
    out: W,
    label: &Path,
) -> Result<(), ArchiveError> {
    let blobs = all_blobs(store, images)?;
    let mut out = write_archive(store, images, &blobs, out, label)?;
    out.flush().map_err(io_err("write", label))?;
    Ok(())
}

/// Every blob the images and their referrers reach, each once, in a stable order.
pub(crate) fn all_blobs(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
) -> Result<BTreeSet<(Digest, u64)>, StoreError> {
    let mut blobs = BTreeSet::new();
    for (root, _) in images {
        blobs.extend(reachable(store, root)?);
    }
    for (_, r) in referrers::referrers_of(store, images)? {
        blobs.extend(reachable(store, &r)?);
    }
    Ok(blobs)
}

/// One `index.json` entry per tag of each image (with its ref name annotation), or one entry
/// without a ref name for an image without tags.
pub(crate) fn named_entries(images: &[(Descriptor, Vec<String>)]) -> Vec<Descriptor> {
    let mut entries = Vec::new();
    for (root, tags) in images {
        for t in tags {
            let mut d = root.clone();
            d.annotations.insert(ANN_REF_NAME.to_owned(), t.clone());
            if t.contains('@') {
                // A name by digest (`repo@sha256:…`): containerd's own annotation too, which
                // `ctr image import` reads first.
                d.annotations
                    .insert(names::ANN_CONTAINERD_NAME.to_owned(), t.clone());
            }
            entries.push(d);
        }
        if tags.is_empty() {
            let mut d = root.clone();
            d.annotations.remove(ANN_REF_NAME);
            entries.push(d);
        }
    }
    entries
}

fn write_archive<W: Write>(
    store: &Store,
    images: &[(Descriptor, Vec<String>)],
    blobs: &BTreeSet<(Digest, u64)>,
    out: W,
    dest: &Path,
) -> Result<W, ArchiveError> {
    let written = referrers::entries_for(store, images, referrers::Placement::Catalogue)?;
    let index = to_compact(&index_json(&written.entries)).unwrap_or_default();
    let mut b = tar::Builder::new(out);
    let w = |r: io::Result<()>| r.map_err(io_err("write", dest));
    let layout = br#"{"imageLayoutVersion":"1.0.0"}"#;
    w(b.append(&tar_header("blobs/", 0, true), io::empty()))?;
    w(b.append(&tar_header("blobs/sha256/", 0, true), io::empty()))?;
    // The catalogue of referrers (small, written from memory) in digest order with the rest.
    let catalogue = written.catalogue.map(|c| (Digest::of(&c), c));
    let mut blobs: Vec<(&Digest, Option<&[u8]>)> = blobs.iter().map(|(d, _)| (d, None)).collect();
    if let Some((d, c)) = &catalogue {
        if !blobs.iter().any(|(b, _)| *b == d) {
            blobs.push((d, Some(c)));
            blobs.sort_by(|a, b| a.0.cmp(b.0));
        }
    }
    for (digest, inline) in blobs {
        if let Some(bytes) = inline {
            w(b.append(
                &tar_header(
                    &format!("blobs/sha256/{}", digest.hex()),
                    bytes.len() as u64,
                    false,
                ),
                bytes,
            ))?;
            continue;
        }
        // Checked while copied: a blob damaged in the store is never exported under its name.
        let mut blob = store.open_verified(digest)?;
        let size = blob.size();
        let appended = b.append(
            &tar_header(&format!("blobs/sha256/{}", digest.hex()), size, false),
            (&mut blob).take(size),
        );
        let checked = blob.finish();
        checked?;
        w(appended)?;
    }
    w(b.append(
        &tar_header("index.json", index.len() as u64, false),
        &index[..],
    ))?;
    w(b.append(
        &tar_header("oci-layout", layout.len() as u64, false),
        &layout[..],
    ))?;
    Ok(b.into_inner().map_err(io_err("write", dest))?)
}

/// Loads every image of the archive at `src` into `store`; returns (local name, descriptor) for
/// each image entry of `index.json` (the name [`local::entry_name`] gives, empty when none: a
/// bare tag such as skopeo's `1.0` stays in the descriptor's annotations), and records the
/// referrers whose subject the archive holds ([`referrers::admit`]). Tags are not applied here.
pub fn load(store: &Store, src: &Path) -> Result<referrers::Admitted, ArchiveError> {
    let file = File::open(src).map_err(io_err("open", src))?;
    load_stream(store, file, src)
}

/// [`load`] from a stream (standard input); `src` names it in messages. A stream that ends early
/// fails (inside an entry, or before `index.json` and every blob it names were read): blobs
/// read whole before that stay in the store untagged (`otters prune` removes them), nothing is
/// returned to tag.
pub fn load_stream(
    store: &Store,
    input: impl Read,
    src: &Path,
) -> Result<referrers::Admitted, ArchiveError> {
    let malformed = |what: String| ArchiveError::Malformed {
        path: src.to_owned(),
        what,
    };
    // The bounded reader: an archive's GNU long names and PAX records are capped before they are
    // read, so a hostile archive cannot make `load` allocate without end.
    let mut ar = TarReader::new(io::BufReader::with_capacity(COPY_BUFFER, input));
    let mut index = None;
    let read_err = |source| ArchiveError::from(io_err("read", src)(source));
    while let Some(entry) = ar.next_entry().map_err(|e| match e {
        TarError::Io(e) => read_err(e),
        other => malformed(other.to_string()),
    })? {
        if entry.kind != EntryKind::Regular {
            continue;
        }
        let path = String::from_utf8_lossy(&entry.path)
            .trim_start_matches("./")
            .to_owned();
        let mut data = ar.data();
        if path == "index.json" {
            let mut bytes = Vec::new();
            (&mut data)
                .take(MAX_MANIFEST as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(read_err)?;
            if bytes.len() > MAX_MANIFEST {
                return Err(malformed(format!(
                    "index.json is more than the {MAX_MANIFEST}-byte limit"
                )));
            }
            index = Some(bytes);
        } else if let Some(hex) = path.strip_prefix("blobs/sha256/").filter(|h| !h.is_empty()) {
            let expected = Digest::from_hex(hex)
                .map_err(|_| malformed(format!("`{path}` is not named by a sha256 digest")))?;
            if store.has_blob(&expected) {
                continue;
            }
            // Checked before it is renamed into the store: content under a name it does not
            // hash to never lands in `blobs/`, not even under its real digest.
            match store.put_blob_expecting(&mut data, &expected, &mut |_| {}) {
                Err(StoreError::Corrupt { actual, .. }) => {
                    return Err(malformed(format!(
                        "`{path}` holds content with digest {actual}"
                    )));
                }
                // A read of the input, not the store, failed: name the input.
                Err(StoreError::Io(e)) if e.action == "read input for" => {
                    return Err(read_err(e.source));
                }
                other => {
                    other?;
                }
            }
        }
    }
    let index = index.ok_or_else(|| malformed("no index.json".into()))?;
    let doc = ManifestDoc::parse(&index).map_err(|e| malformed(format!("index.json: {e}")))?;
    if doc
        .media_type
        .as_ref()
        .is_some_and(|m| *m != MediaType::OciIndex)
    {
        return Err(malformed("index.json is not an OCI image index".into()));
    }
    for d in &doc.manifests {
        check_graph(store, d, src)?;
    }
    let catalogued = referrers::checked_catalogues(store, &doc.manifests, src)?;
    Ok(referrers::admit(store, &doc.manifests, &catalogued)?)
}

/// Checks the image graph from `root`, already in `store`, as a registry pull checks what a
/// registry sends: every manifest and index is at most [`MAX_MANIFEST`] bytes and passes
/// [`validate_manifest`] (its media type agreeing with the descriptor that names it), and every
/// blob is stored with the size its descriptor declares. `src` names the input in messages.
pub fn check_graph(store: &Store, root: &Descriptor, src: &Path) -> Result<(), ArchiveError> {
    let malformed = |what: String| ArchiveError::Malformed {
        path: src.to_owned(),
        what,
    };
    graph::walk(
        [root.clone()],
        |d| d.digest.clone(),
        |d, _| {
            match store.stored_size(&d.digest) {
                None => {
                    return Err(malformed(format!(
                        "index.json needs blob {}, which the archive does not hold (did the stream end early?)",
                        d.digest
                    )))
                }
                Some(n) if n != d.size => {
                    return Err(malformed(format!(
                        "blob {} is {n} bytes but its descriptor declares {}",
                        d.digest, d.size
                    )))
                }
                Some(_) => {}
            }
            let Some(kind) = DocKind::of(&d.media_type) else {
                return Ok(Vec::new());
            };
            if d.size > MAX_MANIFEST as u64 {
                return Err(malformed(format!(
                    "manifest {} is {} bytes, more than the {MAX_MANIFEST}-byte limit",
                    d.digest, d.size
                )));
            }
            let bytes = store.read_blob(&d.digest)?;
            validate_manifest(&bytes, Some(d.media_type.as_str()), Some(kind))
                .map_err(|why| malformed(format!("manifest {} is refused: {why}", d.digest)))?;
            let doc = ManifestDoc::parse(&bytes)
                .map_err(|e| malformed(format!("manifest {}: {e}", d.digest)))?;
            Ok(doc.children().cloned().collect())
        },
    )?;
    Ok(())
}

/// Opens a file of the layout `src` for reading: non-blocking, so a FIFO or device put in a
/// blob's place never hangs the reader, and refused unless `fstat` says it is a regular file.
fn open_regular(path: &Path, src: &Path) -> Result<File, ArchiveError> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd =
        rustix::fs::open(path, flags, Mode::empty()).map_err(|e| io_err("open", path)(e.into()))?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(io_err("read", path))?;
    if !meta.is_file() {
        return Err(ArchiveError::Layout {
            path: src.to_owned(),
            what: format!(
                "{} is not a regular file (a FIFO, device or directory is never read)",
                path.display()
            ),
        });
    }
    Ok(file)
}

/// Reads at most [`MAX_MANIFEST`] bytes of a regular file (a FIFO or device is refused).
fn read_small(path: &Path, src: &Path) -> Result<Vec<u8>, ArchiveError> {
    let file = open_regular(path, src)?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err("read", path))?;
    if bytes.len() > MAX_MANIFEST {
        return Err(ArchiveError::Layout {
            path: src.to_owned(),
            what: format!(
                "{} is more than the {MAX_MANIFEST}-byte limit",
                path.display()
            ),
        });
    }
    Ok(bytes)
}

/// The entries of an OCI layout's `index.json` (validated as an image index).
pub fn layout_entries(dir: &Path) -> Result<Vec<Descriptor>, ArchiveError> {
    let malformed = |what: String| ArchiveError::Layout {
        path: dir.to_owned(),
        what,
    };
    let bytes = read_small(&dir.join("index.json"), dir)?;
    validate_manifest(&bytes, None, Some(DocKind::Index))
        .map_err(|why| malformed(format!("index.json is refused: {why}")))?;
    let doc = ManifestDoc::parse(&bytes).map_err(|e| malformed(format!("index.json: {e}")))?;
    Ok(doc.manifests)
}

/// Copies the image `root` of the OCI layout at `dir` (as `skopeo copy … oci:DIR` writes it) into
/// `store`: each manifest and index read within [`MAX_MANIFEST`], checked against its digest and
/// by [`validate_manifest`] before it is stored, each blob a regular file of its declared size,
/// streamed in and checked against its digest before it is renamed into the store.
pub fn import_layout(store: &Store, dir: &Path, root: &Descriptor) -> Result<(), ArchiveError> {
    graph::walk(
        [root.clone()],
        |d| d.digest.clone(),
        |d, _| import_node(store, dir, d),
    )?;
    Ok(())
}

/// One node of [`import_layout`]: a manifest or index is read within [`MAX_MANIFEST`], checked
/// and stored, and its children returned; a blob is streamed in and checked.
fn import_node(store: &Store, dir: &Path, d: &Descriptor) -> Result<Vec<Descriptor>, ArchiveError> {
    let malformed = |what: String| ArchiveError::Layout {
        path: dir.to_owned(),
        what,
    };
    let digest = &d.digest;
    let path = dir.join("blobs/sha256").join(digest.hex());
    if let Some(kind) = DocKind::of(&d.media_type) {
        if d.size > MAX_MANIFEST as u64 {
            return Err(malformed(format!(
                "manifest {} is {} bytes, more than the {MAX_MANIFEST}-byte limit",
                d.digest, d.size
            )));
        }
        let bytes = read_small(&path, dir)?;
        if Digest::of(&bytes) != *digest || bytes.len() as u64 != d.size {
            return Err(malformed(format!(
                "blobs/sha256/{} does not hold manifest {} ({} bytes)",
                digest.hex(),
                d.digest,
                d.size
            )));
        }
        validate_manifest(&bytes, Some(d.media_type.as_str()), Some(kind))
            .map_err(|why| malformed(format!("manifest {} is refused: {why}", d.digest)))?;
        let doc = ManifestDoc::parse(&bytes)
            .map_err(|e| malformed(format!("manifest {}: {e}", d.digest)))?;
        store.put_blob_bytes(&bytes)?;
        return Ok(doc.children().cloned().collect());
    }
    if store.stored_size(digest) == Some(d.size) {
        return Ok(Vec::new());
    }
    let file = open_regular(&path, dir)?;
    let meta = file.metadata().map_err(io_err("read", &path))?;
    if meta.len() != d.size {
        return Err(malformed(format!(
            "blobs/sha256/{} is not a file of the {} bytes its descriptor declares",
            digest.hex(),
            d.size
        )));
    }
    match store.put_blob_expecting(file.take(d.size), digest, &mut |_| {}) {
        Err(StoreError::Corrupt { actual, .. }) => Err(malformed(format!(
            "blobs/sha256/{} holds content with digest {actual}",
            digest.hex()
        ))),
        other => other.map(|_| Vec::new()).map_err(Into::into),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::descriptor::MANIFEST_V1;
    use std::fs;

    #[test]
    fn save_then_load_keeps_digests() {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open(dir.path().join("a")).unwrap();
        let (layer, n) = a.put_blob_bytes(b"data").unwrap();
        let (cfg, cn) = a.put_blob_bytes(b"{}").unwrap();
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"x/c","digest":"{cfg}","size":{cn}}},"layers":[{{"mediaType":"x/l","digest":"{layer}","size":{n}}}]}}"#
        );
        let root = a.put_manifest(manifest.as_bytes(), MANIFEST_V1).unwrap();
        let file = dir.path().join("x.tar");
        save(&a, &root, &["m:1".into()], &file).unwrap();
        let first = fs::read(&file).unwrap();
        save(&a, &root, &["m:1".into()], &file).unwrap();
        assert_eq!(
            first,
            fs::read(&file).unwrap(),
            "archives are deterministic"
        );

        let b = Store::open(dir.path().join("b")).unwrap();
        let loaded = load(&b, &file).unwrap().images;
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].0, "m:1");
        assert_eq!(loaded[0].1.digest, root.digest);
        assert!(b.has_blob(&layer));

        fs::remove_file(a.blob_path(&layer)).unwrap();
        assert!(save(&a, &root, &[], &file).is_err());
    }

    #[test]
    fn streams_several_images_and_refuses_a_cut_stream() {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open(dir.path().join("a")).unwrap();
        let mut roots = Vec::new();
        for data in [&b"one"[..], b"two"] {
            let (layer, n) = a.put_blob_bytes(data).unwrap();
            let (cfg, cn) = a.put_blob_bytes(b"{}").unwrap();
            let manifest = format!(
                r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"x/c","digest":"{cfg}","size":{cn}}},"layers":[{{"mediaType":"x/l","digest":"{layer}","size":{n}}}]}}"#
            );
            roots.push(a.put_manifest(manifest.as_bytes(), MANIFEST_V1).unwrap());
        }
        let images = vec![
            (
                roots[0].clone(),
                vec!["m:1".to_owned(), "m:latest".to_owned()],
            ),
            (roots[1].clone(), vec![]),
        ];
        let mut bytes = Vec::new();
        save_stream(&a, &images, &mut bytes, Path::new("out")).unwrap();

        let label = Path::new("standard input");
        let b = Store::open(dir.path().join("b")).unwrap();
        for cut in [0, 700, bytes.len() - 2048 - 1] {
            let e = load_stream(&b, &bytes[..cut], label).unwrap_err();
            assert!(e.to_string().contains("standard input"), "{e}");
        }
        let loaded = load_stream(&b, &bytes[..], label).unwrap().images;
        let got: Vec<_> = loaded
            .iter()
            .map(|(n, d)| (n.as_str(), d.digest.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("m:1", roots[0].digest.as_str()),
                ("m:latest", roots[0].digest.as_str()),
                ("", roots[1].digest.as_str())
            ]
        );
    }

    #[test]
    fn save_refuses_a_corrupt_blob_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open(dir.path().join("a")).unwrap();
        let (layer, n) = a.put_blob_bytes(b"data").unwrap();
        let (cfg, cn) = a.put_blob_bytes(b"{}").unwrap();
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"x/c","digest":"{cfg}","size":{cn}}},"layers":[{{"mediaType":"x/l","digest":"{layer}","size":{n}}}]}}"#
        );
        let root = a.put_manifest(manifest.as_bytes(), MANIFEST_V1).unwrap();
        fs::write(a.blob_path(&layer), b"dat4").unwrap();
        let file = dir.path().join("x.tar");
        let e = save(&a, &root, &[], &file).unwrap_err().to_string();
        assert!(
            e.contains(&format!("blob {layer} in the store is corrupt")),
            "{e}"
        );
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["a"], "an archive or temp file was left");
    }
}
