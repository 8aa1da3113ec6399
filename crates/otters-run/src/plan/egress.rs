//! The run's egress (issue 36): what an agent's EGRESS, plus its MODEL provider's API host, lets
//! it reach, as the plan states it (`--dry-run` prints it); the run's egress module enforces it.
//!
//! Takes: the agent's model, the effective MODEL and the runtime's environment. Returns: an
//! [`EgressPlan`]. Must never: widen the list beyond the declaration and the provider's one API
//! host, or do I/O.

use crate::env::EnvEntry;
use otters_agentfile::ir::egress::{parse, Dest, Host, Policy};
use otters_agentfile::ir::Agent;
use serde::Serialize;

/// How a run holds the agent to its declaration (in the `--dry-run` JSON as `egress`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "enforced_by", rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub enum EgressPlan {
    /// `EGRESS none`: the container has no network at all (`--network none`).
    NoNetwork,
    /// An internal network whose only way out is otters' allow-list proxy.
    Proxy {
        /// The declared destinations (`host:port`).
        declared: Vec<String>,
        /// Allowed without a declaration: the MODEL provider's API host.
        implicit: Vec<String>,
    },
}

impl EgressPlan {
    /// Every destination the proxy lets through.
    pub fn allow(&self) -> Vec<Dest> {
        match self {
            EgressPlan::NoNetwork => Vec::new(),
            EgressPlan::Proxy { declared, implicit } => declared
                .iter()
                .chain(implicit)
                .filter_map(|d| parse(d).ok())
                .collect(),
        }
    }
}

/// The default API host of each known hosted provider (`<PROVIDER>_API_BASE` overrides it).
/// Azure has none: its host is the user's resource, so it must come from `AZURE_API_BASE`.
pub const PROVIDER_HOSTS: &[(&str, &str)] = &[
    ("anthropic", "api.anthropic.com"),
    ("openai", "api.openai.com"),
    ("gemini", "generativelanguage.googleapis.com"),
    ("google", "generativelanguage.googleapis.com"),
    ("mistral", "api.mistral.ai"),
    ("groq", "api.groq.com"),
    ("cohere", "api.cohere.com"),
    ("deepseek", "api.deepseek.com"),
    ("xai", "api.x.ai"),
    ("openrouter", "openrouter.ai"),
    ("together", "api.together.xyz"),
    ("fireworks", "api.fireworks.ai"),
    ("perplexity", "api.perplexity.ai"),
    ("huggingface", "router.huggingface.co"),
    ("cerebras", "api.cerebras.ai"),
];

/// The run's egress: `None` when the agent declares nothing (it runs as before).
pub fn plan(agent: &Agent, model: Option<&str>, env: &[EnvEntry]) -> Option<EgressPlan> {
    match agent.egress_policy() {
        Policy::Undeclared => None,
        Policy::Nothing => Some(EgressPlan::NoNetwork),
        Policy::Allow(list) => {
            let declared: Vec<Dest> = list.into_iter().map(|a| a.dest).collect();
            let implicit = model
                .and_then(|m| provider_dest(m, env))
                .filter(|d| !declared.contains(d))
                .map(|d| d.to_string())
                .into_iter()
                .collect();
            Some(EgressPlan::Proxy {
                declared: declared.iter().map(Dest::to_string).collect(),
                implicit,
            })
        }
    }
}

/// The MODEL provider's API endpoint: the host and port of `<PROVIDER>_API_BASE` when the run
/// passes it, else the provider's default host on 443.
fn provider_dest(model: &str, env: &[EnvEntry]) -> Option<Dest> {
    let (provider, _) = model.split_once('/')?;
    let base_key = format!("{}_API_BASE", crate::env::env_name(provider));
    if let Some(base) = env.iter().find(|e| e.key == base_key) {
        return base_dest(&base.value);
    }
    PROVIDER_HOSTS
        .iter()
        .find(|(p, _)| p.eq_ignore_ascii_case(provider))
        .map(|(_, h)| Dest {
            host: Host::Name((*h).to_owned()),
            port: 443,
        })
}

/// `scheme://host[:port][/…]` → the destination (80 for http, 443 otherwise).
fn base_dest(url: &str) -> Option<Dest> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let default = if scheme.eq_ignore_ascii_case("http") {
        80
    } else {
        443
    };
    let with_port = if authority.ends_with(']') || !authority.contains(':') {
        format!("{authority}:{default}")
    } else {
        authority.to_owned()
    };
    parse(&with_port).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str, v: &str) -> Vec<EnvEntry> {
        vec![EnvEntry {
            key: k.into(),
            value: v.into(),
            secret: false,
        }]
    }

    #[test]
    fn the_provider_host_is_allowed_from_its_base_or_its_default() {
        let d = |m: &str, e: &[EnvEntry]| provider_dest(m, e).map(|d| d.to_string());
        assert_eq!(
            d("anthropic/claude", &[]).as_deref(),
            Some("api.anthropic.com:443")
        );
        assert_eq!(
            d(
                "openai/gpt",
                &env("OPENAI_API_BASE", "http://gw.internal:8080/v1")
            )
            .as_deref(),
            Some("gw.internal:8080")
        );
        assert_eq!(
            d("ollama/llama3", &env("OLLAMA_API_BASE", "http://10.0.0.5")).as_deref(),
            Some("10.0.0.5:80")
        );
        assert_eq!(
            d(
                "openai/gpt",
                &env("OPENAI_API_BASE", "https://u:p@[2001:db8::1]/v1")
            )
            .as_deref(),
            Some("[2001:db8::1]:443")
        );
        assert_eq!(d("azure/gpt", &[]), None);
        assert_eq!(d("stripe/x", &[]), None);
        assert_eq!(d("nomodel", &[]), None);
    }

    #[test]
    fn the_plan_follows_the_declaration() {
        let mut a = Agent::default();
        assert_eq!(plan(&a, Some("anthropic/c"), &[]), None);
        let e = |t: &str| otters_agentfile::ir::Egress {
            target: t.into(),
            description: None,
            span: None,
        };
        a.egress = vec![e("none")];
        assert_eq!(
            plan(&a, Some("anthropic/c"), &[]),
            Some(EgressPlan::NoNetwork)
        );
        a.egress = vec![e("api.example.com"), e("api.anthropic.com")];
        let p = plan(&a, Some("anthropic/c"), &[]).unwrap();
        assert_eq!(
            p,
            EgressPlan::Proxy {
                declared: vec!["api.example.com:443".into(), "api.anthropic.com:443".into()],
                implicit: vec![],
            }
        );
        let p = plan(&a, Some("openai/gpt"), &[]).unwrap();
        assert_eq!(p.allow().len(), 3);
    }
}
