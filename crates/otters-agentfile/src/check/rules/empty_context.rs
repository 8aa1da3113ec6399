//! AF216 empty-context: a CONTEXT with neither a heredoc body nor a `file://` reference.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn empty_context(span: Option<Span>, name: &str) -> Diagnostic {
    Diagnostic::new(
        Code::EmptyContext,
        span,
        format!("CONTEXT {name} has no content"),
    )
    .with_label("builds an empty file")
    .with_help(format!(
        "add a heredoc (`CONTEXT {name} <<EOF`) or a file (`CONTEXT {name} file://{}.md`)",
        name.to_ascii_lowercase()
    ))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for c in &cx.model.agent.contexts {
        if c.file.is_none() && c.content.as_deref().is_none_or(str::is_empty) {
            out.push(empty_context(c.name_span, &c.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::EmptyContext,
            &[
                ("CONTEXT SOUL \"who\"", &[2]),
                ("CONTEXT SOUL <<E\nE", &[2]),
                ("CONTEXT SOUL <<E\nx\nE", &[]),
                ("CONTEXT SOUL file://soul.md", &[]),
            ],
        );
    }
}
