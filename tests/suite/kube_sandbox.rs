//! `otters kube --kind sandbox` and `--kind sandbox-template` through the real binary: agent-sandbox's
//! `Sandbox` (`agents.x-k8s.io/v1beta1`) and `SandboxTemplate` (`extensions.agents.x-k8s.io/v1beta1`)
//! validate with check-jsonschema against the CRDs' own `openAPIV3Schema` (vendored in
//! `testdata/agent-sandbox`, with its licence), each object schema closed as the API server's
//! pruning and `kubectl apply --validate=strict` close it; their `podTemplate` is the Pod
//! `--kind pod` writes, and that pod validates with kubernetes-validate `--strict` (1.31, 1.37)
//! and passes checkov's checks; the objects beside them (`ConfigMap`, `Service`, `NetworkPolicy`)
//! validate too; the `SandboxTemplate` of an agent that declares EGRESS carries its egress rules
//! as its own `networkPolicy`, and validates. Each whole output is pinned
//! (`snapshots/kube_sandbox`).

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
    // An agent without EGRESS: no networkPolicy of the template's own, so the controller's secure
    // default applies.
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

const EGRESS_AGENT: &str = "FROM scratch\nNAME fetcher\nMODEL anthropic/x\nRUNTIME example.test/rt:1\nEGRESS api.open-meteo.com \"The forecast API\"\nEGRESS *.example.org:80\nEGRESS 10.0.0.5:5432\nEGRESS [2001:db8::1]:853\n";

#[test]
fn a_sandbox_template_holds_the_declared_egress_as_its_network_policy() {
    let test = "a_sandbox_template_holds_the_declared_egress_as_its_network_policy";
    let env = agent("fetcher:1", EGRESS_AGENT);
    let none = EGRESS_AGENT.split("EGRESS").next().unwrap().to_owned() + "EGRESS none\n";
    env.build_unpinned("closed:1", &{
        let ctx = env.dir.path().join("closed");
        crate::support::write(&ctx.join("Agentfile"), none);
        ctx
    });
    let img = image();
    let kube = |tag: &str, extra: &[&str]| {
        let mut args = vec!["kube", tag, "--offline", "--image", &img];
        args.extend_from_slice(&["--kind", "sandbox-template"]);
        args.extend_from_slice(extra);
        let (ok, out, err) = env.run(&args);
        assert!(ok && err.is_empty(), "{tag}: {err}");
        out
    };
    let template = kube("fetcher:1", &[]);
    let closed = kube("closed:1", &[]);
    let cilium = kube("fetcher:1", &["--network-policy", "cilium"]);
    crate::support::snap::assert("kube_sandbox", "egress_template", &redacted(&template));
    crate::support::snap::assert("kube_sandbox", "egress_none_template", &redacted(&closed));

    // The template's egress rules are the <name>-egress NetworkPolicy's, and the router is
    // admitted to the runtime's port.
    for text in [&template, &closed] {
        own_checks(text);
        let d = docs(text);
        let np = &d[1]["spec"]["networkPolicy"];
        let policy = d
            .iter()
            .find(|o| o["kind"].as_str() == Some("NetworkPolicy"))
            .unwrap();
        assert_eq!(np["egress"], policy["spec"]["egress"], "{text}");
        assert_eq!(
            np["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app"].as_str(),
            Some("sandbox-router")
        );
    }
    let d = docs(&template);
    assert_eq!(
        d[1]["spec"]["networkPolicy"]["egress"]
            .as_sequence()
            .map(Vec::len),
        Some(4)
    );
    assert_eq!(
        docs(&closed)[1]["spec"]["networkPolicy"]["egress"]
            .as_sequence()
            .map(Vec::len),
        Some(0)
    );
    // With Cilium, no rule opens the names' ports to any address: DNS and the two addresses.
    let c = docs(&cilium);
    let rules = c[1]["spec"]["networkPolicy"]["egress"]
        .as_sequence()
        .unwrap();
    assert_eq!(rules.len(), 3, "{cilium}");
    assert!(rules.iter().all(|r| !r["to"].is_null()), "{cilium}");

    let Some(check) = venv_bin(test, "check-jsonschema") else {
        return;
    };
    let dir = env.dir.path();
    let schema = closed_schema(
        "extensions.agents.x-k8s.io_sandboxtemplates.v1beta1.schema.json",
        dir,
    );
    for text in [&template, &closed, &cilium] {
        let doc: Json = serde_json::to_value(docs(text).remove(1)).unwrap();
        let (ok, out) = check_jsonschema(&check, &schema, &doc, &dir.join("object.json"));
        assert!(ok, "{out}");
        // The check can fail: the controller owns the podSelector, which the CRD leaves out.
        let mut planted = doc.clone();
        planted["spec"]["networkPolicy"]["podSelector"] = serde_json::json!({});
        let (ok, out) = check_jsonschema(&check, &schema, &planted, &dir.join("planted.json"));
        assert!(!ok && out.contains("podSelector"), "{out}");
    }
}
