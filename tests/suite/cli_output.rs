//! Behaviour of standard output that every command shares.

use crate::support::snap::{snapshot, Transcript};
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
/// backticked command each stay whole on one line; the prose around them still wraps (pinned
/// whole in `snapshots/cli_output/`).
#[test]
fn errors_never_wrap_inside_a_reference_or_a_command() {
    let env = crate::support::cli::Env::new();
    let r = "registry.example.com:5000/some-long-team-name/agents/weather-forecaster:1.0";
    let mut narrow = Transcript::otters(&env);
    narrow.env("COLUMNS", "40");
    let mut t = Transcript::on(&env);
    t.keep_wrapping();
    let (ok, _, err) = t.run_cmd(narrow, &["run", "--pull", "never", r]);
    assert!(!ok, "{err}");
    t.assert("cli_output", "narrow_error");
}

/// The commands a `--help` text lists under `Commands:` (`help` left out).
fn commands(help: &str) -> Vec<String> {
    help.split("Commands:")
        .nth(1)
        .map(|list| {
            list.lines()
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .filter_map(|l| l.split_whitespace().next())
                .filter(|c| *c != "help")
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `--help` of the binary and of each command and subcommand, whole: what a user reads first.
/// (`docs/cli.md` is checked against the same text by `otters-cli`'s tests; this pins what the
/// terminal shows.)
#[test]
fn help_texts() {
    let env = crate::support::cli::Env::new();
    let (ok, out, _) = snapshot("cli_output", "help", &env, &["--help"]);
    assert!(ok);
    let top = commands(&out);
    assert!(top.len() > 10, "{out}");
    for c in &top {
        let (ok, out, _) = snapshot("cli_output", &format!("help_{c}"), &env, &[c, "--help"]);
        assert!(ok, "{c} --help");
        for sub in commands(&out) {
            let name = format!("help_{c}_{sub}");
            let (ok, ..) = snapshot("cli_output", &name, &env, &[c, &sub, "--help"]);
            assert!(ok, "{c} {sub} --help");
        }
    }
}
