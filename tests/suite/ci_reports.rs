//! `otters lint`'s CI report formats through the real binary, each read back by a second,
//! independent reader: GitLab Code Quality (structurally: GitLab publishes no JSON schema on `PyPI`
//! or npm, so the test checks the fields GitLab reads), `JUnit` XML (`PyPI` junitparser), checkstyle
//! XML (Python's XML parser; checkstyle publishes no schema package), and SARIF on a clean file
//! (check-jsonschema against the SARIF 2.1.0 schema; with Python's regex dialect, as one pattern in
//! that schema, `^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`, is not valid ECMAScript).

use crate::support::ci_tools::{sarif_schema, venv_bin};
use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

const MIXED: &str = include_str!("../../testdata/check/AF216_mixed_severities.agentfile");
const CLEAN: &str = "FROM scratch\nRUNTIME ghcr.io/openotters/runtime:v1.2.0\nMODEL anthropic/claude-haiku-4-5\nNAME clean\nCONTEXT SOUL <<EOF\nYou help.\nEOF\n";
/// Markup and a terminal escape in what findings quote.
const HOSTILE: &str = "FROM scratch\nNAME x <&>\"c\u{1b}[2J\nRUNTIME r:latest\n";

/// `otters lint ARGS` run in `dir`: (exit code, stdout).
fn lint_in(dir: &Path, args: &[&str]) -> (i32, String) {
    let o = Command::cargo_bin("otters")
        .unwrap()
        .current_dir(dir)
        .env("OTTERS_HOME", dir.join(".home"))
        .arg("lint")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
    )
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

/// Runs `python -c SCRIPT ARGS…` of the CI venv; (exit code, stdout + stderr).
fn python(test: &str, script: &str, args: &[&Path]) -> Option<(i32, String)> {
    let py = venv_bin(test, "python")?;
    let o = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    Some((
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    ))
}

#[test]
fn gitlab_code_quality_fields_and_stable_unique_fingerprints() {
    let dir = project(&[("agents/a/Agentfile", MIXED), ("agents/b/Agentfile", MIXED)]);
    let (code, out) = lint_in(dir.path(), &["--format", "gitlab", "-r", "agents"]);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let issues = v.as_array().unwrap();
    assert_eq!(issues.len(), 8, "{out}");
    // What GitLab's Code Quality parser reads (its documented required subset).
    let mut fingerprints = std::collections::BTreeSet::new();
    for i in issues {
        let keys: Vec<&str> = i.as_object().unwrap().keys().map(String::as_str).collect();
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
        assert!(i["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert!(i["check_name"].as_str().unwrap().starts_with("AF"));
        assert!(["info", "minor", "major", "critical", "blocker"]
            .contains(&i["severity"].as_str().unwrap()));
        let path = i["location"]["path"].as_str().unwrap();
        assert!(
            path == "agents/a/Agentfile" || path == "agents/b/Agentfile",
            "relative as given: {path}"
        );
        assert!(i["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
        assert!(
            fingerprints.insert(i["fingerprint"].as_str().unwrap().to_owned()),
            "unique: {i}"
        );
    }
    // Lines inserted above: every line moves, no fingerprint changes.
    std::fs::write(
        dir.path().join("agents/a/Agentfile"),
        format!("# a\n# b\n\n{MIXED}"),
    )
    .unwrap();
    let (_, moved) = lint_in(dir.path(), &["--format", "gitlab", "agents/a/Agentfile"]);
    let moved: Value = serde_json::from_str(&moved).unwrap();
    let before: Vec<&Value> = issues
        .iter()
        .filter(|i| i["location"]["path"] == "agents/a/Agentfile")
        .collect();
    let moved = moved.as_array().unwrap();
    assert_eq!(moved.len(), before.len());
    for (b, m) in before.iter().zip(moved) {
        assert_eq!(
            m["location"]["lines"]["begin"].as_u64().unwrap(),
            b["location"]["lines"]["begin"].as_u64().unwrap() + 3
        );
        assert_eq!(m["fingerprint"], b["fingerprint"]);
    }
    // A clean file: an empty report.
    let clean = project(&[("Agentfile", CLEAN)]);
    assert_eq!(
        lint_in(clean.path(), &["--format", "gitlab"]),
        (0, "[]\n".to_owned())
    );
}

const JUNIT_READER: &str = r#"
import sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
for suite in xml:
    for case in suite:
        kinds = [type(r).__name__ + ":" + (r.type or "") for r in case.result]
        print(suite.name, "|", case.classname, "|", case.name, "|", ",".join(kinds) or "passed", "|",
              "".join((r.text or "") for r in case.result if isinstance(r, Failure)).replace("\n", "\\n"))
"#;

/// Lints a bad, a clean and a hostile Agentfile in `format`, checks the exit code and that no raw
/// escape character is in the report, and hands the report to `reader` (a Python script of the
/// CI venv): what the reader printed, or `None` after a skip.
fn read_back(test: &str, format: &str, reader: &str) -> Option<String> {
    let dir = project(&[
        ("bad/Agentfile", MIXED),
        ("ok/Agentfile", CLEAN),
        ("evil/Agentfile", HOSTILE),
    ]);
    let (code, out) = lint_in(dir.path(), &["--format", format, "bad", "ok", "evil"]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains('\u{1b}'), "a raw escape character: {out}");
    let report = dir.path().join("report.xml");
    std::fs::write(&report, &out).unwrap();
    let (rc, read) = python(test, reader, &[&report])?;
    assert_eq!(
        rc, 0,
        "the reader refused the {format} report:\n{read}\n{out}"
    );
    Some(read)
}

#[test]
fn junit_reads_back_a_failure_per_finding_and_a_passing_clean_file() {
    let test = "junit_reads_back_a_failure_per_finding_and_a_passing_clean_file";
    let Some(read) = read_back(test, "junit", JUNIT_READER) else {
        return;
    };
    let lines: Vec<&str> = read.lines().collect();
    let bad: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("bad/Agentfile |"))
        .collect();
    assert_eq!(bad.len(), 4, "{read}");
    assert!(bad.iter().all(|l| l.contains("| Failure:")), "{read}");
    assert!(
        bad.iter()
            .any(|l| l.contains("| AF106 config-key-not-dns1123 | Failure:error |")),
        "{read}"
    );
    assert!(
        lines.contains(&"ok/Agentfile | ok/Agentfile | ok/Agentfile | passed | "),
        "{read}"
    );
    // Markup and the escape character survive as text, never as raw control bytes.
    assert!(read.contains("unexpected `<&>\"c\\u{1b}[2J`"), "{read}");
}

const CHECKSTYLE_READER: &str = r#"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "checkstyle", root.tag
for f in root:
    assert f.tag == "file" and set(f.attrib) == {"name"}, f.attrib
    print("file", f.get("name"), len(f))
    for e in f:
        assert e.tag == "error", e.tag
        assert set(e.attrib) == {"line", "column", "severity", "message", "source"}, e.attrib
        assert int(e.get("line")) >= 1 and int(e.get("column")) >= 1
        assert e.get("severity") in ("error", "warning", "info"), e.get("severity")
        print("error", e.get("line"), e.get("column"), e.get("severity"), e.get("source"), repr(e.get("message")))
"#;

#[test]
fn checkstyle_reads_back_with_positions_severities_and_every_file() {
    let test = "checkstyle_reads_back_with_positions_severities_and_every_file";
    let Some(read) = read_back(test, "checkstyle", CHECKSTYLE_READER) else {
        return;
    };
    assert!(read.contains("file bad/Agentfile 4\n"), "{read}");
    assert!(read.contains("file ok/Agentfile 0\n"), "{read}");
    assert!(read.contains("error 5 8 error otters.AF106 "), "{read}");
    assert!(read.contains("unexpected `<&>\"c\\\\u{1b}[2J`"), "{read}");
}

#[test]
fn sarif_validates_against_the_schema_with_one_run_and_empty_results_when_clean() {
    let test = "sarif_validates_against_the_schema_with_one_run_and_empty_results_when_clean";
    let dir = project(&[("ok/Agentfile", CLEAN), ("bad/Agentfile", MIXED)]);
    let (code, clean) = lint_in(dir.path(), &["--format", "sarif", "ok"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&clean).unwrap();
    assert_eq!(
        v["runs"].as_array().unwrap().len(),
        1,
        "GitHub takes one run per tool and category"
    );
    assert_eq!(
        v["runs"][0]["results"],
        serde_json::json!([]),
        "an empty results array clears old alerts"
    );
    let (_, bad) = lint_in(dir.path(), &["--format", "sarif", "bad", "ok"]);
    let Some(schema) = sarif_schema(test) else {
        return;
    };
    let Some(check) = venv_bin(test, "check-jsonschema") else {
        return;
    };
    for (name, doc) in [("clean.sarif", &clean), ("bad.sarif", &bad)] {
        let file = dir.path().join(name);
        std::fs::write(&file, doc).unwrap();
        let o = std::process::Command::new(&check)
            .args(["--regex-variant", "python", "--schemafile"])
            .arg(&schema)
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{name} is not valid SARIF 2.1.0:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // The schema check can fail: a log without `version` is refused.
    let broken = dir.path().join("broken.sarif");
    std::fs::write(&broken, clean.replace("\"version\": \"2.1.0\",", "")).unwrap();
    let o = std::process::Command::new(&check)
        .args(["--regex-variant", "python", "--schemafile"])
        .arg(&schema)
        .arg(&broken)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        !o.status.success() && said.contains("'version' is a required property"),
        "the schema must refuse a log without version: {said}"
    );
}
