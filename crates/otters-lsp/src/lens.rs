//! Code lenses above the first instruction: "otters lock" and "otters build" for the document's
//! directory, run by the server on `workspace/executeCommand` (so any client that shows lenses
//! and executes the server's commands can use them). The process comes from the
//! [`crate::Project`] (the binary runs itself); it runs on its own thread, and its end is shown
//! with `window/showMessage`: the message loop never waits for it.

use crate::document::Document;
use crate::Project;
use lsp_server::{Message, Notification};
use lsp_types::{CodeLens, Command, MessageType, ShowMessageParams};
use std::path::{Path, PathBuf};

/// The commands the server executes.
pub const COMMANDS: [(&str, &str); 2] = [("otters.lock", "lock"), ("otters.build", "build")];

/// The lenses of a document: none without a file or a project that runs commands.
pub fn lenses(doc: &Document, project: &dyn Project, first_line: u32) -> Vec<CodeLens> {
    let Some(dir) = doc.dir() else {
        return Vec::new();
    };
    let at = lsp_types::Range::new(
        lsp_types::Position::new(first_line, 0),
        lsp_types::Position::new(first_line, 0),
    );
    COMMANDS
        .iter()
        .filter(|(_, what)| project.command(what, &dir).is_some())
        .map(|(name, what)| CodeLens {
            range: at,
            command: Some(Command {
                title: format!("otters {what}"),
                command: (*name).to_owned(),
                arguments: Some(vec![serde_json::json!(dir.to_string_lossy())]),
            }),
            data: None,
        })
        .collect()
}

/// Starts `command` (one of [`COMMANDS`]) for the directory in `arguments`; its end is shown to
/// the user through `send`. `Err` when the command or its argument is not one the server
/// offers.
pub fn execute(
    project: &dyn Project,
    command: &str,
    arguments: &[serde_json::Value],
    open_dirs: &[PathBuf],
    send: impl FnOnce(Message) + Send + 'static,
) -> Result<(), String> {
    let what = COMMANDS
        .iter()
        .find(|(name, _)| *name == command)
        .map(|(_, what)| *what)
        .ok_or_else(|| format!("otters lsp has no command {command}"))?;
    let dir = arguments
        .first()
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{command} takes the Agentfile's directory"))?;
    // Only the directory of an open Agentfile: the lens's own argument.
    if !open_dirs.contains(&dir) {
        return Err(format!(
            "{command}: {} is not the directory of an open Agentfile",
            dir.display()
        ));
    }
    let mut cmd = project
        .command(what, &dir)
        .ok_or_else(|| format!("{command} cannot run here"))?;
    std::thread::spawn(move || {
        let (typ, message) = match cmd.stdin(std::process::Stdio::null()).output() {
            Ok(out) => {
                let text = String::from_utf8_lossy(if out.status.success() {
                    &out.stdout
                } else {
                    &out.stderr
                })
                .into_owned();
                let last = summary(&text, &String::from_utf8_lossy(&out.stderr));
                if out.status.success() {
                    (
                        MessageType::INFO,
                        format!("otters {what} {}: {last}", show(&dir)),
                    )
                } else {
                    (
                        MessageType::ERROR,
                        format!("otters {what} {} failed: {last}", show(&dir)),
                    )
                }
            }
            Err(e) => (
                MessageType::ERROR,
                format!("otters {what} {} could not start: {e}", show(&dir)),
            ),
        };
        let n = Notification::new(
            "window/showMessage".to_owned(),
            ShowMessageParams { typ, message },
        );
        send(Message::Notification(n));
    });
    Ok(())
}

fn show(dir: &Path) -> String {
    otters_core::escape::escape(&dir.to_string_lossy()).into_owned()
}

/// The last non-empty line of `text`, else of `fallback` (what a command printed last says how
/// it ended: `wrote …/Agentfile.lock`, or its final error).
fn summary(text: &str, fallback: &str) -> String {
    let last = |t: &str| {
        t.lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map(str::to_owned)
    };
    last(text)
        .or_else(|| last(fallback))
        .unwrap_or_else(|| "done".to_owned())
}
