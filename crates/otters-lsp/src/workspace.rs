//! Workspace diagnostics (`workspace/diagnostic`): the findings of the Agentfiles under the
//! workspace root that are not open, as `otters lint --recursive` would report them.
//!
//! Bounded, so that a home directory opened as a workspace costs little: at most
//! [`MAX_FILES`] Agentfiles, [`MAX_ENTRIES`] directory entries looked at, and [`BUDGET`] of
//! time; files over `otters lint`'s limit are skipped; hidden directories, `target` and
//! `node_modules` are not entered, and no symlink is followed. What the bounds leave out is not
//! reported. A file whose text (and the settings) did not change since the client's result id is
//! answered `unchanged` without being checked again.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The most Agentfiles reported.
pub const MAX_FILES: usize = 200;
/// The most directory entries looked at.
pub const MAX_ENTRIES: usize = 20_000;
/// The most time spent finding and checking.
pub const BUDGET: Duration = Duration::from_secs(2);

/// Whether a file name is an Agentfile's (`Agentfile`, `*.agentfile`).
pub fn is_agentfile(name: &str) -> bool {
    name == "Agentfile"
        || name
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && ext == "agentfile")
}

/// The Agentfiles under `root`, sorted, within the bounds (and `deadline`).
pub fn agentfiles(root: &Path, deadline: Instant) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut entries = 0usize;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES || found.len() >= MAX_FILES || Instant::now() > deadline {
                found.sort();
                return found;
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            // `file_type` does not follow symlinks: a link is neither entered nor read.
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "node_modules" {
                    dirs.push(e.path());
                }
            } else if kind.is_file() && is_agentfile(&name) {
                found.push(e.path());
            }
        }
    }
    found.sort();
    found
}

/// The result id of a file's text checked under settings generation `generation`.
pub fn result_id(generation: u64, text: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    format!("{generation}-{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agentfile_names() {
        assert!(is_agentfile("Agentfile") && is_agentfile("web.agentfile"));
        assert!(!is_agentfile(".agentfile") && !is_agentfile("Agentfile.lock"));
    }

    #[test]
    fn the_walk_is_bounded_and_skips_what_lint_skips() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        for sub in ["a", ".hidden", "target", "node_modules"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
            std::fs::write(dir.join(sub).join("Agentfile"), "FROM scratch\n").unwrap();
        }
        std::fs::write(dir.join("x.agentfile"), "").unwrap();
        std::os::unix::fs::symlink(dir.join("a"), dir.join("link")).unwrap();
        let later = Instant::now() + Duration::from_secs(60);
        assert_eq!(
            agentfiles(&dir, later),
            [dir.join("a/Agentfile"), dir.join("x.agentfile")]
        );
        // Past the deadline, nothing more is looked at.
        assert!(agentfiles(
            &dir,
            Instant::now().checked_sub(Duration::from_secs(1)).unwrap()
        )
        .is_empty());
    }
}
