//! The one I/O error with a path that the store, archives and the run tree share.
//!
//! Takes: what was being done ("read", "create a temp dir in", …), the path, and the `io::Error`.
//! Returns: [`PathIoError`] ("cannot {action} {path}: {cause}"), which stage error enums wrap as
//! `Io(#[from] PathIoError)`, and [`io_err`], the `map_err` closure that builds it. Must never:
//! touch the file system.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}: {source}", path.display())]
pub struct PathIoError {
    pub action: &'static str,
    pub path: PathBuf,
    pub source: io::Error,
}

/// `map_err(io_err("read", path))?`: names the action and the path of a failed I/O call.
pub fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> PathIoError + 'a {
    move |source| PathIoError {
        action,
        path: path.to_owned(),
        source,
    }
}
