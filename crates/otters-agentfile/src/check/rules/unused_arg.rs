//! AF204 unused-arg: an ARG that no later instruction line references with `${NAME}`.
//!
//! Reads the AST, because the model only keeps ARGs with values and has already expanded every
//! reference. Heredoc bodies are never expanded, so a `${NAME}` there is not a use.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use crate::syntax::Args;
use std::collections::HashMap;

pub fn unused_arg(span: Span, name: &str) -> Diagnostic {
    Diagnostic::new(Code::UnusedArg, span, format!("ARG {name} is never used"))
        .with_label("no `${...}` below refers to it")
        .with_help(format!("refer to it as `${{{name}}}` on a later instruction line, or delete the ARG (heredoc bodies are never expanded)"))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let instructions: Vec<_> = cx.ast.instructions().collect();
    let line = |ins: &crate::syntax::Instruction| {
        cx.file.text.get(ins.span.start..ins.span.end).unwrap_or("")
    };
    // One pass over the file: the last instruction whose line holds each `${NAME}`. Scanning
    // every later line per ARG instead made many ARGs quadratic.
    let mut last_use: HashMap<&str, usize> = HashMap::new();
    for (i, ins) in instructions.iter().enumerate() {
        for name in references(line(ins)) {
            last_use.insert(name, i);
        }
    }
    for (i, ins) in instructions.iter().enumerate() {
        let Args::Arg { key, .. } = &ins.args else {
            continue;
        };
        let used = if key.text.contains('}') {
            // `references` stops a name at the first `}`; such a key (never valid) is looked up
            // the slow way.
            let needle = format!("${{{}}}", key.text);
            instructions[i + 1..]
                .iter()
                .any(|later| line(later).contains(&needle))
        } else {
            last_use.get(key.text.as_str()).is_some_and(|&j| j > i)
        };
        if !used {
            out.push(unused_arg(key.span, &key.text));
        }
    }
}

/// Every `NAME` such that `${NAME}` occurs in `text` (NAME without `}`), overlapping
/// occurrences included, in linear time.
fn references(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut next_close: Option<usize> = None;
    for (open, _) in text.match_indices("${") {
        let start = open + 2;
        if next_close.is_none_or(|c| c < start) {
            next_close = text[start..].find('}').map(|c| start + c);
        }
        match next_close {
            Some(close) => names.push(&text[start..close]),
            None => break,
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::UnusedArg,
            &[
                ("ARG V=1\nRUNTIME r:${V}", &[]),
                ("ARG V\nRUNTIME r:${V}", &[]),
                ("ARG V=1\nRUNTIME r:v1", &[2]),
                ("RUNTIME r:${V}\nARG V=1", &[3]),
                ("ARG V=1\nCONTEXT S <<E\n${V}\nE", &[2]),
                ("ARG A=1\nARG B=${A}\nNAME n${B}", &[]),
                ("ARG A=1\nNAME ${A}\nARG A=2", &[4]),
                ("ARG A=1\nARG B=2\nNAME ${x${A}${B", &[3]),
            ],
        );
    }

    #[test]
    fn references_include_overlapping_ones() {
        assert_eq!(super::references("a${b}${c${d}e}${"), ["b", "c${d", "d"]);
        assert!(super::references("${x").is_empty());
    }
}
