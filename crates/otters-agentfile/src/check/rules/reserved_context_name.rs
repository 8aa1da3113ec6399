//! AF105 reserved-context-name: `AGENT`, `WORKSPACE` and `MOUNTS` are generated at run time.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn is_reserved(name: &str) -> bool {
    super::names::RESERVED_CONTEXT_NAMES.contains(&name)
}

pub fn reserved_context_name(span: Option<Span>, name: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ReservedContextName,
        span,
        format!("CONTEXT name `{name}` is reserved"),
    )
    .with_label(format!("the executor generates {name}.md itself"))
    .with_help("pick another name (AGENT, WORKSPACE and MOUNTS are reserved)")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for c in cx
        .model
        .agent
        .contexts
        .iter()
        .filter(|c| is_reserved(&c.name))
    {
        out.push(reserved_context_name(c.name_span, &c.name));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::ReservedContextName,
            &[
                ("CONTEXT AGENT", &[2]),
                ("CONTEXT WORKSPACE <<E\nx\nE", &[2]),
                ("CONTEXT MOUNTS file://m.md", &[2]),
                ("CONTEXT SOUL", &[]),
                ("CONTEXT AGENTS", &[]),
            ],
        );
    }
}
