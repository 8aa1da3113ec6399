//! The typed JSON outputs the binary's views fill and print, so that their schema and their bytes
//! come from one type: `otters inspect --format json` ([`Inspect`]); and [`WithSchema`], which
//! puts the `$id` of an output's schema first in it (`"$schema"`).
//!
//! Takes: the values a view has. Returns: `Serialize` values, printed by the binary. Must never:
//! read anything or print.

use schemars::JsonSchema;
use serde::Serialize;

/// A JSON output with the `$id` of its schema as its first field, `"$schema"`, then its own.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WithSchema<T> {
    /// The `$id` of this output's JSON Schema (`otters schema NAME` prints the schema).
    #[serde(rename = "$schema")]
    #[schemars(url)]
    pub schema: String,
    #[serde(flatten)]
    pub body: T,
}

impl<T> WithSchema<T> {
    /// `body`, said to follow the published schema `name`.
    pub fn new(name: &str, body: T) -> Self {
        WithSchema {
            schema: crate::id::id(name),
            body,
        }
    }
}

/// A descriptor of a manifest, config or layer.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct Described<'a> {
    /// Its media type.
    pub media_type: &'a str,
    /// Its digest.
    pub digest: &'a str,
    /// Its size in bytes.
    pub size: u64,
}

/// A layer.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct Layer<'a> {
    /// Its media type.
    pub media_type: &'a str,
    /// Its digest.
    pub digest: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// Its title annotation (`org.opencontainers.image.title`), or `null`.
    pub title: Option<&'a str>,
}

/// `otters inspect --format json`.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct Inspect<'a> {
    /// The reference as given.
    pub reference: &'a str,
    /// The digest of the manifest or index.
    pub digest: &'a str,
    /// Its media type.
    pub media_type: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// The manifest or index, as read.
    pub manifest: &'a serde_json::Value,
    /// The config blob as JSON, or `null` when it is not in the store or not JSON.
    pub config: Option<&'a serde_json::Value>,
    /// The manifest's layers, in order.
    pub layers: Vec<Layer<'a>>,
    /// The manifest's subject, for a referrer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<Described<'a>>,
}
