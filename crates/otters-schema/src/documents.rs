//! The models of the two documents otters writes by hand for their exact bytes: `agent.yaml`
//! (`otters_pipeline::lower::agent_yaml::render`, every string quoted by `otters_core::yaml`) and
//! the agent config blob (`otters_agentfile::ir::blob::to_json`, Go's field order through
//! `otters_core::json`). Their writers do not go through these types, so two tests hold them
//! together: this crate's unit tests read what the writers make of an Agentfile with every
//! instruction back into these types, refusing any field they do not name, and every document
//! otters writes in `tests/suite/schemas.rs` validates against the schemas made from here
//! (`check-jsonschema`).
//!
//! Takes: nothing. Returns: types whose only use is their JSON Schema. Must never: be used to
//! write either document (the bytes are the writers').
#![allow(dead_code, reason = "only the JSON Schemas of these types are used")]

use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

/// An image pinned by reference and digest.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedRef {
    /// The reference as written in the Agentfile (or inherited from the parent).
    #[serde(rename = "ref")]
    reference: String,
    /// The digest of its manifest for the agent's platform, when it was pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<Digest>,
}

/// The runtime image and where its binary lies.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    /// The RUNTIME reference.
    #[serde(rename = "ref")]
    reference: String,
    /// Its pinned digest, when it was pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<Digest>,
    /// Where the runtime binary lies (`/usr/local/bin/runtime`, or `/opt/runtime/runtime` in a
    /// container).
    binary: String,
}

/// A `sha256:` digest.
#[derive(JsonSchema, Deserialize)]
#[serde(transparent)]
pub struct Digest(#[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))] String);

/// A CAPABILITY.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    /// The capability's name.
    name: String,
    /// Its description, from a capability catalogue, when one describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// A declared ENV (its value is never written here).
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Env {
    /// The variable's name.
    key: String,
    /// Its description, when the Agentfile gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// A declared MOUNT target (host paths are never written here).
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    /// The path inside the agent.
    target: String,
    /// Its description, when the Agentfile gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// Present, and `true`, for a read-only mount.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("const" = true))]
    read_only: Option<bool>,
}

/// A context document of the agent.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    /// Its name (`AGENT`, `WORKSPACE`, `MOUNTS`, or a CONTEXT's).
    name: String,
    /// Its path inside the agent (`/etc/context/NAME.md`).
    file: String,
    /// Its description, when the Agentfile gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// A BIN tool.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// The tool's name.
    name: String,
    /// Its description, when the Agentfile gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// Where its binary lies (`usr/bin/NAME`, or `/opt/bins/NAME` in a container).
    binary: String,
    /// The BIN image reference.
    #[serde(rename = "ref")]
    reference: String,
    /// Its pinned digest, when it was pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<Digest>,
    /// Its usage document inside the agent (`/etc/data/bins/NAME/USAGE.md`), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
}

/// `agent.yaml` (spec §g.2), keys in this order, empty sections left out.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentYaml {
    /// The agent's id (written by `otters run` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// The agent's NAME (empty when it has none).
    name: String,
    /// The MODEL (empty when it has none).
    model: String,
    /// The workspace directory inside the agent, always `/workspace`.
    #[schemars(extend("const" = "/workspace"))]
    workspace: String,
    /// The image the agent was created from (written by `otters run` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<PinnedRef>,
    /// The RUNTIME.
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<Runtime>,
    /// CONFIG values, by key, each as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    configs: Option<BTreeMap<String, String>>,
    /// CAPABILITYs, each once.
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<Vec<Capability>>,
    /// Declared ENVs.
    #[serde(skip_serializing_if = "Option::is_none")]
    envs: Option<Vec<Env>>,
    /// Declared MOUNTs.
    #[serde(skip_serializing_if = "Option::is_none")]
    mounts: Option<Vec<Mount>>,
    /// The context documents: `AGENT`, `WORKSPACE`, `MOUNTS` (with mounts), then each CONTEXT.
    context: Vec<ContextFile>,
    /// BIN tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Tool>>,
    /// The EXEC command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    exec: Option<Vec<String>>,
}

/// A CONTEXT of the config blob.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobContext {
    /// Its name.
    name: String,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// Its inline content (a heredoc or a string).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// The file it was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
}

/// A CONFIG value, typed as Go types it.
#[derive(JsonSchema, Deserialize)]
#[serde(untagged)]
pub enum ConfigValue {
    /// Text.
    String(String),
    /// An integer.
    Int(i64),
    /// A number with a fraction or exponent.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
}

/// A CONFIG of the config blob.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobConfig {
    /// Its key.
    key: String,
    /// Its value, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<ConfigValue>,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// Present, and `true`, when a value must be given.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("const" = true))]
    required: Option<bool>,
}

/// A BIN of the config blob.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobBin {
    /// The tool's name.
    name: String,
    /// Its image reference.
    image: String,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// Its usage text (a heredoc of the Agentfile).
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
}

/// An ADD of the config blob.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobAdd {
    /// The source path in the build context.
    src: String,
    /// The layer title (its name inside the agent).
    name: String,
    /// Equal to `name`, for openotters alpha.50.
    dst: String,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// An ENV of the config blob.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobEnv {
    /// The variable's name.
    key: String,
    /// Its default value.
    value: String,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// The agent of the config blob.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobAgent {
    /// The FROM reference (empty for `scratch`).
    from: String,
    /// The RUNTIME reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<String>,
    /// The MODEL.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// The NAME.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// CONTEXTs.
    #[serde(skip_serializing_if = "Option::is_none")]
    contexts: Option<Vec<BlobContext>>,
    /// CONFIGs.
    #[serde(skip_serializing_if = "Option::is_none")]
    configs: Option<Vec<BlobConfig>>,
    /// BINs.
    #[serde(skip_serializing_if = "Option::is_none")]
    bins: Option<Vec<BlobBin>>,
    /// ADDs.
    #[serde(skip_serializing_if = "Option::is_none")]
    adds: Option<Vec<BlobAdd>>,
    /// The EXEC command line.
    #[serde(skip_serializing_if = "Option::is_none")]
    exec: Option<Vec<String>>,
    /// LABELs, by key.
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<BTreeMap<String, String>>,
    /// ARGs and their values, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<BTreeMap<String, String>>,
    /// ENVs.
    #[serde(skip_serializing_if = "Option::is_none")]
    envs: Option<Vec<BlobEnv>>,
    /// CAPABILITYs, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<Vec<String>>,
    /// MOUNTs.
    #[serde(skip_serializing_if = "Option::is_none")]
    mounts: Option<Vec<Mount>>,
}

/// The agent config blob, as otters writes it (openotters' blobs, which otters also reads, may
/// carry fields this schema refuses).
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The Agentfile syntax (`openotters/agentfile:1`).
    syntax: String,
    /// The agent.
    agent: BlobAgent,
}
