//! AF119 invalid-egress-port: an EGRESS port is 1 to 65535, in decimal digits.

use super::invalid_egress_host::target_spans;
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::ir::egress::{parse, Problem};

pub fn invalid_egress_port(span: Option<Span>, target: &str, what: &str) -> Diagnostic {
    Diagnostic::new(
        Code::InvalidEgressPort,
        span,
        format!("EGRESS `{target}`: {what}"),
    )
    .with_label("not a port")
    .with_help("write `host:PORT` with PORT from 1 to 65535, or leave the port out for 443")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let spans = target_spans(cx);
    for e in cx.model.agent.egress.iter().filter(|e| !e.is_none()) {
        if let Err(Problem::Port(what)) = parse(&e.target) {
            let span = e.span.and_then(|s| spans.get(&s).copied()).or(e.span);
            out.push(invalid_egress_port(span, &e.target, &what));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::InvalidEgressPort,
            &[
                ("EGRESS api.example.com:8443", &[]),
                ("EGRESS [::1]:1", &[]),
                ("EGRESS a..b:1", &[]),
                ("EGRESS api.example.com:0", &[2]),
                (
                    "EGRESS api.example.com:65536\nEGRESS x.example.com:http",
                    &[2, 3],
                ),
                ("EGRESS [::1]:", &[2]),
            ],
        );
    }
}
