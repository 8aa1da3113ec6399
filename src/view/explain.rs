//! `otters explain`: the table of every diagnostic code (`--list`, text or JSON) and what an
//! unknown code gets told.
//!
//! Takes: the rule catalogue (`otters_agentfile::diagnostic::codes`). Returns: text. Must never:
//! print.
use super::line;
use otters_agentfile::diagnostic::codes::{self, RULES};

/// One line per code: code, severity, name (aligned) and summary.
pub fn list_text() -> String {
    let width = RULES.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for r in RULES {
        let severity = r.severity.as_str();
        line!(
            s,
            "{}  {severity:<7}  {:<width$}  {}",
            r.code,
            r.name,
            r.summary
        );
    }
    s
}

/// Every code as a JSON array of `{code, name, severity, summary}`, pretty, with a newline.
pub fn list_json() -> String {
    let rows: Vec<serde_json::Value> = RULES
        .iter()
        .map(|r| {
            serde_json::json!({
                "code": r.code,
                "name": r.name,
                "severity": r.severity.as_str(),
                "summary": r.summary,
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&rows).unwrap_or_default();
    s.push('\n');
    s
}

/// The error and help for a code or name no rule has, with the nearest ones (the query is shown
/// escaped: it is whatever was typed or pasted).
pub fn unknown(query: &str) -> String {
    let mut s = format!(
        "error: unknown code `{}`\n",
        otters_core::escape::escape(query)
    );
    let near = codes::suggestions(query);
    if near.is_empty() {
        s.push_str("help: run `otters explain --list` to see every code\n");
    } else {
        s.push_str("help: did you mean one of these?\n");
        for r in near {
            line!(s, "  {}  {}", r.code, r.name);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_has_every_code_and_an_unknown_one_gets_help() {
        let text = list_text();
        assert_eq!(text.lines().count(), RULES.len());
        assert!(text.starts_with(&RULES[0].code.to_string()), "{text}");
        let json: serde_json::Value = serde_json::from_str(&list_json()).unwrap();
        assert_eq!(json.as_array().map(Vec::len), Some(RULES.len()));
        assert_eq!(json[0]["severity"], RULES[0].severity.as_str());
        insta::assert_snapshot!(unknown("ZZ999"), @r"
        error: unknown code `ZZ999`
        help: run `otters explain --list` to see every code
        ");
        let hostile = unknown("\u{1b}]0;x\u{7}");
        assert!(!hostile.contains(['\u{1b}', '\u{7}']), "{hostile:?}");
        let near = unknown(&RULES[0].name[..RULES[0].name.len() - 1]);
        assert!(near.contains("did you mean"), "{near}");
    }
}
