//! The agent tree a plan lays out: its fixed directories, the image's layers at the paths their
//! media types and titles give, the files otters generates, the binaries, the mounts shown.

use super::{PlanError, TreeEntry, Warning};
use crate::context_docs::{self, DocInputs};
use crate::mounts::UserMount;
use crate::overrides::{self, Overrides};
use crate::source::AgentImage;
use otters_oci::spec::descriptor::{
    Descriptor, AGENTFILE_LAYER, ANN_UNPACK, CONTEXT_LAYER, FILE_LAYER,
};

use otters_agentfile::ir::names::{go_base, is_context_title, is_loader_key, is_safe_rel};

/// Where a file layer titled `title` goes below `etc/data/`, given the image's ADD names:
/// - the title itself when an ADD has that name (otters and openotters L write `name` as the
///   title, and otters' names may nest: `docs/a.md`);
/// - else `filepath.Base(title)` when the title is absolute or an ADD has that base name: an
///   image of openotters alpha.50, which titles the layer with the raw `dst` (`/data/x.json`)
///   and writes it to `etc/data/` + `filepath.Base(title)` (`executor/system/workspace.go`,
///   `extractLayers`);
/// - else the title as it is, when it is a safe relative path.
///
/// `None` when the result would not be a safe path (`..`, `.`, `/`, hidden or odd names).
pub fn data_path(title: &str, add_names: &[&str]) -> Option<String> {
    if is_safe_rel(title) && add_names.contains(&title) {
        return Some(title.to_owned());
    }
    let base = go_base(title);
    if is_path_safe(base) && (title.starts_with('/') || add_names.contains(&base)) {
        return Some(base.to_owned());
    }
    is_safe_rel(title).then(|| title.to_owned())
}

/// A relative path that stays below the root: no empty, `.` or `..` component, no NUL.
fn is_inside(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\0')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}
pub use otters_agentfile::ir::names::{is_path_safe, RESERVED_CONTEXT_NAMES};

const DIRS: &[&str] = &[
    "etc",
    "etc/context",
    "etc/data",
    "usr/bin",
    "usr/local/bin",
    "workspace",
    "tmp",
    "var/lib",
    "home",
    "home/.config",
    "home/.cache",
    "home/.local/share",
];

/// The tree and the warnings, as the phases of [`plan`] add to them.
pub(super) struct Draft {
    pub(super) tree: Vec<TreeEntry>,
    pub(super) warnings: Vec<Warning>,
}

impl Draft {
    /// The fixed directories of every agent tree, and no warning yet.
    pub(super) fn new() -> Self {
        Draft {
            tree: DIRS
                .iter()
                .map(|d| TreeEntry::Dir {
                    path: (*d).to_owned(),
                })
                .collect(),
            warnings: Vec::new(),
        }
    }

    /// Warns of every dynamic-loader variable in the environment, saying where it came from.
    pub(super) fn warn_loader_envs(
        &mut self,
        effective: &overrides::Effective,
        overrides: &Overrides,
    ) {
        for e in effective.envs.iter().filter(|e| is_loader_key(&e.key)) {
            self.warnings.push(Warning::LoaderEnv {
                key: e.key.clone(),
                given: overrides.envs.iter().any(|(k, _)| *k == e.key),
            });
        }
    }

    pub(super) fn warn_missing_mounts(&mut self, missing: &[String]) {
        if !missing.is_empty() {
            self.warnings.push(Warning::Unmounted(missing.to_vec()));
        }
    }

    /// The image's layers: the Agentfile, context documents, data files and unpacked
    /// directories, each at the path its media type and title give it.
    pub(super) fn place_layers(&mut self, image: &AgentImage) -> Result<(), PlanError> {
        let names: Vec<&str> = image
            .model
            .agent
            .adds
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        // Where each data file was put, to keep the last of two layers that write the same path.
        let mut written: Vec<(String, usize)> = Vec::new();
        for (index, l) in image.layers.iter().enumerate() {
            let Some(entry) = layer_entry(image, index, l, &names)? else {
                continue;
            };
            if matches!(l.media_type.as_str(), FILE_LAYER) {
                if let Some(pos) = written.iter().position(|(p, _)| p == entry.path()) {
                    let (path, earlier) = written.remove(pos);
                    self.tree.retain(|e| e.path() != path);
                    self.warnings.push(Warning::SamePath {
                        earlier,
                        later: index,
                        path,
                    });
                }
                written.push((entry.path().to_owned(), index));
            }
            self.tree.push(entry);
        }
        Ok(())
    }

    /// A file otters writes into the tree.
    pub(super) fn generate(&mut self, path: &str, content: String) {
        self.tree.push(TreeEntry::Generated {
            path: path.to_owned(),
            bytes: content.len(),
            content,
        });
    }

    /// The context documents otters writes: AGENT.md, WORKSPACE.md and, with mounts, MOUNTS.md.
    pub(super) fn generate_docs(&mut self, docs: &DocInputs<'_>) {
        self.generate("etc/context/AGENT.md", context_docs::agent_md(docs));
        self.generate("etc/context/WORKSPACE.md", context_docs::workspace_md(docs));
        if let Some(m) = context_docs::mounts_md(docs.mounts) {
            self.generate("etc/context/MOUNTS.md", m);
        }
    }

    /// The runtime and every BIN (with its usage doc), pinned by the image when it can be.
    pub(super) fn place_binaries(&mut self, image: &AgentImage, runtime: &str) {
        let runtime_digest = image.pins.runtime_digest(runtime).cloned();
        if runtime_digest.is_none() {
            self.warnings
                .push(Warning::UnpinnedRuntime(runtime.to_owned()));
        }
        self.tree.push(TreeEntry::Binary {
            path: "usr/local/bin/runtime".into(),
            reference: runtime.to_owned(),
            digest: runtime_digest,
            name: "runtime".into(),
        });
        for b in &image.model.agent.bins {
            let digest = image.pins.bin_digest(&b.name, &b.image).cloned();
            if digest.is_none() {
                self.warnings.push(Warning::UnpinnedBin {
                    name: b.name.clone(),
                    image: b.image.clone(),
                });
            }
            self.tree.push(TreeEntry::Binary {
                path: format!("usr/bin/{}", b.name),
                reference: b.image.clone(),
                digest: digest.clone(),
                name: b.name.clone(),
            });
            self.tree.push(TreeEntry::Usage {
                path: format!("etc/data/bins/{}/USAGE.md", b.name),
                reference: b.image.clone(),
                digest,
                fallback: b.usage.clone(),
            });
        }
    }

    /// Host mounts shown inside the tree (system executor).
    pub(super) fn link_mounts(&mut self, user_mounts: &[UserMount]) {
        for m in user_mounts {
            self.tree.push(TreeEntry::Symlink {
                path: m.target.trim_start_matches('/').to_owned(),
                target: m.host.clone(),
            });
        }
    }
}

/// Where `l`, `image.layers[index]`, goes in the tree; `None` for a layer the tree does not
/// hold (untitled, or of another media type).
fn layer_entry(
    image: &AgentImage,
    index: usize,
    l: &Descriptor,
    names: &[&str],
) -> Result<Option<TreeEntry>, PlanError> {
    let title = l.title().unwrap_or_default();
    let bad = || PlanError::BadTitle {
        reference: image.reference.clone(),
        index,
        digest: l.digest.clone(),
        title: title.to_owned(),
    };
    let layer = |path: String, unpack: Option<String>| TreeEntry::Layer {
        path,
        digest: l.digest.clone(),
        media_type: l.media_type.clone(),
        unpack: unpack.is_some(),
        title: unpack,
    };
    Ok(Some(match l.media_type.as_str() {
        AGENTFILE_LAYER => layer("etc/Agentfile".into(), None),
        CONTEXT_LAYER | FILE_LAYER if title.is_empty() => return Ok(None),
        CONTEXT_LAYER => {
            let reserved = title
                .strip_suffix(".md")
                .is_some_and(|n| RESERVED_CONTEXT_NAMES.contains(&n));
            if !is_context_title(title) || reserved {
                return Err(bad());
            }
            layer(format!("etc/context/{title}"), None)
        }
        FILE_LAYER => {
            let path = data_path(title, names).ok_or_else(bad)?;
            layer(format!("etc/data/{path}"), None)
        }
        mt if crate::extract::is_tar(mt)
            && l.annotations.get(ANN_UNPACK).is_some_and(|v| v == "true") =>
        {
            if !is_safe_rel(title) {
                return Err(bad());
            }
            layer(format!("etc/data/{title}"), Some(title.to_owned()))
        }
        _ => return Ok(None),
    }))
}

/// Every name in the tree was checked where it came from; this keeps a future entry from
/// reaching the filesystem unchecked.
pub(super) fn check_inside(image: &AgentImage, tree: &[TreeEntry]) -> Result<(), PlanError> {
    match tree.iter().map(TreeEntry::path).find(|p| !is_inside(p)) {
        Some(bad) => Err(PlanError::UnsafePath {
            reference: image.reference.clone(),
            path: bad.to_owned(),
        }),
        None => Ok(()),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_paths_stay_inside() {
        assert!(is_inside("etc/data/a.txt") && is_inside("mnt/my data"));
        for bad in ["", "/etc", "a//b", "a/../b", "./a", "a/", "a\0b"] {
            assert!(!is_inside(bad), "{bad:?}");
        }
    }

    #[test]
    fn data_paths_of_file_layers() {
        let names = ["docs/a.md", "x.json", "c.csv"];
        for (title, want) in [
            ("docs/a.md", Some("docs/a.md")),     // otters: the ADD's name
            ("x.json", Some("x.json")),           // L: a flat name
            ("/data/x.json", Some("x.json")),     // alpha.50: filepath.Base(dst)
            ("/data/sub/y.json", Some("y.json")), // alpha.50, flattened even with no ADD
            ("data/c.csv", Some("c.csv")),        // alpha.50, a relative dst
            ("./c.csv", Some("c.csv")),
            ("other/z.md", Some("other/z.md")), // no ADD names it: as titled
            ("/data/..", None),
            ("/", None),
            ("../x", None),
            ("/data/.hidden", None),
        ] {
            assert_eq!(data_path(title, &names).as_deref(), want, "{title}");
        }
    }

    #[test]
    fn path_safe_names() {
        assert!(is_path_safe("SOUL.md"));
        assert!(!is_path_safe(".hidden"));
        assert!(!is_path_safe("a/b"));
        assert!(is_safe_rel("dir/file.txt"));
        assert!(!is_safe_rel("dir/../x"));
        assert!(!is_safe_rel("/abs"));
    }
}
