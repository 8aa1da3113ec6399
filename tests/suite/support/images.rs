//! Builders for small OCI images written straight into OCI image layouts, and a helper to copy a
//! layout into a registry with skopeo (an independent client).
//!
//! Bins follow the shape of spec §f.2 (index → per-platform manifest → one gzip tar layer with the
//! binary); openotters-style agents have raw per-file layers (spec §e.2).

use serde_json::{json, Value};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An OCI image layout directory being written.
pub struct Layout {
    pub dir: PathBuf,
    index: Vec<Value>,
}

impl Layout {
    pub fn new(dir: &Path) -> Layout {
        std::fs::create_dir_all(dir.join("blobs/sha256")).expect("layout dir");
        super::write(&dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#);
        let mut l = Layout {
            dir: dir.to_path_buf(),
            index: Vec::new(),
        };
        l.write_index();
        l
    }

    /// Stores a blob and returns its descriptor (`mediaType`, `digest`, `size`).
    pub fn blob(&self, media_type: &str, bytes: &[u8]) -> Value {
        let digest = super::sha256(bytes);
        let path = self
            .dir
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"));
        std::fs::write(path, bytes).expect("write blob");
        json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
    }

    /// Tags a descriptor in `index.json` under `tag`.
    pub fn tag(&mut self, desc: &Value, tag: &str) {
        let mut d = desc.clone();
        d["annotations"] = json!({"org.opencontainers.image.ref.name": tag});
        self.index.push(d);
        self.write_index();
    }

    fn write_index(&mut self) {
        let idx = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": self.index});
        super::write(&self.dir.join("index.json"), idx.to_string());
    }
}

/// Which annotation prefix a test bin carries.
#[derive(Clone, Copy, Debug)]
pub enum BinPrefix {
    /// `io.openotters.bin.*` (current).
    Io,
    /// `vnd.openotters.bin.*` (older images).
    Vnd,
    /// No bin annotations at all.
    None,
}

/// A gzip tar with one executable file at `name`.
pub fn tar_gz_one_file(name: &str, content: &[u8]) -> (Vec<u8>, String) {
    let mut tar_bytes = Vec::new();
    {
        let mut b = tar::Builder::new(&mut tar_bytes);
        let mut h = tar::Header::new_ustar();
        h.set_size(content.len() as u64);
        h.set_mode(0o755);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, content).expect("tar append");
        b.finish().expect("tar finish");
    }
    let diff_id = super::sha256(&tar_bytes);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar_bytes).expect("gzip");
    (gz.finish().expect("gzip finish"), diff_id)
}

/// Writes a bin image for `arch` (os linux) and returns its manifest descriptor with platform.
pub fn bin_manifest(
    l: &Layout,
    name: &str,
    content: &[u8],
    prefix: BinPrefix,
    description: Option<&str>,
    arch: &str,
) -> Value {
    let (layer, diff_id) = tar_gz_one_file(name, content);
    let mut layer_desc = l.blob("application/vnd.oci.image.layer.v1.tar+gzip", &layer);
    layer_desc["annotations"] = json!({"org.opencontainers.image.title": name});
    let cfg = json!({
        "architecture": arch, "os": "linux",
        "config": {"Entrypoint": [format!("/{name}")], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    });
    let cfg_desc = l.blob(
        "application/vnd.oci.image.config.v1+json",
        cfg.to_string().as_bytes(),
    );
    let ann = bin_annotations(name, prefix, description);
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.openotters.bin.v1",
        "config": cfg_desc, "layers": [layer_desc], "annotations": ann,
    });
    let mut d = l.blob(
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    );
    d["platform"] = json!({"os": "linux", "architecture": arch});
    d
}

pub fn bin_annotations(name: &str, prefix: BinPrefix, description: Option<&str>) -> Value {
    let mut ann = serde_json::Map::new();
    match prefix {
        BinPrefix::Io => {
            ann.insert("io.openotters.bin.name".into(), json!(name));
            ann.insert("io.openotters.bin.path".into(), json!("/"));
            if let Some(d) = description {
                ann.insert("org.opencontainers.image.description".into(), json!(d));
            }
        }
        BinPrefix::Vnd => {
            ann.insert("vnd.openotters.bin.name".into(), json!(name));
            ann.insert("vnd.openotters.bin.path".into(), json!("/"));
            if let Some(d) = description {
                ann.insert("vnd.openotters.bin.description".into(), json!(d));
            }
        }
        BinPrefix::None => {}
    }
    Value::Object(ann)
}

/// A bin image as the official builder makes it: an index with a manifest for this machine's
/// architecture and one for another architecture (different bytes), tagged `tag`. Returns the
/// index descriptor and the host manifest's digest.
pub fn bin_index(
    dir: &Path,
    tag: &str,
    name: &str,
    content: &[u8],
    prefix: BinPrefix,
    description: Option<&str>,
) -> (Value, String) {
    let mut l = Layout::new(dir);
    let host = bin_manifest(&l, name, content, prefix, description, super::host_arch());
    let other_arch = if super::host_arch() == "s390x" {
        "ppc64le"
    } else {
        "s390x"
    };
    let other = bin_manifest(&l, name, b"other arch", prefix, description, other_arch);
    let index = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "artifactType": "application/vnd.openotters.bin.v1",
        "manifests": [other, host.clone()],
        "annotations": bin_annotations(name, prefix, description),
    });
    let d = l.blob(
        "application/vnd.oci.image.index.v1+json",
        index.to_string().as_bytes(),
    );
    l.tag(&d, tag);
    let host_digest = host["digest"].as_str().unwrap_or_default().to_owned();
    (d, host_digest)
}

/// A single-manifest bin image (no index), tagged `tag`. Returns the manifest digest.
pub fn bin_single(
    dir: &Path,
    tag: &str,
    name: &str,
    content: &[u8],
    prefix: BinPrefix,
    description: Option<&str>,
) -> String {
    let mut l = Layout::new(dir);
    let mut d = bin_manifest(&l, name, content, prefix, description, super::host_arch());
    d.as_object_mut().map(|o| o.remove("platform"));
    l.tag(&d, tag);
    d["digest"].as_str().unwrap_or_default().to_owned()
}

/// An agent image as openotters builds it: canonical-ish config JSON and raw per-file layers
/// `(mediaType, title, bytes)`. Returns the manifest digest.
pub fn openotters_agent(
    dir: &Path,
    tag: &str,
    config: &str,
    layers: &[(&str, &str, &[u8])],
) -> String {
    let mut l = Layout::new(dir);
    let cfg = l.blob(
        "application/vnd.openotters.agent.config.v1+json",
        config.as_bytes(),
    );
    let layers: Vec<Value> = layers
        .iter()
        .map(|(mt, title, bytes)| {
            let mut d = l.blob(mt, bytes);
            d["annotations"] = json!({"org.opencontainers.image.title": title});
            d
        })
        .collect();
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.openotters.agent.v1",
        "config": cfg, "layers": layers,
        "annotations": {"org.opencontainers.image.created": "2026-05-01T00:00:00Z"},
    });
    let d = l.blob(
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    );
    l.tag(&d, tag);
    d["digest"].as_str().unwrap_or_default().to_owned()
}

/// Copies `layout:tag` to `docker://dest` with skopeo (plain HTTP), optionally with credentials.
pub fn skopeo_push(layout: &Path, tag: &str, dest: &str, creds: Option<(&str, &str)>) {
    let mut cmd = Command::new("skopeo");
    cmd.args(["copy", "--quiet", "--all", "--dest-tls-verify=false"]);
    if let Some((u, p)) = creds {
        cmd.arg(format!("--dest-creds={u}:{p}"));
    }
    cmd.arg(format!("oci:{}:{tag}", layout.display()))
        .arg(format!("docker://{dest}"));
    super::run_ok(&mut cmd);
}

/// [`bin_index`] written to the layout `dir` and copied by skopeo to `dest` (`host/repo:tag`, no
/// credentials): how a test puts a RUNTIME or BIN image on a registry. Returns what [`bin_index`]
/// returns (the index descriptor, the host manifest's digest).
pub fn push_bin_index(
    dir: &Path,
    dest: &str,
    name: &str,
    content: &[u8],
    prefix: BinPrefix,
    description: Option<&str>,
) -> (Value, String) {
    let pushed = bin_index(dir, "1", name, content, prefix, description);
    skopeo_push(dir, "1", dest, None);
    pushed
}

/// `sha256` of the raw manifest skopeo reads from `docker://reference`.
pub fn skopeo_digest(reference: &str, creds: Option<(&str, &str)>) -> String {
    let mut cmd = Command::new("skopeo");
    cmd.args(["inspect", "--raw", "--tls-verify=false"]);
    if let Some((u, p)) = creds {
        cmd.arg(format!("--creds={u}:{p}"));
    }
    cmd.arg(format!("docker://{reference}"));
    let out = cmd.output().expect("skopeo inspect");
    assert!(
        out.status.success(),
        "skopeo inspect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    super::sha256(&out.stdout)
}
