//! `otters export --as tree` and `otters kube --tree image` through the real binary: the tree
//! export is an ordinary image (skopeo reads it, umoci unpacks it into the agent's `/etc` files and
//! nothing else), linked to its agent as a `tree` export that never passes for the runnable one,
//! and reproducible (two fresh homes, one digest); the `--tree image` pod runs the RUNTIME image by
//! digest with the tree and the BIN as image volumes, validates with kubernetes-validate
//! `--strict` for 1.36 and 1.37 and passes checkov's checks; and it runs when simulated with
//! podman's `--mount type=image` (podman 4.3 has it for `run`, not for `kube play`). Whole outputs
//! are pinned (`snapshots/kube_tree`); a Kustomize base of the pod renders with every image kept by
//! digest.

use crate::kube::{docs, own_checks, validate_for};
use crate::kube_inputs::redacted;
use crate::support::cli::{self, ok};
use crate::support::run_ok;
use crate::support::runnable::{last_line, podman, StaticWorld};
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Command;

fn raw_manifest(reference: &str) -> Value {
    let raw = run_ok(Command::new("skopeo").args([
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]));
    serde_json::from_str(&raw).expect("manifest JSON")
}

/// Every path below `dir`, relative, sorted (directories end in `/`).
fn paths(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.push(format!("{rel}/"));
                todo.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// The standard error of `cmd`, which must fail.
fn fails(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().expect("run otters");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "should have failed:\n{err}");
    crate::support::snap::unwrap_reports(&err)
}

/// `text` with the registry's address, this machine's architecture and every digest made stable.
fn stable(text: &str, w: &StaticWorld) -> String {
    let arch = format!("linux/{}", crate::support::host_arch());
    redacted(
        &text
            .replace(&w.reg.addr, "[REGISTRY]")
            .replace(&arch, "linux/[ARCH]"),
    )
}

#[test]
fn the_tree_export_is_an_image_linked_to_its_agent_and_reproducible() {
    let test = "the_tree_export_is_an_image_linked_to_its_agent_and_reproducible";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = w.agent("probe", "probe");
    let out = ok(cli::otters(&w.home).args(["export", &agent, "--as", "tree", "--push"]));
    let digest = last_line(&out);
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "{out}");
    let repo = agent.trim_end_matches(":1");
    let image = format!("{repo}@{digest}");

    // Image-shaped: an image manifest, an image config, one tar+gzip layer; its subject the agent.
    let manifest = raw_manifest(&image);
    let agent_digest = crate::support::images::skopeo_digest(&agent, None);
    assert_eq!(manifest["subject"]["digest"], agent_digest.as_str());
    assert_eq!(manifest["annotations"]["io.openotters.export"], "tree");
    let mut shape = manifest.clone();
    shape["subject"]["digest"] = "[AGENT]".into();
    // Sizes follow the registry's address (in agent.yaml), which changes from run to run.
    shape["config"]["size"] = "[SIZE]".into();
    shape["layers"][0]["size"] = "[SIZE]".into();
    shape["subject"]["size"] = "[SIZE]".into();
    crate::support::snap::assert(
        "kube_tree",
        "tree_manifest",
        &stable(&serde_json::to_string_pretty(&shape).unwrap(), &w),
    );
    let info: Value = serde_json::from_str(&run_ok(Command::new("skopeo").args([
        "inspect",
        "--tls-verify=false",
        &format!("docker://{image}"),
    ])))
    .unwrap();
    assert_eq!(info["Os"], "linux");
    assert_eq!(info["Architecture"], crate::support::host_arch());

    // umoci unpacks it into the agent's /etc files, at the image's root, and nothing else.
    let layout = w.tmp.path().join("layout");
    run_ok(Command::new("skopeo").args([
        "copy",
        "--src-tls-verify=false",
        &format!("docker://{image}"),
        &format!("oci:{}:x", layout.display()),
    ]));
    let bundle = w.tmp.path().join("bundle");
    run_ok(
        Command::new("umoci")
            .args(["unpack", "--image"])
            .arg(format!("{}:x", layout.display()))
            .arg(&bundle),
    );
    let rootfs = bundle.join("rootfs");
    crate::support::snap::assert("kube_tree", "tree_files", &paths(&rootfs).join("\n"));
    let yaml = fs::read_to_string(rootfs.join("agent.yaml")).unwrap();
    assert!(yaml.contains("file: \"/etc/context/SOUL.md\""), "{yaml}");

    // Discover lists both kinds of export; the runnable lookup never takes the tree one.
    let found = ok(cli::otters(&w.home).args(["discover", &agent]));
    assert!(found.contains(&digest), "{found}");
    let err = fails(cli::otters(&w.home).args(["kube", &agent]));
    assert!(
        err.contains("has no runnable export for"),
        "kube with only a tree export: {err}"
    );

    // Reproducible: two fresh homes (each pulls the agent, its runtime and BIN) give its digest.
    for name in ["other-a", "other-b"] {
        let home = w.fresh_home(name);
        let again = last_line(&ok(
            cli::otters(&home).args(["export", &agent, "--as", "tree"])
        ));
        assert_eq!(again, digest, "tree export from a fresh home {name}");
    }
}

#[test]
fn the_tree_image_pod_validates_and_runs_with_image_mounts() {
    let test = "the_tree_image_pod_validates_and_runs_with_image_mounts";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = w.agent("probe", "probe");
    // With only a runnable export (in the store and the registry), --tree image never takes it
    // for the tree: it says how to make one.
    let runnable = last_line(&ok(
        cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"])
    ));
    let err = fails(cli::otters(&w.home).args(["kube", &agent, "--tree", "image"]));
    crate::support::snap::assert("kube_tree", "no_tree_export", &stable(&err, &w));
    let err = fails(cli::otters(&w.home).args([
        "kube",
        &agent,
        "--tree",
        "image",
        "--image",
        "r.example/x@sha256:0000000000000000000000000000000000000000000000000000000000000000",
    ]));
    crate::support::snap::assert("kube_tree", "tree_with_image", &stable(&err, &w));
    let tree = last_line(&ok(
        cli::otters(&w.home).args(["export", &agent, "--as", "tree", "--push"])
    ));
    assert_ne!(runnable, tree);
    let kube = |extra: &[&str]| {
        ok(cli::otters(&w.home)
            .args([
                "kube",
                &agent,
                "--config",
                "webhook=https://example.com/hook",
            ])
            .args(["--allow-missing-mounts"])
            .args(extra))
    };
    // The runnable lookup still finds the runnable export beside the tree one.
    let plain = kube(&["--kind", "pod"]);
    assert!(plain.contains(&format!("@{runnable}\"")), "{plain}");
    let pod = kube(&["--kind", "pod", "--tree", "image"]);
    assert_eq!(pod, kube(&["--kind", "pod", "--tree", "image"]));
    assert!(pod.contains(&format!("@{tree}\"")), "{pod}");
    assert!(!pod.contains(&runnable), "{pod}");
    crate::support::snap::assert("kube_tree", "pod", &stable(&pod, &w));
    let deployment = kube(&["--tree", "image"]);
    crate::support::snap::assert("kube_tree", "deployment", &stable(&deployment, &w));

    // The runtime and BIN images by the digests the agent pins: the image for this machine in
    // each one's index.
    let pinned = |name: &str| -> String {
        let index = raw_manifest(&format!("{}/{name}:1", w.reg.addr));
        let host = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["platform"]["architecture"] == crate::support::host_arch());
        host.unwrap()["digest"].as_str().unwrap().to_owned()
    };
    let (runtime, tool) = (pinned("runtime"), pinned("tool"));
    let d = docs(&pod);
    let spec = &d.iter().find(|d| d["kind"] == "Pod").unwrap()["spec"];
    let c = &spec["containers"][0];
    let runtime_image = format!("{}/runtime@{runtime}", w.reg.addr);
    assert_eq!(c["image"].as_str(), Some(runtime_image.as_str()));
    let volumes = spec["volumes"].as_sequence().unwrap();
    let images: Vec<&str> = volumes
        .iter()
        .filter_map(|v| v["image"]["reference"].as_str())
        .collect();
    let tool_image = format!("{}/tool@{tool}", w.reg.addr);
    let tree_image = format!("{}/probe@{tree}", w.reg.addr);
    assert_eq!(images, [tree_image.as_str(), tool_image.as_str()]);

    // As a Kustomize base, the render keeps the image volumes and the RUNTIME image by digest.
    let base = w.tmp.path().join("base");
    ok(cli::otters(&w.home)
        .args([
            "kube",
            &agent,
            "--config",
            "webhook=https://example.com/hook",
        ])
        .args([
            "--allow-missing-mounts",
            "--tree",
            "image",
            "--format",
            "kustomize",
            "-o",
        ])
        .arg(&base));
    if let Ok(out) = Command::new("kubectl").arg("kustomize").arg(&base).output() {
        let rendered = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for want in [&runtime_image, &tree_image, &tool_image] {
            assert!(
                rendered.contains(want.as_str()),
                "{want} not in:\n{rendered}"
            );
        }
    }

    for (name, text) in [("pod", &pod), ("deployment", &deployment)] {
        own_checks(text);
        let file = w.tmp.path().join(format!("{name}.yaml"));
        fs::write(&file, text).unwrap();
        // ImageVolume: on by default in 1.35, GA in 1.36; the schemas of what it claims.
        if !validate_for(test, &file, &[], &["1.36.0", "1.37.0"]) {
            return;
        }
    }

    simulate(test, &w, c, [&runtime_image, &tree_image, &tool_image]);
}

/// Runs the pod's container `c` as podman can: the RUNTIME image with the tree and the BIN image
/// mounted by `--mount type=image`; checks the static runtime's report.
fn simulate(test: &str, w: &StaticWorld, c: &serde_yaml_ng::Value, images: [&String; 3]) {
    let [runtime_image, tree_image, tool_image] = images;
    // Simulated: podman runs the RUNTIME image with the tree and the BIN image mounted as image
    // volumes (podman 4.3 has no subPath for them: the tree mounts whole at /etc, which the
    // static runtime image does not have), with the pod's command, arguments and environment,
    // read-only root and the pod's user.
    let Some(podman) = podman(test, w.tmp.path(), &w.reg.addr) else {
        return;
    };
    for i in [&runtime_image, &tree_image, &tool_image] {
        run_ok(podman().args(["pull", "-q", "--tls-verify=false", i]));
    }
    let mut cmd = podman();
    cmd.args([
        "run",
        "--rm",
        "--network=none",
        "--read-only",
        "--user",
        "65532:65532",
    ])
    .arg("--mount")
    // rw: podman bind-mounts its own /etc/passwd, /etc/hosts … into /etc, which needs their
    // mount points there; the agent's files stay as the image has them (the report shows them).
    .arg(format!(
        "type=image,source={tree_image},destination=/etc,rw=true"
    ))
    .arg("--mount")
    .arg(format!(
        "type=image,source={tool_image},destination=/opt/bin-images/tool"
    ));
    for (dir, _) in [
        ("/workspace", 0),
        ("/home", 0),
        ("/tmp", 0),
        ("/var/lib", 0),
    ] {
        cmd.arg("--tmpfs").arg(format!("{dir}:rw,mode=1777"));
    }
    for e in c["env"].as_sequence().into_iter().flatten() {
        if let (Some(k), Some(v)) = (e["name"].as_str(), e["value"].as_str()) {
            cmd.arg("-e").arg(format!("{k}={v}"));
        }
    }
    cmd.arg("-e")
        .arg("RUNTIME_WEBHOOK=https://example.com/hook");
    cmd.arg("--workdir=/workspace");
    cmd.arg(format!(
        "--entrypoint={}",
        c["command"][0].as_str().unwrap()
    ));
    cmd.arg(runtime_image);
    for a in c["args"].as_sequence().unwrap() {
        cmd.arg(a.as_str().unwrap());
    }
    let report = run_ok(&mut cmd);
    for i in [&runtime_image, &tree_image, &tool_image] {
        let _ = podman().args(["rmi", "-f", i]).output();
    }
    for want in [
        "UID 65532 GID 65532",
        "ARG serve",
        "ENV PATH=/opt/bin-images/tool",
        "ENV RUNTIME_WEBHOOK=https://example.com/hook",
        "TREE /etc/Agentfile",
        "TREE /etc/agent.yaml",
        "TREE /etc/context/SOUL.md",
        "TREE /etc/data/notes.txt",
        "WORKSPACE yes",
        "HOME yes",
        "TOOL tool-ran",
        "END",
    ] {
        assert!(
            report.contains(want),
            "{want:?} not in the runtime's report:\n{report}"
        );
    }
}
