//! Multi-platform agents through the `otters` binary against a real `docker-registry`:
//! `build --platform linux/amd64,linux/arm64` resolves RUNTIME and BIN per platform and writes an
//! OCI image index of one agent manifest per platform (the tag, the push and the lock follow it),
//! `run` picks the host's manifest, and a platform an image lacks fails the build naming both.

use crate::support::cli::{json, Env};
use crate::support::images::{self, BinPrefix, Layout};
use crate::support::World;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BOTH: &str = "linux/amd64,linux/arm64";

/// `multiplatform`'s steps on the shared [`World`] (a temp machine and a registry).
trait MultiPlatform {
    /// Pushes a bin image named `bin` under `name:1`, an index with one manifest per `arch`
    /// (linux, different bytes each); returns each arch's manifest digest.
    fn push_index(&self, name: &str, bin: &str, archs: &[&str]) -> BTreeMap<String, String>;
    /// A context whose Agentfile uses `runtime:1` and the BIN `tool:1` of this registry.
    fn agent_context(&self) -> PathBuf;
}

impl MultiPlatform for World {
    fn push_index(&self, name: &str, bin: &str, archs: &[&str]) -> BTreeMap<String, String> {
        let dir = self.dir().join(format!("layouts/{name}"));
        let mut l = Layout::new(&dir);
        let mut manifests = Vec::new();
        let mut digests = BTreeMap::new();
        for arch in archs {
            let content = format!("#!/bin/sh\necho {bin} for {arch}\n");
            let d = images::bin_manifest(
                &l,
                bin,
                content.as_bytes(),
                BinPrefix::Io,
                Some("a test image"),
                arch,
            );
            digests.insert((*arch).to_owned(), d["digest"].as_str().unwrap().to_owned());
            manifests.push(d);
        }
        let index = json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": manifests,
            "annotations": images::bin_annotations(bin, BinPrefix::Io, Some("a test image")),
        });
        let d = l.blob(
            "application/vnd.oci.image.index.v1+json",
            index.to_string().as_bytes(),
        );
        l.tag(&d, "1");
        images::skopeo_push(&dir, "1", &format!("{}/{name}:1", self.reg.addr), None);
        digests
    }

    fn agent_context(&self) -> PathBuf {
        let reg = &self.reg.addr;
        self.context(
            "ctx",
            &format!("FROM scratch\nNAME multi\nRUNTIME {reg}/runtime:1\nMODEL anthropic/claude-test\nBIN tool {reg}/tool:1\n"),
            &[],
        )
    }
}

/// The raw document skopeo reads at `reference` (with its transport: `docker://…`, `oci-archive:…`).
fn skopeo_raw(reference: &str) -> Vec<u8> {
    let out = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false", reference])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `(platform, digest)` of every entry of an index.
fn entries(index: &Value) -> Vec<(String, String)> {
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                format!(
                    "{}/{}",
                    m["platform"]["os"].as_str().unwrap(),
                    m["platform"]["architecture"].as_str().unwrap()
                ),
                m["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// `Agentfile.lock` of the two-platform build: one part per platform, each pinning that
/// platform's runtime and tool manifests.
fn check_lock(ctx: &Path, rt: &BTreeMap<String, String>, tool: &BTreeMap<String, String>) {
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(ctx.join("Agentfile.lock")).unwrap())
            .unwrap();
    assert_eq!(lock["platform"], BOTH);
    let each = lock["platforms"].as_array().unwrap();
    assert_eq!(each.len(), 2, "{lock}");
    for (l, arch) in each.iter().zip(["amd64", "arm64"]) {
        assert_eq!(l["platform"], format!("linux/{arch}"));
        let digests: Vec<&str> = l["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["digest"].as_str().unwrap())
            .collect();
        assert_eq!(digests, [rt[arch].as_str(), tool[arch].as_str()], "{lock}");
    }
}

#[test]
fn a_two_platform_build_is_an_index_pushed_pulled_and_run_for_the_host() {
    let w = World::new();
    let rt = w.push_index("runtime", "runtime", &["amd64", "arm64"]);
    let tool = w.push_index("tool", "tool", &["amd64", "arm64"]);
    let ctx = w.agent_context();
    let tag = format!("{}/agent:1", w.reg.addr);
    let ctx_s = ctx.to_str().unwrap();
    let digest = w
        .env
        .ok(&[
            "build",
            "-q",
            "--platform",
            BOTH,
            "-t",
            &tag,
            "--push",
            ctx_s,
        ])
        .trim()
        .to_owned();

    // The same build again gives the same index, which --iidfile names too.
    let iid = w.dir().join("iid");
    let archive = w.dir().join("agent.tar");
    let again = w
        .env
        .ok(&[
            "build",
            "-q",
            "--platform",
            BOTH,
            "-t",
            &tag,
            "--iidfile",
            iid.to_str().unwrap(),
            "-o",
            &format!("type=oci,dest={}", archive.display()),
            ctx_s,
        ])
        .trim()
        .to_owned();
    assert_eq!(again, digest);
    assert_eq!(std::fs::read_to_string(&iid).unwrap().trim(), digest);
    let archived = skopeo_raw(&format!("oci-archive:{}", archive.display()));
    assert_eq!(crate::support::sha256(&archived), digest);

    // The registry holds an index with one agent manifest per platform, each pinning that
    // platform's runtime and tool.
    let raw = skopeo_raw(&format!("docker://{tag}"));
    assert_eq!(crate::support::sha256(&raw), digest);
    let index: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    let platforms = entries(&index);
    assert_eq!(
        platforms
            .iter()
            .map(|(p, _)| p.as_str())
            .collect::<Vec<_>>(),
        ["linux/amd64", "linux/arm64"]
    );
    for ((p, manifest), arch) in platforms.iter().zip(["amd64", "arm64"]) {
        let m: Value = serde_json::from_slice(&skopeo_raw(&format!(
            "docker://{}/agent@{manifest}",
            w.reg.addr
        )))
        .unwrap();
        assert_eq!(
            m["artifactType"], "application/vnd.openotters.agent.v1",
            "{p}"
        );
        let yaml_layer = m["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["mediaType"] == "application/vnd.openotters.agent.resolved.v1+yaml")
            .unwrap();
        let yaml =
            std::fs::read_to_string(w.env.store_blob(yaml_layer["digest"].as_str().unwrap()))
                .unwrap();
        assert!(yaml.contains(&rt[arch]), "{p}: {yaml}");
        assert!(yaml.contains(&tool[arch]), "{p}: {yaml}");
    }

    // The lock records each platform's pins.
    check_lock(&ctx, &rt, &tool);

    // Offline, each platform takes its pins from its part of the lock: the same index again.
    let offline = w
        .env
        .ok(&["build", "-q", "--offline", "--platform", BOTH, ctx_s])
        .trim()
        .to_owned();
    assert_eq!(offline, digest);
    // A build for one of the platforms checks its part with --locked and keeps the others.
    let before = std::fs::read(ctx.join("Agentfile.lock")).unwrap();
    w.env.ok(&[
        "build",
        "-q",
        "--locked",
        "--platform",
        "linux/arm64",
        ctx_s,
    ]);
    assert_eq!(std::fs::read(ctx.join("Agentfile.lock")).unwrap(), before);

    // A fresh home pulls the same index, and a dry run picks this machine's manifest.
    let fresh = Env::new();
    let pulled = fresh.ok(&["pull", "-q", &tag]).trim().to_owned();
    assert_eq!(pulled, digest);
    let host = format!("linux/{}", crate::support::host_arch());
    let plan = json(&fresh.ok(&["run", "--dry-run", &tag]));
    let want = platforms.iter().find(|(p, _)| *p == host).map(|(_, d)| d);
    assert_eq!(
        plan["image"]["digest"].as_str(),
        want.map(String::as_str),
        "{plan}"
    );

    // A platform the index lacks is refused, naming what it has.
    let err = fresh.fails(&["run", "--dry-run", "--platform", "linux/s390x", &tag]);
    assert!(
        err.contains(
            "no image for platform linux/s390x in the index (available: linux/amd64, linux/arm64)"
        ),
        "{err}"
    );
}

#[test]
fn a_platform_the_runtime_lacks_fails_the_build_naming_image_and_platform() {
    let w = World::new();
    w.push_index("runtime", "runtime", &["amd64"]);
    w.push_index("tool", "tool", &["amd64", "arm64"]);
    let ctx = w.agent_context();
    let err = w
        .env
        .fails(&["build", "--platform", BOTH, ctx.to_str().unwrap()]);
    assert!(err.contains("AF411"), "{err}");
    assert!(
        err.contains(&format!(
            "image `{}/runtime:1` has no image for linux/arm64: it is built for linux/amd64",
            w.reg.addr
        )),
        "{err}"
    );
    assert!(!ctx.join("Agentfile.lock").exists());
    // One platform the runtime has still builds a single manifest and a single-platform lock.
    let digest = w
        .env
        .ok(&[
            "build",
            "-q",
            "--platform",
            "linux/amd64",
            ctx.to_str().unwrap(),
        ])
        .trim()
        .to_owned();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(w.env.store_blob(&digest)).unwrap()).unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let lock = std::fs::read_to_string(ctx.join("Agentfile.lock")).unwrap();
    assert!(!lock.contains("\"platforms\""), "{lock}");
    assert!(lock.contains("\"platform\": \"linux/amd64\""), "{lock}");
}
