//! The front end's fixture and property tests: the `syntax`, `ir` and `check` stages driven through
//! `otters_agentfile`'s API alone, with no binary, registry or network. One test binary (it links
//! once); run it with `cargo test -p otters-agentfile`, or one area with
//! `cargo test -p otters-agentfile --test frontend rules::`.
//!
//! The fixtures (`testdata/`) and snapshots (`snapshots/`) stay at the workspace root, beside
//! those of `fmt`'s unit tests: the binary's own tests (`lint`'s snapshots name
//! `testdata/check/…` paths) and the editor test (`editors/test.sh`) read the same files.

mod robustness;
mod rules;
mod syntax_fixtures;

use std::path::{Path, PathBuf};

/// A path under the workspace root (this crate lives in `crates/otters-agentfile`).
fn workspace(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}
