//! `--source-date-epoch git`: the committer time of the last commit of the git work tree that
//! holds the build context, as `git log -1 --format=%ct` prints it.
//!
//! Takes: the context directory. Returns: seconds since 1970, or a [`GitEpochError`] that says
//! what to do. Must never: run a shell, read unbounded output, let the caller's `GIT_DIR` or
//! `GIT_WORK_TREE` choose another repository, or print.
//!
//! Uncommitted changes do not matter: the time is the last commit's (what `$(git log -1
//! --format=%ct)` gives, as buildx and reproducible-builds.org recipes use it), so a dirty tree
//! builds with the same timestamps as its commit.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What git prints at most that is read (a timestamp is a dozen bytes; the rest is drained).
const MAX_OUT: u64 = 256;
/// What of git's error output is read into the message.
const MAX_ERR: u64 = 4096;

/// Why the last commit's time could not be had.
#[derive(Debug, thiserror::Error)]
pub enum GitEpochError {
    #[error("the image time `git` runs `git`, which is not installed or not on PATH; install git, or give the time in seconds")]
    NoGit,
    #[error("the image time `git`: cannot run `git`: {0}")]
    Spawn(std::io::Error),
    #[error("the image time `git`: {} is not in a git work tree with a commit (`git -C {} log -1 --format=%ct` says: {why}); build from a clone, or give the time in seconds", dir.display(), dir.display())]
    NotARepository { dir: PathBuf, why: String },
    #[error("the image time `git`: `git -C {} log -1 --format=%ct` printed `{out}`, not a time in seconds; give the time in seconds", dir.display())]
    BadOutput { dir: PathBuf, out: String },
}

/// The committer time of `HEAD` of the work tree holding `dir`.
pub fn last_commit_time(dir: &Path) -> Result<u64, GitEpochError> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        // A user's `log.showSignature` would print gpg's output before the time; a repository's
        // `core.fsmonitor` names a program to run, which a build has no use for.
        .args([
            "-c",
            "log.showSignature=false",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(["log", "-1", "--format=%ct"])
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GitEpochError::NoGit,
            _ => GitEpochError::Spawn(e),
        })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(GitEpochError::Spawn(std::io::Error::other("no pipes")));
    };
    // Both pipes are drained (what is past the caps is thrown away), so git never blocks on a
    // full pipe and memory stays bounded.
    let err_reader = std::thread::spawn(move || bounded(stderr, MAX_ERR));
    let out = bounded(stdout, MAX_OUT);
    let err = err_reader.join().unwrap_or_default();
    let status = child.wait().map_err(GitEpochError::Spawn)?;
    let text =
        |b: &[u8]| otters_core::escape::escape(String::from_utf8_lossy(b).trim()).into_owned();
    if !status.success() {
        let why = text(&err);
        let why = why.lines().next().unwrap_or("no error message").to_owned();
        return Err(GitEpochError::NotARepository {
            dir: dir.to_owned(),
            why,
        });
    }
    let printed = text(&out);
    super::super::lower::epoch::parse(Some(&printed))
        .ok()
        .flatten()
        .ok_or(GitEpochError::BadOutput {
            dir: dir.to_owned(),
            out: printed,
        })
}

/// Up to `cap` bytes of `r`, the rest read and dropped.
fn bounded(r: impl Read, cap: u64) -> Vec<u8> {
    let mut r = r;
    let mut kept = Vec::new();
    let _ = (&mut r).take(cap).read_to_end(&mut kept);
    let _ = std::io::copy(&mut r, &mut std::io::sink());
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_keeps_the_cap_and_drains_the_rest() {
        let data = vec![b'7'; 10_000];
        let mut cursor = std::io::Cursor::new(data);
        let kept = bounded(&mut cursor, 16);
        assert_eq!(kept.len(), 16);
        assert_eq!(cursor.position(), 10_000);
    }
}
