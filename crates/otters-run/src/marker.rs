//! The marker that makes a directory an agent tree: `.otters-agent` at the root, written by
//! the materialiser with the tree, naming the image (repository, reference, digest) that
//! made it.
//!
//! Takes: an agent root and the image a run is for. Returns: whether the run may use that root
//! ([`claim`]): a missing or empty directory, or a tree otters made for the same repository (any
//! repository when the user chose the root with `--root` or `--name`). Must never: take a
//! non-empty directory without the marker for an agent tree (`--root .` would swap the user's
//! files away), hand one repository's workspace, home and id to another image that merely declares
//! the same NAME, or read a file of the tree through a symlink or past 64 KiB.

use otters_oci::Digest;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The marker's file name, at the root of every tree otters writes.
pub const MARKER: &str = ".otters-agent";

/// What the marker records.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Marker {
    /// `registry/repository` of the image (none when it was run by digest or ID alone).
    pub repository: Option<String>,
    /// The reference the run was given.
    pub reference: String,
    /// The image's manifest (or index) digest.
    pub digest: Digest,
}

impl Marker {
    pub fn new(reference: &str, digest: &Digest) -> Marker {
        Marker {
            repository: repository_of(reference),
            reference: reference.to_owned(),
            digest: digest.clone(),
        }
    }

    /// The marker file's bytes (JSON; never hashed into anything).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Who made the tree, as an error shows it.
    fn owner(&self) -> String {
        self.repository.clone().unwrap_or_else(|| {
            otters_oci::validate::escape_text(&format!("{}@{}", self.reference, self.digest), 200)
        })
    }
}

/// `registry/repository` of a reference (`ghcr.io/o/x:1` → `ghcr.io/o/x`); `None` for a digest
/// or an ID prefix of the local store, which name no repository.
pub fn repository_of(reference: &str) -> Option<String> {
    let id = reference.strip_prefix("sha256:").unwrap_or(reference);
    if reference.starts_with("sha256:") || id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    otters_oci::reference::Reference::parse(reference)
        .ok()
        .map(|r| r.name())
}

/// Why a root cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("{}: not an agent tree otters made (it has no {MARKER} file) and not empty; otters replaces everything in an agent tree but workspace/, home/ and var/lib/, so it never takes over another directory", .0.display())]
    NotATree(PathBuf),
    #[error("{}: is a symlink; an agent tree is a directory itself", .0.display())]
    Symlink(PathBuf),
    #[error("{}: {what}", root.display())]
    Unreadable { root: PathBuf, what: String },
    #[error("{}: the agent tree of NAME {name} was made by {owner}, not by {this}; another image declaring the same NAME does not get that agent's workspace, home and id", root.display())]
    Claimed {
        root: PathBuf,
        name: String,
        owner: String,
        this: String,
    },
}

/// What a run's root holds now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootState {
    /// Nothing there, or an empty directory.
    Free,
    /// An agent tree otters made, and its marker.
    Tree(Marker),
    /// A tree of an otters release before the marker (only trusted under `$OTTERS_HOME/agents`):
    /// the repository its `etc/agent.yaml` names, when it names one.
    Legacy(Option<String>),
}

/// Reads a small regular file of a tree: at most 64 KiB, never through a final symlink, never
/// blocking on a FIFO; `None` when it is anything else.
pub fn read_tree_file(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // A tree is the agent's: a runtime may have replaced the file with a link, a FIFO or a huge
    // file.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(
            (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK)
                .bits()
                .cast_signed(),
        )
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(64 << 10).read_to_string(&mut text).ok()?;
    Some(text)
}

/// What `root` holds. `legacy_ok`: a tree without a marker counts when it has `etc/agent.yaml`
/// (the default root under `$OTTERS_HOME/agents`, which only otters writes).
pub fn inspect(root: &Path, legacy_ok: bool) -> Result<RootState, ClaimError> {
    let unreadable = |e: std::io::Error| ClaimError::Unreadable {
        root: root.to_owned(),
        what: e.to_string(),
    };
    let meta = match std::fs::symlink_metadata(root) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RootState::Free),
        Err(e) => return Err(unreadable(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(ClaimError::Symlink(root.to_owned()));
    }
    if !meta.is_dir() {
        return Err(ClaimError::NotATree(root.to_owned()));
    }
    if std::fs::read_dir(root)
        .map_err(unreadable)?
        .next()
        .is_none()
    {
        return Ok(RootState::Free);
    }
    if let Some(m) =
        read_tree_file(&root.join(MARKER)).and_then(|t| serde_json::from_str::<Marker>(&t).ok())
    {
        return Ok(RootState::Tree(m));
    }
    if legacy_ok {
        if let Some(yaml) = read_tree_file(&root.join("etc/agent.yaml")) {
            let repository = otters_pipeline::lower::agent_yaml::parse(yaml.as_bytes())
                .ok()
                .and_then(|d| d.image?.reference)
                .and_then(|r| repository_of(&r));
            return Ok(RootState::Legacy(repository));
        }
    }
    Err(ClaimError::NotATree(root.to_owned()))
}

/// Whether a run of `reference` (at `digest`) may use `root`, the tree of agent `name`.
/// `chosen`: the user named the root (`--root`) or the agent (`--name`), so a tree another
/// repository made may be handed over; otherwise the root came from the image's NAME and must be
/// free or this repository's.
pub fn claim(
    root: &Path,
    name: &str,
    reference: &str,
    digest: &Digest,
    chosen: bool,
    legacy_ok: bool,
) -> Result<RootState, ClaimError> {
    let state = inspect(root, legacy_ok)?;
    if chosen {
        return Ok(state);
    }
    let this = Marker::new(reference, digest);
    let owner = match &state {
        RootState::Free | RootState::Legacy(None) => return Ok(state),
        RootState::Legacy(Some(r)) if Some(r) == this.repository.as_ref() => return Ok(state),
        RootState::Legacy(Some(r)) => r.clone(),
        RootState::Tree(m) => {
            let same = match (&m.repository, &this.repository) {
                (Some(a), Some(b)) => a == b,
                // Run by digest: only the very image that made the tree.
                _ => m.digest == this.digest,
            };
            if same {
                return Ok(state);
            }
            m.owner()
        }
    };
    Err(ClaimError::Claimed {
        root: root.to_owned(),
        name: name.to_owned(),
        owner: otters_oci::validate::escape_text(&owner, 200),
        this: this.owner(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn d(s: &str) -> Digest {
        Digest::parse(s).unwrap()
    }

    #[test]
    fn repositories_of_references() {
        assert_eq!(
            repository_of("ghcr.io/o/x:1").as_deref(),
            Some("ghcr.io/o/x")
        );
        assert_eq!(
            repository_of(&format!("localhost:5000/o/x@{D1}")).as_deref(),
            Some("localhost:5000/o/x")
        );
        assert_eq!(
            repository_of("meteo").as_deref(),
            Some("docker.io/library/meteo")
        );
        assert_eq!(repository_of(D1), None);
        assert_eq!(repository_of("1111abcd"), None);
    }

    #[test]
    fn only_free_or_marked_directories_are_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a");
        assert_eq!(inspect(&root, false).unwrap(), RootState::Free);
        fs::create_dir(&root).unwrap();
        assert_eq!(inspect(&root, false).unwrap(), RootState::Free);
        fs::write(root.join("notes.txt"), "mine").unwrap();
        assert!(matches!(inspect(&root, true), Err(ClaimError::NotATree(_))));
        let m = Marker::new("reg.example/o/x:1", &d(D1));
        fs::write(root.join(MARKER), m.to_bytes()).unwrap();
        assert_eq!(inspect(&root, false).unwrap(), RootState::Tree(m));
        // A marker that is a link is no marker.
        fs::remove_file(root.join(MARKER)).unwrap();
        let real = dir.path().join("m.json");
        fs::write(&real, Marker::new("x:1", &d(D1)).to_bytes()).unwrap();
        std::os::unix::fs::symlink(&real, root.join(MARKER)).unwrap();
        assert!(matches!(
            inspect(&root, false),
            Err(ClaimError::NotATree(_))
        ));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        assert!(matches!(inspect(&link, false), Err(ClaimError::Symlink(_))));
    }

    #[test]
    fn legacy_trees_count_only_where_allowed() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("etc")).unwrap();
        fs::write(
            dir.path().join("etc/agent.yaml"),
            "id: \"x\"\nimage:\n  ref: \"reg.example/o/x:1\"\n",
        )
        .unwrap();
        assert_eq!(
            inspect(dir.path(), true).unwrap(),
            RootState::Legacy(Some("reg.example/o/x".into()))
        );
        assert!(matches!(
            inspect(dir.path(), false),
            Err(ClaimError::NotATree(_))
        ));
    }

    #[test]
    fn another_repository_needs_an_explicit_choice() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(
            root.join(MARKER),
            Marker::new("reg.example/o/x:1", &d(D1)).to_bytes(),
        )
        .unwrap();
        let claim_by =
            |r: &str, digest: &str, chosen| claim(root, "x", r, &d(digest), chosen, true);
        assert!(claim_by("reg.example/o/x:2", D2, false).is_ok());
        let err = claim_by("evil.example/x:1", D2, false).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("made by reg.example/o/x, not by evil.example/x")
                && matches!(&err, ClaimError::Claimed { name, .. } if name == "x"),
            "{text}"
        );
        assert!(claim_by("evil.example/x:1", D2, true).is_ok());
        // By digest: only the image that made it.
        assert!(claim_by(D1, D1, false).is_ok());
        assert!(claim_by(D2, D2, false).is_err());
    }
}
