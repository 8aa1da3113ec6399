//! Third-party tools a test needs: whether one is installed, and the skip rule for when it is not.
//!
//! Takes: a command line to probe. Returns: whether it ran and succeeded. Must never: let a test
//! pass silently under CI when its tool is missing (`skip` fails there).

use std::process::{Command, Stdio};

/// Reports a test that cannot run here: fails under CI (`CI` set), prints `SKIP` otherwise.
pub fn skip(test: &str, reason: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} cannot run under CI: {reason}"
    );
    eprintln!("SKIP {test}: {reason}");
}

/// True when `program args…` runs and exits 0 (output discarded).
pub fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when `program` runs and succeeds, else calls [`skip`] for `test` and returns false.
pub fn require(test: &str, program: &str, args: &[&str], install: &str) -> bool {
    if works(program, args) {
        return true;
    }
    skip(test, &format!("`{program}` is not usable here; {install}"));
    false
}

/// `zstd -q -c -LEVEL` of `bytes` (fed from a thread: the output may be larger than a pipe);
/// `None` when the tool is missing or fails.
pub fn zstd(bytes: &[u8], level: u8) -> Option<Vec<u8>> {
    use std::io::Write as _;
    let mut child = Command::new("zstd")
        .args(["-q", "-c", &format!("-{level}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let bytes = bytes.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&bytes));
    let out = child.wait_with_output().ok()?;
    feeder.join().ok()?.ok()?;
    out.status.success().then_some(out.stdout)
}
