//! AF205 shadowed-declaration for ENV, CONFIG and BIN: a later declaration with the same key or
//! name wins when the agent is materialised. (CONTEXT shadowing is reported by `ir`, which
//! replaces the context in place and so is the only stage that sees both.)

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use std::collections::BTreeMap;

pub fn shadowed_declaration(
    span: Option<Span>,
    first: Option<Span>,
    kind: &str,
    key: &str,
) -> Diagnostic {
    Diagnostic::new(
        Code::ShadowedDeclaration,
        span,
        format!("{kind} {key} replaces an earlier {kind} {key}"),
    )
    .with_label("this one wins")
    .with_secondary(first, "earlier declaration, no effect")
    .with_help("delete one of the two")
}

fn report<'a>(
    out: &mut Vec<Diagnostic>,
    kind: &str,
    items: impl Iterator<Item = (&'a str, Option<Span>)>,
) {
    let mut seen: BTreeMap<&str, Option<Span>> = BTreeMap::new();
    for (key, span) in items {
        if let Some(first) = seen.insert(key, span) {
            out.push(shadowed_declaration(span, first, kind, key));
        }
    }
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let a = &cx.model.agent;
    report(out, "ENV", a.envs.iter().map(|e| (e.key.as_str(), e.span)));
    report(
        out,
        "CONFIG",
        a.configs.iter().map(|c| (c.key.as_str(), c.span)),
    );
    report(out, "BIN", a.bins.iter().map(|b| (b.name.as_str(), b.span)));
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::ShadowedDeclaration,
            &[
                ("ENV A=1\nENV B=1", &[]),
                ("ENV A=1\nENV A=2", &[3]),
                ("ENV A=1\nENV A=2\nENV A=3", &[3, 4]),
                ("CONFIG a=1\nCONFIG a=2", &[3]),
                ("CONFIG a=1\nRUNTIME r:v1\nCONFIG a=2", &[]),
                ("BIN jq i:1\nBIN jq i:2", &[3]),
                ("CONTEXT S\nCONTEXT S", &[3]),
            ],
        );
    }
}
