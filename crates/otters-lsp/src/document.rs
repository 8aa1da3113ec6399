//! One open document: its text with a line index, the findings `otters lint` reports for it, the
//! typed model, and (parsed on first use) its lossless AST.
//!
//! Takes: the text the editor holds (never the file on disk) and the project's options. Returns:
//! a [`Document`]. Must never: check a document over [`files::MAX_AGENTFILE`] (`otters lint`
//! refuses those too; one finding says so).

use crate::position::{Columns, Encoding};
use lsp_types::Url;
use lsp_types::{Position, Range};
use otters_agentfile::check::{self, Options};
use otters_agentfile::diagnostic::SourceFile;
use otters_agentfile::syntax::{self, Ast, Line};
use otters_agentfile::{ir, Diagnostic, Severity};
use otters_core::files;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

/// At most this many findings are kept and published per document, the first by position (as
/// `otters lint` draws its first 200); one more diagnostic counts the rest. A 1 MiB file of
/// findings would otherwise be a 263 MB notification and gigabytes of server memory.
pub const MAX_PUBLISHED: usize = otters_agentfile::diagnostic::render::MAX_SHOWN;

/// The findings past [`MAX_PUBLISHED`]: how many, where the first is, the worst severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Omitted {
    pub count: usize,
    pub first: otters_agentfile::Span,
    pub severity: Severity,
}

#[derive(Debug)]
pub struct Document {
    pub uri: Url,
    /// The file behind the document; `None` for an unsaved buffer or a non-`file:` URI.
    pub path: Option<PathBuf>,
    pub version: i32,
    /// Which check of the server this is (set by the server's state): the pull result id.
    pub check: u64,
    pub file: SourceFile,
    /// The UTF-16 column table of `file` (one pass when the document is made).
    pub columns: Columns,
    /// The first [`MAX_PUBLISHED`] findings of `check::analyze`, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
    /// What was not kept of them.
    pub omitted: Option<Omitted>,
    pub model: ir::Agentfile,
    /// Why the project's options could not be used (an invalid `otters.toml`), or why the
    /// document was not checked (too large).
    pub problem: Option<String>,
    /// The capability names completion offers: the catalogue the checks used.
    pub capabilities: Vec<String>,
    ast: OnceCell<Ast>,
    /// The project's options as they were asked for when the document was opened (or the project
    /// last changed), with why they could not be used: an edit reuses them rather than reading
    /// `otters.toml` and the lock again on every keystroke.
    settings: (Options, Option<String>),
}

impl Document {
    /// The document at `uri`, checked with the options `settings` gives for its file (and why
    /// something of them could not be used).
    pub fn new(
        uri: Url,
        version: i32,
        text: String,
        settings: impl FnOnce(Option<&Path>) -> (Options, Option<String>),
    ) -> Document {
        let path = if uri.scheme() == "file" {
            uri.to_file_path().ok()
        } else {
            None
        };
        let settings = settings(path.as_deref());
        Document::checked(uri, path, version, text, settings)
    }

    /// The document after an edit: the new text, checked with the options it already has.
    #[must_use]
    pub fn edited(&self, version: i32, text: String) -> Document {
        Document::checked(
            self.uri.clone(),
            self.path.clone(),
            version,
            text,
            self.settings.clone(),
        )
    }

    fn checked(
        uri: Url,
        path: Option<PathBuf>,
        version: i32,
        text: String,
        settings: (Options, Option<String>),
    ) -> Document {
        let name = path.as_ref().map_or_else(
            || uri.as_str().to_owned(),
            |p| p.to_string_lossy().into_owned(),
        );
        let (opts, mut problem) = (&settings.0, settings.1.clone());
        let mut capabilities = opts.capability_catalogue.clone().unwrap_or_else(|| {
            check::BUILTIN_CATALOGUE
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        });
        // Completion offers only names the checks accept for the configured targets: one with
        // `_` is AF232 while openotters L is a target (and AF232 is not turned off).
        let af232 = opts.portability_targets().contains(&check::Target::L)
            && opts
                .severity_overrides
                .get(&otters_agentfile::Code::CapabilityUnderscoreNotPortable)
                != Some(&check::SeverityOverride::Off);
        capabilities.retain(|c| !(af232 && c.contains('_')));
        let file = SourceFile::new(name, text);
        let (mut diagnostics, model) = if file.text.len() as u64 > files::MAX_AGENTFILE {
            problem = Some(format!(
                "the document is over {}, the most `otters lint` reads; it is not checked",
                files::size(files::MAX_AGENTFILE)
            ));
            (Vec::new(), ir::Agentfile::default())
        } else {
            let a = check::analyze(&file, opts);
            (a.diagnostics, a.model)
        };
        let omitted = diagnostics.get(MAX_PUBLISHED..).and_then(|rest| {
            Some(Omitted {
                count: rest.len(),
                first: rest.first()?.span_or_start(),
                severity: rest.iter().map(|d| d.severity).max()?,
            })
        });
        diagnostics.truncate(MAX_PUBLISHED);
        diagnostics.shrink_to_fit();
        Document {
            uri,
            path,
            version,
            check: 0,
            columns: Columns::new(&file.text),
            file,
            diagnostics,
            omitted,
            model,
            problem,
            capabilities,
            ast: OnceCell::new(),
            settings,
        }
    }

    /// The lossless AST, parsed by the same parser the checks used, on first use.
    pub fn ast(&self) -> &Ast {
        self.ast.get_or_init(|| {
            if self.file.text.len() as u64 > files::MAX_AGENTFILE {
                Ast::default()
            } else {
                syntax::parse(&self.file)
            }
        })
    }

    /// The logical line (an instruction with its heredoc, or one physical line) holding `offset`.
    pub fn line_at(&self, offset: usize) -> Option<&Line> {
        let lines = &self.ast().lines;
        let i = lines
            .partition_point(|l| l.span.start <= offset)
            .checked_sub(1)?;
        lines.get(i).filter(|l| offset <= l.span.end)
    }

    /// The text with every safe fix applied, as `otters lint --fix` writes it (from all the
    /// findings, not only the published ones); `None` when there is none to apply.
    pub fn fixed(&self) -> Option<String> {
        if self.file.text.len() as u64 > files::MAX_AGENTFILE {
            return None;
        }
        let all;
        let diagnostics = if self.omitted.is_some() {
            all = check::analyze(&self.file, &self.settings.0).diagnostics;
            &all
        } else {
            &self.diagnostics
        };
        otters_agentfile::diagnostic::apply_safe_fixes(self.text(), diagnostics)
    }

    /// The LSP range of `span`.
    pub fn range(&self, span: otters_agentfile::Span, enc: Encoding) -> Range {
        self.columns.range(&self.file, span, enc)
    }

    /// The byte offset of the LSP position `pos` (clamped).
    pub fn offset(&self, pos: Position, enc: Encoding) -> usize {
        self.columns.offset(&self.file, pos, enc)
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.file.text
    }

    /// The directory of the document's file.
    pub fn dir(&self) -> Option<PathBuf> {
        self.path
            .as_ref()
            .and_then(|p| p.parent())
            .map(std::path::Path::to_path_buf)
    }
}
