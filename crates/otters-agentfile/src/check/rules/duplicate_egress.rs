//! AF121 duplicate-egress: one destination (host and port, as otters compares them), one
//! EGRESS; `EGRESS none` twice is a duplicate too.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::ir::egress::parse;
use std::collections::BTreeMap;

pub fn duplicate_egress(span: Option<Span>, first: Option<Span>, dest: &str) -> Diagnostic {
    Diagnostic::new(
        Code::DuplicateEgress,
        span,
        format!("EGRESS `{dest}` is declared twice"),
    )
    .with_label("second declaration")
    .with_secondary(first, "first declared here")
    .with_help("keep one EGRESS per host and port (the port defaults to 443)")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let mut seen: BTreeMap<String, Option<Span>> = BTreeMap::new();
    for e in &cx.model.agent.egress {
        let key = if e.is_none() {
            "none".to_owned()
        } else {
            match parse(&e.target) {
                Ok(d) => d.to_string(),
                Err(_) => continue,
            }
        };
        match seen.get(&key) {
            Some(first) => out.push(duplicate_egress(e.span, *first, &key)),
            None => {
                seen.insert(key, e.span);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::DuplicateEgress,
            &[
                ("EGRESS a.example.com\nEGRESS a.example.com:80", &[]),
                ("EGRESS a.example.com\nEGRESS A.example.com:443", &[3]),
                ("EGRESS [2001:db8::1]\nEGRESS 2001:db8:0::1", &[3]),
                ("EGRESS none\nEGRESS none", &[3]),
            ],
        );
    }
}
