//! `otters fmt`: one Agentfile formatted in the canonical layout (`otters_agentfile::fmt`), and
//! written back, shown as a diff, or returned (standard input).
//!
//! Takes: an input as `otters lint -r` finds it, and whether to only show the diff. Returns: what
//! became of it, and the text for standard output and standard error. Must never: write a file
//! with syntax errors, or write one other than through `otters_core::rewrite` (atomically, a
//! temporary file renamed over the real one; in place for a file with other hard links; never a
//! read-only one).
use crate::project::Input;
use otters_agentfile::diagnostic::render::Human;
use otters_agentfile::fmt;
use otters_core::escape::escape;
use otters_core::files::reason;
use otters_core::rewrite::{rewrite, RewriteError};
use std::path::Path;

/// What became of one file, worst last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Unchanged,
    Changed,
    /// Syntax errors, or a file that could not be read or written.
    Failed,
}

/// One input's outcome and text.
#[derive(Debug)]
pub struct Formatted {
    pub outcome: Outcome,
    pub stdout: String,
    pub stderr: String,
}

/// `error: MESSAGE`, escaped, as a line.
pub fn error_line(message: &str) -> String {
    format!("error: {}\n", escape(message))
}

/// Formats one input: writes it back (a file), returns it (standard input), or with `diff`
/// returns the unified diff of what would change. Syntax errors are shown as `otters lint`
/// shows them, through `human`. A file that cannot be written gets the `help:` line `hint` gives
/// for its error, if any (the front end knows which of its flags helps).
pub fn one(
    input: &Input,
    stdin: impl std::io::Read,
    diff: bool,
    human: &mut Human<'_>,
    hint: &dyn Fn(&RewriteError) -> Option<String>,
) -> Formatted {
    let name = input.name();
    let failed = |stderr: String| Formatted {
        outcome: Outcome::Failed,
        stdout: String::new(),
        stderr,
    };
    let bytes = match input.read(stdin) {
        Ok(b) => b,
        Err(e) => return failed(error_line(&e.to_string())),
    };
    let formatted = match fmt::format_bytes(&name, &bytes) {
        Ok(f) => f,
        Err(refused) => {
            let mut text = human.file(&refused.file, &refused.diagnostics);
            let why = format!("{name} was not formatted: fix its syntax errors first");
            text.push_str(&error_line(&why));
            return failed(text);
        }
    };
    let changed = formatted.as_bytes() != bytes.as_slice();
    let mut stdout = String::new();
    if diff {
        // The input is UTF-8: it was formatted.
        let old = String::from_utf8_lossy(&bytes);
        stdout = escape(&fmt::unified(&name, &old, &formatted)).into_owned();
    } else if let Input::Stdin(_) = input {
        stdout = formatted;
    } else if let (Input::File { path, .. }, true) = (input, changed) {
        match write_back(path, formatted.as_bytes()) {
            Ok(()) => {}
            Err(WriteFailure::Resolve(why)) => return failed(error_line(&why)),
            Err(WriteFailure::Rewrite(e)) => {
                let mut text = error_line(&e.to_string());
                if let Some(help) = hint(&e) {
                    text.push_str("help: ");
                    text.push_str(&escape(&help));
                    text.push('\n');
                }
                return failed(text);
            }
        }
    }
    Formatted {
        outcome: if changed {
            Outcome::Changed
        } else {
            Outcome::Unchanged
        },
        stdout,
        stderr: String::new(),
    }
}

/// Writes `bytes` to the file `path` leads to (through a symlink, the link's target).
fn write_back(path: &Path, bytes: &[u8]) -> Result<(), WriteFailure> {
    let real = std::fs::canonicalize(path).map_err(|e| {
        WriteFailure::Resolve(format!("cannot write {}: {}", path.display(), reason(&e)))
    })?;
    rewrite(&real, bytes)
        .map(drop)
        .map_err(WriteFailure::Rewrite)
}

/// Why a file was not written: its path did not resolve, or the rewrite failed.
enum WriteFailure {
    Resolve(String),
    Rewrite(RewriteError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::diagnostic::codes::RULES;
    use otters_agentfile::diagnostic::render::ColorChoice;

    const MESSY: &str = "from   scratch\nname  tidy \n";
    const TIDY: &str = "FROM scratch\nNAME tidy\n";

    fn run(input: &Input, text: &str, diff: bool) -> Formatted {
        let mut human = Human::new(RULES, ColorChoice::Never);
        one(input, text.as_bytes(), diff, &mut human, &|_| None)
    }

    #[test]
    fn stdin_is_returned_formatted_or_as_a_diff() {
        let stdin = Input::Stdin(None);
        let f = run(&stdin, MESSY, false);
        assert_eq!((f.outcome, f.stdout.as_str()), (Outcome::Changed, TIDY));
        let f = run(&stdin, MESSY, true);
        assert_eq!(f.outcome, Outcome::Changed);
        assert!(
            f.stdout
                .contains("-from   scratch\n-name  tidy \n+FROM scratch\n+NAME tidy\n"),
            "{}",
            f.stdout
        );
        let f = run(&stdin, TIDY, true);
        assert_eq!((f.outcome, f.stdout.as_str()), (Outcome::Unchanged, ""));
        let f = run(&stdin, "FROM \"\n", false);
        assert_eq!(f.outcome, Outcome::Failed);
        assert!(
            f.stderr
                .ends_with("error: <stdin> was not formatted: fix its syntax errors first\n"),
            "{}",
            f.stderr
        );
    }

    #[test]
    fn a_file_is_written_back_only_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Agentfile");
        std::fs::write(&path, MESSY).unwrap();
        let file = Input::File {
            path: path.clone(),
            root: dir.path().to_owned(),
            rel: "Agentfile".into(),
            name: "Agentfile".into(),
        };
        let f = run(&file, "", false);
        assert_eq!((f.outcome, f.stdout.as_str()), (Outcome::Changed, ""));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), TIDY);
        assert_eq!(run(&file, "", false).outcome, Outcome::Unchanged);
    }
}
