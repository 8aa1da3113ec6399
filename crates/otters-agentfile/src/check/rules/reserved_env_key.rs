//! AF110 reserved-env-key: keys the executor sets, and provider-credential suffixes.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn reserved_env_key(span: Option<Span>, key: &str) -> Diagnostic {
    let (label, help) = if key.ends_with("_API_KEY") || key.ends_with("_API_BASE") {
        (
            "provider credentials are injected at run time",
            "remove it: otters passes `<PROVIDER>_API_KEY` and `_API_BASE` from the provider configuration, never from the image",
        )
    } else {
        (
            "the executor sets this variable",
            "remove it or use another name; the executor's value would win",
        )
    };
    Diagnostic::new(
        Code::ReservedEnvKey,
        span,
        format!("ENV key `{key}` is reserved"),
    )
    .with_label(label)
    .with_help(help)
}

pub fn is_reserved(key: &str) -> bool {
    crate::ir::names::RESERVED_ENV_KEYS.contains(&key) || crate::ir::names::is_credential_key(key)
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for e in cx.model.agent.envs.iter().filter(|e| is_reserved(&e.key)) {
        out.push(reserved_env_key(e.key_span, &e.key));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::ReservedEnvKey,
            &[
                ("ENV PATH=/bin", &[2]),
                ("ENV OTTERS_AGENT_TOKEN=x", &[2]),
                ("ENV ANTHROPIC_API_KEY=x", &[2]),
                ("ENV OPENAI_API_BASE=x", &[2]),
                ("ENV RUNTIME_MAX_TOKENS=1", &[]),
                ("ENV API_KEY_FILE=x", &[]),
                ("ENV MY_PATH=x", &[]),
            ],
        );
    }
}
