//! AF204 unused-arg: an ARG that no later instruction line references with `${NAME}`.
//!
//! Reads the AST, because the model only keeps ARGs with values and has already expanded every
//! reference. Heredoc bodies are never expanded, so a `${NAME}` there is not a use.

use super::Ctx;
use crate::diagnostic::{Diagnostic, Span};
use crate::syntax::Args;

pub fn unused_arg(span: Span, name: &str) -> Diagnostic {
    Diagnostic::warning("AF204", span, format!("ARG {name} is never used"))
        .with_label("no `${...}` below refers to it")
        .with_help(format!("refer to it as `${{{name}}}` on a later instruction line, or delete the ARG (heredoc bodies are never expanded)"))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let instructions: Vec<_> = cx.ast.instructions().collect();
    for (i, ins) in instructions.iter().enumerate() {
        let Args::Arg { key, .. } = &ins.args else {
            continue;
        };
        let needle = format!("${{{}}}", key.text);
        let used = instructions[i + 1..].iter().any(|later| {
            cx.file
                .text
                .get(later.span.start..later.span.end)
                .is_some_and(|t| t.contains(&needle))
        });
        if !used {
            out.push(unused_arg(key.span, &key.text));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn table() {
        super::super::assert_table(
            "AF204",
            &[
                ("ARG V=1\nRUNTIME r:${V}", &[]),
                ("ARG V\nRUNTIME r:${V}", &[]),
                ("ARG V=1\nRUNTIME r:v1", &[2]),
                ("RUNTIME r:${V}\nARG V=1", &[3]),
                ("ARG V=1\nCONTEXT S <<E\n${V}\nE", &[2]),
                ("ARG A=1\nARG B=${A}\nNAME n${B}", &[]),
            ],
        );
    }
}
