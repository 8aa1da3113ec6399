//! Where the suite's own third-party harness lives: `tests/harness/supply/` of this checkout (the
//! independent Sigstore verifiers, the SBOM validators, the bundle fixtures of another signer, the
//! mock Fulcio, Rekor, CT log and timestamp authority) and the packages its `install.sh` put
//! outside the checkout (`$OTTERS_HARNESS`, default `/tmp/otters-harness`; `.ci/install` runs it).
//! And the shared conformance corpus, the one input of the suite from outside the checkout: present
//! under CI, skipped (saying so) elsewhere.
//!
//! Must never: reach outside the checkout for code, or let a test pass silently without its input.

use std::path::PathBuf;

/// `tests/harness/supply`: the scripts (`verify_bundle.mjs`, `validate_sbom.py`,
/// `make_fixtures.py`, `keyless/serve.mjs`, `keyless/token.mjs`, `keyless/verify_keyless.mjs`).
pub fn supply() -> PathBuf {
    super::repo().join("tests/harness/supply")
}

/// Where `install.sh` put the packages (its `OTTERS_HARNESS`).
pub fn installed() -> PathBuf {
    std::env::var_os("OTTERS_HARNESS")
        .map_or_else(|| PathBuf::from("/tmp/otters-harness"), PathBuf::from)
}

/// True when the harness's npm packages are installed (what `keyless/serve.mjs` needs).
pub fn npm_ready() -> bool {
    installed()
        .join("npm/node_modules/@sigstore/mock/package.json")
        .is_file()
}

/// How to install the harness, for skip and failure messages.
pub const INSTALL: &str = "bash tests/harness/supply/install.sh (.ci/install runs it)";

/// The shared conformance corpus (`../shared/conformance` beside the checkout, or
/// `OTTERS_CONFORMANCE`), or `None` after [`super::tools::skip`] says `test` skipped: CI always has
/// it (a skip fails there), a plain clone does not.
pub fn conformance(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("OTTERS_CONFORMANCE").map_or_else(
        || super::repo().join("../shared/conformance"),
        PathBuf::from,
    );
    if dir.is_dir() {
        return Some(dir);
    }
    super::tools::skip(
        test,
        &format!(
            "the conformance corpus {} is absent (CI checks it out beside the repository; or set OTTERS_CONFORMANCE)",
            dir.display()
        ),
    );
    None
}
