//! `otters kube --tree image`: the pod runs the RUNTIME image itself (by digest) and mounts the
//! agent's tree export and each BIN image as image volumes (`volumes[].image`, Kubernetes ≥ 1.35
//! with the `ImageVolume` gate, GA in 1.36), instead of the runnable export that bakes them in.
//!
//! Takes: the agent, the store (holding its RUNTIME and BIN images, as deriving the tree export
//! leaves them) and the tree export's reference. Returns: [`TreeVolumes`], which `apply` writes
//! into the container and the pod. Must never: name an image by tag (every image by the digest
//! the agent pins), or mount the tree so that an empty volume starts an agent with no prompt:
//! `etc/agent.yaml` and `etc/Agentfile` are mounted by `subPath`, which a runtime refuses to
//! mount when the path is not in the image, so the container fails to start instead.
use super::yaml::Node;
use crate::bins;
use crate::extract::Limits;
use crate::source::{self, AgentImage, Fetcher};
use otters_core::escape::escape;
use otters_oci::reference::Reference;
use otters_oci::{Platform, Store};

/// Where each BIN image is mounted: `/opt/bin-images/<name>`, the directory of its binary.
pub const BIN_IMAGES: &str = "/opt/bin-images";

/// One BIN image mounted as a volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinVolume {
    pub name: String,
    /// `REPO@sha256:…`.
    pub image: String,
    /// The directory of the binary in the image (no leading `/`), the volume's `subPath`; empty
    /// when the binary is at the image's root.
    pub dir: String,
}

/// What `--tree image` mounts, and how the RUNTIME image is started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeVolumes {
    /// The tree export, `REPO@sha256:…`.
    pub tree: String,
    /// The runtime binary's absolute path in the RUNTIME image (the container's `command`).
    pub runtime_path: String,
    pub bins: Vec<BinVolume>,
    /// The export's fixed environment (`HOME`, `TMPDIR`, …), `PATH` made of the BIN volumes.
    pub env: Vec<(String, String)>,
}

/// Why the tree cannot be mounted from images.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("{what} {} is not pinned to a digest, so a cluster could not be given the image by digest; run `otters lock` in the agent's directory, then `otters build`", escape(.reference))]
    Unpinned { what: String, reference: String },
    #[error("{what} {}: its binary is not in a tar layer (a raw layer titled with its name, or nowhere), which an image volume cannot mount; deploy the runnable export instead", escape(.reference))]
    NotMountable { what: String, reference: String },
    #[error("BIN {name} ({}): its binary is `{}` in the image, which `{name}` on PATH would not find; deploy the runnable export instead", escape(.reference), escape(.found))]
    OtherName {
        name: String,
        reference: String,
        found: String,
    },
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    #[error(transparent)]
    Bin(#[from] crate::bins::BinError),
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
}

/// The RUNTIME image by digest and the [`TreeVolumes`] of `image` for `platform`, the tree being
/// the export `tree` (`REPO@sha256:…`).
pub fn tree_volumes(
    store: &Store,
    fetcher: &dyn Fetcher,
    image: &AgentImage,
    platform: &Platform,
    tree: String,
) -> Result<(String, TreeVolumes), TreeError> {
    let runtime = image
        .model
        .agent
        .runtime
        .as_ref()
        .map(|r| r.value.clone())
        .unwrap_or_default();
    let (runtime_image, runtime_at) = locate(
        store,
        fetcher,
        platform,
        "RUNTIME",
        &runtime,
        image.pins.runtime_digest(&runtime),
        "runtime",
    )?;
    let mut bins_out: Vec<BinVolume> = Vec::new();
    for b in &image.model.agent.bins {
        if bins_out.iter().any(|v| v.name == b.name) {
            continue;
        }
        let what = format!("BIN {}", b.name);
        let digest = image.pins.bin_digest(&b.name, &b.image);
        let (by_digest, at) = locate(store, fetcher, platform, &what, &b.image, digest, &b.name)?;
        let (dir, file) = at.rsplit_once('/').unwrap_or(("", at.as_str()));
        if file != b.name {
            return Err(TreeError::OtherName {
                name: b.name.clone(),
                reference: b.image.clone(),
                found: at.clone(),
            });
        }
        bins_out.push(BinVolume {
            name: b.name.clone(),
            image: by_digest,
            dir: dir.to_owned(),
        });
    }
    let path = if bins_out.is_empty() {
        BIN_IMAGES.to_owned()
    } else {
        let dirs: Vec<String> = bins_out
            .iter()
            .map(|b| format!("{BIN_IMAGES}/{}", b.name))
            .collect();
        dirs.join(":")
    };
    let env = crate::export::export_env(image, platform)?
        .into_iter()
        .filter(|e| !super::is_agent_env(image, &e.key))
        .map(|e| {
            let value = if e.key == "PATH" {
                path.clone()
            } else {
                e.value
            };
            (e.key, value)
        })
        .collect();
    Ok((
        runtime_image,
        TreeVolumes {
            tree,
            runtime_path: format!("/{runtime_at}"),
            bins: bins_out,
            env,
        },
    ))
}

/// `reference` at its pinned `digest` as `REPO@sha256:…`, and where its binary `name` is.
fn locate(
    store: &Store,
    fetcher: &dyn Fetcher,
    platform: &Platform,
    what: &str,
    reference: &str,
    digest: Option<&otters_oci::Digest>,
    name: &str,
) -> Result<(String, String), TreeError> {
    let unpinned = || TreeError::Unpinned {
        what: what.to_owned(),
        reference: reference.to_owned(),
    };
    let digest = digest.ok_or_else(unpinned)?;
    let repository = Reference::parse(reference).map_err(|_| unpinned())?.name();
    let top = fetcher.ensure(store, reference, Some(digest), platform)?;
    let img = source::bin_image(store, reference, &top, platform)?;
    let at = bins::locate(store, &img, name, &Limits::default())?.ok_or_else(|| {
        TreeError::NotMountable {
            what: what.to_owned(),
            reference: reference.to_owned(),
        }
    })?;
    Ok((format!("{repository}@{digest}"), at))
}

/// An image volume named `name` of `reference`, pulled when missing.
fn image_volume(name: &str, reference: &str) -> Node {
    Node::map().with("name", name).with(
        "image",
        Node::map()
            .with("reference", reference)
            .with("pullPolicy", "IfNotPresent"),
    )
}

/// Adds the tree and BIN volumes of `t` to `volumes` and their read-only mounts to `mounts`
/// (volumes named after the object `name`).
pub(super) fn apply(t: &TreeVolumes, name: &str, volumes: &mut Vec<Node>, mounts: &mut Vec<Node>) {
    let tree = format!("{name}-tree");
    volumes.push(image_volume(&tree, &t.tree));
    for (_, at) in crate::export::tree::entries() {
        mounts.push(
            Node::map()
                .with("name", tree.as_str())
                .with("mountPath", format!("/etc/{at}"))
                .with("subPath", at)
                .with("readOnly", true),
        );
    }
    for (i, b) in t.bins.iter().enumerate() {
        let volume = format!("{name}-bin-{i}");
        volumes.push(image_volume(&volume, &b.image));
        let mut m = Node::map()
            .with("name", volume.as_str())
            .with("mountPath", format!("{BIN_IMAGES}/{}", b.name));
        if !b.dir.is_empty() {
            m.push("subPath", b.dir.as_str());
        }
        mounts.push(m.with("readOnly", true));
    }
}

/// The container's `command`, and its `env` of the fixed variables, for `t`.
pub(super) fn container(t: &TreeVolumes, container: &mut Node, args: Vec<String>) {
    container.push("command", vec![Node::from(t.runtime_path.as_str())]);
    container.push("args", args.into_iter().map(Node::from).collect::<Vec<_>>());
}

/// The fixed variables as `env` entries.
pub(super) fn env(t: &TreeVolumes) -> Vec<Node> {
    t.env
        .iter()
        .map(|(k, v)| {
            Node::map()
                .with("name", k.as_str())
                .with("value", v.as_str())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volumes() -> TreeVolumes {
        TreeVolumes {
            tree: "r.example/a@sha256:1".into(),
            runtime_path: "/usr/local/bin/runtime".into(),
            bins: vec![
                BinVolume {
                    name: "jq".into(),
                    image: "r.example/jq@sha256:2".into(),
                    dir: "usr/bin".into(),
                },
                BinVolume {
                    name: "rg".into(),
                    image: "r.example/rg@sha256:3".into(),
                    dir: String::new(),
                },
            ],
            env: vec![(
                "PATH".into(),
                "/opt/bin-images/jq:/opt/bin-images/rg".into(),
            )],
        }
    }

    #[test]
    fn the_tree_mounts_by_sub_path_and_each_bin_at_its_directory() {
        let (mut vols, mut mounts) = (Vec::new(), Vec::new());
        apply(&volumes(), "a", &mut vols, &mut mounts);
        let text = crate::kube::yaml::documents(&[Node::map()
            .with("volumes", vols)
            .with("volumeMounts", mounts)]);
        for want in [
            "mountPath: \"/etc/agent.yaml\"\n  subPath: \"agent.yaml\"\n  readOnly: true",
            "mountPath: \"/etc/Agentfile\"\n  subPath: \"Agentfile\"",
            "mountPath: \"/etc/context\"\n  subPath: \"context\"",
            "mountPath: \"/etc/data\"\n  subPath: \"data\"",
            "name: \"a-bin-0\"\n  mountPath: \"/opt/bin-images/jq\"\n  subPath: \"usr/bin\"\n  readOnly: true",
            "name: \"a-bin-1\"\n  mountPath: \"/opt/bin-images/rg\"\n  readOnly: true",
            "reference: \"r.example/a@sha256:1\"\n    pullPolicy: \"IfNotPresent\"",
            "reference: \"r.example/rg@sha256:3\"",
        ] {
            assert!(text.contains(want), "{want:?} not in:\n{text}");
        }
        // The tree is never mounted whole: an empty volume must not start the agent.
        assert!(!text.contains("mountPath: \"/etc\"\n"), "{text}");
    }
}
