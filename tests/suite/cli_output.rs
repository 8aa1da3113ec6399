//! Behaviour of standard output that every command shares.

use std::process::{Command, Stdio};

/// `otters … | head` closes the pipe early; otters must end quietly, not panic.
#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader); // every write to `writer` now fails with EPIPE
    let out = Command::new(env!("CARGO_BIN_EXE_otters"))
        .args(["explain", "--list"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
