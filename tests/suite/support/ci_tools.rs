//! The CI second readers `.ci/ci-tools.sh` installs under `$OTTERS_CI_TOOLS` (default
//! `/tmp/otters-ci-tools`): a venv with check-jsonschema, zizmor and junitparser, and the SARIF
//! 2.1.0 schema. Each accessor skips (fails under CI) when its tool is missing.

use std::path::PathBuf;

fn root() -> PathBuf {
    std::env::var_os("OTTERS_CI_TOOLS")
        .map_or_else(|| PathBuf::from("/tmp/otters-ci-tools"), PathBuf::from)
}

const INSTALL: &str = "run `bash .ci/ci-tools.sh` (or .ci/install)";

/// A program of the venv (`check-jsonschema`, `zizmor`, `python`), or `None` after a skip.
pub fn venv_bin(test: &str, name: &str) -> Option<PathBuf> {
    let p = root().join("venv/bin").join(name);
    if p.is_file() {
        Some(p)
    } else {
        super::tools::skip(test, &format!("{} is missing; {INSTALL}", p.display()));
        None
    }
}

/// The SARIF 2.1.0 JSON schema file, or `None` after a skip.
pub fn sarif_schema(test: &str) -> Option<PathBuf> {
    let p = root().join("sarif-2.1.0.json");
    if p.is_file() {
        Some(p)
    } else {
        super::tools::skip(test, &format!("{} is missing; {INSTALL}", p.display()));
        None
    }
}
