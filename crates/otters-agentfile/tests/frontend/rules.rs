//! One harness for every `testdata/check/*.agentfile` fixture: each is checked, and its
//! diagnostics (concise, then human without colour) are snapshotted under `snapshots/check/`.
//!
//! A fixture named `AF123_*` must produce AF123 and one named `AF123_ok_*` must not, so a
//! snapshot can never silently lose (or gain) the finding it is about. Every code the syntax,
//! ir and check stages emit has at least one positive fixture.

use otters_agentfile::check::{self, Options};
use otters_agentfile::diagnostic::render::{concise, human, ColorChoice};
use otters_agentfile::diagnostic::{codes, Code};
use std::collections::BTreeSet;

/// The fixture directory as the build context: AF230 asks it whether an ADD source is a
/// directory, as `otters lint` asks the Agentfile's directory.
#[derive(Debug)]
struct FixtureDir;

impl check::SourceKinds for FixtureDir {
    fn is_dir(&self, src: &str) -> bool {
        !src.contains("..") && crate::workspace("testdata/check").join(src).is_dir()
    }
}

fn fixtures() -> Vec<std::path::PathBuf> {
    let dir = crate::workspace("testdata/check");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("testdata/check exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "agentfile"))
        .collect();
    files.sort();
    files
}

#[test]
fn fixtures_produce_their_code_and_match_snapshots() {
    let mut positive: BTreeSet<Code> = BTreeSet::new();
    let mut failures = Vec::new();
    for path in fixtures() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let (written, rest) = stem
            .split_once('_')
            .expect("fixture name is CODE_description");
        let code: Code = written
            .parse()
            .unwrap_or_else(|_| panic!("{stem}: {written} is not a known code"));
        let bytes = std::fs::read(&path).unwrap();
        let name = format!("{stem}.agentfile");
        let opts = Options {
            sources: Some(std::sync::Arc::new(FixtureDir)),
            ..Options::default()
        };
        let (file, analysis) = check::analyze_bytes(&name, &bytes, &opts);
        let has = analysis.diagnostics.iter().any(|d| d.code == code);
        let expect_absent = rest.starts_with("ok_") || rest == "ok";
        if expect_absent == has {
            failures.push(format!(
                "{stem}: expected {code} to be {}; got {:?}",
                if expect_absent { "absent" } else { "reported" },
                analysis
                    .diagnostics
                    .iter()
                    .map(|d| d.code)
                    .collect::<Vec<_>>()
            ));
        }
        if !expect_absent {
            positive.insert(code);
        }
        let reports = vec![(file, analysis.diagnostics)];
        let rendered = format!(
            "{}---\n{}",
            concise(&reports),
            human(&reports, codes::RULES, ColorChoice::Never)
        );
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots/check"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(stem.clone(), rendered);
        });
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let missing: Vec<Code> = codes::RULES
        .iter()
        .map(|r| r.code)
        .filter(|c| c.as_str().as_bytes()[2] <= b'2' && !positive.contains(c))
        .collect();
    assert!(
        missing.is_empty(),
        "codes without a positive fixture in testdata/check: {missing:?}"
    );
}
