//! AF104 name-not-path-safe: NAME, CONTEXT and BIN names, and each component of an ADD
//! destination, must be safe file names.

use super::names::is_path_safe;
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn name_not_path_safe(span: Option<Span>, kind: &str, name: &str) -> Diagnostic {
    let message = if name.is_empty() {
        format!("{kind} is empty")
    } else {
        format!("{kind} `{name}` is not path-safe")
    };
    Diagnostic::new(Code::NameNotPathSafe, span, message)
        .with_label("becomes a file name when the agent is materialised")
        .with_help("use 1 to 63 letters, digits, `.`, `_` or `-`, starting with a letter or digit")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let a = &cx.model.agent;
    if let Some(n) = &a.name {
        if !is_path_safe(&n.value) {
            out.push(name_not_path_safe(n.span, "NAME", &n.value));
        }
    }
    for c in &a.contexts {
        if !is_path_safe(&c.name) && !super::reserved_context_name::is_reserved(&c.name) {
            out.push(name_not_path_safe(c.name_span, "CONTEXT name", &c.name));
        }
    }
    for b in &a.bins {
        if !is_path_safe(&b.name) {
            out.push(name_not_path_safe(b.name_span, "BIN name", &b.name));
        }
    }
    for add in &a.adds {
        // Empty, absolute and `..` destinations are AF114's; here each remaining component.
        if super::invalid_add_destination::problem(&add.name).is_some() {
            continue;
        }
        if let Some(bad) = add.name.split('/').find(|c| !is_path_safe(c)) {
            let kind = if bad == add.name {
                "ADD destination".to_owned()
            } else {
                format!("ADD destination `{}`: component", add.name)
            };
            out.push(name_not_path_safe(add.name_span, &kind, bad));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::NameNotPathSafe,
            &[
                ("NAME helper-1.0", &[]),
                ("NAME my/agent", &[2]),
                ("NAME .hidden", &[2]),
                ("CONTEXT SOUL", &[]),
                ("CONTEXT my/soul", &[2]),
                ("BIN jq img:1", &[]),
                ("BIN j:q img:1", &[2]),
                ("ADD a.txt docs/a.txt", &[]),
                ("ADD a.txt docs/.hidden", &[2]),
                ("ADD dir/x:y.txt", &[2]),
                ("ADD a.txt ../x", &[]),
                ("ARG N=\"\"\nNAME ${N}x", &[]),
            ],
        );
    }
}
