//! Deploy-time overrides (spec §d.2) and the flattened CONFIG view with its required gate.
//!
//! Takes: the agent model and the user's `--model`, `-e` and `--config` values. Returns: the
//! [`Effective`] values the tree and the environment are built from. Must never: accept a start
//! with a required CONFIG that has no value.

use otters_agentfile::ir::{Agent, ConfigValue};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What the user asked to change.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub model: Option<String>,
    /// `-e KEY=VALUE`, already checked by [`super::env::parse_override`].
    pub envs: Vec<(String, String)>,
    /// `--config key=value`.
    pub configs: Vec<(String, String)>,
}

/// One ENV after overrides.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EffectiveEnv {
    pub key: String,
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The model after overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effective {
    pub model: Option<String>,
    /// Flattened CONFIG view: last value per key wins; unset keys are absent.
    pub configs: BTreeMap<String, String>,
    pub envs: Vec<EffectiveEnv>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OverrideError {
    #[error("config {text:?}: must be KEY=VALUE with a non-empty KEY")]
    ConfigShape { text: String },
    #[error("{}", missing_message(.0))]
    RequiredMissing(Vec<Missing>),
}

/// A required CONFIG key with no value at start.
#[derive(Debug, PartialEq, Eq)]
pub struct Missing {
    pub key: String,
    /// An earlier entry gave it a value that a later, valueless entry replaced.
    pub unset_later: bool,
}

fn missing_message(missing: &[Missing]) -> String {
    let keys: Vec<&str> = missing.iter().map(|m| m.key.as_str()).collect();
    let mut s = format!("required config(s) have no value: {}", keys.join(", "));
    let later: Vec<&str> = missing
        .iter()
        .filter(|m| m.unset_later)
        .map(|m| m.key.as_str())
        .collect();
    if !later.is_empty() {
        let _ = write!(
            s,
            " ({} had a value, but a later CONFIG entry for the same key has none and the last entry wins, as in openotters)",
            later.join(", ")
        );
    }
    s
}

/// Parse one `--config key=value`.
pub fn parse_config(text: &str) -> Result<(String, String), OverrideError> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(OverrideError::ConfigShape {
            text: text.to_owned(),
        }),
    }
}

/// Apply the overrides and check required configs.
pub fn apply(agent: &Agent, o: &Overrides) -> Result<Effective, OverrideError> {
    let model = o
        .model
        .clone()
        .filter(|m| !m.is_empty())
        .or_else(|| agent.model.as_ref().map(|m| m.value.clone()))
        .filter(|m| !m.is_empty());

    // openotters L, `spec.RequiredConfigsProvided` (spec/parse.go): `required` accumulates per
    // key, the value checked is the LAST entry's (a later valueless entry unsets it for the
    // gate), and `""` counts as set. The values handed on follow L's `configsFromSpec`
    // (executor/system/workspace.go): every entry with a value writes it, valueless entries
    // are skipped, so an optional key keeps the last value it was given.
    let mut configs: BTreeMap<String, String> = BTreeMap::new();
    let mut required: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let mut last: BTreeMap<&str, bool> = BTreeMap::new();
    for c in &agent.configs {
        if c.required {
            required.insert(&c.key);
        }
        last.insert(&c.key, c.value.is_some());
        if let Some(v) = &c.value {
            configs.insert(c.key.clone(), display(v));
        }
    }
    // A `--config` value is the last writer of its key (L's `WithConfig` runs before the gate).
    for (k, v) in &o.configs {
        configs.insert(k.clone(), v.clone());
    }
    let missing: Vec<Missing> = required
        .iter()
        .copied()
        .filter(|k| !o.configs.iter().any(|(ok, _)| ok == k))
        .filter(|k| !last.get(k).copied().unwrap_or(false))
        .map(|k| Missing {
            key: k.to_owned(),
            unset_later: configs.contains_key(k),
        })
        .collect();
    if !missing.is_empty() {
        return Err(OverrideError::RequiredMissing(missing));
    }

    let mut envs: Vec<EffectiveEnv> = agent
        .envs
        .iter()
        .filter(|e| !o.envs.iter().any(|(k, _)| *k == e.key))
        .map(|e| EffectiveEnv {
            key: e.key.clone(),
            value: e.value.clone(),
            description: e.description.clone(),
        })
        .collect();
    envs.extend(o.envs.iter().map(|(k, v)| EffectiveEnv {
        key: k.clone(),
        value: v.clone(),
        description: None,
    }));
    Ok(Effective {
        model,
        configs,
        envs,
    })
}

fn display(v: &ConfigValue) -> String {
    v.display()
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::ir::{Config, Env, Node};

    fn cfg(key: &str, value: Option<ConfigValue>, required: bool) -> Config {
        Config {
            key: key.into(),
            value,
            description: None,
            required,
            span: None,
            key_span: None,
        }
    }

    fn env(key: &str, value: &str) -> Env {
        Env {
            key: key.into(),
            value: value.into(),
            description: Some("d".into()),
            span: None,
            key_span: None,
        }
    }

    fn agent() -> Agent {
        Agent {
            model: Some(Node::new("anthropic/a".into(), None)),
            configs: vec![
                cfg("max-tokens", Some(ConfigValue::Int(1)), false),
                cfg("max-tokens", Some(ConfigValue::Int(2)), false),
                cfg("temperature", Some(ConfigValue::Float(0.5)), false),
                cfg("webhook", None, true),
            ],
            envs: vec![env("A", "1"), env("B", "2"), env("A", "3")],
            ..Agent::default()
        }
    }

    #[test]
    fn required_config_gate() {
        let e = apply(&agent(), &Overrides::default()).unwrap_err();
        assert_eq!(e.to_string(), "required config(s) have no value: webhook");
    }

    /// openotters L `RequiredConfigsProvided`: the last entry's value decides for a required key.
    #[test]
    fn required_gate_takes_the_last_writer() {
        let v = || Some(ConfigValue::String("v".into()));
        let run = |configs: Vec<Config>, o: &Overrides| {
            let a = Agent {
                configs,
                ..Agent::default()
            };
            apply(&a, o).map(|e| e.configs)
        };
        let none = Overrides::default();
        // [{k,v},{k!}]: unset by the last writer → refused, naming the key and why.
        let e = run(vec![cfg("k", v(), false), cfg("k", None, true)], &none).unwrap_err();
        assert_eq!(
            e.to_string(),
            "required config(s) have no value: k (k had a value, but a later CONFIG entry for the same key has none and the last entry wins, as in openotters)"
        );
        // … and `--config` supplies it.
        let o = Overrides {
            configs: vec![("k".into(), "x".into())],
            ..Overrides::default()
        };
        let ok = run(vec![cfg("k", v(), false), cfg("k", None, true)], &o).unwrap();
        assert_eq!(ok.get("k").map(String::as_str), Some("x"));
        // [{k!},{k,v}] (parent `k!`, child `k=v`): starts with v.
        let ok = run(vec![cfg("k", None, true), cfg("k", v(), false)], &none).unwrap();
        assert_eq!(ok.get("k").map(String::as_str), Some("v"));
        // [{k,v},{k}] (nothing required): starts; L's configsFromSpec keeps v.
        let ok = run(vec![cfg("k", v(), false), cfg("k", None, false)], &none).unwrap();
        assert_eq!(ok.get("k").map(String::as_str), Some("v"));
        // `""` counts as set.
        let empty = Some(ConfigValue::String(String::new()));
        let ok = run(vec![cfg("k", None, true), cfg("k", empty, false)], &none).unwrap();
        assert_eq!(ok.get("k").map(String::as_str), Some(""));
        // Two keys missing: both named.
        let e = run(vec![cfg("b", None, true), cfg("a", None, true)], &none).unwrap_err();
        assert_eq!(e.to_string(), "required config(s) have no value: a, b");
    }

    #[test]
    fn overrides_flatten_and_replace() {
        let o = Overrides {
            model: Some("openai/x".into()),
            envs: vec![("A".into(), "new".into()), ("C".into(), "c".into())],
            configs: vec![
                parse_config("webhook=http://h").unwrap(),
                parse_config("extra=1").unwrap(),
            ],
        };
        let eff = apply(&agent(), &o).unwrap();
        assert_eq!(eff.model.as_deref(), Some("openai/x"));
        assert_eq!(
            eff.configs,
            BTreeMap::from([
                ("extra".into(), "1".into()),
                ("max-tokens".into(), "2".into()),
                ("temperature".into(), "0.5".into()),
                ("webhook".into(), "http://h".into()),
            ])
        );
        let keys: Vec<(&str, &str)> = eff
            .envs
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(keys, [("B", "2"), ("A", "new"), ("C", "c")]);
        assert!(matches!(
            parse_config("=x"),
            Err(OverrideError::ConfigShape { .. })
        ));
        assert!(matches!(
            parse_config("x"),
            Err(OverrideError::ConfigShape { .. })
        ));
    }
}
