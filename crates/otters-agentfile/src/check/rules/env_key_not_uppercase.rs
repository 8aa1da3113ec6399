//! AF109 env-key-not-uppercase: ENV keys match `^[A-Z_][A-Z0-9_]*$`.

use super::names::is_env_key;
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn env_key_not_uppercase(span: Option<Span>, key: &str) -> Diagnostic {
    let fixed: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let help = if is_env_key(&fixed) {
        format!("write `{fixed}`: upper-case letters, digits and `_`, not starting with a digit")
    } else {
        "use upper-case letters, digits and `_`, not starting with a digit".to_owned()
    };
    Diagnostic::new(
        Code::EnvKeyNotUppercase,
        span,
        format!("ENV key `{key}` is not an upper-case name"),
    )
    .with_help(help)
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for e in cx.model.agent.envs.iter().filter(|e| !is_env_key(&e.key)) {
        out.push(env_key_not_uppercase(e.key_span, &e.key));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::EnvKeyNotUppercase,
            &[
                ("ENV LOG_LEVEL=1", &[]),
                ("ENV _X=1", &[]),
                ("ENV log_level=1", &[2]),
                ("ENV 1X=1", &[2]),
                ("ENV LOG.LEVEL=1", &[2]),
            ],
        );
    }
}
