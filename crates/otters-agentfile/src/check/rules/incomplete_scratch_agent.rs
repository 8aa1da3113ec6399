//! AF209 incomplete-scratch-agent: `FROM scratch` with no RUNTIME, MODEL or NAME.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

pub fn incomplete_scratch_agent(span: Option<Span>, missing: &[&str]) -> Diagnostic {
    let list = match missing.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => missing.join(""),
    };
    Diagnostic::new(Code::IncompleteScratchAgent, span, format!("this scratch agent has no {list}"))
        .with_label("nothing to inherit them from")
        .with_help(format!(
            "add {} (a base image meant for FROM may suppress this: `# otters:ignore AF209 base image`)",
            missing.iter().map(|m| format!("`{m} ...`")).collect::<Vec<_>>().join(", ")
        ))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let a = &cx.model.agent;
    let Some(from) = a.from.as_ref().filter(|f| f.value == "scratch") else {
        return;
    };
    let mut missing = Vec::new();
    for (kw, present) in [
        ("RUNTIME", a.runtime.is_some()),
        ("MODEL", a.model.is_some()),
        ("NAME", a.name.is_some()),
    ] {
        if !present {
            missing.push(kw);
        }
    }
    if !missing.is_empty() {
        out.push(incomplete_scratch_agent(from.span, &missing));
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::IncompleteScratchAgent,
            &[
                ("RUNTIME r:v1\nMODEL a/b\nNAME n", &[]),
                ("RUNTIME r:v1\nMODEL a/b", &[1]),
                ("", &[1]),
            ],
        );
        let opts = crate::check::Options::default();
        assert!(
            super::super::lines_of(Code::IncompleteScratchAgent, "FROM base:1\n", &opts).is_empty()
        );
    }
}
