//! The Agentfile conformance suite (`conformance/`, issue 38) through its own runner, as another
//! implementation would run it: the `otters` binary passes every case, an implementation that
//! reports no diagnostics and builds nothing (a stub printing `[]`) fails them, and the suite
//! holds at least 100 cases, one or more for every code `check` can report.

use crate::support::repo;
use crate::support::tools::{skip, works};
use std::process::Command;

/// `conformance/run IMPL`: its exit status and its report.
fn run_suite(test: &str, imp: &std::path::Path) -> Option<(bool, String)> {
    if !works("python3", &["--version"]) {
        skip(test, "python3 is not installed");
        return None;
    }
    let out = Command::new("python3")
        .arg(repo().join("conformance/run"))
        .arg(imp)
        .output()
        .expect("run conformance/run");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    Some((out.status.success(), report))
}

/// `(passed, total)` from the runner's last line, `P of T cases passed, F failed`.
fn totals(report: &str) -> (usize, usize) {
    let last = report.lines().last().unwrap_or_default();
    let words: Vec<&str> = last.split_whitespace().collect();
    match words.as_slice() {
        [p, "of", t, "cases", "passed,", ..] => (p.parse().unwrap(), t.parse().unwrap()),
        _ => panic!("no total in the report:\n{report}"),
    }
}

#[test]
fn otters_passes_every_conformance_case() {
    let test = "otters_passes_every_conformance_case";
    let otters = assert_cmd::cargo::cargo_bin("otters");
    let Some((ok, report)) = run_suite(test, &otters) else {
        return;
    };
    let (passed, total) = totals(&report);
    assert!(ok && passed == total, "{report}");
    assert!(total >= 100, "only {total} cases:\n{report}");
    assert_eq!(
        report.lines().filter(|l| l.starts_with("PASS ")).count(),
        total,
        "{report}"
    );
}

#[test]
fn an_implementation_that_reports_nothing_fails_the_suite() {
    let test = "an_implementation_that_reports_nothing_fails_the_suite";
    let dir = tempfile::tempdir().unwrap();
    let stub = dir.path().join("stub");
    std::fs::write(&stub, "#!/bin/sh\necho '[]'\n").unwrap();
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let Some((ok, report)) = run_suite(test, &stub) else {
        return;
    };
    let (passed, total) = totals(&report);
    assert!(!ok, "{report}");
    assert_eq!(passed, 0, "the stub passed cases:\n{report}");
    assert!(total >= 100, "{report}");
}

#[test]
fn every_code_check_reports_has_a_case() {
    let cases = std::fs::read_dir(repo().join("conformance/cases")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for case in cases {
        let expected = case.unwrap().path().join("expected.json");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&expected).unwrap()).unwrap();
        for d in v["diagnostics"].as_array().unwrap() {
            seen.insert(d[0].as_str().unwrap().to_owned());
        }
    }
    // The codes of the language itself (syntax, validation, lints); AF3xx and AF4xx come from a
    // build's inputs and resolution, which lint does not do: their cases expect the build to fail.
    let missing: Vec<&str> = otters_agentfile::diagnostic::codes::RULES
        .iter()
        .map(|r| r.code.as_str())
        .filter(|c| c.starts_with("AF0") || c.starts_with("AF1") || c.starts_with("AF2"))
        .filter(|c| !seen.contains(*c))
        .collect();
    assert!(
        missing.is_empty(),
        "no conformance case reports {missing:?}"
    );
}
