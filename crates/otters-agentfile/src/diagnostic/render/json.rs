//! A JSON array of flat finding objects with exactly the fields
//! `{code, severity, message, file, line, column, end_line, end_column, help}`.

use super::{position, FileReport};
use serde::Serialize;

/// One finding of `otters lint --format json`; also the source of the items of its JSON Schema
/// (`otters schema lint`).
#[derive(Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Finding<'a> {
    /// The diagnostic code (`AF201`); `otters explain CODE` describes it.
    #[schemars(regex(pattern = r"^AF[0-9]{3}$"))]
    code: &'a str,
    /// Its severity after `otters.toml` overrides.
    #[schemars(extend("enum" = ["error", "warning", "info"]))]
    severity: &'a str,
    /// What is wrong, in one sentence.
    message: &'a str,
    /// The file, as named on the command line (`-` for standard input).
    file: &'a str,
    /// The 1-based line where the finding starts.
    line: usize,
    /// The 1-based column where it starts.
    column: usize,
    /// The 1-based line where it ends.
    end_line: usize,
    /// The 1-based column just past its end.
    end_column: usize,
    /// How to fix it, when there is a known way.
    help: Option<&'a str>,
}

/// Renders all findings of all files as one pretty-printed JSON array (with a final newline).
pub fn json(reports: &[FileReport]) -> String {
    let findings: Vec<Finding<'_>> = reports
        .iter()
        .flat_map(|(file, diags)| {
            diags.iter().map(move |d| {
                let p = position(file, d);
                Finding {
                    code: d.code.as_str(),
                    severity: d.severity.as_str(),
                    message: &d.message,
                    file: &file.name,
                    line: p.line,
                    column: p.column,
                    end_line: p.end_line,
                    end_column: p.end_column,
                    help: d.help.as_deref(),
                }
            })
        })
        .collect();
    // Serialising plain structs of strings and integers cannot fail.
    let mut s = serde_json::to_string_pretty(&findings).unwrap_or_else(|_| "[]".to_owned());
    s.push('\n');
    otters_core::escape::json_controls(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Code, Diagnostic, SourceFile, Span};

    #[test]
    fn exact_fields_and_null_help() {
        let f = SourceFile::new("Agentfile", "FROM scratch\nNAME a b\n");
        let d = Diagnostic::new(Code::UnusedArg, Span::new(18, 21), "m");
        let v: serde_json::Value = serde_json::from_str(&json(&[(f, vec![d])])).unwrap();
        let o = v[0].as_object().unwrap();
        let keys: Vec<&str> = o.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "code",
                "severity",
                "message",
                "file",
                "line",
                "column",
                "end_line",
                "end_column",
                "help"
            ]
        );
        assert_eq!(o["help"], serde_json::Value::Null);
        assert_eq!(
            (
                o["line"].as_u64(),
                o["column"].as_u64(),
                o["end_column"].as_u64()
            ),
            (Some(2), Some(6), Some(9))
        );
    }

    #[test]
    fn empty_is_an_empty_array() {
        assert_eq!(json(&[]), "[]\n");
    }
}
