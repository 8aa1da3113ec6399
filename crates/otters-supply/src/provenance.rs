//! SLSA provenance v1 of an agent image: an in-toto Statement v1 whose subject is the agent's
//! manifest digest, written from [`BuildInputs`].
//!
//! `buildDefinition.externalParameters` holds what the user chose (the Agentfile path, the build
//! args an ARG declares, the platform; of an argument read from the environment only its name,
//! under `buildArgsFromEnvironment`, unless the user asked for its value); `resolvedDependencies` holds everything the build read, each by digest:
//! the Agentfile, every ADD file and CONTEXT, and every pinned image (runtime, BINs, parent) by
//! its `pkg:oci` purl. Takes: build inputs. Returns: a statement, or its canonical bytes. Must
//! never: record a time or anything else that is not a function of the inputs.

use crate::inputs::{BuildInputs, FileInput, ImageInput};
use crate::statement::{Statement, Subject};
use otters_core::json::{self, Value};

/// `predicateType` of SLSA provenance v1.
pub const SLSA_PROVENANCE_V1: &str = "https://slsa.dev/provenance/v1";
/// The build type: an otters build of an Agentfile; its parameters are documented in
/// docs/supply-chain.md under this anchor.
pub const BUILD_TYPE: &str =
    "https://github.com/openotters/otters/blob/main/docs/supply-chain.md#buildtype-agentfile-v1";
/// Default `runDetails.builder.id`: otters on the machine that ran it. A CI system that vouches for
/// its builds passes its own id instead.
pub const DEFAULT_BUILDER_ID: &str =
    "https://github.com/openotters/otters/blob/main/docs/supply-chain.md#builder-local";

/// The provenance statement; `builder_id` is `runDetails.builder.id`.
pub fn statement(inputs: &BuildInputs, builder_id: &str) -> Statement {
    let mut args = Value::object();
    let mut sorted: Vec<&(String, String)> = inputs.build_args.iter().collect();
    sorted.sort();
    for (k, v) in sorted {
        args.push(k.as_str(), v.as_str());
    }
    let mut external = Value::object()
        .with("agentfile", inputs.agentfile.path.as_str())
        .with("buildArgs", args);
    if !inputs.env_build_args.is_empty() {
        let mut names: Vec<&String> = inputs.env_build_args.iter().collect();
        names.sort_unstable();
        let names: Vec<Value> = names.into_iter().map(Value::from).collect();
        external.push("buildArgsFromEnvironment", names);
    }
    external.push("platform", inputs.platform.as_str());

    let mut deps = vec![file_dep(&inputs.agentfile, "agentfile")];
    if let Some(img) = &inputs.runtime {
        deps.push(image_dep("runtime", img));
    }
    for b in &inputs.bins {
        deps.push(image_dep(&format!("bin:{}", b.name), &b.image));
    }
    if let Some(img) = &inputs.parent {
        deps.push(image_dep("parent", img));
    }
    for f in &inputs.adds {
        deps.push(file_dep(f, "add"));
    }
    for c in &inputs.contexts {
        let mut d = Value::object();
        if let Some(src) = &c.source {
            d.push("uri", format!("file:{src}"));
        }
        d.push("name", format!("context:{}", c.name));
        d.push("digest", Value::object().with("sha256", c.digest.hex()));
        deps.push(d);
    }

    let predicate = Value::object()
        .with(
            "buildDefinition",
            Value::object()
                .with("buildType", BUILD_TYPE)
                .with("externalParameters", external)
                .with("resolvedDependencies", deps),
        )
        .with(
            "runDetails",
            Value::object().with(
                "builder",
                Value::object().with("id", builder_id).with(
                    "version",
                    Value::object().with("otters", inputs.otters_version.as_str()),
                ),
            ),
        );
    Statement {
        subjects: vec![Subject {
            name: inputs.agent.subject_name().to_owned(),
            digest: inputs.agent.manifest_digest.clone(),
        }],
        predicate_type: SLSA_PROVENANCE_V1.to_owned(),
        predicate,
    }
}

/// The statement as indented canonical JSON with a final newline (the unsigned document).
pub fn to_bytes(inputs: &BuildInputs, builder_id: &str) -> Vec<u8> {
    let mut out = json::to_indented(&statement(inputs, builder_id).to_value()).unwrap_or_default();
    out.push(b'\n');
    out
}

fn file_dep(f: &FileInput, role: &str) -> Value {
    Value::object()
        .with("uri", format!("file:{}", f.path))
        .with("name", role)
        .with("digest", Value::object().with("sha256", f.digest.hex()))
}

fn image_dep(name: &str, img: &ImageInput) -> Value {
    Value::object()
        .with("uri", img.purl())
        .with("name", name)
        .with("digest", Value::object().with("sha256", img.digest.hex()))
        .with(
            "annotations",
            Value::object().with("reference", img.reference()),
        )
}
