//! Test-only: the shared conformance corpus beside the checkout (`../shared/conformance`, or
//! `OTTERS_CONFORMANCE`). CI always has it; a plain clone does not, and a test then says it skipped
//! (on the process's stderr, which the test runner does not capture) instead of passing silently.

use std::io::Write as _;
use std::path::PathBuf;

/// The corpus, or `None` after printing that `test` skipped (failing under CI, where it must be).
pub(crate) fn conformance(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("OTTERS_CONFORMANCE").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
        PathBuf::from,
    );
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: the conformance corpus {} is absent, and CI must run it",
        dir.display()
    );
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIP {test}: the conformance corpus {} is absent",
        dir.display()
    );
    None
}
