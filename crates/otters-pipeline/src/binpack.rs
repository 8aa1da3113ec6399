//! `otters bin pack`: static binaries into a bin image (spec §f), the image a RUNTIME or a BIN
//! names. One image per platform, under an index:
//!
//! ```text
//! index  (artifactType application/vnd.openotters.bin.v1; the bin annotations mirrored)
//!   └─ manifest per platform  (artifactType …bin.v1; io.openotters.bin.name/.path[/.usage],
//!        │                     org.opencontainers.image.description[/.created])
//!        ├─ config   os/arch, Entrypoint ["/NAME"], WorkingDir "/", rootfs diff_id
//!        ├─ layer    tar+gzip: one regular file NAME, mode 0755, owner 0:0, mtime 0
//!        └─ layer    text/markdown titled /USAGE.md (with --usage)
//! ```
//!
//! Takes: the store, the name, one file per platform (the platform read from an ELF header, or
//! given), optional usage text, description and time. Returns: the index's descriptor. Must
//! never: write a byte that depends on anything but those inputs (no file time, owner or order of
//! the command line: platforms are sorted), or accept a file that is not a regular file or a name
//! that is not path-safe.

use otters_agentfile::ir::names::is_path_safe;
use otters_core::json::{to_compact, Value};
use otters_oci::spec::annotations::{BIN_NAME, BIN_PATH, BIN_USAGE};
use otters_oci::spec::descriptor::{string_map, ANN_CREATED, ANN_TITLE};
use otters_oci::spec::media_type::{CONFIG_V1, INDEX_V1, MANIFEST_V1, TAR_GZIP_LAYER};
use otters_oci::{Descriptor, Digest, Platform, Store, StoreError};
use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

/// The artifact type of a bin image, on its index and on each manifest.
pub const BIN_ARTIFACT: &str = "application/vnd.openotters.bin.v1";
pub const ANN_DESCRIPTION: &str = "org.opencontainers.image.description";
/// Where the usage document is, as the layer's title and the usage annotation say.
pub const USAGE_TITLE: &str = "/USAGE.md";
/// Largest file packed (a static binary is megabytes; the run's extraction limit is 512 MiB).
pub const MAX_FILE: u64 = 512 << 20;
/// Largest usage document (what `lock` reads of one).
pub const MAX_USAGE: u64 = 256 << 10;

/// What to pack.
#[derive(Debug, Default)]
pub struct Request {
    /// The binary's file name in the image (and what the Agentfile's BIN is usually called).
    pub name: String,
    /// One file per platform; `None` reads the platform from the file's ELF header.
    pub files: Vec<(PathBuf, Option<Platform>)>,
    /// A Markdown usage document.
    pub usage: Option<PathBuf>,
    pub description: Option<String>,
    /// `org.opencontainers.image.created` (RFC 3339), from `SOURCE_DATE_EPOCH`; none without.
    pub created: Option<String>,
}

/// The packed image: the index, and each platform's manifest.
#[derive(Debug)]
pub struct Packed {
    pub index: Descriptor,
    pub images: Vec<Descriptor>,
}

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("`{0}` is not a bin name: use letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 63 characters")]
    Name(String),
    #[error("cannot read {}", .0.display())]
    Read(PathBuf, #[source] std::io::Error),
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{} is larger than {} MiB", .0.display(), .1 >> 20)]
    TooLarge(PathBuf, u64),
    #[error("{} is not an ELF executable otters knows the platform of: give its platform (OS/ARCH, such as linux/amd64), one per file", .0.display())]
    UnknownPlatform(PathBuf),
    #[error("{files} file(s) but {platforms} platform(s): give one platform per file, in the files' order, or none to read each ELF header")]
    PlatformCount { files: usize, platforms: usize },
    #[error(transparent)]
    Platform(#[from] otters_oci::spec::platform::BadPlatform),
    #[error(transparent)]
    Epoch(#[from] crate::lower::epoch::BadEpoch),
    #[error("{} and {} are both for {platform}: give one file per platform", .files.0.display(), .files.1.display())]
    SamePlatform {
        files: Box<(PathBuf, PathBuf)>,
        platform: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Request {
    /// A request from the command line's values: one platform text per file (or none, to read
    /// each ELF header) and `SOURCE_DATE_EPOCH`'s value, which sets the time.
    pub fn new(
        name: &str,
        files: &[PathBuf],
        platforms: &[String],
        usage: Option<PathBuf>,
        description: Option<String>,
        source_date_epoch: Option<&str>,
    ) -> Result<Request, PackError> {
        if !platforms.is_empty() && platforms.len() != files.len() {
            let (files, platforms) = (files.len(), platforms.len());
            return Err(PackError::PlatformCount { files, platforms });
        }
        let mut given = Vec::new();
        for p in platforms {
            given.push(Some(Platform::parse(p)?));
        }
        let given = given.into_iter().chain(std::iter::repeat(None));
        Ok(Request {
            name: name.to_owned(),
            files: files.iter().cloned().zip(given).collect(),
            usage,
            description,
            created: crate::lower::epoch::parse(source_date_epoch)?
                .map(crate::lower::epoch::rfc3339),
        })
    }
}

/// What `otters bin pack` did, for its status line (nothing when `quiet`): the image's name, the
/// platforms, the tag.
pub fn summary(name: &str, packed: &Packed, tag: &str, quiet: bool) -> String {
    if quiet {
        return String::new();
    }
    let platforms: Vec<String> = packed
        .images
        .iter()
        .filter_map(|d| d.platform.as_ref())
        .map(ToString::to_string)
        .collect();
    let esc = otters_core::escape::escape;
    format!(
        "packed {} ({}) as {}\n",
        esc(name),
        platforms.join(", "),
        esc(tag)
    )
}

/// The platform an ELF executable was built for: `linux/<arch>` from its machine field (the
/// architectures Go and Rust ship static Linux binaries for), or `None` for anything else.
pub fn elf_platform(bytes: &[u8]) -> Option<Platform> {
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return None;
    }
    let little = match bytes[5] {
        1 => true,
        2 => false,
        _ => return None,
    };
    let machine = if little {
        u16::from_le_bytes([bytes[18], bytes[19]])
    } else {
        u16::from_be_bytes([bytes[18], bytes[19]])
    };
    let class64 = bytes[4] == 2;
    let (arch, variant) = match (machine, class64, little) {
        (62, true, _) => ("amd64", None),
        (183, true, _) => ("arm64", None),
        (40, false, true) => ("arm", Some("v7")),
        (3, false, _) => ("386", None),
        (243, true, _) => ("riscv64", None),
        (21, true, true) => ("ppc64le", None),
        (22, true, false) => ("s390x", None),
        _ => return None,
    };
    Some(Platform {
        os: "linux".to_owned(),
        architecture: arch.to_owned(),
        variant: variant.map(str::to_owned),
        os_version: None,
    })
}

/// Reads a regular file of at most `max` bytes (a symlink is followed: the bytes are packed).
/// Opened through `otters_core::files::open_named`, non-blocking and checked with `fstat`, so a
/// FIFO or a device is refused at once instead of blocking or never ending.
fn read_file(path: &Path, max: u64) -> Result<Vec<u8>, PackError> {
    use otters_core::files::ReadError;
    let file = otters_core::files::open_named(path, "file").map_err(|e| match e {
        ReadError::Io { source, .. } => PackError::Read(path.to_owned(), source),
        _ => PackError::NotAFile(path.to_owned()),
    })?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| PackError::Read(path.to_owned(), e))?;
    if bytes.len() as u64 > max {
        return Err(PackError::TooLarge(path.to_owned(), max));
    }
    Ok(bytes)
}

/// The layer: a tar holding `name` (mode 0755, owner 0:0, mtime 0), gzip with no name or time.
/// Returns (gzip bytes, `diff_id`).
fn layer(name: &str, binary: &[u8]) -> std::io::Result<(Vec<u8>, Digest)> {
    let mut header = tar::Header::new_ustar();
    header.set_path(name)?;
    header.set_size(binary.len() as u64);
    header.set_mode(0o755);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    let mut tar = tar::Builder::new(Vec::new());
    tar.append(&header, binary)?;
    let tar = tar.into_inner()?;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar)?;
    Ok((gz.finish()?, Digest::of(&tar)))
}

/// The annotations of each manifest, mirrored on the index.
fn annotations(req: &Request) -> BTreeMap<String, String> {
    let mut a = BTreeMap::from([
        (BIN_NAME.to_owned(), req.name.clone()),
        (BIN_PATH.to_owned(), "/".to_owned()),
    ]);
    if req.usage.is_some() {
        a.insert(BIN_USAGE.to_owned(), USAGE_TITLE.to_owned());
    }
    if let Some(d) = req.description.as_deref().filter(|d| !d.is_empty()) {
        a.insert(ANN_DESCRIPTION.to_owned(), d.to_owned());
    }
    if let Some(c) = &req.created {
        a.insert(ANN_CREATED.to_owned(), c.clone());
    }
    a
}

/// Each file with its platform, sorted by platform; refuses two files for one platform.
fn platforms(req: &Request) -> Result<Vec<(Platform, PathBuf, Vec<u8>)>, PackError> {
    let mut out: Vec<(Platform, PathBuf, Vec<u8>)> = Vec::new();
    for (path, given) in &req.files {
        let bytes = read_file(path, MAX_FILE)?;
        let platform = match given {
            Some(p) => p.clone(),
            None => elf_platform(&bytes).ok_or_else(|| PackError::UnknownPlatform(path.clone()))?,
        };
        if let Some((p, other, _)) = out.iter().find(|(p, ..)| *p == platform) {
            let files = Box::new((other.clone(), path.clone()));
            let platform = p.to_string();
            return Err(PackError::SamePlatform { files, platform });
        }
        out.push((platform, path.clone(), bytes));
    }
    out.sort_by_key(|(p, ..)| p.to_string());
    Ok(out)
}

/// Packs `req` into `store` and tags the index `tag`; returns it and the stored tag.
pub fn pack_tagged(store: &Store, req: &Request, tag: &str) -> Result<(Packed, String), PackError> {
    let packed = pack(store, req)?;
    let name = store.tag(tag, &packed.index)?;
    Ok((packed, name))
}

/// Packs `req` into `store`; returns the index (untagged).
pub fn pack(store: &Store, req: &Request) -> Result<Packed, PackError> {
    if !is_path_safe(&req.name) {
        return Err(PackError::Name(req.name.clone()));
    }
    let usage = match &req.usage {
        Some(path) => Some(read_file(path, MAX_USAGE)?),
        None => None,
    };
    let annotations = annotations(req);
    let usage_layer = match &usage {
        Some(text) => {
            let (digest, size) = store.put_blob_bytes(text)?;
            Some(
                Descriptor::new("text/markdown", digest, size)
                    .with_annotation(ANN_TITLE, USAGE_TITLE),
            )
        }
        None => None,
    };
    let mut images = Vec::new();
    for (platform, path, binary) in platforms(req)? {
        let (gz, diff_id) = layer(&req.name, &binary).map_err(|e| PackError::Read(path, e))?;
        let (digest, size) = store.put_blob_bytes(&gz)?;
        let mut layers = vec![
            Descriptor::new(TAR_GZIP_LAYER, digest, size).with_annotation(ANN_TITLE, &req.name)
        ];
        layers.extend(usage_layer.clone());
        let config = config(req, &platform, &diff_id);
        let (config_digest, config_size) = store.put_blob_bytes(&config)?;
        let manifest = Value::object()
            .with("schemaVersion", 2i64)
            .with("mediaType", MANIFEST_V1)
            .with("artifactType", BIN_ARTIFACT)
            .with(
                "config",
                Descriptor::new(CONFIG_V1, config_digest, config_size).to_json(),
            )
            .with(
                "layers",
                Value::Array(layers.iter().map(Descriptor::to_json).collect()),
            )
            .with("annotations", string_map(&annotations));
        let bytes = to_compact(&manifest).unwrap_or_default();
        let mut d = store.put_manifest(&bytes, MANIFEST_V1)?;
        d.platform = Some(platform);
        images.push(d);
    }
    let index = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", INDEX_V1)
        .with("artifactType", BIN_ARTIFACT)
        .with(
            "manifests",
            Value::Array(images.iter().map(Descriptor::to_json).collect()),
        )
        .with("annotations", string_map(&annotations));
    let bytes = to_compact(&index).unwrap_or_default();
    let index = store.put_manifest(&bytes, INDEX_V1)?;
    Ok(Packed { index, images })
}

/// The image config: the platform, the binary as entrypoint, the OCI annotations as labels, the
/// layer's `diff_id`.
fn config(req: &Request, platform: &Platform, diff_id: &Digest) -> Vec<u8> {
    let mut labels = BTreeMap::new();
    if let Some(d) = req.description.as_deref().filter(|d| !d.is_empty()) {
        labels.insert(ANN_DESCRIPTION.to_owned(), d.to_owned());
    }
    let mut v = Value::object();
    if let Some(c) = &req.created {
        v.push("created", c.as_str());
    }
    v.push("architecture", platform.architecture.as_str());
    v.push("os", platform.os.as_str());
    if let Some(var) = &platform.variant {
        v.push("variant", var.as_str());
    }
    let entry = Value::Array(vec![Value::from(format!("/{}", req.name))]);
    let mut cfg = Value::object()
        .with("Entrypoint", entry)
        .with("WorkingDir", "/");
    if !labels.is_empty() {
        cfg.push("Labels", string_map(&labels));
    }
    let v = v.with("config", cfg).with(
        "rootfs",
        Value::object().with("type", "layers").with(
            "diff_ids",
            Value::Array(vec![Value::from(diff_id.as_str())]),
        ),
    );
    to_compact(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(class: u8, data: u8, machine: u16) -> Vec<u8> {
        let mut b = b"\x7fELF".to_vec();
        b.extend([class, data, 1]);
        b.resize(18, 0);
        let m = if data == 1 {
            machine.to_le_bytes()
        } else {
            machine.to_be_bytes()
        };
        b.extend(m);
        b.resize(64, 0);
        b
    }

    #[test]
    fn elf_headers_name_their_platform() {
        let p = |b: &[u8]| elf_platform(b).map(|p| p.to_string());
        assert_eq!(p(&elf(2, 1, 62)).as_deref(), Some("linux/amd64"));
        assert_eq!(p(&elf(2, 1, 183)).as_deref(), Some("linux/arm64"));
        assert_eq!(p(&elf(1, 1, 40)).as_deref(), Some("linux/arm/v7"));
        assert_eq!(p(&elf(2, 2, 22)).as_deref(), Some("linux/s390x"));
        assert_eq!(p(&elf(2, 1, 9999)), None);
        assert_eq!(p(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(p(b"\x7fELF"), None);
    }

    #[test]
    fn the_layer_depends_only_on_the_name_and_the_bytes() {
        let (a, da) = layer("tool", b"binary").unwrap();
        let (b, db) = layer("tool", b"binary").unwrap();
        assert_eq!((a.clone(), da.clone()), (b, db));
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(&a[..])
            .read_to_end(&mut tar)
            .unwrap();
        assert_eq!(Digest::of(&tar), da);
        let mut ar = tar::Archive::new(&tar[..]);
        let mut entries = ar.entries().unwrap();
        let only = entries.next().unwrap().unwrap();
        let h = only.header();
        assert_eq!(&*only.path().unwrap(), Path::new("tool"));
        assert_eq!(
            (
                h.mode().unwrap(),
                h.mtime().unwrap(),
                h.uid().unwrap(),
                h.gid().unwrap()
            ),
            (0o755, 0, 0, 0)
        );
        assert!(entries.next().is_none());
        assert_ne!(layer("other", b"binary").unwrap().1, da);
    }
}
