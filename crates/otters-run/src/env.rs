//! The spawn environment of spec §g.4: locked down, nothing inherited from the host except the
//! model provider's credentials.
//!
//! Takes: the agent layout (host root or container), MODEL, a host-environment lookup, the
//! flattened CONFIG values and the user ENVs (after `-e` overrides). Returns: the environment as a
//! sorted list of [`EnvEntry`], each marked secret or not. Must never: copy any other host
//! variable, or write a secret anywhere (callers print only [`EnvEntry::shown_value`]).

use std::collections::BTreeMap;
use std::path::Path;

/// Keys otters sets itself; `-e` may not set them.
pub use otters_agentfile::ir::names::RESERVED_ENV_KEYS as RESERVED_KEYS;
use otters_agentfile::ir::names::{is_credential_key, is_env_key};

/// What a redacted value prints as.
pub const REDACTED: &str = "<redacted>";

/// One variable of the runtime's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvEntry {
    pub key: String,
    pub value: String,
    /// Credentials: never printed, never written to disk.
    pub secret: bool,
}

impl EnvEntry {
    /// The value as it may be shown to a user.
    pub fn shown_value(&self) -> &str {
        if self.secret {
            REDACTED
        } else {
            &self.value
        }
    }
}

/// The schema of what [`EnvEntry`]'s `Serialize` writes (the value redacted for a secret).
#[derive(schemars::JsonSchema)]
#[schemars(rename = "EnvEntry", deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
struct EnvEntryShape {
    /// The variable's name.
    key: String,
    /// Its value, or `<redacted>` for a secret.
    value: String,
    /// Whether it is a credential (its value is never shown).
    secret: bool,
}

impl schemars::JsonSchema for EnvEntry {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        EnvEntryShape::schema_name()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        EnvEntryShape::json_schema(g)
    }
}

impl serde::Serialize for EnvEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("EnvEntry", 3)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("value", self.shown_value())?;
        st.serialize_field("secret", &self.secret)?;
        st.end()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvError {
    #[error("-e {text:?}: must be KEY=VALUE with a non-empty KEY")]
    Shape { text: String },
    #[error(
        "-e {key}: the key must be upper-case letters, digits and `_`, not starting with a digit"
    )]
    BadKey { key: String },
    #[error("-e {key}: {key} is set by otters itself and cannot be overridden; remove it")]
    Reserved { key: String },
    #[error(
        "-e {key}: provider credentials are never passed with -e; export {key} in the environment otters runs in"
    )]
    Credential { key: String },
}

/// Where the tree is, as the runtime sees it.
#[derive(Clone, Copy, Debug)]
pub enum Layout<'a> {
    /// System executor: real host paths under this absolute root.
    Host(&'a Path),
    /// Docker executor: the tree is merged at `/`.
    Container,
}

/// Parse one `-e KEY=VALUE`, refusing reserved and credential keys.
pub fn parse_override(text: &str) -> Result<(String, String), EnvError> {
    let (key, value) = text.split_once('=').ok_or_else(|| EnvError::Shape {
        text: text.to_owned(),
    })?;
    if key.is_empty() {
        return Err(EnvError::Shape {
            text: text.to_owned(),
        });
    }
    if !is_env_key(key) {
        return Err(EnvError::BadKey {
            key: key.to_owned(),
        });
    }
    if RESERVED_KEYS.contains(&key) {
        return Err(EnvError::Reserved {
            key: key.to_owned(),
        });
    }
    if is_credential_key(key) {
        return Err(EnvError::Credential {
            key: key.to_owned(),
        });
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// `max-tokens` → `MAX_TOKENS` (also used for the provider prefix).
pub fn env_name(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            'a'..='z' => c.to_ascii_uppercase(),
            'A'..='Z' | '0'..='9' => c,
            _ => '_',
        })
        .collect()
}

/// The provider part of MODEL (`anthropic/claude-…` → `ANTHROPIC`), if MODEL has a `/`.
pub fn provider_prefix(model: &str) -> Option<String> {
    let (provider, _) = model.split_once('/')?;
    (!provider.is_empty()).then(|| env_name(provider))
}

/// Model providers whose `<PROVIDER>_API_KEY` and `<PROVIDER>_API_BASE` otters passes on without
/// being told: the hosted APIs agent runtimes speak to. Any other provider must be named by the
/// user (`otters run --provider NAME`), so a MODEL such as `stripe/x` cannot pick an unrelated
/// secret (`STRIPE_API_KEY`) out of the environment.
pub const KNOWN_PROVIDERS: &[&str] = &[
    "anthropic",
    "openai",
    "azure",
    "gemini",
    "google",
    "mistral",
    "groq",
    "cohere",
    "deepseek",
    "xai",
    "openrouter",
    "together",
    "fireworks",
    "perplexity",
    "huggingface",
    "cerebras",
];

/// Providers whose models run locally: known (their `_API_BASE` is passed) and need no key.
pub const KEYLESS_PROVIDERS: &[&str] = &["ollama", "lmstudio", "llamacpp", "vllm", "local"];

/// The provider part of MODEL (`anthropic/claude` → `anthropic`) when otters does not know it and
/// the user did not name it in `named`: its credentials are not passed.
pub fn untrusted_provider<'m>(model: &'m str, named: &[String]) -> Option<&'m str> {
    let prefix = provider_prefix(model)?;
    let provider = model.split_once('/')?.0;
    let lower = provider.to_ascii_lowercase();
    let known =
        KNOWN_PROVIDERS.contains(&lower.as_str()) || KEYLESS_PROVIDERS.contains(&lower.as_str());
    let is_named = named.iter().any(|n| !n.is_empty() && env_name(n) == prefix);
    (!known && !is_named).then_some(provider)
}

/// Build the environment (spec §g.4, rows 1, 2, 4, 5, 6; there is no daemon, so no row 3).
/// Row 4 (MODEL's provider credentials) only for a known provider or one in `named`.
/// Later rows win on duplicate keys; the result is sorted by key.
pub fn spawn_env(
    layout: Layout<'_>,
    model: Option<&str>,
    named: &[String],
    host_env: &dyn Fn(&str) -> Option<String>,
    configs: &BTreeMap<String, String>,
    user_envs: &[(String, String)],
) -> Vec<EnvEntry> {
    let mut out: BTreeMap<String, EnvEntry> = BTreeMap::new();
    let mut put = |key: String, value: String, secret: bool| {
        out.insert(key.clone(), EnvEntry { key, value, secret });
    };
    let (root, path) = match layout {
        Layout::Host(root) => (
            root.display().to_string(),
            root.join("usr/bin").display().to_string(),
        ),
        Layout::Container => (String::new(), "/opt/bins".to_owned()),
    };
    put("PATH".into(), path, false);
    put("HOME".into(), format!("{root}/home"), false);
    put(
        "XDG_CONFIG_HOME".into(),
        format!("{root}/home/.config"),
        false,
    );
    put(
        "XDG_CACHE_HOME".into(),
        format!("{root}/home/.cache"),
        false,
    );
    put(
        "XDG_DATA_HOME".into(),
        format!("{root}/home/.local/share"),
        false,
    );
    put("TMPDIR".into(), format!("{root}/tmp"), false);
    put("LANG".into(), "C.UTF-8".into(), false);
    put(
        "OTTERS_AGENT_ROOT".into(),
        if root.is_empty() {
            "/".into()
        } else {
            root.clone()
        },
        false,
    );
    let trusted = model.filter(|m| untrusted_provider(m, named).is_none());
    if let Some(prefix) = trusted.and_then(provider_prefix) {
        for (suffix, secret) in [("_API_KEY", true), ("_API_BASE", false)] {
            let key = format!("{prefix}{suffix}");
            if let Some(v) = host_env(&key).filter(|v| !v.is_empty()) {
                put(key, v, secret);
            }
        }
    }
    for (k, v) in configs {
        put(format!("RUNTIME_{}", env_name(k)), v.clone(), false);
    }
    for (k, v) in user_envs {
        if RESERVED_KEYS.contains(&k.as_str()) || is_credential_key(k) {
            continue;
        }
        put(k.clone(), v.clone(), false);
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(key: &str) -> Option<String> {
        match key {
            "ANTHROPIC_API_KEY" => Some("sk-secret".into()),
            "ANTHROPIC_API_BASE" => Some("http://127.0.0.1:1".into()),
            "OPENAI_API_KEY" => Some("other".into()),
            "OPENAI_API_BASE" | "HOME" => Some(String::new()),
            _ => None,
        }
    }

    fn keys(env: &[EnvEntry]) -> Vec<&str> {
        env.iter().map(|e| e.key.as_str()).collect()
    }

    #[test]
    fn host_layout_with_provider_configs_and_envs() {
        let configs = BTreeMap::from([
            ("max-tokens".to_owned(), "256".to_owned()),
            ("x.y".into(), "1".into()),
        ]);
        let envs = vec![
            ("LOG".to_owned(), "debug".to_owned()),
            ("RUNTIME_MAX_TOKENS".into(), "9".into()),
            ("PATH".into(), "/evil".into()),
            ("X_API_KEY".into(), "k".into()),
        ];
        let env = spawn_env(
            Layout::Host(Path::new("/r")),
            Some("anthropic/claude"),
            &[],
            &host,
            &configs,
            &envs,
        );
        assert_eq!(
            keys(&env),
            [
                "ANTHROPIC_API_BASE",
                "ANTHROPIC_API_KEY",
                "HOME",
                "LANG",
                "LOG",
                "OTTERS_AGENT_ROOT",
                "PATH",
                "RUNTIME_MAX_TOKENS",
                "RUNTIME_X_Y",
                "TMPDIR",
                "XDG_CACHE_HOME",
                "XDG_CONFIG_HOME",
                "XDG_DATA_HOME"
            ]
        );
        let get = |k: &str| env.iter().find(|e| e.key == k).unwrap();
        assert_eq!(get("PATH").value, "/r/usr/bin");
        assert_eq!(get("HOME").value, "/r/home");
        assert_eq!(
            get("RUNTIME_MAX_TOKENS").value,
            "9",
            "an ENV overrides a CONFIG-derived variable"
        );
        assert!(get("ANTHROPIC_API_KEY").secret);
        assert_eq!(get("ANTHROPIC_API_KEY").shown_value(), REDACTED);
        assert!(!serde_json::to_string(&env).unwrap().contains("sk-secret"));
    }

    #[test]
    fn container_layout_and_no_provider() {
        let env = spawn_env(
            Layout::Container,
            Some("local-model"),
            &[],
            &host,
            &BTreeMap::new(),
            &[],
        );
        let get = |k: &str| env.iter().find(|e| e.key == k).map(|e| e.value.as_str());
        assert_eq!(get("PATH"), Some("/opt/bins"));
        assert_eq!(get("HOME"), Some("/home"));
        assert_eq!(get("OTTERS_AGENT_ROOT"), Some("/"));
        assert!(env.iter().all(|e| !e.key.contains("API")));
        // Empty host values are not passed.
        let env = spawn_env(
            Layout::Container,
            Some("openai/gpt"),
            &[],
            &host,
            &BTreeMap::new(),
            &[],
        );
        assert_eq!(
            keys(&env)
                .iter()
                .filter(|k| k.starts_with("OPENAI"))
                .count(),
            1
        );
    }

    #[test]
    fn only_known_or_named_providers_get_credentials() {
        let host =
            |k: &str| (k == "STRIPE_API_KEY" || k == "OLLAMA_API_BASE").then(|| "v".to_owned());
        let api = |model: &str, named: &[String]| {
            let env = spawn_env(
                Layout::Container,
                Some(model),
                named,
                &host,
                &BTreeMap::new(),
                &[],
            );
            keys(&env)
                .into_iter()
                .filter(|k| k.contains("_API_"))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert!(api("stripe/x", &[]).is_empty());
        assert_eq!(untrusted_provider("stripe/x", &[]), Some("stripe"));
        assert_eq!(api("stripe/x", &["Stripe".into()]), ["STRIPE_API_KEY"]);
        assert_eq!(untrusted_provider("stripe/x", &["stripe".into()]), None);
        assert_eq!(api("ollama/llama3", &[]), ["OLLAMA_API_BASE"]);
        assert_eq!(untrusted_provider("Anthropic/claude", &[]), None);
        assert_eq!(untrusted_provider("no-provider", &[]), None);
    }

    #[test]
    fn overrides_are_checked() {
        assert_eq!(parse_override("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert_eq!(parse_override("A="), Ok(("A".into(), String::new())));
        assert!(matches!(parse_override("=x"), Err(EnvError::Shape { .. })));
        assert!(matches!(parse_override("A"), Err(EnvError::Shape { .. })));
        assert!(matches!(
            parse_override("lower=x"),
            Err(EnvError::BadKey { .. })
        ));
        let e = parse_override("HOME=/x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "-e HOME: HOME is set by otters itself and cannot be overridden; remove it"
        );
        assert!(matches!(
            parse_override("OPENAI_API_KEY=x"),
            Err(EnvError::Credential { .. })
        ));
    }
}
