//! AF107 required-config-with-value: `CONFIG key!=value` contradicts itself.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn required_config_with_value(span: Option<Span>, key: &str) -> Diagnostic {
    Diagnostic::new(
        Code::RequiredConfigWithValue,
        span,
        format!("CONFIG {key} is required (`!`) but also has a value"),
    )
    .with_label("a required config is supplied at deploy time")
    .with_help(format!(
        "drop the value (`CONFIG {key}!`) or drop the `!` to make it a default"
    ))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for c in cx
        .model
        .agent
        .configs
        .iter()
        .filter(|c| c.required && c.value.is_some())
    {
        out.push(required_config_with_value(c.span, &c.key));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::RequiredConfigWithValue,
            &[
                ("CONFIG api-url!", &[]),
                ("CONFIG api-url! \"where\"", &[]),
                ("CONFIG api-url=x", &[]),
                ("CONFIG api-url!=x", &[2]),
                ("CONFIG api-url!=\"\"", &[2]),
            ],
        );
    }
}
