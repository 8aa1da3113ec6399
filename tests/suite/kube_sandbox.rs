//! `otters kube --kind sandbox` and `--kind sandbox-template` through the real binary: agent-sandbox's
//! `Sandbox` (`agents.x-k8s.io/v1beta1`) and `SandboxTemplate` (`extensions.agents.x-k8s.io/v1beta1`)
//! validate with check-jsonschema against the CRDs' own `openAPIV3Schema` (vendored in
//! `testdata/agent-sandbox`, with its licence), each object schema closed as the API server's
//! pruning and `kubectl apply --validate=strict` close it; their `podTemplate` is the Pod
//! `--kind pod` writes, and that pod validates with kubernetes-validate `--strict` (1.31, 1.37)
//! and passes checkov's checks; the objects beside them (`ConfigMap`, `Service`, `NetworkPolicy`)
//! validate too. Each whole output is pinned (`snapshots/kube_sandbox`).

use crate::kube::{docs, own_checks, validate};
use crate::kube_inputs::{agent, image, redacted};
use crate::support::ci_tools::venv_bin;
use serde_json::Value as Json;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const AGENT: &str = "FROM scratch\nNAME sandboxed\nMODEL anthropic/x\nRUNTIME example.test/rt:1\nCONFIG webhook!\nMOUNT /data rw\n";

/// The vendored schema of `file`, every object schema that lists its `properties` closed
/// (`additionalProperties: false`) unless it keeps unknown fields
/// (`x-kubernetes-preserve-unknown-fields`): a CRD's schema is structural, so the API server drops
/// an unknown field, and `kubectl apply --validate=strict` refuses it.
fn closed_schema(file: &str, dir: &Path) -> PathBuf {
    fn close(v: &mut Json) {
        match v {
            Json::Object(m) => {
                let open = m.get("x-kubernetes-preserve-unknown-fields") == Some(&Json::Bool(true));
                if m.contains_key("properties") && !m.contains_key("additionalProperties") && !open
                {
                    m.insert("additionalProperties".into(), Json::Bool(false));
                }
                m.values_mut().for_each(close);
            }
            Json::Array(a) => a.iter_mut().for_each(close),
            _ => {}
        }
    }
    let vendored = crate::support::repo()
        .join("testdata/agent-sandbox")
        .join(file);
    let mut schema: Json = serde_json::from_slice(&fs::read(&vendored).unwrap()).unwrap();
    close(&mut schema);
    let out = dir.join(format!("closed-{file}"));
    fs::write(&out, serde_json::to_vec(&schema).unwrap()).unwrap();
    out
}

/// check-jsonschema of `doc` against `schema`: (passed, its output).
fn check_jsonschema(check: &Path, schema: &Path, doc: &Json, file: &Path) -> (bool, String) {
    fs::write(file, serde_json::to_vec_pretty(doc).unwrap()).unwrap();
    let out = Command::new(check)
        .arg("--schemafile")
        .arg(schema)
        .arg(file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn kube_sandbox_and_template_validate_against_the_agent_sandbox_crds() {
    let test = "kube_sandbox_and_template_validate_against_the_agent_sandbox_crds";
    let env = agent("sandboxed:1", AGENT);
    let dir = env.dir.path();
    let img = image();
    let kube = |kind: &str, extra: &[&str]| {
        let mut args = vec![
            "kube",
            "sandboxed:1",
            "--offline",
            "--image",
            &img,
            "--kind",
            kind,
        ];
        args.extend_from_slice(&["--config", "webhook=https://example.com/hook"]);
        args.extend_from_slice(&["--mount", "/data=pvc:agent-data"]);
        args.extend_from_slice(extra);
        let (ok, out, err) = env.run(&args);
        assert!(ok && err.is_empty(), "{kind}: {err}");
        out
    };
    let pod = kube("pod", &[]);
    let sandbox = kube(
        "sandbox",
        &["--service", "--network-policy", "-n", "agents"],
    );
    let template = kube("sandbox-template", &[]);
    crate::support::snap::assert("kube_sandbox", "sandbox", &redacted(&sandbox));
    crate::support::snap::assert("kube_sandbox", "sandbox_template", &redacted(&template));

    // The podTemplate is the Pod, unchanged.
    let the_pod = docs(&pod).remove(1);
    for (text, kind, api) in [
        (&sandbox, "Sandbox", "agents.x-k8s.io/v1beta1"),
        (
            &template,
            "SandboxTemplate",
            "extensions.agents.x-k8s.io/v1beta1",
        ),
    ] {
        own_checks(text);
        let d = docs(text).remove(1);
        assert_eq!(
            (d["kind"].as_str(), d["apiVersion"].as_str()),
            (Some(kind), Some(api))
        );
        assert_eq!(d["spec"]["podTemplate"]["spec"], the_pod["spec"], "{kind}");
        assert_eq!(
            d["spec"]["podTemplate"]["metadata"]["labels"],
            the_pod["metadata"]["labels"]
        );
    }
    // No networkPolicy of the template's own yet: the controller's secure default applies.
    assert!(!template.contains("networkPolicy"), "{template}");

    let Some(check) = venv_bin(test, "check-jsonschema") else {
        return;
    };
    for (text, file) in [
        (&sandbox, "agents.x-k8s.io_sandboxes.v1beta1.schema.json"),
        (
            &template,
            "extensions.agents.x-k8s.io_sandboxtemplates.v1beta1.schema.json",
        ),
    ] {
        let schema = closed_schema(file, dir);
        let doc: Json = serde_json::to_value(docs(text).remove(1)).unwrap();
        let (ok, out) = check_jsonschema(&check, &schema, &doc, &dir.join("object.json"));
        assert!(ok, "{file}: {out}");
        // The check can fail: a field the CRD does not know, deep in the pod, is refused.
        let mut planted = doc.clone();
        planted["spec"]["podTemplate"]["spec"]["containers"][0]["livenessProbes"] =
            Json::Bool(true);
        let (ok, out) = check_jsonschema(&check, &schema, &planted, &dir.join("planted.json"));
        assert!(!ok && out.contains("livenessProbes"), "{file}: {out}");
    }

    // The rest of the objects as they are, and the podTemplate as the Pod it makes, through
    // kubernetes-validate and checkov.
    let mut rest: Vec<serde_yaml_ng::Value> = Vec::new();
    for text in [&sandbox, &template] {
        for d in docs(text) {
            let kind = d["kind"].as_str().unwrap_or_default().to_owned();
            if kind.starts_with("Sandbox") {
                let mut pod = serde_yaml_ng::Mapping::new();
                pod.insert("apiVersion".into(), "v1".into());
                pod.insert("kind".into(), "Pod".into());
                let mut meta = d["spec"]["podTemplate"]["metadata"].clone();
                meta["name"] = d["metadata"]["name"].clone();
                pod.insert("metadata".into(), meta);
                pod.insert("spec".into(), d["spec"]["podTemplate"]["spec"].clone());
                rest.push(pod.into());
            } else {
                rest.push(d);
            }
        }
    }
    let file = dir.join("rest.yaml");
    let written: Vec<String> = rest
        .iter()
        .map(|d| serde_yaml_ng::to_string(d).unwrap())
        .collect();
    fs::write(&file, written.join("---\n")).unwrap();
    validate(test, &file);
}
