//! `otters kube --format kustomize`: the objects as a Kustomize base a `GitOps` team keeps in git
//! and patches in overlays (`kubectl kustomize DIR` renders it).
//!
//! Takes: the objects [`super::objects`] makes. Returns: the files of the base, by relative path:
//! `kustomization.yaml` (the export in `images:` by digest, so `kustomize edit set image` and
//! Renovate update it; the labels in `labels:`; the CONFIG values through a `configMapGenerator`
//! with content-hashed names, one file per key under `config/`, read byte for byte), one file per
//! object, and for agent-sandbox's kinds `kustomizeconfig.yaml`, which tells Kustomize where their
//! pod template names the generated `ConfigMap`. [`write_base`] writes them into a directory.
//! Must never: follow a link in the directory, or touch a file otters did not write there unless
//! asked to (`force`).

use super::yaml::{documents, Node};
use super::{Kind, KubeError};
use std::io;
use std::path::{Path, PathBuf};

/// The first line of the `kustomization.yaml` otters writes: how a later run knows the directory
/// is its own.
pub const MARKER: &str = "# Written by `otters kube --format kustomize`; a later run replaces the files otters wrote here.";

/// The names otters may write at the top of the directory (beside `config/`).
const OWN: &[&str] = &[
    "kustomization.yaml",
    "kustomizeconfig.yaml",
    "pod.yaml",
    "job.yaml",
    "deployment.yaml",
    "sandbox.yaml",
    "sandbox-template.yaml",
    "service.yaml",
    "network-policy.yaml",
];

/// The directory of the generator's files.
const CONFIG_DIR: &str = "config";

/// The base's files (relative path, content) for `objects` (a `ConfigMap` first, then the
/// workload, then the `Service` and `NetworkPolicy` when asked for), in the order they are listed.
pub fn base(
    objects: &[Node],
    kind: Kind,
    namespace: Option<&str>,
) -> Result<Vec<(String, Vec<u8>)>, KubeError> {
    let mut files = Vec::new();
    let mut resources = Vec::new();
    let (Some(config_map), Some(workload)) = (objects.first(), objects.get(1)) else {
        return Err(KubeError::Invalid(vec![
            "no ConfigMap and workload to write".into(),
        ]));
    };
    let workload_file = match kind {
        Kind::Pod => "pod.yaml",
        Kind::Job => "job.yaml",
        Kind::Deployment => "deployment.yaml",
        Kind::Sandbox => "sandbox.yaml",
        Kind::SandboxTemplate => "sandbox-template.yaml",
    };
    let (workload, image) = unpinned(workload.clone())?;
    resources.push((workload_file.to_owned(), workload));
    for o in &objects[2..] {
        let file = match o.get("kind") {
            Some(Node::Str(k)) if k == "Service" => "service.yaml",
            Some(Node::Str(k)) if k == "NetworkPolicy" => "network-policy.yaml",
            other => {
                return Err(KubeError::Invalid(vec![format!(
                    "no file of the base for the object {other:?}"
                )]))
            }
        };
        resources.push((file.to_owned(), o.clone()));
    }
    let metadata = config_map.get("metadata");
    let text = |key: &str, node: Option<&Node>| match node.and_then(|m| m.get(key)) {
        Some(Node::Str(s)) => s.clone(),
        _ => String::new(),
    };
    let mut config_files = Vec::new();
    if let Some(Node::Map(data)) = config_map.get("data") {
        for (key, value) in data {
            let Node::Str(value) = value else { continue };
            // A ConfigMap key ([-._a-zA-Z0-9]+, not `.` or `..`) is a safe file name.
            if key.is_empty()
                || key == "."
                || key == ".."
                || !key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
            {
                return Err(KubeError::Invalid(vec![format!(
                    "ConfigMap key {key:?} is not a valid key"
                )]));
            }
            let path = format!("{CONFIG_DIR}/{key}");
            config_files.push(Node::from(path.as_str()));
            files.push((path, value.clone().into_bytes()));
        }
    }
    let mut generator = Node::map().with("name", text("name", metadata));
    if !config_files.is_empty() {
        generator.push("files", config_files);
    }
    let labels = metadata
        .and_then(|m| m.get("labels"))
        .cloned()
        .unwrap_or_else(Node::map);
    let mut kustomization = Node::map()
        .with("apiVersion", "kustomize.config.k8s.io/v1beta1")
        .with("kind", "Kustomization");
    if let Some(ns) = namespace {
        kustomization.push("namespace", ns);
    }
    kustomization.push(
        "labels",
        vec![Node::map()
            .with("pairs", labels)
            .with("includeSelectors", false)
            .with("includeTemplates", true)],
    );
    kustomization.push(
        "resources",
        resources
            .iter()
            .map(|(f, _)| Node::from(f.as_str()))
            .collect::<Vec<_>>(),
    );
    kustomization.push("configMapGenerator", vec![generator]);
    kustomization.push(
        "images",
        vec![Node::map()
            .with("name", image.0.as_str())
            .with("digest", image.1.as_str())],
    );
    if let Some(config) = name_reference(kind) {
        kustomization.push("configurations", vec![Node::from("kustomizeconfig.yaml")]);
        files.push(("kustomizeconfig.yaml".into(), body(&config)));
    }
    let mut out = vec![(
        "kustomization.yaml".to_owned(),
        format!(
            "{MARKER}\n{}",
            String::from_utf8_lossy(&body(&kustomization))
        )
        .into_bytes(),
    )];
    out.extend(resources.iter().map(|(f, n)| (f.clone(), body(n))));
    out.extend(files);
    Ok(out)
}

/// One YAML document, without the leading `---`.
fn body(node: &Node) -> Vec<u8> {
    let text = documents(std::slice::from_ref(node));
    text.strip_prefix("---\n")
        .unwrap_or(&text)
        .as_bytes()
        .to_vec()
}

/// The workload with its container's image named without digest (the digest lives in the
/// kustomization's `images:`), and that (name, digest).
fn unpinned(mut workload: Node) -> Result<(Node, (String, String)), KubeError> {
    let mut found = None;
    visit_images(&mut workload, &mut |image: &mut String| {
        if let Ok(r) = otters_oci::reference::Reference::parse(image) {
            if let Some(d) = &r.digest {
                found = Some((r.name(), d.clone()));
                *image = r.name();
            }
        }
    });
    let found = found
        .ok_or_else(|| KubeError::Invalid(vec!["the workload names no image by digest".into()]))?;
    Ok((workload, found))
}

/// Calls `f` on every container's `image` in `node`.
fn visit_images(node: &mut Node, f: &mut dyn FnMut(&mut String)) {
    match node {
        Node::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                match v {
                    Node::Str(s) if k == "image" => f(s),
                    _ => visit_images(v, f),
                }
            }
        }
        Node::Seq(items) => items.iter_mut().for_each(|i| visit_images(i, f)),
        _ => {}
    }
}

/// Kustomize knows where a Pod, Job or Deployment names a `ConfigMap`, not where agent-sandbox's
/// kinds do: without this, the generated `ConfigMap`'s hashed name would not reach their pod.
fn name_reference(kind: Kind) -> Option<Node> {
    let (group, kind) = match kind {
        Kind::Sandbox => ("agents.x-k8s.io", "Sandbox"),
        Kind::SandboxTemplate => ("extensions.agents.x-k8s.io", "SandboxTemplate"),
        _ => return None,
    };
    Some(Node::map().with(
        "nameReference",
        vec![Node::map()
            .with("kind", "ConfigMap")
            .with("version", "v1")
            .with(
                "fieldSpecs",
                vec![Node::map()
                    .with("group", group)
                    .with("kind", kind)
                    .with("path", "spec/podTemplate/spec/containers/envFrom/configMapRef/name")],
            )],
    ))
}

/// Why a base could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    #[error("{} holds files otters did not write there: {}", .dir.display(), shown(.others))]
    NotOurs { dir: PathBuf, others: Vec<String> },
    #[error("{} is not a directory (a link there is not followed)", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot {what} {}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Write(#[from] otters_oci::archive::ArchiveError),
}

/// The first five names, escaped, then how many more.
fn shown(names: &[String]) -> String {
    let mut out: Vec<String> = names
        .iter()
        .take(5)
        .map(|n| otters_core::escape::escape(n).into_owned())
        .collect();
    if names.len() > 5 {
        out.push(format!("and {} more", names.len() - 5));
    }
    out.join(", ")
}

fn io_err<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> BaseError + 'a {
    move |source| BaseError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

/// Writes `files` (from [`base`]) into `dir`, made when missing. A directory holding anything
/// but otters' own files (a previous base, its `kustomization.yaml` starting with [`MARKER`]) is
/// refused unless `force`; otters' files of a previous run that this one does not write are
/// removed, anything else is left as it is. No link is followed: one at a file's place is
/// replaced.
pub fn write_base(dir: &Path, files: &[(String, Vec<u8>)], force: bool) -> Result<(), BaseError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if !m.is_dir() => return Err(BaseError::NotADirectory(dir.to_owned())),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        }
        Err(e) => return Err(io_err("read", dir)(e)),
    }
    let (ours, others) = survey(dir)?;
    if !others.is_empty() && !force {
        return Err(BaseError::NotOurs {
            dir: dir.to_owned(),
            others,
        });
    }
    let config = dir.join(CONFIG_DIR);
    let wanted = |rel: &str| files.iter().any(|(f, _)| f == rel);
    for rel in ours.iter().filter(|r| !wanted(r)) {
        let path = dir.join(rel);
        std::fs::remove_file(&path).map_err(io_err("remove", &path))?;
    }
    if files.iter().any(|(f, _)| f.starts_with("config/")) {
        match std::fs::symlink_metadata(&config) {
            Ok(m) if m.is_dir() => {}
            // Only with `force`: anything else at `config` is not otters'.
            Ok(_) => std::fs::remove_file(&config).map_err(io_err("remove", &config))?,
            Err(_) => std::fs::create_dir(&config).map_err(io_err("create", &config))?,
        }
    } else if std::fs::read_dir(&config).is_ok_and(|mut d| d.next().is_none()) {
        std::fs::remove_dir(&config).map_err(io_err("remove", &config))?;
    }
    for (rel, bytes) in files {
        otters_oci::archive::write_output(&dir.join(rel), bytes)?;
    }
    Ok(())
}

/// What `dir` holds: (otters' files, by relative path; the other entries). Otters' files are
/// its names ([`OWN`], and regular files under `config/`) in a directory whose
/// `kustomization.yaml` it wrote; nothing is otters' in any other directory.
fn survey(dir: &Path) -> Result<(Vec<String>, Vec<String>), BaseError> {
    let kustomization = dir.join("kustomization.yaml");
    let is_ours = std::fs::symlink_metadata(&kustomization).is_ok_and(|m| m.is_file())
        && std::fs::read(&kustomization).is_ok_and(|b| b.starts_with(MARKER.as_bytes()));
    let mut ours = Vec::new();
    let mut others = Vec::new();
    for (rel, file_type) in entries(dir)? {
        let own = is_ours && file_type.is_file() && OWN.contains(&rel.as_str());
        if is_ours && rel == CONFIG_DIR && file_type.is_dir() {
            for (inner, t) in entries(&dir.join(CONFIG_DIR))? {
                let rel = format!("{CONFIG_DIR}/{inner}");
                if t.is_file() {
                    ours.push(rel);
                } else {
                    others.push(rel);
                }
            }
        } else if own {
            ours.push(rel);
        } else {
            others.push(rel);
        }
    }
    others.sort();
    ours.sort();
    Ok((ours, others))
}

/// The names and types (not followed) in `dir`.
fn entries(dir: &Path) -> Result<Vec<(String, std::fs::FileType)>, BaseError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io_err("read", dir))? {
        let e = e.map_err(io_err("read", dir))?;
        let t = e.file_type().map_err(io_err("read", dir))?;
        out.push((e.file_name().to_string_lossy().into_owned(), t));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(key: &str) -> Vec<Node> {
        let digest = format!("sha256:{}", "0".repeat(64));
        vec![
            Node::map()
                .with("kind", "ConfigMap")
                .with("metadata", Node::map().with("name", "a-config"))
                .with("data", Node::map().with(key, "v")),
            Node::map().with("kind", "Pod").with(
                "spec",
                Node::map().with(
                    "containers",
                    vec![Node::map().with("image", format!("r.example/a@{digest}"))],
                ),
            ),
        ]
    }

    #[test]
    fn the_digest_moves_to_images_and_each_key_to_a_file() {
        let files = base(&objects("RUNTIME_X"), Kind::Pod, None).unwrap();
        let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            names,
            ["kustomization.yaml", "pod.yaml", "config/RUNTIME_X"]
        );
        let text = |i: usize| String::from_utf8(files[i].1.clone()).unwrap();
        assert!(text(0).starts_with(MARKER), "{}", text(0));
        assert!(
            text(0).contains("images:\n- name: \"r.example/a\"\n  digest: \"sha256:000"),
            "{}",
            text(0)
        );
        assert!(text(1).contains("image: \"r.example/a\"\n"), "{}", text(1));
        assert_eq!(text(2), "v");
        // agent-sandbox's kinds get the nameReference Kustomize lacks.
        let files = base(&objects("K"), Kind::Sandbox, None).unwrap();
        assert!(files.iter().any(|(f, _)| f == "kustomizeconfig.yaml"));
    }

    #[test]
    fn a_key_that_is_no_safe_file_name_is_refused() {
        for key in ["../x", "a/b", "..", "", "a b"] {
            assert!(
                matches!(
                    base(&objects(key), Kind::Pod, None),
                    Err(KubeError::Invalid(_))
                ),
                "{key:?}"
            );
        }
    }
}
