//! AF106 config-key-not-dns1123: CONFIG keys are DNS-1123 labels.

use super::names::{is_label, to_label};
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn config_key_not_dns1123(span: Option<Span>, key: &str) -> Diagnostic {
    let help = match to_label(key) {
        Some(fixed) => {
            format!("write `{fixed}`: lower-case letters, digits and `-`, at most 63 characters")
        }
        None => {
            "use lower-case letters, digits and `-`, starting and ending with a letter or digit"
                .to_owned()
        }
    };
    Diagnostic::new(
        Code::ConfigKeyNotDns1123,
        span,
        format!("CONFIG key `{key}` is not a DNS-1123 label"),
    )
    .with_label("not a DNS-1123 label")
    .with_help(help)
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for c in cx
        .model
        .agent
        .configs
        .iter()
        .filter(|c| !is_label(&c.key, false))
    {
        out.push(config_key_not_dns1123(c.key_span, &c.key));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::ConfigKeyNotDns1123,
            &[
                ("CONFIG max-tokens=1", &[]),
                ("CONFIG a1", &[]),
                ("CONFIG max_tokens=1", &[2]),
                ("CONFIG MaxTokens", &[2]),
                ("CONFIG -x=1", &[2]),
            ],
        );
    }
}
