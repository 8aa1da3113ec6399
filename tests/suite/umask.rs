//! Files otters writes for others to read (the store, `save -o`, `--output type=oci-layout`) follow
//! the caller's umask, as `cp` or `docker save` do: 0644 under umask 022, 0600 under 077. Checked
//! through the binary, started by `sh` with the umask set.

use crate::support::cli::Env;
use crate::support::repo;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Runs otters under `umask` through `sh`, which must succeed.
fn under_umask(env: &Env, umask: &str, args: &[&str]) {
    let bin = assert_cmd::cargo::cargo_bin("otters");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(&bin)
        .args(args)
        .env("OTTERS_HOME", env.home())
        .env("NO_COLOR", "1")
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every regular file under `dir` (or `dir` itself) has exactly `mode`.
fn all_files_have(dir: &Path, mode: u32) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                let e = e.unwrap().path();
                // The lock file and the temp area are the store's own business.
                if e.file_name()
                    .is_some_and(|n| n == ".tmp" || n == "index.json.lock")
                {
                    continue;
                }
                stack.push(e);
            }
        } else if m.is_file() {
            assert_eq!(m.permissions().mode() & 0o777, mode, "{}", p.display());
            n += 1;
        }
    }
    n
}

#[test]
fn written_files_follow_the_umask() {
    let hello = repo().join("examples/hello");
    let hello = hello.to_str().unwrap();
    for (umask, mode) in [("022", 0o644), ("077", 0o600)] {
        let env = Env::new();
        let out = env.dir.path();
        let archive = out.join("agent.tar");
        let layout = out.join("layout");
        under_umask(
            &env,
            umask,
            &[
                "build",
                "-q",
                "--offline",
                "--allow-unpinned",
                "-t",
                "m:1",
                hello,
            ],
        );
        // `--output type=oci-layout` builds into that layout instead of the store.
        under_umask(
            &env,
            umask,
            &[
                "build",
                "-q",
                "--offline",
                "--allow-unpinned",
                "-t",
                "m:1",
                "--output",
                &format!("type=oci-layout,dest={}", layout.display()),
                hello,
            ],
        );
        under_umask(
            &env,
            umask,
            &["save", "m:1", "-o", archive.to_str().unwrap()],
        );
        assert!(
            all_files_have(&env.store(), mode) >= 5,
            "store under umask {umask}"
        );
        assert!(
            all_files_have(&layout, mode) >= 5,
            "layout under umask {umask}"
        );
        assert_eq!(
            all_files_have(&archive, mode),
            1,
            "archive under umask {umask}"
        );
    }
}
