//! AF120 egress-none-with-hosts: `EGRESS none` says the agent reaches nothing, so it stands
//! alone; a host beside it is a contradiction (otters would enforce `none`).

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn egress_none_with_hosts(span: Option<Span>, none: Option<Span>, target: &str) -> Diagnostic {
    Diagnostic::new(
        Code::EgressNoneWithHosts,
        span,
        format!("EGRESS `{target}` is declared beside `EGRESS none`"),
    )
    .with_label("a host")
    .with_secondary(none, "`none` declared here")
    .with_help("keep `EGRESS none` for an agent that needs no network, or remove it and list the hosts the agent needs")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let egress = &cx.model.agent.egress;
    let Some(none) = egress.iter().find(|e| e.is_none()) else {
        return;
    };
    for e in egress.iter().filter(|e| !e.is_none()) {
        out.push(egress_none_with_hosts(e.span, none.span, &e.target));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::EgressNoneWithHosts,
            &[
                ("EGRESS none", &[]),
                ("EGRESS a.example.com\nEGRESS b.example.com", &[]),
                ("EGRESS none\nEGRESS a.example.com", &[3]),
                (
                    "EGRESS a.example.com\nEGRESS NONE\nEGRESS b.example.com:80",
                    &[2, 4],
                ),
            ],
        );
    }
}
