//! The SBOM of an agent image: `CycloneDX` 1.6 JSON written from [`BuildInputs`].
//!
//! The agent is the BOM's subject (`metadata.component`); the runtime, every BIN and the FROM
//! parent are components with `pkg:oci` purls and their manifest digests; the Agentfile, every ADD
//! file and every CONTEXT are `file` components with SHA-256 hashes; the MODEL is a `service` (a
//! hosted model the agent calls, not a component in the image); a declared EGRESS is one
//! `otters:egress` property of the metadata per destination (or `none`). Why `CycloneDX` rather than SPDX 2.3:
//! docs/supply-chain.md.
//!
//! Takes: build inputs. Returns: canonical JSON bytes. Must never: read the wall clock or write
//! anything that differs between two runs over the same inputs (no random `serialNumber`; the
//! timestamp only when one is given).

use crate::inputs::{BuildInputs, FileInput, ImageInput};
use crate::statement::{Statement, Subject};
use otters_core::json::{self, Value};

/// `predicateType` of an in-toto statement carrying a `CycloneDX` BOM.
pub const CYCLONEDX_PREDICATE: &str = "https://cyclonedx.org/bom";
/// Media type of the standalone document.
pub const CYCLONEDX_MEDIA_TYPE: &str = "application/vnd.cyclonedx+json";

/// The BOM as a JSON value.
pub fn to_value(inputs: &BuildInputs) -> Value {
    let components = components(inputs);
    let mut refs: Vec<Value> = components
        .iter()
        .filter_map(|c| match c {
            Value::Object(fields) => fields
                .iter()
                .find(|(k, _)| k == "bom-ref")
                .map(|(_, v)| v.clone()),
            _ => None,
        })
        .collect();

    let mut bom = Value::object()
        .with("bomFormat", "CycloneDX")
        .with("specVersion", "1.6")
        .with("version", 1i64)
        .with("metadata", metadata(inputs))
        .with("components", components);
    if let Some(model) = &inputs.model {
        bom.push("services", vec![model_service(model)]);
        refs.push(Value::String("model".into()));
    }
    bom.push(
        "dependencies",
        vec![Value::object().with("ref", "agent").with("dependsOn", refs)],
    );
    bom
}

/// `metadata`: the tool, the agent image itself as the BOM's subject, and the platform.
fn metadata(inputs: &BuildInputs) -> Value {
    let mut metadata = Value::object();
    if let Some(t) = &inputs.created {
        metadata.push("timestamp", t.as_str());
    }
    metadata.push(
        "tools",
        Value::object().with(
            "components",
            vec![Value::object()
                .with("type", "application")
                .with("name", "otters")
                .with("version", inputs.otters_version.as_str())],
        ),
    );
    let agent = &inputs.agent;
    let mut subject = Value::object()
        .with("type", "application")
        .with("bom-ref", "agent")
        .with("name", agent.name.as_str());
    if let Some(t) = &agent.tag {
        subject.push("version", t.as_str());
    }
    subject.push(
        "description",
        "AI agent image built by otters from an Agentfile",
    );
    subject.push("hashes", sha256(agent.manifest_digest.hex()));
    subject.push("purl", agent.purl());
    metadata.push("component", subject);
    let mut properties = vec![property("otters:platform", &inputs.platform)];
    // The declared network: `otters:egress` once per destination (`host:port`), or `none`.
    match &inputs.egress {
        None => {}
        Some(list) if list.is_empty() => properties.push(property("otters:egress", "none")),
        Some(list) => properties.extend(list.iter().map(|e| {
            let host = if e.host.contains(':') {
                format!("[{}]", e.host)
            } else {
                e.host.clone()
            };
            property("otters:egress", &format!("{host}:{}", e.port))
        })),
    }
    metadata.push("properties", properties);

    metadata
}

/// One component per input: the Agentfile, the runtime, every BIN, the parent, every ADD file and
/// every CONTEXT.
fn components(inputs: &BuildInputs) -> Vec<Value> {
    let mut components = vec![file(
        "agentfile",
        &inputs.agentfile.path,
        &inputs.agentfile,
        "agentfile",
        "the Agentfile the image was built from",
        None,
    )];
    if let Some(img) = &inputs.runtime {
        components.push(image(
            "runtime",
            "runtime",
            img,
            "RUNTIME: the agent runtime image",
        ));
    }
    for b in &inputs.bins {
        let r = format!("bin:{}", b.name);
        components.push(image(
            &r,
            "bin",
            &b.image,
            &format!("BIN {}: a tool image", b.name),
        ));
    }
    if let Some(img) = &inputs.parent {
        components.push(image(
            "parent",
            "parent",
            img,
            "FROM: the parent agent image",
        ));
    }
    for (i, f) in inputs.adds.iter().enumerate() {
        let r = format!("add:{i}:{}", f.path);
        components.push(file(
            &r,
            &f.path,
            f,
            "add",
            "ADD: a file from the build context",
            None,
        ));
    }
    for c in &inputs.contexts {
        let r = format!("context:{}", c.name);
        let f = FileInput {
            path: format!("{}.md", c.name),
            digest: c.digest.clone(),
        };
        let what = format!("CONTEXT {}", c.name);
        components.push(file(&r, &f.path, &f, "context", &what, c.source.as_deref()));
    }
    components
}

/// The MODEL as what it is: a hosted service the agent calls, not a package in the image.
fn model_service(model: &str) -> Value {
    let (provider, name) = model.split_once('/').unwrap_or(("", model));
    let mut svc = Value::object().with("bom-ref", "model");
    if !provider.is_empty() {
        svc.push("provider", Value::object().with("name", provider));
        svc.push("group", provider);
    }
    svc.push("name", name);
    svc.push(
        "description",
        format!("MODEL {model}: the hosted language model the agent calls at run time; not part of the image"),
    );
    svc.push(
        "properties",
        vec![
            property("otters:role", "model"),
            property("otters:model", model),
        ],
    );
    svc
}

/// The BOM as indented canonical JSON with a final newline: the standalone `.cdx.json` file.
pub fn to_bytes(inputs: &BuildInputs) -> Vec<u8> {
    let mut out = json::to_indented(&to_value(inputs)).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The BOM as the predicate of an in-toto statement about the agent (for a signed attestation).
pub fn statement(inputs: &BuildInputs) -> Statement {
    Statement {
        subjects: vec![Subject {
            name: inputs.agent.subject_name().to_owned(),
            digest: inputs.agent.manifest_digest.clone(),
        }],
        predicate_type: CYCLONEDX_PREDICATE.to_owned(),
        predicate: to_value(inputs),
    }
}

fn sha256(hex: &str) -> Vec<Value> {
    vec![Value::object().with("alg", "SHA-256").with("content", hex)]
}

fn property(name: &str, value: &str) -> Value {
    Value::object().with("name", name).with("value", value)
}

fn image(bom_ref: &str, role: &str, img: &ImageInput, description: &str) -> Value {
    let mut v = Value::object()
        .with("type", "application")
        .with("bom-ref", bom_ref)
        .with("name", img.repository.as_str());
    if let Some(t) = &img.tag {
        v.push("version", t.as_str());
    }
    v.with("description", description)
        .with("hashes", sha256(img.digest.hex()))
        .with("purl", img.purl())
        .with(
            "properties",
            vec![
                property("otters:role", role),
                property("otters:reference", &img.reference()),
            ],
        )
}

fn file(
    bom_ref: &str,
    name: &str,
    f: &FileInput,
    role: &str,
    description: &str,
    source: Option<&str>,
) -> Value {
    let mut properties = vec![property("otters:role", role)];
    if let Some(src) = source {
        properties.push(property("otters:source", src));
    }
    Value::object()
        .with("type", "file")
        .with("bom-ref", bom_ref)
        .with("name", name)
        .with("description", description)
        .with("hashes", sha256(f.digest.hex()))
        .with("properties", properties)
}
