//! AF114 invalid-add-destination: after normalisation, an ADD destination must be a non-empty
//! relative path under `etc/data/` with no `..`.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

/// What is wrong with a normalised destination, if anything this rule covers (the shape lives in
/// `ir::names`, which also checks names read from images).
pub use super::names::add_destination_shape as problem;

pub fn invalid_add_destination(span: Option<Span>, name: &str, what: &str) -> Diagnostic {
    Diagnostic::new(Code::InvalidAddDestination, span, format!("ADD destination `{name}` {what}"))
        .with_label("files land under etc/data/")
        .with_help("give a relative path inside etc/data, such as `docs/guide.md`, or leave it out to use the source's file name")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for add in &cx.model.agent.adds {
        if let Some(what) = problem(&add.name) {
            out.push(invalid_add_destination(add.name_span, &add.name, what));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::InvalidAddDestination,
            &[
                ("ADD a.txt", &[]),
                ("ADD a.txt docs/b.txt", &[]),
                ("ADD a.txt /data/b.txt", &[]),
                ("ADD a.txt ../b.txt", &[2]),
                ("ADD a.txt docs/../../b.txt", &[2]),
                ("ADD a.txt //data/b.txt", &[]),
            ],
        );
    }
}
