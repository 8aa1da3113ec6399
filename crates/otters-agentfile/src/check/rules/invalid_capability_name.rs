//! AF108 invalid-capability-name: `^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$`.

use super::names::is_label;
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn invalid_capability_name(span: Option<Span>, name: &str) -> Diagnostic {
    let help = if name.starts_with('#') {
        "comments are whole lines only: move the `#` text to its own line above".to_owned()
    } else {
        "use lower-case letters, digits, `_` and `-`, starting and ending with a letter or digit"
            .to_owned()
    };
    Diagnostic::new(
        Code::InvalidCapabilityName,
        span,
        format!("capability name `{name}` is not valid"),
    )
    .with_help(help)
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for c in cx
        .model
        .agent
        .capabilities
        .iter()
        .filter(|c| !is_label(&c.value, true))
    {
        out.push(invalid_capability_name(c.span, &c.value));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::InvalidCapabilityName,
            &[
                ("CAPABILITY note_save note-list x", &[]),
                ("CAPABILITY Note_Save", &[2]),
                ("CAPABILITY note_save # memory", &[2]),
                ("CAPABILITY _x", &[2]),
            ],
        );
    }
}
