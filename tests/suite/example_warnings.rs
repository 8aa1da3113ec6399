//! Issue 18.14, the lint half: the flagship example's warnings are the ones the README and the
//! guide explain, no more and no fewer (`build_cli::building_the_example_warns_once_per_unpinned_reference`
//! covers the build half). A change to the example, a rule or the docs that breaks the
//! explanation fails here.

use crate::support::cli::{json, Env};
use std::path::Path;

#[test]
fn the_examples_lint_warnings_are_the_ones_the_docs_explain() {
    let env = Env::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (ok, out, err) = env.run(&[
        "lint",
        "--format",
        "json",
        root.join("examples/hello").to_str().expect("utf8"),
    ]);
    assert!(ok, "{out}\n{err}");
    let found = json(&out);
    let codes: Vec<(&str, &str)> = found
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default(),
                d["severity"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let warned = |c: &'static str| (c, "warning");
    assert_eq!(
        codes,
        [
            warned("AF201"),
            warned("AF201"),
            warned("AF230"),
            warned("AF232"),
            warned("AF232"),
            warned("AF233"),
        ],
        "{out}"
    );
    let read = |p: &str| std::fs::read_to_string(root.join(p)).expect("doc");
    let flat = |t: String| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let readme = flat(read("README.md"));
    assert!(
        readme.contains("reports six warnings, none of them a mistake: AF201 twice")
            && readme.contains("(AF230 for the directory ADD, AF232 twice for the `_` in `note_save` and `note_list`, AF233 for the MOUNT)"),
        "README.md no longer explains the example's warnings"
    );
    let guide = flat(read("docs/guide.md"));
    assert!(
        guide.contains("this prints six warnings, all expected: AF201 for the two `:latest` tags")
            && guide.contains("and AF230, AF232 (twice) and AF233"),
        "docs/guide.md no longer explains the example's warnings"
    );
}
