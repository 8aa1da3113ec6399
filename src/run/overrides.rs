//! Deploy-time overrides (spec §d.2) and the flattened CONFIG view with its required gate.
//!
//! Takes: the agent model and the user's `--model`, `-e` and `--config` values. Returns: the
//! [`Effective`] values the tree and the environment are built from. Must never: accept a start
//! with a required CONFIG that has no value.

use crate::ir::{Agent, ConfigValue};
use std::collections::BTreeMap;

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
    #[error("--config {text:?}: must be KEY=VALUE with a non-empty KEY")]
    ConfigShape { text: String },
    #[error("required config(s) have no value: {keys}; pass --config KEY=VALUE for each")]
    RequiredMissing { keys: String },
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

    let mut configs: BTreeMap<String, String> = BTreeMap::new();
    let mut required: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for c in &agent.configs {
        if c.required {
            required.insert(&c.key);
        }
        if let Some(v) = &c.value {
            configs.insert(c.key.clone(), display(v));
        }
    }
    for (k, v) in &o.configs {
        configs.insert(k.clone(), v.clone());
    }
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|k| !configs.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(OverrideError::RequiredMissing {
            keys: missing.join(", "),
        });
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
    use crate::diagnostic::Span;
    use crate::ir::{Config, Env, Node};

    fn cfg(key: &str, value: Option<ConfigValue>, required: bool) -> Config {
        Config {
            key: key.into(),
            value,
            description: None,
            required,
            span: Span::default(),
            key_span: Span::default(),
        }
    }

    fn env(key: &str, value: &str) -> Env {
        Env {
            key: key.into(),
            value: value.into(),
            description: Some("d".into()),
            span: Span::default(),
            key_span: Span::default(),
        }
    }

    fn agent() -> Agent {
        Agent {
            model: Some(Node::new("anthropic/a".into(), Span::default())),
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
        assert_eq!(
            e.to_string(),
            "required config(s) have no value: webhook; pass --config KEY=VALUE for each"
        );
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
