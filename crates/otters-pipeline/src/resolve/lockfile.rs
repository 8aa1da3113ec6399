//! `Agentfile.lock`: the digests (and bin metadata) every image reference of an Agentfile resolved
//! to, so builds can be repeated with `--locked` or without a network with `--offline`.
//!
//! Takes: resolution results, or the file's bytes. Returns: a [`Lockfile`] and its canonical
//! bytes. Must never: write the file in place or rewrite it when its content would not change.
//!
//! Format (version 1): indented JSON with a fixed field order and entries sorted by role
//! (`from`, `runtime`, `bin`) then reference:
//!
//! ```json
//! {
//!   "version": 1,
//!   "platform": "linux/amd64",
//!   "images": [
//!     {
//!       "role": "bin",
//!       "reference": "ghcr.io/openotters/tools/jq:1",
//!       "digest": "sha256:…",          // the manifest for `platform`
//!       "index": "sha256:…",           // present when the reference named an index
//!       "platform": "linux/amd64",     // present when the reference named an index
//!       "bin": {"name": "jq", "path": "/", "usage_path": "/USAGE.md"},
//!       "description": "…",           // from the image's annotations, when it has one
//!       "usage": "…"                  // the image's usage document, when it has one
//!     }
//!   ]
//! }
//! ```
//!
//! A build for several platforms writes `"platform": "linux/amd64,linux/arm64"`, empty `images`,
//! and `"platforms": [{"platform", "images"}, …]`, one per platform, each exactly what a build for
//! that platform alone writes ([`Lockfile::multi_bytes`], read back with [`Lockfile::read_all`]).

use otters_core::json::{to_indented, Value};
use otters_oci::path_io::{io_err, PathIoError};
use otters_oci::Digest;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub const LOCK_VERSION: i64 = 1;
pub const LOCK_NAME: &str = "Agentfile.lock";

/// What a locked reference is used for.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The FROM parent.
    From,
    /// The RUNTIME image.
    Runtime,
    /// A BIN image.
    Bin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::From => "from",
            Role::Runtime => "runtime",
            Role::Bin => "bin",
        }
    }
}

/// The bin annotations read from the image.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BinInfo {
    /// The tool's name (the image's bin name annotation).
    pub name: String,
    /// The directory of the image that holds the binary.
    #[serde(default)]
    pub path: Option<String>,
    /// The path of the image's usage document.
    #[serde(default)]
    pub usage_path: Option<String>,
}

/// One resolved reference. `D` is the digest type: [`Digest`] once parsed (the text form, `String`,
/// only while [`Lockfile::parse`] checks the pins).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[schemars(
    deny_unknown_fields,
    description = "One image reference and what it resolved to."
)]
pub struct Entry<D = Digest> {
    /// What the reference is used for.
    pub role: Role,
    /// The reference as written in the Agentfile (or inherited from the parent).
    pub reference: String,
    /// The digest of the manifest for the lock's platform.
    pub digest: D,
    /// The digest of the index the reference named, when it named one.
    #[serde(default)]
    pub index: Option<D>,
    /// The platform picked from that index (`os/arch[/variant]`).
    #[serde(default)]
    pub platform: Option<String>,
    /// A BIN image's bin annotations.
    #[serde(default)]
    pub bin: Option<BinInfo>,
    /// The image's description annotation, when it has one.
    #[serde(default)]
    pub description: Option<String>,
    /// The image's usage document, when it has one.
    #[serde(default)]
    pub usage: Option<String>,
}

/// The whole lock.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Lockfile<D = Digest> {
    /// The lock format version; this otters reads and writes 1.
    #[schemars(extend("const" = LOCK_VERSION))]
    pub version: i64,
    /// The platform the pins are for (`os/arch[/variant]`), or several, comma-separated.
    #[serde(default)]
    pub platform: String,
    /// The pins, sorted by role (`from`, `runtime`, `bin`) then reference; empty in a lock of
    /// several platforms.
    #[serde(default)]
    pub images: Vec<Entry<D>>,
}

/// The whole file as its JSON Schema (`otters schema agentfile-lock`) describes it: a
/// [`Lockfile`], and the `platforms` of a lock of several platforms (read by `parse_all`).
#[derive(schemars::JsonSchema)]
#[schemars(deny_unknown_fields, title = "Agentfile.lock")]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub struct LockDocument {
    #[serde(flatten)]
    lock: Lockfile,
    /// A build for several platforms: one lock per platform, each what a build for that
    /// platform alone writes.
    #[serde(default)]
    platforms: Vec<PlatformLock<Digest>>,
}

impl Entry<String> {
    /// The entry with its pins parsed; a pin that is not a digest would be looked up as a tag, or
    /// put in a URL path.
    fn typed(self, path: &Path) -> Result<Entry, LockError> {
        let parse = |d: &str| {
            Digest::parse(d).map_err(|_| LockError::Invalid {
                path: path.to_owned(),
                reason: format!(
                    "the pin of {} is \"{}\", not a sha256 digest",
                    otters_oci::validate::escape_text(&self.reference, 200),
                    otters_oci::validate::escape_text(d, 80)
                ),
            })
        };
        let digest = parse(&self.digest)?;
        let index = self.index.as_deref().map(parse).transpose()?;
        Ok(Entry {
            role: self.role,
            reference: self.reference,
            digest,
            index,
            platform: self.platform,
            bin: self.bin,
            description: self.description,
            usage: self.usage,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{} is not a valid lock file: {reason}; delete it and run `otters lock`", path.display())]
    Invalid { path: PathBuf, reason: String },
    #[error("{} is not a valid lock file: {source}; delete it and run `otters lock`", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} has lock format version {version}, but this otters reads version {LOCK_VERSION}; run `otters lock` to rewrite it", path.display())]
    Version { path: PathBuf, version: i64 },
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error(transparent)]
    Read(#[from] otters_core::files::ReadError),
}

/// The lock's bytes: a regular file of at most [`MAX_LOCK`](otters_core::files::MAX_LOCK)
/// bytes, a symlink followed only inside the lock's own directory.
fn read_lock(path: &Path) -> Result<Vec<u8>, otters_core::files::ReadError> {
    use otters_core::files as pf;
    let (root, rel) = pf::parent_and_name(path);
    pf::read_confined(&root, &rel, path, "lock file", pf::MAX_LOCK)
}

impl Lockfile {
    pub fn new(platform: &str) -> Self {
        Lockfile {
            version: LOCK_VERSION,
            platform: platform.to_owned(),
            images: Vec::new(),
        }
    }

    /// The entry for `reference` used as `role`.
    pub fn get(&self, role: Role, reference: &str) -> Option<&Entry> {
        self.images
            .iter()
            .find(|e| e.role == role && e.reference == reference)
    }

    /// Adds or replaces the entry for its (role, reference), keeping entries sorted.
    pub fn insert(&mut self, entry: Entry) {
        self.images
            .retain(|e| !(e.role == entry.role && e.reference == entry.reference));
        self.images.push(entry);
        self.images
            .sort_by(|a, b| (a.role, &a.reference).cmp(&(b.role, &b.reference)));
    }

    /// Canonical bytes: indented JSON in a fixed field order, with a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let doc = Value::object()
            .with("version", Value::Int(self.version))
            .with("platform", self.platform.as_str())
            .with("images", images_json(&self.images));
        indented(&doc)
    }

    /// Canonical bytes of the lock of a build for several platforms: `platform` lists them
    /// (comma-separated), `images` is empty, and `platforms` holds one `{platform, images}` per
    /// platform, each exactly the `platform` and `images` a build for that platform alone writes.
    /// A reader that knows only single-platform locks reads it as a lock for another platform.
    pub fn multi_bytes(locks: &[Lockfile]) -> Vec<u8> {
        let joined: Vec<&str> = locks.iter().map(|l| l.platform.as_str()).collect();
        let each = locks
            .iter()
            .map(|l| {
                Value::object()
                    .with("platform", l.platform.as_str())
                    .with("images", images_json(&l.images))
            })
            .collect();
        let doc = Value::object()
            .with("version", Value::Int(LOCK_VERSION))
            .with("platform", joined.join(","))
            .with("images", Value::Array(Vec::new()))
            .with("platforms", Value::Array(each));
        indented(&doc)
    }

    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, LockError> {
        let lock: Lockfile<String> =
            serde_json::from_slice(bytes).map_err(|source| LockError::Json {
                path: path.to_owned(),
                source,
            })?;
        if lock.version != LOCK_VERSION {
            return Err(LockError::Version {
                path: path.to_owned(),
                version: lock.version,
            });
        }
        Ok(Lockfile {
            version: lock.version,
            platform: lock.platform,
            images: lock
                .images
                .into_iter()
                .map(|e| e.typed(path))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The lock of each platform: those of a multi-platform lock ([`Self::multi_bytes`]), or the
    /// lock itself.
    pub fn parse_all(path: &Path, bytes: &[u8]) -> Result<Vec<Self>, LockError> {
        let top = Self::parse(path, bytes)?;
        let multi: MultiLock = serde_json::from_slice(bytes).map_err(|source| LockError::Json {
            path: path.to_owned(),
            source,
        })?;
        if multi.platforms.is_empty() {
            return Ok(vec![top]);
        }
        multi
            .platforms
            .into_iter()
            .map(|p| {
                Ok(Lockfile {
                    version: top.version,
                    platform: p.platform,
                    images: p
                        .images
                        .into_iter()
                        .map(|e| e.typed(path))
                        .collect::<Result<_, _>>()?,
                })
            })
            .collect()
    }

    /// Reads the lock of each platform at `path` (see [`Self::parse_all`]); empty when there is
    /// no file.
    pub fn read_all(path: &Path) -> Result<Vec<Self>, LockError> {
        match read_lock(path) {
            Ok(bytes) => Self::parse_all(path, &bytes),
            Err(e) if e.is_not_found() => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The lock to resolve `platform` against: that platform's lock of a multi-platform lock,
    /// else the file's lock as it is (`None` when there is no file).
    pub fn read_for(path: &Path, platform: &str) -> Result<Option<Self>, LockError> {
        let bytes = match read_lock(path) {
            Ok(bytes) => bytes,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let all = Self::parse_all(path, &bytes)?;
        if all.len() > 1 {
            if let Some(l) = all.into_iter().find(|l| l.platform == platform) {
                return Ok(Some(l));
            }
        }
        Self::parse(path, &bytes).map(Some)
    }

    /// Reads the lock at `path`; `Ok(None)` when there is none.
    pub fn read(path: &Path) -> Result<Option<Self>, LockError> {
        match read_lock(path) {
            Ok(bytes) => Self::parse(path, &bytes).map(Some),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the lock (temp file + fsync + rename) unless the file already holds these bytes.
    /// Returns whether the file changed.
    pub fn write_if_changed(&self, path: &Path) -> Result<bool, LockError> {
        write_bytes_if_changed(&self.to_bytes(), path)
    }

    /// [`Self::write_if_changed`], except over a lock of several platforms that has this one:
    /// then only this platform's part is replaced and the others are kept.
    pub fn write_keeping_others(&self, path: &Path) -> Result<bool, LockError> {
        let mut locks = Self::read_all(path).unwrap_or_default();
        match locks.iter().position(|l| l.platform == self.platform) {
            Some(i) if locks.len() > 1 => {
                locks[i] = self.clone();
                Self::write_multi_if_changed(&locks, path)
            }
            _ => self.write_if_changed(path),
        }
    }

    /// [`Self::write_if_changed`] for the locks of a multi-platform build ([`Self::multi_bytes`]).
    pub fn write_multi_if_changed(locks: &[Lockfile], path: &Path) -> Result<bool, LockError> {
        write_bytes_if_changed(&Self::multi_bytes(locks), path)
    }
}

/// The `platforms` of a multi-platform lock (read beside [`Lockfile`], which ignores them).
#[derive(Deserialize)]
struct MultiLock {
    #[serde(default)]
    platforms: Vec<PlatformLock>,
}

/// One platform's pins in a multi-platform lock.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
struct PlatformLock<D = String> {
    /// The platform (`os/arch[/variant]`).
    platform: String,
    /// Its pins, as in a lock of that platform alone.
    #[serde(default)]
    images: Vec<Entry<D>>,
}

/// Indented JSON with a final newline.
fn indented(doc: &Value) -> Vec<u8> {
    // Only strings and integers: serialisation cannot fail.
    let mut bytes = to_indented(doc).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The `images` array: each entry in a fixed field order.
fn images_json(images: &[Entry]) -> Value {
    let images = images
        .iter()
        .map(|e| {
            let mut v = Value::object()
                .with("role", e.role.as_str())
                .with("reference", e.reference.as_str())
                .with("digest", &e.digest);
            if let Some(i) = &e.index {
                v.push("index", i);
            }
            if let Some(p) = &e.platform {
                v.push("platform", p.as_str());
            }
            if let Some(b) = &e.bin {
                let mut bv = Value::object().with("name", b.name.as_str());
                if let Some(p) = &b.path {
                    bv.push("path", p.as_str());
                }
                if let Some(u) = &b.usage_path {
                    bv.push("usage_path", u.as_str());
                }
                v.push("bin", bv);
            }
            if let Some(d) = &e.description {
                v.push("description", d.as_str());
            }
            if let Some(u) = &e.usage {
                v.push("usage", u.as_str());
            }
            v
        })
        .collect();
    Value::Array(images)
}

/// Writes `bytes` at `path` (temp file + fsync + rename) unless the file already holds them.
fn write_bytes_if_changed(bytes: &[u8], path: &Path) -> Result<bool, LockError> {
    if read_lock(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    let mut tmp = tempfile::Builder::new()
        // 0666 less the umask, as `cp` or `docker save` would create it: others may read what is
        // shared (a CI step, another user); the credentials file is the one kept 0600.
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .prefix(".Agentfile.lock.")
        .tempfile_in(dir)
        .map_err(io_err("create a temporary file for", path))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(io_err("write", path))?;
    tmp.as_file().sync_all().map_err(io_err("sync", path))?;
    tmp.persist(path)
        .map_err(|e| io_err("replace", path)(e.error))?;
    Ok(true)
}

/// `Agentfile.lock` beside the Agentfile at `agentfile`.
pub fn lock_path_for(agentfile: &Path) -> PathBuf {
    agentfile
        .parent()
        .map_or_else(|| PathBuf::from(LOCK_NAME), |d| d.join(LOCK_NAME))
}

/// Where AF403 was learnt from a lock entry without a bin name (offline build, `otters lint`).
pub fn no_bin_name(e: &Entry) -> String {
    format!(
        "Agentfile.lock pins it to {} and records no bin name for it",
        e.digest
    )
}

/// The references the lock beside `agentfile` pins to a digest (as written in the Agentfile), for
/// AF201. Empty when there is no lock or it cannot be used: resolution reports that (AF409).
pub fn pinned_beside(agentfile: &Path) -> std::collections::BTreeSet<String> {
    match Lockfile::read_all(&lock_path_for(agentfile)) {
        Ok(locks) => locks
            .into_iter()
            .flat_map(|l| l.images)
            .map(|e| e.reference)
            .collect(),
        Err(_) => std::collections::BTreeSet::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(role: Role, r: &str) -> Entry {
        Entry {
            role,
            reference: r.into(),
            digest: Digest::of(b"a"),
            index: None,
            platform: None,
            bin: None,
            description: None,
            usage: None,
        }
    }

    #[test]
    fn bytes_are_sorted_and_round_trip() {
        let mut l = Lockfile::new("linux/amd64");
        let mut b = entry(Role::Bin, "z/jq:1");
        b.bin = Some(BinInfo {
            name: "jq".into(),
            path: Some("/".into()),
            usage_path: None,
        });
        b.description = Some("json <tool>".into());
        l.insert(b);
        l.insert(entry(Role::Runtime, "r:1"));
        l.insert(entry(Role::Bin, "a/sh:1"));
        let bytes = l.to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap_or_default();
        let rt = text.find("r:1").unwrap_or(0);
        let sh = text.find("a/sh:1").unwrap_or(0);
        let jq = text.find("z/jq:1").unwrap_or(0);
        assert!(rt < sh && sh < jq, "{text}");
        let back = Lockfile::parse(Path::new("x"), &bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, l);
        assert_eq!(back.to_bytes(), bytes);
    }

    #[test]
    fn a_pin_that_is_not_a_digest_is_refused() {
        let mut l = Lockfile::new("linux/amd64");
        l.insert(entry(Role::Runtime, "r:1"));
        let text = String::from_utf8(l.to_bytes())
            .unwrap()
            .replace(Digest::of(b"a").as_str(), "sha256:../../x");
        let err = Lockfile::parse(Path::new("Agentfile.lock"), text.as_bytes())
            .expect_err("a bad pin must be refused")
            .to_string();
        assert!(
            err.contains("the pin of r:1 is \"sha256:../../x\""),
            "{err}"
        );
    }

    #[test]
    fn a_multi_platform_lock_reads_per_platform_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path().join(LOCK_NAME);
        let mut amd = Lockfile::new("linux/amd64");
        amd.insert(entry(Role::Runtime, "r:1"));
        let mut arm = Lockfile::new("linux/arm64");
        arm.insert(entry(Role::Bin, "b:1"));
        assert!(Lockfile::write_multi_if_changed(&[amd.clone(), arm.clone()], &p).unwrap());
        // Today's reader sees a lock for another platform, with no pins.
        let top = Lockfile::read(&p).unwrap().unwrap();
        assert_eq!(top.platform, "linux/amd64,linux/arm64");
        assert!(top.images.is_empty());
        assert_eq!(
            Lockfile::read_for(&p, "linux/arm64").unwrap(),
            Some(arm.clone())
        );
        assert_eq!(Lockfile::read_for(&p, "linux/s390x").unwrap(), Some(top));
        assert_eq!(
            pinned_beside(&dir.path().join("Agentfile")),
            ["b:1".to_owned(), "r:1".to_owned()].into_iter().collect()
        );
        // One platform rebuilt alone replaces its part and keeps the other.
        let mut arm2 = Lockfile::new("linux/arm64");
        arm2.insert(entry(Role::Bin, "c:1"));
        assert!(arm2.write_keeping_others(&p).unwrap());
        assert_eq!(Lockfile::read_all(&p).unwrap(), [amd, arm2.clone()]);
        // A single-platform lock stays a single-platform lock, byte for byte.
        std::fs::remove_file(&p).unwrap();
        assert!(arm2.write_keeping_others(&p).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), arm2.to_bytes());
        assert_eq!(Lockfile::read_all(&p).unwrap(), [arm2]);
    }

    #[test]
    fn written_only_when_changed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path().join(LOCK_NAME);
        let l = Lockfile::new("linux/amd64");
        assert!(l.write_if_changed(&p).unwrap_or(false));
        assert!(!l.write_if_changed(&p).unwrap_or(true));
        assert_eq!(Lockfile::read(&p).ok().flatten(), Some(l));
        std::fs::write(&p, "{\"version\": 9}").unwrap_or_default();
        assert!(matches!(Lockfile::read(&p), Err(LockError::Version { .. })));
    }
}
