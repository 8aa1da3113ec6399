//! AF218 env-overrides-config: `ENV RUNTIME_<KEY>` replaces the variable a CONFIG of the same
//! file would set (spec §g.4: user ENVs come last and win).

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::ir::Config;
use std::collections::HashMap;

/// The `RUNTIME_*` variable a CONFIG key becomes (`max-tokens` → `RUNTIME_MAX_TOKENS`).
pub fn runtime_var(key: &str) -> String {
    let mut s = String::from("RUNTIME_");
    s.extend(key.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    s
}

pub fn env_overrides_config(
    span: Option<Span>,
    config: Option<Span>,
    env: &str,
    key: &str,
) -> Diagnostic {
    Diagnostic::new(
        Code::EnvOverridesConfig,
        span,
        format!("ENV {env} overrides CONFIG {key}"),
    )
    .with_label("this value reaches the runtime")
    .with_secondary(config, "has no effect on the runtime")
    .with_help(format!(
        "set the value once: either `CONFIG {key}=...` or `ENV {env}=...`"
    ))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let a = &cx.model.agent;
    // Each CONFIG's variable, first CONFIG first: one look-up per ENV instead of a scan of every
    // CONFIG (which made many of both quadratic).
    let mut vars: HashMap<String, &Config> = HashMap::new();
    for c in &a.configs {
        vars.entry(runtime_var(&c.key)).or_insert(c);
    }
    for e in a.envs.iter().filter(|e| e.key.starts_with("RUNTIME_")) {
        if let Some(c) = vars.get(&e.key) {
            out.push(env_overrides_config(e.key_span, c.span, &e.key, &c.key));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::EnvOverridesConfig,
            &[
                ("CONFIG max-tokens=1\nENV RUNTIME_MAX_TOKENS=2", &[3]),
                ("ENV RUNTIME_MAX_TOKENS=2\nCONFIG max-tokens=1", &[2]),
                ("ENV RUNTIME_MAX_TOKENS=2", &[]),
                ("CONFIG max-tokens=1\nENV MAX_TOKENS=2", &[]),
            ],
        );
        assert_eq!(super::runtime_var("top-p"), "RUNTIME_TOP_P");
    }
}
