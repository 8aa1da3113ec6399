//! The typed JSON outputs the binary's views fill and print, so that their schema and their bytes
//! come from one type: `otters inspect --format json` ([`Inspect`]), `otters diff` ([`Diff`]),
//! `otters policy check` ([`PolicyCheck`]); and [`WithSchema`], which puts the `$id` of an
//! output's schema first in it (`"$schema"`).
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

/// One side of `otters diff --format json`.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiffSide<'a> {
    /// The reference (or Agentfile directory) as given.
    pub reference: &'a str,
    /// What it resolved to: an index or a manifest.
    pub digest: String,
    /// The agent manifest compared (the chosen platform's, for an index).
    pub manifest: String,
    /// The platforms of an index (`os/arch[/variant]`, sorted); empty for a single manifest.
    pub platforms: &'a [String],
    /// Who each Sigstore bundle referrer names as its signer, as the bundle claims it: read, never
    /// verified (`otters verify` checks a signature). Sorted by kind, then signer.
    pub signers: Vec<DiffSigner>,
    /// The flattened FROM chain: the parent first, then its parent, …; empty for `FROM scratch`.
    pub chain: Vec<DiffLevel>,
    /// Why the chain ends before `FROM scratch` (a digest not recorded, an image that cannot be
    /// read), or `null`.
    pub chain_cut: Option<String>,
}

/// One level of a FROM chain.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiffLevel {
    /// 1 for the parent, 2 for its parent, …
    pub level: usize,
    /// The reference its child's FROM names.
    pub reference: String,
    /// The manifest digest the child was built from (its Agentfile.lock, SBOM or provenance), or
    /// `null` when none records it.
    pub digest: Option<String>,
}

/// A signer a bundle referrer of one side names (not verified).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiffSigner {
    /// `signature` for a plain signature, else the predicate type the bundle's statement claims
    /// (`bundle` when it could not be read).
    pub kind: String,
    /// `IDENTITY (ISSUER)` of a keyless certificate, `key HINT` of a key, or `(unreadable: …)`.
    pub signer: String,
}

/// How many changes of each class, in the order of the classes.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiffSummary {
    /// The agent may do more than before.
    pub escalation: usize,
    /// What the model is told or runs changed.
    pub behaviour: usize,
    /// The same repository re-pinned.
    pub pin: usize,
    /// CONFIG, ENV, NAME, LABEL and ARG defaults.
    pub configuration: usize,
    /// ADD files and directories.
    pub data: usize,
    /// Signatures, attestations and platforms.
    pub provenance: usize,
}

/// One classified change (docs/diff.md).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiffChange<'a> {
    /// Its class.
    #[schemars(extend("enum" = ["escalation", "behaviour", "pin", "configuration", "data", "provenance"]))]
    pub class: &'a str,
    /// What kind of item changed.
    #[schemars(extend("enum" = ["from", "runtime", "model", "bin", "capability", "mount", "egress", "context", "exec", "name", "config", "env", "label", "arg", "add", "platform", "referrer", "signer", "chain", "manifest"]))]
    pub what: &'a str,
    /// The item's name (a BIN's, a CONTEXT's, a CONFIG key, …).
    pub name: &'a str,
    /// The part of the item that changed (`image`, `usage`, `mode`, …), or `null` for the item.
    pub field: Option<&'a str>,
    /// Added, removed or changed.
    #[schemars(extend("enum" = ["added", "removed", "changed"]))]
    pub change: &'a str,
    /// The value before (`null` for an addition).
    pub before: Option<&'a str>,
    /// The value after (`null` for a removal).
    pub after: Option<&'a str>,
    /// A unified diff of a text (a CONTEXT, a BIN's USAGE), or `null`.
    pub diff: Option<&'a str>,
    /// More about the change, or `null`: for a re-pinned image, its SBOM component delta
    /// (`SBOM: +name@version, -name@version, ~name old → new`, at most 20 named, then `… N more`)
    /// or why there is none to compare.
    pub detail: Option<&'a str>,
}

/// `otters diff A B --format json`.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Diff<'a> {
    /// The first agent (before).
    pub a: DiffSide<'a>,
    /// The second agent (after).
    pub b: DiffSide<'a>,
    /// Whether no change was found.
    pub identical: bool,
    /// How many changes of each class.
    pub summary: DiffSummary,
    /// Every change, ordered by class, then kind, then name.
    pub changes: Vec<DiffChange<'a>>,
}

/// One violation of `otters policy check --format json`.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PolicyViolation<'a> {
    /// The rule of `[policy]` it breaks, as its key is written.
    #[schemars(extend("enum" = ["registries", "providers", "capabilities", "bins", "mounts", "egress", "require-pinned", "signature"]))]
    pub rule: &'a str,
    /// The rule's lint code (`AF501`…), or `null` for the signature rule, which is about an image.
    pub code: Option<&'a str>,
    /// The item as written (an image reference, a provider, a name, an EGRESS destination, …).
    pub value: &'a str,
    /// What is wrong, one sentence.
    pub message: &'a str,
    /// The Agentfile line (1-based) of the item, or `null` for an image or an inherited item.
    pub line: Option<usize>,
    /// The policy file and line that refuses it (`FILE:LINE`).
    pub policy: String,
    /// How to comply.
    pub help: &'a str,
}

/// `otters policy check TARGET --format json`.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PolicyCheck<'a> {
    /// The target as given: an Agentfile, its directory, or an image reference.
    pub target: &'a str,
    /// Every violation, in file order; empty when the target complies.
    pub violations: Vec<PolicyViolation<'a>>,
}
