//! The published JSON Schemas (draft-07) of the files otters reads and writes and of its JSON
//! outputs, one per name in [`SCHEMAS`], each generated from the Rust type that reads or writes
//! the document (or, where the writer quotes by hand, from the model in [`documents`]).
//!
//! Takes: a schema name. Returns: the schema's text (pretty JSON, a final newline), or the
//! `SchemaStore` catalog of the file formats. Must never: read files, the clock or the environment;
//! the text depends only on the types, so `schemas/v1/` in the repository is compared with it.

pub mod documents;
mod id;
pub mod outputs;

pub use id::{id, REPOSITORY, VERSION};

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// One published schema.
#[derive(Clone, Copy)]
pub struct Entry {
    /// Its name: `otters schema NAME`, and the file `schemas/v1/NAME.json`.
    pub name: &'static str,
    /// Its title (the file or command it describes).
    pub title: &'static str,
    /// One sentence on what it describes.
    pub description: &'static str,
    /// The file names editors match it to (`SchemaStore`'s `fileMatch`); empty for a command's output.
    pub file_match: &'static [&'static str],
    generate: fn() -> Schema,
}

impl Entry {
    /// A document otters reads: the schema of what `T` deserialises.
    const fn read<T: JsonSchema>(
        name: &'static str,
        title: &'static str,
        description: &'static str,
        file_match: &'static [&'static str],
    ) -> Self {
        Entry {
            name,
            title,
            description,
            file_match,
            generate: generate::<T, true>,
        }
    }

    /// A document otters writes: the schema of what `T` serialises.
    const fn write<T: JsonSchema>(
        name: &'static str,
        title: &'static str,
        description: &'static str,
        file_match: &'static [&'static str],
    ) -> Self {
        Entry {
            name,
            title,
            description,
            file_match,
            generate: generate::<T, false>,
        }
    }

    /// Its `$id`: `<repository>/raw/main/schemas/v1/NAME.json`.
    pub fn id(&self) -> String {
        id(self.name)
    }

    /// The schema's text: pretty JSON with a final newline.
    pub fn text(&self) -> String {
        let mut root = (self.generate)().to_value();
        let Value::Object(body) = &mut root else {
            unreachable!("a root schema is an object")
        };
        describe_tags(body);
        body.remove("$schema");
        body.remove("title");
        body.remove("description");
        let mut head = Map::new();
        head.insert("$schema".into(), DRAFT_07.into());
        head.insert("$id".into(), self.id().into());
        head.insert("title".into(), self.title.into());
        head.insert("description".into(), self.description.into());
        head.extend(std::mem::take(body));
        let mut text = serde_json::to_string_pretty(&Value::Object(head))
            .unwrap_or_else(|_| unreachable!("a JSON value always serialises"));
        text.push('\n');
        text
    }
}

/// Gives the tag of an internally tagged enum (`"kind": {"const": "docker"}`), which serde names
/// and no doc comment can describe, its description.
fn describe_tags(o: &mut Map<String, Value>) {
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        for (name, p) in props.iter_mut() {
            if let Value::Object(p) = p {
                if !p.contains_key("description") {
                    if let Some(tag) = p.get("const").and_then(Value::as_str) {
                        let text = format!("Which kind of {name} this is: `{tag}`.");
                        p.insert("description".into(), text.into());
                    }
                }
            }
        }
    }
    for child in o.values_mut() {
        match child {
            Value::Object(c) => describe_tags(c),
            Value::Array(items) => items.iter_mut().for_each(|i| {
                if let Value::Object(c) = i {
                    describe_tags(c);
                }
            }),
            _ => {}
        }
    }
}

/// The meta-schema every published schema names.
pub const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

fn generate<T: JsonSchema, const READ: bool>() -> Schema {
    let mut settings = SchemaSettings::draft07();
    settings.contract = if READ {
        Contract::Deserialize
    } else {
        Contract::Serialize
    };
    settings.into_generator().into_root_schema_for::<T>()
}

/// Every published schema, by name. Adding one is one line: its type, name, title, description
/// and the file names editors match it to.
pub const SCHEMAS: &[Entry] = &[
    Entry::read::<otters_pipeline::resolve::lockfile::LockDocument>("agentfile-lock", "Agentfile.lock", "The digests every image reference of an Agentfile resolved to (otters lock, otters build).", &["Agentfile.lock"]),
    Entry::write::<documents::AgentYaml>("agent-yaml", "agent.yaml", "The resolved agent description an otters image carries as its last layer, and otters run writes complete into the agent tree.", &["agent.yaml"]),
    Entry::write::<documents::AgentConfig>("agent-config", "The agent config blob", "An agent image's config blob (application/vnd.openotters.agent.config.v1+json), as otters writes it.", &[]),
    Entry::read::<otters_agentfile::check::config::FileShape>("otters-toml", "otters.toml", "A project's otters.toml (or .otters.toml): the settings of otters lint and the portability lints.", &["otters.toml", ".otters.toml"]),
    Entry::read::<otters_oci::registry::config::FileShape>("config-toml", "$OTTERS_HOME/config.toml", "otters' own configuration: per-registry transport settings, mirrors, and the signature policy of otters run.", &[]),
    Entry::write::<Vec<otters_agentfile::diagnostic::render::Finding<'static>>>("lint", "otters lint --format json", "The findings of otters lint --format json: one object per finding, in file then position order.", &[]),
    Entry::write::<outputs::WithSchema<outputs::Inspect<'static>>>("inspect", "otters inspect --format json", "An image as otters inspect --format json shows it: its descriptor, manifest, config and layers.", &[]),
    Entry::write::<outputs::WithSchema<otters_run::plan::RunPlan>>("run-plan", "otters run --dry-run", "Everything otters run would do, as otters run --dry-run prints it (secret values redacted).", &[]),
    Entry::write::<outputs::WithSchema<outputs::Diff<'static>>>("diff", "otters diff --format json", "What changed between two agents, classified, as otters diff --format json prints it.", &[]),
    Entry::write::<outputs::WithSchema<otters_pipeline::copy::CopyReport>>("copy", "otters copy --format json", "What otters copy did (or, with --dry-run, would do), as otters copy --format json prints it.", &[]),
    Entry::write::<outputs::WithSchema<outputs::PolicyCheck<'static>>>("policy-check", "otters policy check --format json", "The violations of the organisation policy by an Agentfile or an image, as otters policy check --format json prints them.", &[]),
];

/// The schema named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    SCHEMAS.iter().find(|e| e.name == name)
}

/// The `SchemaStore` catalog entries of the schemas editors match to files (`schemas/catalog.json`).
pub fn catalog() -> String {
    let schemas: Vec<Value> = SCHEMAS
        .iter()
        .filter(|e| !e.file_match.is_empty())
        .map(|e| {
            serde_json::json!({
                "name": e.title,
                "description": e.description,
                "fileMatch": e.file_match,
                "url": e.id(),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "$schema": "https://json.schemastore.org/schema-catalog.json",
        "version": 1,
        "schemas": schemas,
    });
    let mut text = serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|_| unreachable!("a JSON value always serialises"));
    text.push('\n');
    text
}

#[cfg(test)]
mod tests;
