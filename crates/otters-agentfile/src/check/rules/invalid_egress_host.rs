//! AF118 invalid-egress-host: an EGRESS host must be a DNS name, a single-label wildcard
//! (`*.example.com`) or an IP literal. (The port is AF119's.)

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::ir::egress::{parse, Problem};
use crate::syntax::Args;
use std::collections::HashMap;

pub fn invalid_egress_host(span: Option<Span>, target: &str, what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::InvalidEgressHost,
        span,
        format!("EGRESS host `{target}` {what}"),
    )
    .with_label("not a host otters can enforce")
    .with_help("name a DNS name (`api.example.com`), one wildcard label (`*.example.com`), an IPv4 address or an IPv6 address in brackets (`[2001:db8::1]:443`)")
}

/// The target token's span of each EGRESS instruction, by the instruction's span (one pass).
pub(super) fn target_spans(cx: &Ctx<'_>) -> HashMap<Span, Span> {
    cx.ast
        .instructions()
        .filter_map(|i| match &i.args {
            Args::Egress { target, .. } => Some((i.span, target.span)),
            _ => None,
        })
        .collect()
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let spans = target_spans(cx);
    for e in cx.model.agent.egress.iter().filter(|e| !e.is_none()) {
        if let Err(Problem::Host(what)) = parse(&e.target) {
            let span = e.span.and_then(|s| spans.get(&s).copied()).or(e.span);
            out.push(invalid_egress_host(span, &e.target, &what));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::InvalidEgressHost,
            &[
                ("EGRESS api.example.com", &[]),
                ("EGRESS *.example.com:80 \"mirrors\"", &[]),
                ("EGRESS [2001:db8::1]:853\nEGRESS 10.0.0.1", &[]),
                ("EGRESS none", &[]),
                ("EGRESS api.example.com:99999", &[]),
                ("EGRESS a..b", &[2]),
                ("EGRESS *.com", &[2]),
                ("EGRESS api.*.com\nEGRESS under_score.com", &[2, 3]),
                ("EGRESS 1.2.3", &[2]),
            ],
        );
    }
}
