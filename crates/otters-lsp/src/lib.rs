//! The Agentfile language server (`otters lsp`): the checks of `otters lint` as diagnostics on
//! every change, hover, completion, fixes, outline, folding, go-to-definition and formatting.
//!
//! Takes: LSP messages over a [`lsp_server::Connection`] (standard input and output for
//! `otters lsp`) and a [`Project`] that answers which options `otters lint` would use for a file.
//! Returns: LSP messages. Must never: parse or check an Agentfile any other way than
//! `otters_agentfile::check::analyze`, print anything but protocol messages, panic, or block on
//! the network (the lock file is read from disk; nothing is resolved).
//!
//! ```text
//! server     the message loop: initialize, dispatch, shutdown/exit
//! transport  LSP's base protocol over stdio; a bad message is answered, never the end
//! state      open documents and the request handlers, callable without a connection
//! document   one open document: text, line index, findings, model, lazily its AST
//! position   byte offsets ⇄ LSP positions (UTF-16 by default, UTF-8 when offered)
//! convert    findings and fixes → LSP diagnostics, edits and code actions
//! lens       code lenses running `otters lock` / `otters build` (workspace/executeCommand)
//! workspace  workspace diagnostics: the closed Agentfiles under the root, bounded
//! settings   the editor's settings (targets, capabilities, build args, when to check)
//! hover, complete, outline, navigate, format, semantic, links (document links, inlay hints)
//!            one feature each
//! ```

mod complete;
mod convert;
mod document;
mod format;
mod hover;
mod lens;
mod links;
mod lock;
mod navigate;
mod outline;
pub mod position;
mod semantic;
mod server;
mod settings;
mod state;
#[cfg(test)]
mod tests;
mod transport;
mod workspace;

pub use lock::{Lock, Pin, Role};
pub use position::Encoding;
pub use server::{run, run_stdio};
pub use settings::{Run, Settings};
pub use state::State;

use otters_agentfile::check::Options;
use std::path::Path;

/// What the server asks of the project around a document: the options `otters lint` would check
/// the file at `path` with (its `otters.toml`, the references its `Agentfile.lock` pins, the
/// directory ADD sources are looked up in), the lock itself, and where a source would be read
/// from. `None` is a document with no file (unsaved). The binary (`otters lsp`) answers with the
/// build's own readers; this crate links none of them (no pipeline, no network stack).
///
/// An error is the config's own message (`invalid config …`), shown on the document's first
/// line; the document is then checked with the default options.
pub trait Project {
    fn options(&self, path: Option<&Path>) -> Result<Options, String>;

    /// The capability list in `file` (one name a line, `#` comments), as
    /// `otters lint --capabilities FILE` reads it: for the `capabilities` setting.
    fn capabilities(&self, file: &Path) -> Result<Vec<String>, String> {
        Err(format!(
            "{}: this server reads no capability list",
            file.display()
        ))
    }

    /// The `Agentfile.lock` beside the Agentfile at `agentfile`, as the build reads it; `None`
    /// when there is none or it cannot be read.
    fn lock(&self, _agentfile: &Path) -> Option<Lock> {
        None
    }

    /// The real path of the ADD or CONTEXT `file://` source `src` in the build context `dir`,
    /// only where the build would read it (no absolute path, `..`, symlink out of `dir`, FIFO or
    /// device); `None` otherwise.
    fn source(&self, _dir: &Path, _src: &str) -> Option<std::path::PathBuf> {
        None
    }

    /// The process that runs `otters lock DIR` or `otters build DIR` (`what` is `lock` or
    /// `build`) for the code lenses; `None` (the default) offers no lens.
    fn command(&self, _what: &str, _dir: &Path) -> Option<std::process::Command> {
        None
    }
}

/// No project: every document is checked with the default options (tests, benchmarks).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProject;

impl Project for NoProject {
    fn options(&self, _path: Option<&Path>) -> Result<Options, String> {
        Ok(Options::default())
    }
}
