//! The typed model of one Agentfile (spec §d), with a span on every item.
//!
//! Spans point into the Agentfile the item came from; items inherited from a parent image, read
//! back from a config blob or added by a command-line override have no span (`None`).

use crate::diagnostic::Span;
use std::collections::BTreeMap;

/// The default (and only supported) grammar major.
pub const DEFAULT_SYNTAX: &str = "openotters/agentfile:1";

/// A value with the span it was written at (`None` when it was not written in this Agentfile).
#[derive(Clone, Debug, PartialEq)]
pub struct Node<T> {
    pub value: T,
    pub span: Option<Span>,
}

impl<T> Node<T> {
    /// `span` is a [`Span`] for a value written in the Agentfile, or `None`.
    pub fn new(value: T, span: impl Into<Option<Span>>) -> Self {
        Self {
            value,
            span: span.into(),
        }
    }
}

/// A whole Agentfile after ARG expansion and typing: the config blob's source model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Agentfile {
    pub syntax: String,
    pub agent: Agent,
}

/// Field order is the config blob's field order (spec §d): from, runtime, model, name, contexts,
/// configs, bins, adds, exec, labels, args, envs, capabilities, then our `mounts` and `egress`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Agent {
    /// `scratch` or a parent agent reference. Empty only in invalid files.
    pub from: Option<Node<String>>,
    pub runtime: Option<Node<String>>,
    pub model: Option<Node<String>>,
    pub name: Option<Node<String>>,
    pub contexts: Vec<Context>,
    pub configs: Vec<Config>,
    pub bins: Vec<Bin>,
    pub adds: Vec<Add>,
    pub exec: Option<Node<Vec<String>>>,
    pub labels: BTreeMap<String, Node<String>>,
    /// ARGs with a value (after `--build-arg` overrides), recorded in the blob as openotters does.
    pub args: BTreeMap<String, Node<String>>,
    pub envs: Vec<Env>,
    pub capabilities: Vec<Node<String>>,
    pub mounts: Vec<Mount>,
    /// EGRESS lines as written; empty when none was declared (see `Agent::egress_policy`).
    pub egress: Vec<Egress>,
}

impl Agent {
    pub fn from_ref(&self) -> Option<&str> {
        self.from.as_ref().map(|n| n.value.as_str())
    }

    /// True for `FROM scratch` (exact, lower-case) or a missing FROM.
    pub fn is_scratch(&self) -> bool {
        self.from_ref().is_none_or(|f| f == "scratch")
    }

    pub fn name_str(&self) -> Option<&str> {
        self.name.as_ref().map(|n| n.value.as_str())
    }
}

/// `CONTEXT NAME ["desc"] [file://path | <<HEREDOC]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    pub name: String,
    pub description: Option<String>,
    /// Inline heredoc content (or bytes hydrated from a parent's layer).
    pub content: Option<String>,
    /// `file://` path, relative to the Agentfile's directory.
    pub file: Option<String>,
    pub span: Option<Span>,
    pub name_span: Option<Span>,
    /// Span of the `file://` token, when there is one.
    pub file_span: Option<Span>,
}

/// A CONFIG value, typed as openotters types it (spec §b.1).
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigValue {
    String(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl ConfigValue {
    /// The value as Go's `%v` prints it (agent.yaml `configs:` and `RUNTIME_*` variables).
    pub fn display(&self) -> String {
        match self {
            ConfigValue::String(s) => s.clone(),
            ConfigValue::Int(i) => i.to_string(),
            ConfigValue::Bool(b) => b.to_string(),
            ConfigValue::Float(f) => {
                let mut s = String::new();
                let _ = otters_core::json::write_float_go_v(&mut s, *f);
                s
            }
        }
    }
}

/// `CONFIG key[!][=value] ["desc"]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub key: String,
    pub value: Option<ConfigValue>,
    pub description: Option<String>,
    pub required: bool,
    pub span: Option<Span>,
    pub key_span: Option<Span>,
}

/// `BIN name image ["desc"] [<<USAGE]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bin {
    pub name: String,
    pub image: String,
    pub description: Option<String>,
    pub usage: Option<String>,
    pub span: Option<Span>,
    pub name_span: Option<Span>,
    pub image_span: Option<Span>,
}

/// `ADD src [dst] ["desc"]`. `name` is the normalised destination under `etc/data/`
/// (sub-directories allowed in otters' dialect).
#[derive(Clone, Debug, PartialEq)]
pub struct Add {
    pub src: String,
    pub name: String,
    pub description: Option<String>,
    pub span: Option<Span>,
    pub src_span: Option<Span>,
    /// Span of the destination token, or of `src` when the name was derived from it.
    pub name_span: Option<Span>,
}

/// `ENV KEY=value ["desc"]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Env {
    pub key: String,
    pub value: String,
    pub description: Option<String>,
    pub span: Option<Span>,
    pub key_span: Option<Span>,
}

/// `MOUNT /target [ro|rw] ["desc"]` (otters' addition).
#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    pub target: String,
    pub read_only: bool,
    pub description: Option<String>,
    pub span: Option<Span>,
}

/// The word of `EGRESS none`.
pub const EGRESS_NONE: &str = "none";

/// `EGRESS host[:port] ["desc"]` or `EGRESS none` (otters' addition); the target is parsed by
/// `ir::egress::parse`.
#[derive(Clone, Debug, PartialEq)]
pub struct Egress {
    pub target: String,
    pub description: Option<String>,
    pub span: Option<Span>,
}

impl Egress {
    /// `EGRESS none` (the word in any case).
    pub fn is_none(&self) -> bool {
        self.target.eq_ignore_ascii_case(EGRESS_NONE)
    }
}
