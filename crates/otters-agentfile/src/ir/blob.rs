//! The config blob: the model's canonical JSON (spec §d, plus `mounts`), written and read back.
//!
//! Written with [`otters_core::json`] so the bytes match Go's `json.MarshalIndent(af, "", "  ")` field
//! for field, plus `dst` beside each ADD's `name` (equal to it and to the layer title) so that
//! openotters alpha.50, which reads `dst`, reads otters' images too; read leniently (unknown
//! fields ignored, openotters alpha.50's `dst`-only ADD form accepted).

use super::model::{
    Add, Agent, Agentfile, Bin, Config, ConfigValue, Context, Egress, Env, Mount, Node,
    DEFAULT_SYNTAX,
};
use crate::diagnostic::Span;
use otters_core::json::{self, UnsupportedFloat, Value};

/// The media type of the config blob.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.openotters.agent.config.v1+json";

/// Canonical config-blob bytes.
pub fn config_blob(af: &Agentfile) -> Result<Vec<u8>, UnsupportedFloat> {
    json::to_indented(&to_json(af))
}

/// The config blob as a JSON value (field order fixed).
pub fn to_json(af: &Agentfile) -> Value {
    let a = &af.agent;
    let mut agent = Value::object().with("from", a.from_ref().unwrap_or_default());
    opt_str(
        &mut agent,
        "runtime",
        a.runtime.as_ref().map(|n| n.value.as_str()),
    );
    opt_str(
        &mut agent,
        "model",
        a.model.as_ref().map(|n| n.value.as_str()),
    );
    opt_str(
        &mut agent,
        "name",
        a.name.as_ref().map(|n| n.value.as_str()),
    );
    list(
        &mut agent,
        "contexts",
        a.contexts.iter().map(|c| {
            let mut o = Value::object().with("name", &c.name);
            opt_str(&mut o, "description", c.description.as_deref());
            opt_str(&mut o, "content", c.content.as_deref());
            opt_str(&mut o, "file", c.file.as_deref());
            o
        }),
    );
    list(
        &mut agent,
        "configs",
        a.configs.iter().map(|c| {
            let mut o = Value::object().with("key", &c.key);
            if let Some(v) = &c.value {
                o.push(
                    "value",
                    match v {
                        ConfigValue::String(s) => Value::from(s),
                        ConfigValue::Int(i) => Value::Int(*i),
                        ConfigValue::Float(f) => Value::Float(*f),
                        ConfigValue::Bool(b) => Value::Bool(*b),
                    },
                );
            }
            opt_str(&mut o, "description", c.description.as_deref());
            if c.required {
                o.push("required", true);
            }
            o
        }),
    );
    list(
        &mut agent,
        "bins",
        a.bins.iter().map(|b| {
            let mut o = Value::object()
                .with("name", &b.name)
                .with("image", &b.image);
            opt_str(&mut o, "description", b.description.as_deref());
            opt_str(&mut o, "usage", b.usage.as_deref());
            o
        }),
    );
    list(
        &mut agent,
        "adds",
        a.adds.iter().map(|d| {
            // `dst` beside `name`, both equal to the layer title: openotters L reads `name`,
            // alpha.50 reads `dst` (its AGENT.md lists `filepath.Base(dst)`, and its FROM
            // hydration finds an ADD's layer by `dst` == title).
            let mut o = Value::object()
                .with("src", &d.src)
                .with("name", &d.name)
                .with("dst", &d.name);
            opt_str(&mut o, "description", d.description.as_deref());
            o
        }),
    );
    if let Some(exec) = a.exec.as_ref().filter(|e| !e.value.is_empty()) {
        agent.push(
            "exec",
            Value::Array(exec.value.iter().map(Value::from).collect()),
        );
    }
    map(
        &mut agent,
        "labels",
        a.labels.iter().map(|(k, v)| (k, &v.value)),
    );
    map(
        &mut agent,
        "args",
        a.args.iter().map(|(k, v)| (k, &v.value)),
    );
    list(
        &mut agent,
        "envs",
        a.envs.iter().map(|e| {
            let mut o = Value::object().with("key", &e.key).with("value", &e.value);
            opt_str(&mut o, "description", e.description.as_deref());
            o
        }),
    );
    list(
        &mut agent,
        "capabilities",
        a.capabilities.iter().map(|c| Value::from(&c.value)),
    );
    mounts(&mut agent, a);
    egress(&mut agent, a);
    Value::object()
        .with("syntax", &af.syntax)
        .with("agent", agent)
}

fn opt_str(o: &mut Value, key: &str, v: Option<&str>) {
    if let Some(v) = v.filter(|v| !v.is_empty()) {
        o.push(key, v);
    }
}

fn list(o: &mut Value, key: &str, items: impl Iterator<Item = Value>) {
    let items: Vec<Value> = items.collect();
    if !items.is_empty() {
        o.push(key, Value::Array(items));
    }
}

fn map<'a>(o: &mut Value, key: &str, items: impl Iterator<Item = (&'a String, &'a String)>) {
    // BTreeMap iteration is already byte-sorted, as Go sorts map keys.
    let fields: Vec<(String, Value)> = items.map(|(k, v)| (k.clone(), Value::from(v))).collect();
    if !fields.is_empty() {
        o.push(key, Value::Object(fields));
    }
}

/// Why a config blob could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("config blob is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("config blob has no `agent` object")]
    NoAgent,
    #[error("config blob field `{0}` has the wrong type")]
    Field(&'static str),
    /// One element of a list is `null` or of the wrong type. openotters L panics on a `null`
    /// entry in `spec.Validate`, alpha.50 while writing AGENT.md; otters names it.
    #[error("{field}[{index}] {what}")]
    Element {
        field: &'static str,
        index: usize,
        what: &'static str,
    },
    /// A name the parser would refuse in an Agentfile (see [`super::names::check_artifact`]).
    #[error(transparent)]
    Name(#[from] super::names::InvalidName),
}

/// Reads a config blob written by otters or openotters, and checks every name in it as the parser
/// checks an Agentfile's ([`super::names::check_artifact`]): a blob is untrusted input, and its
/// names become paths. Items have no span.
pub fn from_config_blob(bytes: &[u8]) -> Result<Agentfile, BlobError> {
    let model = read_config_blob(bytes)?;
    super::names::check_artifact(&model.agent)?;
    Ok(model)
}

type Object = serde_json::Map<String, serde_json::Value>;

fn read_config_blob(bytes: &[u8]) -> Result<Agentfile, BlobError> {
    let v: serde_json::Value = serde_json::from_slice(bytes)?;
    let syntax = v
        .get("syntax")
        .and_then(|s| s.as_str())
        .unwrap_or(DEFAULT_SYNTAX)
        .to_owned();
    let a = v
        .get("agent")
        .and_then(|a| a.as_object())
        .ok_or(BlobError::NoAgent)?;
    let d: Option<Span> = None;
    // Fields are read in this order, so the first bad one is the one reported.
    let agent = Agent {
        from: node(text(a, "from")),
        runtime: node(text(a, "runtime")),
        model: node(text(a, "model")),
        name: node(text(a, "name")),
        contexts: objects(a, "contexts")?.into_iter().map(context).collect(),
        configs: objects(a, "configs")?.into_iter().map(config).collect(),
        bins: objects(a, "bins")?.into_iter().map(bin).collect(),
        adds: objects(a, "adds")?.into_iter().map(add).collect(),
        exec: Some(strings(a, "exec")?)
            .filter(|e| !e.is_empty())
            .map(|e| Node::new(e, d)),
        labels: string_map(a, "labels")?,
        args: string_map(a, "args")?,
        envs: objects(a, "envs")?.into_iter().map(env).collect(),
        capabilities: strings(a, "capabilities")?
            .into_iter()
            .map(|c| Node::new(c, d))
            .collect(),
        mounts: objects(a, "mounts")?.into_iter().map(mount).collect(),
        egress: read_egress(a)?,
    };
    Ok(Agentfile { syntax, agent })
}

/// The string at `k`, when there is one.
fn text(o: &Object, k: &str) -> Option<String> {
    o.get(k).and_then(|x| x.as_str()).map(str::to_owned)
}

/// The boolean at `k`; false when absent or not a boolean.
fn flag(o: &Object, k: &str) -> bool {
    o.get(k)
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// A non-empty string as a node without a span.
fn node(x: Option<String>) -> Option<Node<String>> {
    x.filter(|x| !x.is_empty()).map(|x| Node::new(x, None))
}

/// The objects of the array at `k` (none when absent or null).
fn objects<'a>(a: &'a Object, k: &'static str) -> Result<Vec<&'a Object>, BlobError> {
    match a.get(k) {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, i)| {
                i.as_object()
                    .ok_or_else(|| element(k, index, i, "an object"))
            })
            .collect(),
        Some(_) => Err(BlobError::Field(k)),
    }
}

/// The strings of the array at `k` (none when absent or null).
fn strings(a: &Object, k: &'static str) -> Result<Vec<String>, BlobError> {
    match a.get(k) {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, i)| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| element(k, index, i, "a string"))
            })
            .collect(),
        Some(_) => Err(BlobError::Field(k)),
    }
}

/// The string-valued object at `k` (empty when absent or null).
fn string_map(
    a: &Object,
    k: &'static str,
) -> Result<std::collections::BTreeMap<String, Node<String>>, BlobError> {
    match a.get(k) {
        None | Some(serde_json::Value::Null) => Ok(std::collections::BTreeMap::new()),
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k2, v)| {
                v.as_str()
                    .map(|v| (k2.clone(), Node::new(v.to_owned(), None)))
                    .ok_or(BlobError::Field(k))
            })
            .collect(),
        Some(_) => Err(BlobError::Field(k)),
    }
}

fn context(o: &Object) -> Context {
    let d: Option<Span> = None;
    Context {
        name: text(o, "name").unwrap_or_default(),
        description: text(o, "description"),
        content: text(o, "content"),
        file: text(o, "file"),
        span: d,
        name_span: d,
        file_span: None,
    }
}

fn config(o: &Object) -> Config {
    let d: Option<Span> = None;
    Config {
        key: text(o, "key").unwrap_or_default(),
        value: o.get("value").and_then(json_config_value),
        description: text(o, "description"),
        required: flag(o, "required"),
        span: d,
        key_span: d,
    }
}

fn bin(o: &Object) -> Bin {
    let d: Option<Span> = None;
    Bin {
        name: text(o, "name").unwrap_or_default(),
        image: text(o, "image").unwrap_or_default(),
        description: text(o, "description"),
        usage: text(o, "usage"),
        span: d,
        name_span: d,
        image_span: d,
    }
}

fn add(o: &Object) -> Add {
    let d: Option<Span> = None;
    Add {
        src: text(o, "src").unwrap_or_default(),
        // openotters ≤ alpha.50 wrote `dst` (the layer title, `/data/<name>`) instead of
        // `name`; it is read as alpha.50 materialises it (see `legacy_dst`).
        name: text(o, "name")
            .or_else(|| text(o, "dst").map(|d| legacy_dst(&d)))
            .unwrap_or_default(),
        description: text(o, "description"),
        span: d,
        src_span: d,
        name_span: d,
    }
}

fn env(o: &Object) -> Env {
    let d: Option<Span> = None;
    Env {
        key: text(o, "key").unwrap_or_default(),
        value: text(o, "value").unwrap_or_default(),
        description: text(o, "description"),
        span: d,
        key_span: d,
    }
}

fn mount(o: &Object) -> Mount {
    Mount {
        target: text(o, "target").unwrap_or_default(),
        read_only: flag(o, "read_only"),
        description: text(o, "description"),
        span: None,
    }
}

/// `mounts`: target, description, `read_only` when set.
fn mounts(o: &mut Value, a: &Agent) {
    list(
        o,
        "mounts",
        a.mounts.iter().map(|m| {
            let mut o = Value::object().with("target", &m.target);
            opt_str(&mut o, "description", m.description.as_deref());
            if m.read_only {
                o.push("read_only", true);
            }
            o
        }),
    );
}

/// `egress`: absent when undeclared, `[]` for `EGRESS none`, else `{host, port, description}`
/// per destination (a target that does not parse is written as `host` alone, never built).
fn egress(o: &mut Value, a: &Agent) {
    if a.egress.is_empty() {
        return;
    }
    if a.egress.iter().any(Egress::is_none) {
        o.push("egress", Value::Array(Vec::new()));
        return;
    }
    let items = a.egress.iter().map(|e| {
        let mut o = match super::egress::parse(&e.target) {
            Ok(d) => Value::object()
                .with("host", d.host.to_string())
                .with("port", i64::from(d.port)),
            Err(_) => Value::object().with("host", &e.target),
        };
        opt_str(&mut o, "description", e.description.as_deref());
        o
    });
    o.push("egress", Value::Array(items.collect()));
}

/// `egress` read back: `[]` is `EGRESS none`; a host with `:` is an IPv6 literal.
fn read_egress(a: &Object) -> Result<Vec<Egress>, BlobError> {
    if matches!(a.get("egress"), Some(serde_json::Value::Array(v)) if v.is_empty()) {
        return Ok(vec![Egress {
            target: super::egress::NONE.to_owned(),
            description: None,
            span: None,
        }]);
    }
    Ok(objects(a, "egress")?
        .into_iter()
        .map(|o| {
            let host = text(o, "host").unwrap_or_default();
            let host = if host.contains(':') {
                format!("[{host}]")
            } else {
                host
            };
            // A port that is not a whole number stays in the target, so the check refuses it.
            let target = match o.get("port") {
                None => host,
                Some(p) => match p.as_u64() {
                    Some(n) => format!("{host}:{n}"),
                    None => format!("{host}:{p}"),
                },
            };
            Egress {
                target,
                description: text(o, "description"),
                span: None,
            }
        })
        .collect())
}

/// The name an openotters alpha.50 `dst` (`/data/x.json`) gives: `filepath.Base(dst)`, which is
/// where alpha.50 writes the file (`etc/data/` + `filepath.Base(title)`, its layer title being
/// the raw `dst`). `/data/sub/x.json` is flattened to `x.json` as alpha.50 flattens it.
fn legacy_dst(dst: &str) -> String {
    super::names::go_base(dst).to_owned()
}

/// The error for list element `field[index]`, which should have been `want`.
fn element(
    field: &'static str,
    index: usize,
    v: &serde_json::Value,
    want: &'static str,
) -> BlobError {
    let what = match (v, want) {
        (serde_json::Value::Null, _) => "is null",
        (_, "an object") => "is not an object",
        _ => "is not a string",
    };
    BlobError::Element { field, index, what }
}

fn json_config_value(v: &serde_json::Value) -> Option<ConfigValue> {
    match v {
        serde_json::Value::String(s) => Some(ConfigValue::String(s.clone())),
        serde_json::Value::Bool(b) => Some(ConfigValue::Bool(*b)),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(ConfigValue::Int)
            .or_else(|| n.as_f64().map(ConfigValue::Float)),
        _ => None,
    }
}
