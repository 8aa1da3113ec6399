//! Why a policy could not be read: every variant names the file, and the line when there is one.
//!
//! Takes: nothing. Returns: [`PolicyError`]. Must never: name a command-line flag (the front end
//! adds those).
use crate::model::Origin;
use otters_core::files::ReadError;
use std::path::PathBuf;

/// Why a policy could not be read; every variant names the file (and the line, when there is one).
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{}: not UTF-8; a policy is a TOML file", .0.display())]
    NotUtf8(PathBuf),
    #[error("invalid policy {origin}: {message}")]
    At { origin: Origin, message: String },
    #[error("{}: no [policy] table; a policy file says what it allows under [policy] (see docs/policy.md)", .0.display())]
    NoTable(PathBuf),
}
