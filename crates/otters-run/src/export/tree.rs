//! `otters export --as tree`: the agent's `etc/` tree as an image-shaped artifact (an OCI image
//! manifest, an image config, one `tar+gzip` layer) that a kubelet mounts as an image volume
//! (`otters kube --tree image`) beside the RUNTIME image it runs unchanged.
//!
//! Takes: the tree [`super`] materialised for the export (the same plan and code as the runnable
//! export), the agent and the platform. Returns: the layer group and the image config. Must
//! never: hold anything but `etc/` (no binary, no writable directory), or depend on the clock,
//! host or directory order (same agent, same digest).

use super::layers::{Group, LayerError, Written};
use crate::plan::CONTAINER_BINDS;
use crate::source::AgentImage;
use otters_core::json::{to_compact, Value};
use otters_oci::spec::annotations;
use otters_oci::spec::descriptor::string_map;
use otters_oci::Platform;
use std::collections::BTreeMap;
use std::path::Path;

/// The value of the export annotation for `--as tree`.
pub const TREE: &str = "tree";

/// Every `/etc/` entry of the docker layout, at the image's root (`agent.yaml`, `context/…`), so
/// the image mounts at `/etc` (whole, or by `subPath` per entry); owned by root: it mounts
/// read-only.
pub fn group(root: &Path) -> Result<Group, LayerError> {
    let mut g = Group::new("tree");
    for (src, dst) in entries() {
        g.add(&root.join(src), dst.as_bytes(), 0)?;
    }
    Ok(g)
}

/// The tree's entries: (path in the agent tree, path in the image), the latter also the `subPath`
/// that mounts it at `/etc/<path>`.
pub fn entries() -> impl Iterator<Item = (&'static str, &'static str)> {
    CONTAINER_BINDS
        .iter()
        .filter_map(|(src, dst, _)| dst.strip_prefix("/etc/").map(|d| (*src, d)))
}

/// The tree's image config: the platform, the layer's diff id, a label tying it to its agent and
/// a history entry naming it; no entrypoint (nothing runs it).
pub fn image_config(image: &AgentImage, platform: &Platform, layer: &Written) -> Vec<u8> {
    let labels = BTreeMap::from([
        (annotations::AGENT.to_owned(), "true".to_owned()),
        (
            annotations::AGENT_DIGEST.to_owned(),
            image.digest.to_string(),
        ),
    ]);
    let mut v = Value::object()
        .with("architecture", platform.architecture.as_str())
        .with("os", platform.os.as_str());
    if let Some(var) = &platform.variant {
        v.push("variant", var.as_str());
    }
    let history = Value::object().with(
        "created_by",
        format!(
            "otters export: the agent tree {}@{}",
            super::canonical_reference(&image.reference),
            image.digest
        ),
    );
    let v = v
        .with(
            "config",
            Value::object().with("Labels", string_map(&labels)),
        )
        .with(
            "rootfs",
            Value::object().with("type", "layers").with(
                "diff_ids",
                Value::Array(vec![Value::from(layer.diff_id.as_str())]),
            ),
        )
        .with("history", Value::Array(vec![history]));
    to_compact(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_holds_only_etc() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["etc/context", "etc/data", "usr/bin", "workspace", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("etc/Agentfile"), "FROM scratch\n").unwrap();
        std::fs::write(root.join("etc/agent.yaml"), "name: a\n").unwrap();
        std::fs::write(root.join("etc/context/AGENT.md"), "# a\n").unwrap();
        std::fs::write(root.join("usr/bin/tool"), "x").unwrap();
        let g = group(root).unwrap();
        assert!(g.has_file(b"agent.yaml"));
        assert!(g.has_file(b"Agentfile"));
        assert!(g.has_file(b"context/AGENT.md"));
        assert!(!g.has_file(b"etc/agent.yaml"));
        assert!(!g.has_file(b"usr/bin/tool"));
        assert!(!g.has_file(b"opt/bins/tool"));
    }
}
