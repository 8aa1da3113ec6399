//! `otters kube --format kustomize -o DIR` through the real binary: `kubectl kustomize DIR`
//! renders the base, and the render is the plain objects again (the image by digest from the
//! kustomization's `images:`, the CONFIG values byte for byte through a `configMapGenerator`
//! whose content-hashed name the workload references, for agent-sandbox's kinds too), which
//! validate with kubernetes-validate `--strict` and pass checkov. A second run replaces only
//! otters' files; a directory with other files is refused unless `--force`, which leaves them
//! alone and never follows a link. The base's files and the refusals are pinned
//! (`snapshots/kube_kustomize`).

use crate::kube::{docs, own_checks, validate};
use crate::kube_inputs::{agent, image, redacted};
use crate::support::cli::Env;
use serde_yaml_ng::Value;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

const AGENT: &str = "FROM scratch\nNAME kusto\nMODEL anthropic/x\nRUNTIME example.test/rt:1\nENV MODE=fast\nCONFIG note!\nMOUNT /data rw\n";

/// A CONFIG value Kustomize's `literals` would change (it strips surrounding quotes).
const NOTE: &str = "\"quoted\"\nsecond line";

fn kube(env: &Env, extra: &[&str]) -> (bool, String, String) {
    let (img, note) = (image(), format!("note={NOTE}"));
    let mut args = vec!["kube", "kusto:1", "--offline", "--image", img.as_str()];
    args.extend_from_slice(&["--config", note.as_str()]);
    args.extend_from_slice(&["--mount", "/data=pvc:agent-data"]);
    args.extend_from_slice(extra);
    env.run(&args)
}

/// Every file under `dir`, sorted, as `== path ==` and its content.
fn listing(dir: &Path) -> String {
    let mut files = Vec::new();
    for e in walk(dir) {
        files.push(e);
    }
    files.sort();
    let mut out = String::new();
    for f in files {
        let rel = f.strip_prefix(dir).unwrap().display().to_string();
        let text = fs::read_to_string(&f).unwrap();
        write!(out, "== {rel} ==\n{text}\n").unwrap();
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn render(dir: &Path) -> Option<String> {
    let out = Command::new("kubectl")
        .args(["kustomize"])
        .arg(dir)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

/// The objects of `text`, sorted by kind, and the name of its `ConfigMap` (the generated one's,
/// content-hashed, in a render).
fn by_kind(text: &str) -> (String, Vec<(String, Value)>) {
    let mut generated = String::new();
    let mut out = Vec::new();
    for d in docs(text) {
        let kind = d["kind"].as_str().unwrap().to_owned();
        if kind == "ConfigMap" {
            d["metadata"]["name"]
                .as_str()
                .unwrap()
                .clone_into(&mut generated);
        }
        out.push((kind, d));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    (generated, out)
}

#[test]
fn kube_kustomize_base_renders_to_the_plain_objects_and_validates() {
    let test = "kube_kustomize_base_renders_to_the_plain_objects_and_validates";
    let env = agent("kusto:1", AGENT);
    let dir = env.dir.path().join("base");
    let flags = ["--service", "--network-policy", "-n", "agents"];
    let mut with = flags.to_vec();
    with.extend_from_slice(&["--format", "kustomize", "-o", dir.to_str().unwrap()]);
    let (ok, out, err) = kube(&env, &with);
    assert!(ok && out.is_empty() && err.is_empty(), "{out}{err}");
    crate::support::snap::assert("kube_kustomize", "base", &redacted(&listing(&dir)));
    assert_eq!(
        fs::read_to_string(dir.join("config/RUNTIME_NOTE")).unwrap(),
        NOTE
    );

    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        crate::support::tools::skip(test, "no kubectl (its built-in kustomize renders the base)");
        return;
    }
    let rendered = render(&dir).unwrap();
    let (plain_ok, plain, _) = kube(&env, &flags);
    assert!(plain_ok);
    let (generated, got) = by_kind(&rendered);
    assert!(
        generated.starts_with("kusto-config-") && generated.len() > 13,
        "{rendered}"
    );
    let (_, mut want) = by_kind(&plain);
    // The generated ConfigMap's name, content-hashed, is what the Deployment references.
    let renamed = serde_yaml_ng::to_string(&want)
        .unwrap()
        .replace("\"kusto-config\"", &format!("\"{generated}\""))
        .replace("kusto-config\n", &format!("{generated}\n"));
    want = serde_yaml_ng::from_str(&renamed).unwrap();
    assert_eq!(got.len(), 4, "{rendered}");
    for ((kind, g), (_, w)) in got.iter().zip(&want) {
        assert_eq!(
            g, w,
            "{kind} rendered differs from the plain output:\n{rendered}"
        );
    }
    assert!(
        rendered.contains(&format!("image: {}", image())),
        "{rendered}"
    );
    let file = env.dir.path().join("rendered.yaml");
    fs::write(&file, &rendered).unwrap();
    own_checks(&rendered);
    validate(test, &file);

    // agent-sandbox's kinds: Kustomize learns from kustomizeconfig.yaml where their pod names
    // the ConfigMap.
    for kind in ["sandbox", "sandbox-template"] {
        let sdir = env.dir.path().join(kind);
        let (ok, _, err) = kube(
            &env,
            &[
                "--kind",
                kind,
                "--format",
                "kustomize",
                "-o",
                sdir.to_str().unwrap(),
            ],
        );
        assert!(ok, "{err}");
        let rendered = render(&sdir).unwrap();
        let (generated, got) = by_kind(&rendered);
        let workload = &got
            .iter()
            .find(|(k, _)| k.starts_with("Sandbox"))
            .unwrap()
            .1;
        let pod = &workload["spec"]["podTemplate"]["spec"]["containers"][0];
        assert_eq!(
            pod["envFrom"][0]["configMapRef"]["name"].as_str(),
            Some(generated.as_str()),
            "{rendered}"
        );
        assert_eq!(pod["image"].as_str(), Some(image().as_str()));
    }
}

/// Re-running replaces otters' own files only (a Service no longer asked for goes); a directory
/// with a file otters did not write is refused, and with `--force` written beside it (the file
/// kept, a link at one of otters' names replaced, not followed). No `-o`: refused.
#[test]
fn kube_kustomize_rewrites_its_own_files_and_refuses_others_without_force() {
    let env = agent("kusto:1", AGENT);
    let dir = env.dir.path().join("base");
    let d = dir.to_str().unwrap();
    let mut t = String::new();
    let mut step = |what: &str, extra: &[&str]| {
        let mut args = vec!["--format", "kustomize", "-o", d];
        args.extend_from_slice(extra);
        let (ok, out, err) = kube(&env, &args);
        let err = crate::support::snap::unwrap_reports(&err);
        let mut files: Vec<String> = walk(&dir)
            .iter()
            .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        files.sort();
        write!(
            t,
            "$ {what}\nok: {ok}\nstdout: {out}\nstderr:\n{err}\nfiles: {}\n\n",
            files.join(" ")
        )
        .unwrap();
        ok
    };
    assert!(step("first run, --service", &["--service"]));
    assert!(step("again without --service", &[]));
    fs::write(dir.join("patch.yaml"), "mine\n").unwrap();
    assert!(!step("a file of the user's beside", &[]));
    assert!(step("--force", &["--force"]));
    assert_eq!(
        fs::read_to_string(dir.join("patch.yaml")).unwrap(),
        "mine\n"
    );
    let victim = env.dir.path().join("victim");
    fs::write(&victim, "keep me\n").unwrap();
    fs::remove_file(dir.join("deployment.yaml")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("deployment.yaml")).unwrap();
    assert!(!step("a link at deployment.yaml", &[]));
    assert!(step("a link at deployment.yaml, --force", &["--force"]));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me\n");
    assert!(fs::symlink_metadata(dir.join("deployment.yaml"))
        .unwrap()
        .is_file());
    let (ok, _, err) = kube(&env, &["--format", "kustomize"]);
    assert!(!ok);
    let err = crate::support::snap::unwrap_reports(&err);
    write!(t, "$ --format kustomize without -o\nstderr:\n{err}\n").unwrap();
    let text = t.replace(d, "[DIR]");
    crate::support::snap::assert("kube_kustomize", "rewrites", &text);
}
