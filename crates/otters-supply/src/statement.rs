//! in-toto Statement v1: what an attestation is about (its subjects, by name and sha256) and what
//! it says (a predicate of a named type).
//!
//! Takes: subjects and a predicate. Returns: the statement's canonical JSON bytes (written by
//! `otters_core::json`, so the same statement is always the same bytes). Must never: write a
//! subject without a sha256 digest.

use otters_core::json::{self, Value};
use otters_spec::digest::Digest;

/// `_type` of every statement otters writes.
pub const STATEMENT_V1: &str = "https://in-toto.io/Statement/v1";
/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// Predicate of a plain signature, as `cosign sign` writes it in a Sigstore bundle: "the key holder
/// signed this digest", with an empty predicate.
pub const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// One thing a statement is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// What the digest is of: an image reference without tag or digest, or a file name.
    pub name: String,
    pub digest: Digest,
}

/// An in-toto Statement v1.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub subjects: Vec<Subject>,
    pub predicate_type: String,
    pub predicate: Value,
}

impl Statement {
    /// A plain signature of `subject` (predicate [`SIGN_PREDICATE`], `{}`).
    pub fn signature(subject: Subject) -> Self {
        Self {
            subjects: vec![subject],
            predicate_type: SIGN_PREDICATE.to_owned(),
            predicate: Value::object(),
        }
    }

    /// The statement as a JSON value, fields in the spec's order.
    pub fn to_value(&self) -> Value {
        let subjects = self
            .subjects
            .iter()
            .map(|s| {
                Value::object()
                    .with("name", s.name.as_str())
                    .with("digest", Value::object().with("sha256", s.digest.hex()))
            })
            .collect::<Vec<_>>();
        Value::object()
            .with("_type", STATEMENT_V1)
            .with("subject", subjects)
            .with("predicateType", self.predicate_type.as_str())
            .with("predicate", self.predicate.clone())
    }

    /// Canonical compact JSON: the DSSE payload.
    pub fn to_bytes(&self) -> Vec<u8> {
        json::to_compact(&self.to_value()).unwrap_or_default()
    }
}

/// Converts JSON read by `serde_json` into the canonical writer's value, keeping key order; a
/// number that is neither an i64 nor a u64 is kept as a float.
pub fn from_serde(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(Value::Int)
            .or_else(|| n.as_u64().map(Value::from))
            .unwrap_or_else(|| Value::Float(n.as_f64().unwrap_or(0.0))),
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(from_serde).collect()),
        serde_json::Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), from_serde(v))).collect())
        }
    }
}
