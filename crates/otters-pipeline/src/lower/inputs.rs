//! The reading trait `lower` uses to learn what an ADD or `file://` source is, and the build-input
//! diagnostics AF301–AF303.
//!
//! Takes: a source path as written in the Agentfile. Returns: where it really is and whether it is
//! a file or a directory, or an [`InputError`] that becomes a diagnostic at the instruction's span.
//! Must never: do I/O itself — the filesystem implementation lives in `oci::inputs`.

use otters_agentfile::diagnostic::{Code, Diagnostic, Span};
use std::path::PathBuf;

/// What a source is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    File,
    Dir,
}

/// A source that exists inside the build context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The real path to read.
    pub path: PathBuf,
    /// The path relative to the build context, `/`-separated (what `.agentignore` matches).
    pub rel: String,
    pub kind: InputKind,
}

/// Why a source cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("`{src}` does not exist in the build context `{context}`")]
    NotFound { src: String, context: String },
    #[error("`{src}` {why}")]
    Escapes { src: String, why: String },
    #[error("`{src}` cannot be read: {why}")]
    Unreadable { src: String, why: String },
}

/// Resolves sources named by an Agentfile.
pub trait Inputs {
    fn resolve(&self, src: &str) -> Result<Resolved, InputError>;
}

/// Which instruction named the source, for the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    Add,
    ContextFile,
}

impl InputError {
    /// The same error, naming the source as the Agentfile wrote it.
    #[must_use]
    pub fn as_written(self, written: &str) -> Self {
        let src = written.to_owned();
        match self {
            InputError::NotFound { context, .. } => InputError::NotFound { src, context },
            InputError::Escapes { why, .. } => InputError::Escapes { src, why },
            InputError::Unreadable { why, .. } => InputError::Unreadable { src, why },
        }
    }

    /// The diagnostic for this error at `span` (the source token of the instruction).
    pub fn to_diagnostic(&self, span: Option<Span>, used_by: Use) -> Diagnostic {
        let what = match used_by {
            Use::Add => "ADD source",
            Use::ContextFile => "CONTEXT file",
        };
        match self {
            InputError::NotFound { context, .. } => Diagnostic::new(Code::BuildSourceNotFound, span, format!("{what} {self}"))
                .with_label("not found")
                .with_help(match used_by {
                    Use::Add => format!(
                        "ADD sources are relative to the build context `{context}`; fix the path or build from the directory that holds it"
                    ),
                    Use::ContextFile => format!(
                        "CONTEXT file:// paths are relative to the Agentfile's directory and must lie inside the build context `{context}`; fix the path"
                    ),
                }),
            InputError::Escapes { .. } => Diagnostic::new(Code::BuildSourceEscapesContext, span, format!("{what} {self}"))
                .with_label("outside the build context")
                .with_help("copy the file into the build context and name it by a relative path without `..`"),
            InputError::Unreadable { .. } => Diagnostic::new(Code::BuildSourceUnreadable, span, format!("{what} {self}"))
                .with_label("unreadable")
                .with_help("sources must be regular files or directories the build can read; check the type and permissions"),
        }
    }
}
