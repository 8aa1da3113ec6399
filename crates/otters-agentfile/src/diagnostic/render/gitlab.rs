//! GitLab Code Quality: the subset of the Code Climate issue format GitLab reads, a JSON array of
//! `{description, check_name, fingerprint, severity, location: {path, lines: {begin}}}`.
//!
//! `location.path` is the file's name as given on the command line (GitLab resolves it from the
//! repository root, so a relative path stays relative). The fingerprint is what GitLab uses to
//! tell a new finding from one it has seen: it is the SHA-256 of the path, the code and the text
//! the finding points at, plus the finding's ordinal among identical ones in the file. No line
//! number goes in, so inserting lines above a finding keeps its fingerprint; the ordinal keeps it
//! unique.

use super::{position, FileReport};
use crate::diagnostic::{Diagnostic, Severity, SourceFile};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;

#[derive(Serialize)]
struct Issue<'a> {
    description: &'a str,
    check_name: &'a str,
    fingerprint: String,
    severity: &'static str,
    location: Location<'a>,
}

#[derive(Serialize)]
struct Location<'a> {
    path: &'a str,
    lines: Lines,
}

#[derive(Serialize)]
struct Lines {
    begin: usize,
}

/// The Code Quality severity of a finding: an error (the build rejects the file) is `major`, a
/// warning `minor`, info `info`.
pub fn gitlab_severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "major",
        Severity::Warning => "minor",
        Severity::Info => "info",
    }
}

/// The text a finding's span covers (empty for a point or a finding without a span).
fn pointed_text<'a>(file: &'a SourceFile, d: &Diagnostic) -> &'a str {
    let span = d.span_or_start();
    file.text
        .get(span.start..span.end.max(span.start))
        .unwrap_or("")
}

/// Length-prefixed fields, so no two different tuples hash the same bytes.
fn fingerprint(path: &str, code: &str, text: &str, ordinal: usize) -> String {
    let mut h = Sha256::new();
    for field in [path.as_bytes(), code.as_bytes(), text.as_bytes()] {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field);
    }
    h.update((ordinal as u64).to_be_bytes());
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Renders every finding of every file as one Code Quality report (pretty-printed JSON array,
/// final newline); no findings is `[]`, which clears GitLab's widget.
pub fn gitlab(reports: &[FileReport]) -> String {
    let mut issues = Vec::new();
    for (file, diags) in reports {
        let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
        for d in diags {
            let text = pointed_text(file, d);
            let ordinal = seen.entry((d.code.as_str(), text)).or_insert(0);
            let fp = fingerprint(&file.name, d.code.as_str(), text, *ordinal);
            *ordinal += 1;
            issues.push(Issue {
                description: &d.message,
                check_name: d.code.as_str(),
                fingerprint: fp,
                severity: gitlab_severity(d.severity),
                location: Location {
                    path: &file.name,
                    lines: Lines {
                        begin: position(file, d).line,
                    },
                },
            });
        }
    }
    // Serialising plain structs of strings and integers cannot fail.
    let mut s = serde_json::to_string_pretty(&issues).unwrap_or_else(|_| "[]".to_owned());
    s.push('\n');
    otters_core::escape::json_controls(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Code, Span};
    use serde_json::Value;

    fn issues(text: &str, diags: Vec<Diagnostic>) -> Vec<Value> {
        let f = SourceFile::new("dir/Agentfile", text);
        let v: Value = serde_json::from_str(&gitlab(&[(f, diags)])).unwrap();
        v.as_array().unwrap().clone()
    }

    #[test]
    fn fingerprint_survives_lines_inserted_above_and_is_unique() {
        let text = "FROM scratch\nNAME a b\n";
        let at =
            |offset: usize| Diagnostic::new(Code::UnusedArg, Span::new(offset, offset + 3), "m");
        let before = issues(text, vec![at(18)]);
        let shifted = format!("# one\n# two\n{text}");
        let after = issues(&shifted, vec![at(18 + 12)]);
        assert_eq!(before[0]["location"]["lines"]["begin"], 2);
        assert_eq!(after[0]["location"]["lines"]["begin"], 4);
        assert_eq!(before[0]["fingerprint"], after[0]["fingerprint"]);
        // The same code on the same text twice: two fingerprints.
        let twice = issues("NAME a\nNAME a\n", vec![at(0), at(7)]);
        assert_ne!(twice[0]["fingerprint"], twice[1]["fingerprint"]);
        // Another path: another fingerprint.
        let f = SourceFile::new("other/Agentfile", text);
        let v: Value = serde_json::from_str(&gitlab(&[(f, vec![at(18)])])).unwrap();
        assert_ne!(v[0]["fingerprint"], before[0]["fingerprint"]);
    }

    #[test]
    fn fields_and_severities() {
        let d = Diagnostic::new(Code::UnusedArg, Span::new(0, 4), "msg");
        let v = issues("FROM scratch\n", vec![d]);
        let keys: Vec<&str> = v[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "description",
                "check_name",
                "fingerprint",
                "severity",
                "location"
            ]
        );
        assert_eq!(v[0]["location"]["path"], "dir/Agentfile");
        assert_eq!(v[0]["fingerprint"].as_str().unwrap().len(), 64);
        assert_eq!(gitlab_severity(Severity::Error), "major");
        assert_eq!(gitlab(&[]), "[]\n");
    }
}
