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

/// Issue 18.16: errors wrapped long references at `/` and at hyphens, so the command they
/// suggest could not be copied. At a narrow width (`COLUMNS=40`), the reference and the
/// backticked command each stay whole on one line; the prose around them still wraps.
#[test]
fn errors_never_wrap_inside_a_reference_or_a_command() {
    let home = tempfile::tempdir().unwrap();
    let r = "registry.example.com:5000/some-long-team-name/agents/weather-forecaster:1.0";
    let out = crate::support::cli::otters(home.path())
        .args(["run", "--pull", "never", r])
        .env("COLUMNS", "40")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.iter().any(|l| l.ends_with(&format!("{r}:"))),
        "the reference is cut:\n{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("`otters pull {r}`"))),
        "the command is cut:\n{stderr}"
    );
    // The width is honoured where text can wrap: no line of prose runs past it.
    assert!(
        lines.iter().any(|l| l.trim_end().ends_with("run")),
        "the prose did not wrap at 40 columns:\n{stderr}"
    );
}
