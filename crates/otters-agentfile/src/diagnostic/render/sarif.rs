//! SARIF 2.1.0, the format code-scanning services (GitHub, GitLab, Azure DevOps) ingest.
//!
//! One run; `tool.driver.rules` lists every code of the table so that `ruleIndex` is stable;
//! columns are counted in Unicode code points (`columnKind`).

use super::{position, FileReport, RuleMeta};
use crate::diagnostic::Severity;
use serde_json::{json, Value};
use std::fmt::Write as _;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The project's repository as Cargo.toml names it: the run's `informationUri`, and the base of
/// each rule's `helpUri` (`<repository>/blob/main/docs/rules/<CODE>.md`, the page `otters explain`
/// prints). Left out if Cargo.toml names none.
fn home() -> Option<&'static str> {
    Some(env!("CARGO_PKG_REPOSITORY")).filter(|r| !r.is_empty())
}

/// The SARIF `level` of a severity.
pub fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A relative URI reference for a file name: `\` becomes `/`, and anything outside the
/// unreserved set and `/` is percent-encoded.
fn file_uri(name: &str) -> String {
    let mut out = String::new();
    for b in name.replace('\\', "/").bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn rule_json(r: &RuleMeta) -> Value {
    let mut rule = json!({
        "id": r.code,
        "name": r.name,
        "shortDescription": { "text": r.summary },
        "fullDescription": { "text": r.what_it_does() },
        "help": { "text": format!("otters explain {} (docs/rules/{}.md)", r.code, r.code) },
        "defaultConfiguration": { "level": level(r.severity) },
    });
    if let Some(uri) = r.help_uri() {
        rule["helpUri"] = json!(uri);
    }
    rule
}

/// Renders all findings as one SARIF log (pretty-printed, final newline).
pub fn sarif(reports: &[FileReport], rules: &[RuleMeta]) -> String {
    let mut results = Vec::new();
    for (file, diags) in reports {
        for d in diags {
            let p = position(file, d);
            let mut result = json!({
                "ruleId": d.code,
                "level": level(d.severity),
                "message": { "text": d.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": file_uri(&file.name) },
                        "region": {
                            "startLine": p.line,
                            "startColumn": p.column,
                            "endLine": p.end_line,
                            "endColumn": p.end_column,
                        }
                    }
                }],
            });
            if let Some(i) = rules.iter().position(|r| r.code == d.code) {
                result["ruleIndex"] = json!(i);
            }
            if let Some(help) = &d.help {
                result["properties"] = json!({ "help": help });
            }
            results.push(result);
        }
    }
    let mut log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "otters",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules.iter().map(rule_json).collect::<Vec<_>>(),
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    if let Some(home) = home() {
        log["runs"][0]["tool"]["driver"]["informationUri"] = json!(home);
    }
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    otters_core::escape::json_controls(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(file_uri("a b/Agentfile"), "a%20b/Agentfile");
        assert_eq!(file_uri("<stdin>"), "%3Cstdin%3E");
        assert_eq!(file_uri("dir\\Agentfile"), "dir/Agentfile");
    }

    #[test]
    fn levels() {
        assert_eq!(level(Severity::Info), "note");
        assert_eq!(level(Severity::Error), "error");
    }
}
