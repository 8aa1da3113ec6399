//! `--source-date-epoch git`: the committer time of the last commit of the git work tree that
//! holds the build context, as `git log -1 --format=%ct` prints it.
//!
//! Takes: the context directory. Returns: seconds since 1970, or a [`GitEpochError`] that says
//! what to do. Must never: run a shell, read unbounded output, let the caller's `GIT_DIR` or
//! `GIT_WORK_TREE` choose another repository, let the repository's own configuration choose a
//! program to run, or print.
//!
//! The context is hostile (a pull request builds it), and so is any repository git would find in
//! it: a committed directory shaped like a bare repository (`HEAD`, `config`, `objects/`, `refs/`)
//! is *the* repository to git's own discovery, and its `config` can declare a partial clone whose
//! missing `HEAD` commit git fetches through `core.sshCommand`. So otters finds the repository
//! itself (`find_repository`): the nearest directory at or above the context that holds `.git`
//! (a bare-repository-shaped directory is not one), where a `.git` *file* must name another
//! repository's `.git` or a directory inside it (a worktree's, a submodule's), never one a
//! checkout could have written; then it runs git on exactly that directory with every setting
//! that could start a program turned off (`HARDENING`, and no lazy fetch, no transport, no ssh
//! command).
//!
//! Uncommitted changes do not matter: the time is the last commit's (what `$(git log -1
//! --format=%ct)` gives, as buildx and reproducible-builds.org recipes use it), so a dirty tree
//! builds with the same timestamps as its commit.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

/// What git prints at most that is read (a timestamp is a dozen bytes; the rest is drained).
const MAX_OUT: u64 = 256;
/// What of git's error output is read into the message.
const MAX_ERR: u64 = 4096;
/// The most of a `.git` file that is read (`gitdir: PATH`).
const MAX_GITFILE: u64 = 4096;

/// Configuration given on git's command line, which wins over the repository's own `config`:
/// nothing the repository says may start a program. `log.showSignature` would run gpg (and print
/// its output before the time), `core.fsmonitor` names a program, a fetch would run
/// `core.sshCommand`, a credential helper or a hook; `safe.bareRepository` refuses a repository
/// that was not named explicitly (otters names it).
const HARDENING: &[&str] = &[
    "log.showSignature=false",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.sshCommand=false",
    "credential.helper=",
    "protocol.allow=never",
    "safe.bareRepository=explicit",
];

/// Why the last commit's time could not be had.
#[derive(Debug, thiserror::Error)]
pub enum GitEpochError {
    #[error("the image time `git` runs `git`, which is not installed or not on PATH; install git, or give the time in seconds")]
    NoGit,
    #[error("the image time `git`: cannot run `git`: {0}")]
    Spawn(std::io::Error),
    #[error("the image time `git`: {} is not in a git work tree ({why}); build from a clone, or give the time in seconds", dir.display())]
    NotARepository { dir: PathBuf, why: String },
    #[error("the image time `git`: {} names the git directory `{}`, which is neither a repository's `.git` directory nor inside one (as a worktree's or a submodule's is), so it could be part of the build context; build from a clone, or give the time in seconds", file.display(), target.display())]
    ForeignGitDir { file: PathBuf, target: PathBuf },
    #[error("the image time `git`: `git log -1 --format=%ct` in {} failed: {why}; build from a clone with its last commit present, or give the time in seconds", top.display())]
    Log { top: PathBuf, why: String },
    #[error("the image time `git`: `git log -1 --format=%ct` in {} printed `{out}`, not a time in seconds; give the time in seconds", top.display())]
    BadOutput { top: PathBuf, out: String },
}

/// The repository the context belongs to: the top of its work tree and its git directory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Repository {
    /// The work tree's top directory (holds `.git`; the context is at or below it).
    top: PathBuf,
    /// The git directory: `top/.git`, or the directory a `.git` file names.
    git_dir: PathBuf,
}

/// The committer time of `HEAD` of the work tree holding `dir`.
pub fn last_commit_time(dir: &Path) -> Result<u64, GitEpochError> {
    let repo = find_repository(dir)?;
    let mut child = Command::new("git")
        .current_dir(&repo.top)
        .arg("--no-pager")
        .args(HARDENING.iter().flat_map(|c| ["-c", c]))
        .args(["log", "-1", "--format=%ct"])
        // Exactly the repository found, never one the environment names.
        .env("GIT_DIR", &repo.git_dir)
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_COMMON_DIR")
        // No object is fetched (`GIT_NO_LAZY_FETCH`, git 2.44 and later; `--no-lazy-fetch` would
        // stop an older git from running at all), over no transport (`GIT_ALLOW_PROTOCOL` empty:
        // this wins over any `protocol.*.allow` of the repository, for every git), by no ssh.
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_ALLOW_PROTOCOL", "")
        .env("GIT_SSH_COMMAND", "false")
        .env("GIT_ASKPASS", "false")
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
        let why = why.lines().last().unwrap_or("no error message").to_owned();
        return Err(GitEpochError::Log { top: repo.top, why });
    }
    let printed = text(&out);
    super::super::lower::epoch::parse(Some(&printed))
        .ok()
        .flatten()
        .ok_or(GitEpochError::BadOutput {
            top: repo.top,
            out: printed,
        })
}

/// The repository whose work tree holds `context`, found as git finds it but trusting less: the
/// nearest directory at or above `context` that holds `.git`, not crossing a directory of
/// `GIT_CEILING_DIRECTORIES` or (unless `GIT_DISCOVERY_ACROSS_FILESYSTEM` is true) a file system
/// boundary. A directory shaped like a bare repository is not a work tree and is passed over; a
/// `.git` file is followed only to another repository's `.git` or a directory inside it.
fn find_repository(context: &Path) -> Result<Repository, GitEpochError> {
    let not_repo = |why: String| GitEpochError::NotARepository {
        dir: context.to_owned(),
        why,
    };
    let start = context
        .canonicalize()
        .map_err(|e| not_repo(format!("cannot resolve it: {e}")))?;
    let device = std::fs::metadata(&start)
        .map_err(|e| not_repo(format!("cannot read it: {e}")))?
        .dev();
    let ceilings = ceilings();
    let across = std::env::var("GIT_DISCOVERY_ACROSS_FILESYSTEM")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    for dir in start.ancestors() {
        if dir != start && ceilings.iter().any(|c| c == dir) {
            break;
        }
        let Ok(meta) = std::fs::metadata(dir) else {
            break;
        };
        if !across && meta.dev() != device {
            break;
        }
        let dotgit = dir.join(".git");
        match std::fs::metadata(&dotgit) {
            Ok(m) if m.is_dir() => {
                return Ok(Repository {
                    top: dir.to_owned(),
                    git_dir: dotgit,
                })
            }
            Ok(m) if m.is_file() => {
                return Ok(Repository {
                    top: dir.to_owned(),
                    git_dir: linked_git_dir(&dotgit)?,
                })
            }
            Ok(_) => {
                return Err(not_repo(format!(
                    "{} is not a file or a directory",
                    dotgit.display()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(not_repo(format!("cannot read {}: {e}", dotgit.display()))),
        }
    }
    Err(not_repo(
        "neither it nor a directory above it holds `.git`".to_owned(),
    ))
}

/// The git directory a `.git` file (`gitdir: PATH`) names, when it is another repository's
/// `.git` directory or lies inside one (`…/.git/worktrees/NAME`, `…/.git/modules/NAME`), which no
/// checkout can write; a worktree's must name this `.git` file back (its `gitdir` file).
fn linked_git_dir(file: &Path) -> Result<PathBuf, GitEpochError> {
    let unreadable = |why: String| GitEpochError::NotARepository {
        dir: file.to_owned(),
        why,
    };
    let mut text = String::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_GITFILE).read_to_string(&mut text))
        .map_err(|e| unreadable(format!("cannot read the `.git` file: {e}")))?;
    let named = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("gitdir:"))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            unreadable("the `.git` file does not start with `gitdir: PATH`".to_owned())
        })?;
    let base = file.parent().unwrap_or(Path::new("/"));
    let target = base.join(named);
    let foreign = || GitEpochError::ForeignGitDir {
        file: file.to_owned(),
        target: PathBuf::from(named),
    };
    let Ok(resolved) = target.canonicalize() else {
        return Err(foreign());
    };
    // A directory named `.git`, or one inside such a directory: git never checks out a path
    // with a `.git` component, so no commit can have put it there.
    let inside_dotgit = resolved
        .components()
        .any(|c| c == Component::Normal(".git".as_ref()));
    if !inside_dotgit || !resolved.is_dir() {
        return Err(foreign());
    }
    // A worktree's git directory records where its `.git` file is; a submodule's has no such file.
    let back = resolved.join("gitdir");
    if back.exists() {
        let mut named_back = String::new();
        let _ = std::fs::File::open(&back)
            .and_then(|f| f.take(MAX_GITFILE).read_to_string(&mut named_back));
        // Absolute, or (`worktree.useRelativePaths`) relative to the worktree's git directory.
        let points_here = resolved
            .join(named_back.trim())
            .canonicalize()
            .ok()
            .zip(file.canonicalize().ok())
            .is_some_and(|(a, b)| a == b);
        if !points_here {
            return Err(foreign());
        }
    }
    Ok(resolved)
}

/// `GIT_CEILING_DIRECTORIES`: absolute directories discovery does not climb into.
fn ceilings() -> Vec<PathBuf> {
    std::env::var_os("GIT_CEILING_DIRECTORIES")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| p.is_absolute())
                .map(|p| p.canonicalize().unwrap_or(p))
                .collect()
        })
        .unwrap_or_default()
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

    fn mkdir(p: &Path) -> PathBuf {
        std::fs::create_dir_all(p).unwrap();
        p.canonicalize().unwrap()
    }

    /// A directory git would take for a bare repository (`HEAD`, `objects/`, `refs/`).
    fn bare_shaped(p: &Path) {
        mkdir(&p.join("objects"));
        mkdir(&p.join("refs/heads"));
        std::fs::write(p.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(p.join("config"), "[core]\n\tbare = true\n").unwrap();
    }

    #[test]
    fn a_bare_repository_shaped_context_is_passed_over_for_the_work_tree_above() {
        let tmp = tempfile::tempdir().unwrap();
        let top = mkdir(&tmp.path().join("repo"));
        mkdir(&top.join(".git"));
        let ctx = mkdir(&top.join("agents/a"));
        bare_shaped(&ctx);
        bare_shaped(&top.join("agents"));
        let repo = find_repository(&ctx).unwrap();
        assert_eq!(
            repo,
            Repository {
                top: top.clone(),
                git_dir: top.join(".git")
            }
        );
    }

    #[test]
    fn a_git_file_is_followed_only_into_another_repositorys_git_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = mkdir(tmp.path());
        // Into the context itself: refused, whatever is there.
        let ctx = mkdir(&root.join("pr"));
        bare_shaped(&ctx.join("evil"));
        std::fs::write(ctx.join(".git"), "gitdir: evil\n").unwrap();
        let e = find_repository(&ctx).unwrap_err();
        assert!(
            matches!(&e, GitEpochError::ForeignGitDir { target, .. } if target == Path::new("evil")),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("neither a repository's `.git` directory nor inside one"),
            "{e}"
        );
        // Nowhere, or not a `gitdir:` line: refused.
        std::fs::write(ctx.join(".git"), "gitdir: missing\n").unwrap();
        assert!(matches!(
            find_repository(&ctx),
            Err(GitEpochError::ForeignGitDir { .. })
        ));
        std::fs::write(ctx.join(".git"), "[core]\n").unwrap();
        assert!(matches!(
            find_repository(&ctx),
            Err(GitEpochError::NotARepository { .. })
        ));

        // A worktree: its git directory is inside the main repository's `.git` and names the
        // worktree's `.git` file back.
        let admin = mkdir(&root.join("main/.git/worktrees/wt"));
        let wt = mkdir(&root.join("wt"));
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
        std::fs::write(
            admin.join("gitdir"),
            format!("{}\n", wt.join(".git").display()),
        )
        .unwrap();
        let sub = mkdir(&wt.join("agent"));
        assert_eq!(
            find_repository(&sub).unwrap(),
            Repository {
                top: wt.clone(),
                git_dir: admin.clone()
            }
        );
        // … but not another worktree's.
        std::fs::write(
            admin.join("gitdir"),
            format!("{}\n", ctx.join(".git").display()),
        )
        .unwrap();
        assert!(matches!(
            find_repository(&sub),
            Err(GitEpochError::ForeignGitDir { .. })
        ));
        // A worktree that records its `.git` file relative to its git directory.
        std::fs::write(admin.join("gitdir"), "../../../../wt/.git\n").unwrap();
        assert_eq!(find_repository(&sub).unwrap().git_dir, admin);
        // Another repository's `.git` itself (a `--separate-git-dir` named `.git`).
        let separate = mkdir(&root.join("elsewhere/.git"));
        let linked = mkdir(&root.join("linked"));
        std::fs::write(linked.join(".git"), "gitdir: ../elsewhere/.git\n").unwrap();
        assert_eq!(find_repository(&linked).unwrap().git_dir, separate);
        // A submodule: `../.git/modules/NAME`, relative, no back link.
        let super_admin = mkdir(&root.join("super/.git/modules/m"));
        let module = mkdir(&root.join("super/m"));
        std::fs::write(module.join(".git"), "gitdir: ../.git/modules/m\n").unwrap();
        assert_eq!(find_repository(&module).unwrap().git_dir, super_admin);
    }
}
