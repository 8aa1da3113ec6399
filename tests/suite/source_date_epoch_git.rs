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
            && err.contains("not a git repository")
            && err.contains("--source-date-epoch SECONDS"),
        "{err}"
    );

    // No git on PATH (an empty directory is the whole PATH).
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
