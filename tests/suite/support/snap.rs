//! Whole-output snapshots of the `otters` binary: a [`Transcript`] runs one or more commands and
//! records each one's exit, stdout and stderr as one text, which [`Transcript::assert`] pins with
//! insta under `snapshots/<dir>/<name>.snap`.
//!
//! What varies between runs and machines is filtered before the text is pinned: the machine's
//! temp dirs (`[TMP]`, its otters home `[OTTERS_HOME]`, see [`Transcript::machine`]), a registry's
//! address (`[REG]`, [`Transcript::registry`]), any other text the test names
//! ([`Transcript::filter`]), the checkout (`[REPO]`: fixtures, examples), any temp dir of the
//! system (`[TEMP]`), durations (`[TIME]`, as `in 0.4s`) and each `sha256:` digest (`[D1]`,
//! `[D2]`… numbered in order of first appearance, so one digest reads the same everywhere in a
//! snapshot). Commands run in an empty environment with `COLUMNS=1000`, so the text does not
//! depend on the terminal or the environment of whoever runs the suite ([`Transcript::otters`]);
//! a test of wrapping sets its own width.
//!
//! Reports are unwrapped ([`unwrap_reports`]), as a temp path's length moves their line breaks;
//! a registry's address is always `127.0.0.1:` and a five-digit port (Linux's ephemeral range), so
//! the underlines of a source line that holds one do not move. The exit is written `[ok]` (0),
//! `[failed]` (1) or `[exit N]`.

use super::cli::Env;
use super::registry::Registry;
use assert_cmd::Command;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Commands and what they printed, to be pinned whole.
pub struct Transcript {
    text: String,
    filters: Vec<(String, String)>,
    /// Whether a report's wrapped lines are joined ([`unwrap_reports`]).
    unwrap: bool,
}

impl Default for Transcript {
    fn default() -> Transcript {
        Transcript {
            text: String::new(),
            filters: Vec::new(),
            unwrap: true,
        }
    }
}

impl Transcript {
    /// An empty transcript with no filter of its own (the built-in ones always apply).
    pub fn new() -> Transcript {
        Transcript::default()
    }

    /// Keeps the line breaks of reports as printed: for a test of wrapping itself, whose text
    /// holds no value whose length differs between machines.
    pub fn keep_wrapping(&mut self) -> &mut Transcript {
        self.unwrap = false;
        self
    }

    /// A transcript of commands run on `env`: its otters home is `[OTTERS_HOME]`, the rest of its
    /// temp dir `[TMP]`.
    pub fn on(env: &Env) -> Transcript {
        let mut t = Transcript::new();
        t.machine(env);
        t
    }

    /// Writes `to` for each `from` (applied in the order added, before the built-in filters).
    pub fn filter(&mut self, from: impl Into<String>, to: impl Into<String>) -> &mut Transcript {
        let from = from.into();
        if !from.is_empty() {
            self.filters.push((from, to.into()));
        }
        self
    }

    /// Filters `env`'s paths: its otters home as `[OTTERS_HOME]`, its temp dir as `[TMP]` (each as
    /// given and canonical).
    pub fn machine(&mut self, env: &Env) -> &mut Transcript {
        self.path(&env.home(), "[OTTERS_HOME]");
        self.path(env.dir.path(), "[TMP]")
    }

    /// Filters a path, as given and canonical, as `to`.
    pub fn path(&mut self, path: &std::path::Path, to: &str) -> &mut Transcript {
        if let Ok(real) = path.canonicalize() {
            self.filter(real.display().to_string(), to);
        }
        self.filter(path.display().to_string(), to)
    }

    /// Filters `reg`'s address as `[REG]`.
    pub fn registry(&mut self, reg: &Registry) -> &mut Transcript {
        self.filter(reg.addr.clone(), "[REG]")
    }

    /// `otters` on `env` as [`Transcript::run`] runs it: an empty environment but for `PATH`,
    /// `TMPDIR`, the machine's `OTTERS_HOME` and `DOCKER_CONFIG`, `NO_COLOR=1` and `COLUMNS=1000`
    /// (so nothing of the caller's — a model's API key, an identity token, a terminal width —
    /// shows in the text); add to it and pass it to [`Transcript::run_cmd`].
    pub fn otters(env: &Env) -> Command {
        let mut c = Command::cargo_bin("otters").expect("otters binary");
        c.env_clear();
        for var in ["PATH", "TMPDIR"] {
            if let Some(v) = std::env::var_os(var) {
                c.env(var, v);
            }
        }
        c.env("OTTERS_HOME", env.home())
            .env("DOCKER_CONFIG", env.docker())
            .env("NO_COLOR", "1")
            .env("COLUMNS", "1000");
        c
    }

    /// Runs `otters args` on `env` and records its exit, stdout and stderr; returns (success,
    /// stdout, stderr) unfiltered.
    pub fn run(&mut self, env: &Env, args: &[&str]) -> (bool, String, String) {
        self.record(Self::otters(env), args, true)
    }

    /// As [`Transcript::run`], with `cmd` (an `otters` command, its environment or directory set,
    /// no arguments yet).
    pub fn run_cmd(&mut self, cmd: Command, args: &[&str]) -> (bool, String, String) {
        self.record(cmd, args, true)
    }

    /// As [`Transcript::run`], recording stderr only: for a stdout another test pins (a run's
    /// plan, `kube`'s YAML), which the caller checks.
    pub fn run_stderr(&mut self, env: &Env, args: &[&str]) -> (bool, String, String) {
        self.record(Self::otters(env), args, false)
    }

    /// As [`Transcript::run_stderr`], with `cmd` as [`Transcript::run_cmd`] takes it.
    pub fn run_cmd_stderr(&mut self, cmd: Command, args: &[&str]) -> (bool, String, String) {
        self.record(cmd, args, false)
    }

    fn record(
        &mut self,
        mut cmd: Command,
        args: &[&str],
        stdout_too: bool,
    ) -> (bool, String, String) {
        let out = cmd.args(args).output().expect("run otters");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        let shown_err = if self.unwrap {
            unwrap_reports(&stderr)
        } else {
            stderr.clone()
        };
        let status = match out.status.code() {
            Some(0) => "ok".to_owned(),
            Some(1) => "failed".to_owned(),
            Some(n) => format!("exit {n}"),
            None => format!("killed: {}", out.status),
        };
        let shown = if stdout_too {
            indent("stdout", &stdout)
        } else {
            "  stdout| (not pinned here)\n".to_owned()
        };
        let _ = write!(
            self.text,
            "$ otters {}  [{status}]\n{shown}{}",
            shown_args(args),
            indent("stderr", &shown_err)
        );
        (out.status.success(), stdout, stderr)
    }

    /// Adds `text` under the label `what` (e.g. a file a command wrote).
    pub fn note(&mut self, what: &str, text: &str) -> &mut Transcript {
        self.text.push_str(&indent(what, text));
        self
    }

    /// The transcript with every filter applied.
    pub fn redacted(&self) -> String {
        redact(&self.text, &self.filters)
    }

    /// Pins the redacted transcript as `snapshots/<dir>/<name>.snap`.
    pub fn assert(&self, dir: &str, name: &str) {
        assert(dir, name, &self.redacted());
    }
}

/// Runs `otters args` on `env` and pins its whole output (filtered as [`Transcript::on`]) as
/// `snapshots/<dir>/<name>.snap`; returns (success, stdout, stderr) unfiltered.
pub fn snapshot(dir: &str, name: &str, env: &Env, args: &[&str]) -> (bool, String, String) {
    let mut t = Transcript::on(env);
    let out = t.run(env, args);
    t.assert(dir, name);
    out
}

/// Pins `text` as it is as `snapshots/<dir>/<name>.snap`.
pub fn assert(dir: &str, name: &str, text: &str) {
    let path = super::repo().join("snapshots").join(dir);
    insta::with_settings!({
        snapshot_path => path,
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

/// `text` (a stderr) with miette's wrapping undone: a message's continuation lines (`  │ …` after
/// `  × `, `  ⚠ ` or `  ☞ `) and a help's (`        …` after `  help: `) joined to the line they
/// continue. Diagnostics wrap at 100 columns whatever `COLUMNS` says, so a temp path or address
/// whose length differs between machines would otherwise move line breaks.
pub fn unwrap_reports(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    // What the last line was: a message, a help, or anything else.
    let mut open: Option<&str> = None;
    for line in text.lines() {
        let joined = match open {
            Some("message") => line.strip_prefix("  │ "),
            Some("help") => line
                .strip_prefix("        ")
                .filter(|rest| !rest.starts_with(' ') && !rest.is_empty()),
            _ => None,
        };
        if let (Some(rest), Some(last)) = (joined, out.last_mut()) {
            last.push(' ');
            last.push_str(rest.trim_start());
            continue;
        }
        open = if ["  × ", "  ⚠ ", "  ☞ "].iter().any(|h| line.starts_with(h)) {
            Some("message")
        } else if line.starts_with("  help: ") {
            Some("help")
        } else {
            None
        };
        out.push(line.to_owned());
    }
    let mut text = out.join("\n");
    if !out.is_empty() {
        text.push('\n');
    }
    text
}

/// `args` joined by spaces, a control character written as Rust escapes it (`\u{1b}`): the
/// snapshot holds no terminal escape.
fn shown_args(args: &[&str]) -> String {
    let escaped: Vec<String> = args
        .iter()
        .map(|a| {
            a.chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_unicode().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        })
        .collect();
    escaped.join(" ")
}

/// `text` with each line prefixed `  what| `.
pub fn indent(what: &str, text: &str) -> String {
    text.lines().fold(String::new(), |mut out, l| {
        let _ = writeln!(out, "  {what}| {l}");
        out
    })
}

/// `text` with `filters` applied in order, then the built-in ones: the checkout, system temp
/// dirs, durations, digests.
pub fn redact(text: &str, filters: &[(String, String)]) -> String {
    let mut text = text.to_owned();
    for (from, to) in filters {
        text = text.replace(from.as_str(), to);
    }
    text = text.replace(&super::repo().display().to_string(), "[REPO]");
    number_digests(&durations(&temp_dirs(&text)))
}

/// Each `sha256:` + 64 hex digits replaced by `[Dn]`, numbered in order of first appearance.
pub fn number_digests(text: &str) -> String {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("sha256:") {
        let hex = &rest[i + 7..];
        let n = hex.bytes().take_while(u8::is_ascii_hexdigit).count();
        if n < 64 {
            out.push_str(&rest[..i + 7]);
            rest = hex;
            continue;
        }
        out.push_str(&rest[..i]);
        let next = seen.len() + 1;
        let k = *seen.entry(hex[..64].to_owned()).or_insert(next);
        let _ = write!(out, "[D{k}]");
        rest = &hex[64..];
    }
    out.push_str(rest);
    out
}

/// A temp dir of the system (`$TMPDIR/.tmpXXXXXX`, as `tempfile` names them) written `[TEMP]`.
fn temp_dirs(text: &str) -> String {
    let prefix = std::env::temp_dir().join(".tmp").display().to_string();
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(&prefix) {
        let after = &rest[i + prefix.len()..];
        let n = after.bytes().take_while(u8::is_ascii_alphanumeric).count();
        out.push_str(&rest[..i]);
        out.push_str("[TEMP]");
        rest = &after[n..];
    }
    out.push_str(rest);
    out
}

/// A duration as otters prints one (`in 0.4s`, `(12.0s)`) written `[TIME]`: digits, a fraction
/// and `s`, after a space or `(` and before a word's end (a whole `30s` is a setting, kept).
fn durations(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if out.is_empty() || out.ends_with([' ', '(']) {
            let whole = rest.bytes().take_while(u8::is_ascii_digit).count();
            let after = &rest[whole..];
            let frac = after
                .strip_prefix('.')
                .map_or(0, |f| f.bytes().take_while(u8::is_ascii_digit).count());
            if whole > 0 && frac > 0 {
                if let Some(tail) = after[1 + frac..].strip_prefix('s') {
                    if !tail.starts_with(|c: char| c.is_alphanumeric()) {
                        out.push_str("[TIME]");
                        rest = tail;
                        continue;
                    }
                }
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[test]
fn reports_are_unwrapped_and_source_lines_kept() {
    let text = "  × one\n  │ two\n   ╭─[f:1:1]\n 1 │ FROM x\n   ╰────\n  help: three\n        four\n\nnext\n";
    assert_eq!(
        unwrap_reports(text),
        "  × one two\n   ╭─[f:1:1]\n 1 │ FROM x\n   ╰────\n  help: three four\n\nnext\n"
    );
}

#[test]
fn the_filters_number_digests_and_hide_times_and_temp_dirs() {
    let a = format!("sha256:{}", "a".repeat(64));
    let b = format!("sha256:{}", "b".repeat(64));
    let tmp = std::env::temp_dir()
        .join(".tmpAb12Cd/x")
        .display()
        .to_string();
    let text = format!("{a} {b} {a} sha256:abc in 0.25s (12.0s) 30s, 1.5 secs v1.2s at {tmp}");
    assert_eq!(
        redact(&text, &[]),
        "[D1] [D2] [D1] sha256:abc in [TIME] ([TIME]) 30s, 1.5 secs v1.2s at [TEMP]/x"
    );
}
