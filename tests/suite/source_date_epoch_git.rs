//! `otters build --source-date-epoch git` (issue 24): the committer time of the context's last
//! commit, through the real binary and a real `git`.

use crate::support::cli::{flat, json, Env};
use std::path::Path;
use std::process::Command;

/// The committer time of the test commit (2020-09-13T12:26:40Z); the author time differs.
const COMMITTED: &str = "1600000000";

/// `git` in `dir` with no user or system configuration of this machine.
fn git(dir: &Path, home: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "@1500000000 +0000")
        .env("GIT_COMMITTER_DATE", format!("@{COMMITTED} +0000"))
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A context with a directory ADD (whose tar entries carry the epoch as their mtime).
fn context(dir: &Path) {
    crate::support::write(
        &dir.join("Agentfile"),
        "FROM scratch\nNAME dated\nMODEL openai/gpt-4o\nADD data\n",
    );
    crate::support::write(&dir.join("data/today.txt"), "temp=12\n");
}

/// `otters build` in `env`, offline, with `extra` flags; (success, stdout, stderr).
fn build(env: &Env, ctx: &Path, extra: &[&str], path: Option<&str>) -> (bool, String, String) {
    let mut cmd = env.otters();
    cmd.env("SOURCE_DATE_EPOCH", "1")
        .env("GIT_CEILING_DIRECTORIES", env.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd
        .args(["build", "-q", "--offline", "--allow-unpinned"])
        .args(extra)
        .arg(ctx)
        .output()
        .expect("run otters");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn git_epoch_is_the_last_commits_committer_time() {
    let env = Env::new();
    let repo = env.dir.path().join("repo");
    let ctx = repo.join("agent");
    context(&ctx);
    git(&repo, env.dir.path(), &["init", "-q"]);
    git(&repo, env.dir.path(), &["add", "-A"]);
    git(&repo, env.dir.path(), &["commit", "-q", "-m", "agent"]);
    // Uncommitted changes do not move the time: still the last commit's.
    crate::support::write(&repo.join("untracked.txt"), "work in progress\n");

    let (ok, by_git, err) = build(
        &env,
        &ctx,
        &["--source-date-epoch", "git", "-t", "g:1"],
        None,
    );
    assert!(ok, "{err}");
    let (ok, by_number, err) = build(
        &env,
        &ctx,
        &["--source-date-epoch", COMMITTED, "-t", "n:1"],
        None,
    );
    assert!(ok, "{err}");
    assert!(by_git.starts_with("sha256:"), "{by_git}");
    assert_eq!(by_git, by_number);
    // The flag wins over SOURCE_DATE_EPOCH (set to 1 by `build`).
    let (ok, by_env, _) = build(&env, &ctx, &["-t", "e:1"], None);
    assert!(ok);
    assert_ne!(by_env, by_git);

    let v = json(&env.ok(&["inspect", "g:1", "--format", "json"]));
    assert_eq!(
        v["manifest"]["annotations"]["org.opencontainers.image.created"],
        "2020-09-13T12:26:40Z"
    );
    let layer = v["layers"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["title"] == "data"))
        .expect("the data layer");
    let list = Command::new("tar")
        .env("TZ", "UTC")
        .args(["--full-time", "-tvzf"])
        .arg(env.store_blob(layer["digest"].as_str().unwrap_or_default()))
        .output()
        .expect("tar");
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains("2020-09-13 12:26:40 data/today.txt"),
        "{list}"
    );
}

#[test]
fn git_epoch_outside_a_work_tree_or_without_git_is_a_clear_error() {
    let env = Env::new();
    let ctx = env.dir.path().join("agent");
    context(&ctx);
    let (ok, _, err) = build(&env, &ctx, &["--source-date-epoch", "git"], None);
    assert!(!ok);
    let err = flat(&err);
    assert!(
        err.contains("is not in a git work tree")
            && err.contains("agent")
            && err.contains("neither it nor a directory above it holds `.git`")
            && err.contains("--source-date-epoch SECONDS"),
        "{err}"
    );

    // No git on PATH (an empty directory is the whole PATH), in a work tree.
    git(&ctx, env.dir.path(), &["init", "-q"]);
    let empty = env.dir.path().join("no-tools");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let (ok, _, err) = build(&env, &ctx, &["--source-date-epoch", "git"], empty.to_str());
    assert!(!ok);
    assert!(
        flat(&err).contains("runs `git`, which is not installed or not on PATH")
            && flat(&err)
                .contains("help: or pass the time as a number: --source-date-epoch SECONDS"),
        "{err}"
    );

    let (ok, _, err) = build(&env, &ctx, &["--source-date-epoch", "yesterday"], None);
    assert!(!ok);
    assert!(
        flat(&err).contains("the image time `yesterday` is not a whole number")
            && flat(&err).contains("help: --source-date-epoch takes SECONDS or `git`"),
        "{err}"
    );
    let listed = env.ok(&["images", "-q"]);
    assert!(listed.trim().is_empty(), "an image was stored: {listed}");
}

/// A directory shaped like a partial clone whose `HEAD` commit is missing, so that git, taking it
/// for a repository, would fetch the commit through `core.sshCommand` (and consult
/// `core.fsmonitor`): both would create `marker`.
fn hostile_git_dir(dir: &Path, marker: &Path) {
    let missing = "1234567890123456789012345678901234567890";
    crate::support::write(&dir.join("HEAD"), "ref: refs/heads/main\n");
    crate::support::write(&dir.join("refs/heads/main"), format!("{missing}\n"));
    std::fs::create_dir_all(dir.join("objects")).expect("mkdir");
    let touch = format!("touch '{}'; false", marker.display());
    crate::support::write(
        &dir.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 1\n\tbare = true\n\
             \tsshCommand = \"{touch}\"\n\tfsmonitor = \"{touch}\"\n\
             [extensions]\n\tpartialClone = origin\n\
             [protocol]\n\tallow = always\n\
             [remote \"origin\"]\n\turl = ssh://example.invalid/x\n\tpromisor = true\n"
        ),
    );
}

/// Builds a context, made hostile by `plant(context, marker)`, with `--source-date-epoch git`,
/// which must fail without creating `marker`, saying what the snapshot `name` holds (the test's
/// temp directory written `[TMP]`).
fn refused_and_ran_nothing(name: &str, plant: impl FnOnce(&Path, &Path)) {
    let env = Env::new();
    let ctx = env.dir.path().join("agent");
    let marker = env.dir.path().join("pwned");
    context(&ctx);
    plant(&ctx, &marker);
    let (ok, _, err) = build(&env, &ctx, &["--source-date-epoch", "git"], None);
    assert!(!marker.exists(), "the context's git config ran a program");
    assert!(!ok, "built: {err}");
    let tmp = env.dir.path();
    let real = tmp.canonicalize().expect("canonical tmp");
    let err = err
        .replace(&real.display().to_string(), "[TMP]")
        .replace(&tmp.display().to_string(), "[TMP]");
    crate::support::snap::assert("build", name, &err);
}

/// Issue 31, item 1: a committed directory shaped like a bare repository is not the context's
/// repository (git's own discovery took it, and its config ran a program); the time is the
/// enclosing work tree's, and nothing of that directory's config runs.
#[test]
fn a_bare_repository_shaped_context_runs_nothing_and_the_work_tree_gives_the_time() {
    let env = Env::new();
    let repo = env.dir.path().join("repo");
    let ctx = repo.join("agent");
    let marker = env.dir.path().join("pwned");
    context(&ctx);
    hostile_git_dir(&ctx, &marker);
    git(&repo, env.dir.path(), &["init", "-q"]);
    git(&repo, env.dir.path(), &["add", "-A"]);
    git(
        &repo,
        env.dir.path(),
        &["commit", "-q", "-m", "a pull request"],
    );

    let (ok, by_git, err) = build(&env, &ctx, &["--source-date-epoch", "git"], None);
    assert!(!marker.exists(), "the context's git config ran a program");
    assert!(ok, "{err}");
    let (ok, by_number, err) = build(&env, &ctx, &["--source-date-epoch", COMMITTED], None);
    assert!(ok, "{err}");
    assert_eq!(by_git, by_number);
}

/// Issue 31, item 1: a `.git` file naming a directory of the context (not one inside another
/// repository's `.git`) is refused, and the directory it names runs nothing.
#[test]
fn a_git_file_naming_a_directory_of_the_context_is_refused_and_runs_nothing() {
    refused_and_ran_nothing("git_epoch_foreign_git_dir", |ctx, marker| {
        hostile_git_dir(&ctx.join("vendor/cache"), marker);
        crate::support::write(&ctx.join(".git"), "gitdir: vendor/cache\n");
    });
}

/// Issue 31, item 1: even the work tree's own `.git` (a context unpacked from an archive can hold
/// one) cannot make git fetch, run ssh or an fsmonitor: the build fails saying why, and nothing ran.
#[test]
fn a_repositorys_own_config_cannot_start_a_program() {
    refused_and_ran_nothing("git_epoch_missing_commit", |ctx, marker| {
        hostile_git_dir(&ctx.join(".git"), marker);
    });
}

/// A worktree (`.git` is a file naming `MAIN/.git/worktrees/NAME`) still gives its last commit's
/// time.
#[test]
fn a_worktree_gives_its_last_commits_time() {
    let env = Env::new();
    let main = env.dir.path().join("main");
    context(&main.join("agent"));
    git(&main, env.dir.path(), &["init", "-q"]);
    git(&main, env.dir.path(), &["add", "-A"]);
    git(&main, env.dir.path(), &["commit", "-q", "-m", "agent"]);
    let wt = env.dir.path().join("wt");
    git(
        &main,
        env.dir.path(),
        &[
            "worktree",
            "add",
            "-q",
            wt.to_str().expect("utf-8"),
            "-b",
            "wt",
        ],
    );

    let (ok, by_git, err) = build(
        &env,
        &wt.join("agent"),
        &["--source-date-epoch", "git"],
        None,
    );
    assert!(ok, "{err}");
    let (ok, by_number, err) = build(
        &env,
        &wt.join("agent"),
        &["--source-date-epoch", COMMITTED],
        None,
    );
    assert!(ok, "{err}");
    assert_eq!(by_git, by_number);
}
