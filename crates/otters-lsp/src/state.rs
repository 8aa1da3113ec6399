//! The open documents and one handler per request or notification, taking and returning LSP
//! values: the message loop calls them, and tests and benchmarks call them directly.

use crate::convert;
use crate::document::Document;
use crate::position::{self, Encoding};
use crate::settings::{Run, Settings};
use crate::{complete, format, hover, links, lock, navigate, outline, Project};
use lsp_types::{
    CompletionItem, DocumentSymbol, FoldingRange, Hover, HoverContents, Location, MarkupContent,
    MarkupKind, Position, PublishDiagnosticsParams, Range, TextDocumentContentChangeEvent,
    TextEdit, Url,
};
use std::collections::HashMap;
use std::path::PathBuf;

/// `value` (markdown) as the client takes it: markdown, or plain text without the markup
/// (backticks, bold) for a client that shows no markdown.
fn markup(value: String, plain: bool) -> MarkupContent {
    if plain {
        MarkupContent {
            kind: MarkupKind::PlainText,
            value: value.replace("**", "").replace('`', ""),
        }
    } else {
        MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }
    }
}

fn json(action: lsp_types::CodeAction) -> serde_json::Value {
    serde_json::to_value(action).unwrap_or_default()
}

/// What the client takes, beyond what `lsp_types` reads for the server.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientCaps {
    /// Snippet edits inside workspace edits (LSP 3.18).
    pub snippet_edits: bool,
    /// No markdown in hovers (`textDocument.hover.contentFormat` without `markdown`): they are
    /// sent as plain text.
    pub plain_hover: bool,
    /// The same for completion documentation (`completionItem.documentationFormat`).
    pub plain_docs: bool,
}

pub struct State {
    project: Box<dyn Project>,
    pub encoding: Encoding,
    /// What the client takes, from its `initialize` capabilities.
    pub client: ClientCaps,
    /// The client pulls diagnostics (`textDocument/diagnostic`, LSP 3.17) instead of being sent
    /// them: the server then publishes nothing, so no client shows a finding twice.
    pub pull: bool,
    /// Counts the checks made, for result ids: a document re-checked after a save keeps its
    /// version but may have new findings.
    checks: u64,
    docs: HashMap<Url, Document>,
    /// The semantic tokens last sent per document, with their result id (for deltas).
    sent_tokens: std::cell::RefCell<HashMap<Url, (String, Vec<u32>)>>,
    /// The editor's settings, or why the last ones sent did not fit (the defaults apply then).
    settings: Result<Settings, String>,
    /// Counts the settings and project changes (saves, watched files): workspace result ids
    /// hold it, so a change makes every closed file's findings new.
    generation: u64,
    /// The workspace root: relative settings paths start there.
    pub root: Option<PathBuf>,
    /// With `run = onSave`, the findings shown when a document was last checked on open or
    /// save, with their result id, while edits since are not shown.
    held: HashMap<Url, (String, Vec<lsp_types::Diagnostic>)>,
}

impl State {
    pub fn new(project: Box<dyn Project>, encoding: Encoding) -> State {
        State {
            project,
            encoding,
            client: ClientCaps::default(),
            pull: false,
            checks: 0,
            sent_tokens: std::cell::RefCell::default(),
            docs: HashMap::new(),
            settings: Ok(Settings::default()),
            root: None,
            generation: 0,
            held: HashMap::new(),
        }
    }

    /// New settings from the client (or why they do not fit): every open document is checked
    /// again with them; returns the diagnostics to publish.
    pub fn configure(
        &mut self,
        settings: Result<Settings, String>,
    ) -> Vec<PublishDiagnosticsParams> {
        if self.settings == settings {
            return Vec::new();
        }
        self.settings = settings;
        self.recheck_all()
    }

    /// The options for the file at `path`, and why something of them could not be used.
    fn options(
        &self,
        path: Option<&std::path::Path>,
    ) -> (otters_agentfile::check::Options, Option<String>) {
        let project = self.project.as_ref();
        let root = self.root.as_deref();
        match &self.settings {
            Ok(s) => s.options(project, path, root),
            Err(e) => {
                let (o, _) = Settings::default().options(project, path, root);
                (o, Some(e.clone()))
            }
        }
    }

    pub fn document(&self, uri: &Url) -> Option<&Document> {
        self.docs.get(uri)
    }

    fn publish(&self, doc: &Document) -> PublishDiagnosticsParams {
        PublishDiagnosticsParams::new(
            doc.uri.clone(),
            convert::diagnostics(doc, self.encoding),
            Some(doc.version),
        )
    }

    /// `textDocument/didOpen`: checks the text and returns its diagnostics.
    pub fn open(&mut self, uri: Url, version: i32, text: String) -> PublishDiagnosticsParams {
        let mut doc = Document::new(uri.clone(), version, text, |p| self.options(p));
        self.held.remove(&uri);
        self.checks += 1;
        doc.check = self.checks;
        let out = self.publish(&doc);
        self.docs.insert(uri, doc);
        out
    }

    /// `textDocument/didChange`: full text (or, from a client that sends ranges anyway, each
    /// edit applied in turn), checked again. `None` for a document that is not open, and with
    /// `run = onSave` (the findings of the last open or save stay shown).
    pub fn change(
        &mut self,
        uri: &Url,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> Option<PublishDiagnosticsParams> {
        let doc = self.docs.get(uri)?;
        let mut text = doc.text().to_owned();
        for c in changes {
            match c.range {
                None => text = c.text,
                Some(r) => {
                    let file = otters_agentfile::diagnostic::SourceFile::new("", text);
                    let columns = position::Columns::new(&file.text);
                    let start = columns.offset(&file, r.start, self.encoding);
                    let end = columns.offset(&file, r.end, self.encoding).max(start);
                    text = file.text;
                    text.replace_range(start..end, &c.text);
                }
            }
        }
        let on_save = self.settings.as_ref().is_ok_and(|s| s.run == Run::OnSave);
        if on_save && !self.held.contains_key(uri) {
            let shown = (
                doc.check.to_string(),
                convert::diagnostics(doc, self.encoding),
            );
            self.held.insert(uri.clone(), shown);
        }
        let mut doc = doc.edited(version, text);
        self.checks += 1;
        doc.check = self.checks;
        // Checked all the same: hover, completion and the rest follow the text.
        let out = self.publish(&doc);
        self.docs.insert(uri.clone(), doc);
        (!on_save).then_some(out)
    }

    /// `textDocument/didClose`: forgets the document and clears its diagnostics.
    pub fn close(&mut self, uri: &Url) -> PublishDiagnosticsParams {
        self.docs.remove(uri);
        self.held.remove(uri);
        self.sent_tokens.borrow_mut().remove(uri);
        PublishDiagnosticsParams::new(uri.clone(), Vec::new(), None)
    }

    /// `textDocument/didSave`, or a change to a project file: checks every open document again
    /// (its `otters.toml` or `Agentfile.lock` may have changed).
    pub fn recheck_all(&mut self) -> Vec<PublishDiagnosticsParams> {
        self.generation += 1;
        let docs: Vec<(Url, i32, String)> = self
            .docs
            .values()
            .map(|d| (d.uri.clone(), d.version, d.text().to_owned()))
            .collect();
        docs.into_iter()
            .map(|(u, v, t)| self.open(u, v, t))
            .collect()
    }

    /// `textDocument/diagnostic` (pull): the findings `publishDiagnostics` would carry, or
    /// `unchanged` when the client's `previous` result id is still the document's. A document
    /// that is not open has none.
    pub fn pull_diagnostics(&self, uri: &Url, previous: Option<&str>) -> serde_json::Value {
        let Some(doc) = self.docs.get(uri) else {
            return serde_json::json!({"kind": "full", "items": []});
        };
        let (id, items) = match self.held.get(uri) {
            Some((id, items)) => (id.clone(), items.clone()),
            None => (doc.check.to_string(), Vec::new()),
        };
        if previous == Some(id.as_str()) {
            return serde_json::json!({"kind": "unchanged", "resultId": id});
        }
        let items = if self.held.contains_key(uri) {
            items
        } else {
            convert::diagnostics(doc, self.encoding)
        };
        serde_json::json!({"kind": "full", "resultId": id, "items": items})
    }

    /// `textDocument/codeLens`: "otters lock" and "otters build" above the first instruction.
    pub fn code_lenses(&self, uri: &Url) -> Vec<lsp_types::CodeLens> {
        let Some(doc) = self.docs.get(uri) else {
            return Vec::new();
        };
        let first = doc
            .ast()
            .instructions()
            .next()
            .map_or(0, |i| doc.range(i.span, self.encoding).start.line);
        crate::lens::lenses(doc, self.project.as_ref(), first)
    }

    /// `workspace/executeCommand`: starts a lens's command (see `lens::execute`).
    pub fn execute_command(
        &self,
        command: &str,
        arguments: &[serde_json::Value],
        send: impl FnOnce(lsp_server::Message) + Send + 'static,
    ) -> Result<(), String> {
        let dirs: Vec<PathBuf> = self.docs.values().filter_map(Document::dir).collect();
        crate::lens::execute(self.project.as_ref(), command, arguments, &dirs, send)
    }

    /// `workspace/diagnostic`: the findings of every Agentfile under the workspace root that is
    /// not open (open ones answer `textDocument/diagnostic`), within `workspace`'s
    /// bounds; `unchanged` for a file whose result id in `previous` still holds.
    pub fn workspace_diagnostics(&self, previous: &HashMap<Url, String>) -> serde_json::Value {
        let deadline = std::time::Instant::now() + crate::workspace::BUDGET;
        let Some(root) = &self.root else {
            return serde_json::json!({"items": []});
        };
        let mut items = Vec::new();
        for path in crate::workspace::agentfiles(root, deadline) {
            if std::time::Instant::now() > deadline {
                break;
            }
            let Ok(uri) = Url::from_file_path(&path) else {
                continue;
            };
            if self.docs.contains_key(&uri) {
                continue;
            }
            let Ok(bytes) = otters_core::files::read_named(
                &path,
                "Agentfile",
                otters_core::files::MAX_AGENTFILE,
            ) else {
                continue;
            };
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            let id = crate::workspace::result_id(self.generation, &text);
            if previous.get(&uri) == Some(&id) {
                items.push(serde_json::json!({"kind": "unchanged", "uri": uri, "version": null, "resultId": id}));
                continue;
            }
            let doc = Document::new(uri.clone(), 0, text, |p| self.options(p));
            items.push(serde_json::json!({
                "kind": "full",
                "uri": uri,
                "version": null,
                "resultId": id,
                "items": convert::diagnostics(&doc, self.encoding),
            }));
        }
        serde_json::json!({"items": items})
    }

    /// `textDocument/semanticTokens/full`, and `/full/delta` when `previous` names the result
    /// last sent (else the full tokens again).
    pub fn semantic_tokens(&self, uri: &Url, previous: Option<&str>) -> serde_json::Value {
        let Some(doc) = self.docs.get(uri) else {
            return serde_json::json!({"data": []});
        };
        let data = crate::semantic::tokens(doc, self.encoding);
        let id = doc.check.to_string();
        let mut sent = self.sent_tokens.borrow_mut();
        let answer = match (previous, sent.get(uri)) {
            (Some(p), Some((old_id, old))) if p == old_id => {
                let (start, delete_count, new) = crate::semantic::delta(old, &data);
                let edits = if delete_count == 0 && new.is_empty() {
                    Vec::new()
                } else {
                    vec![
                        serde_json::json!({"start": start, "deleteCount": delete_count, "data": new}),
                    ]
                };
                serde_json::json!({"resultId": id, "edits": edits})
            }
            _ => serde_json::json!({"resultId": id, "data": data}),
        };
        sent.insert(uri.clone(), (id, data));
        answer
    }

    fn at(&self, uri: &Url, pos: Position) -> Option<(&Document, usize)> {
        let doc = self.docs.get(uri)?;
        Some((doc, doc.offset(pos, self.encoding)))
    }

    pub fn hover(&self, uri: &Url, pos: Position) -> Option<Hover> {
        let (doc, offset) = self.at(uri, pos)?;
        let value = hover::hover(doc, self.project.as_ref(), offset)?;
        Some(Hover {
            contents: HoverContents::Markup(markup(value, self.client.plain_hover)),
            range: None,
        })
    }

    pub fn completion(&self, uri: &Url, pos: Position) -> Vec<CompletionItem> {
        let mut items = self
            .at(uri, pos)
            .map(|(doc, offset)| complete::complete(doc, offset))
            .unwrap_or_default();
        if self.client.plain_docs {
            for i in &mut items {
                if let Some(lsp_types::Documentation::MarkupContent(m)) = &i.documentation {
                    let plain = markup(m.value.clone(), true);
                    i.documentation = Some(lsp_types::Documentation::MarkupContent(plain));
                }
            }
        }
        items
    }

    /// `textDocument/documentLink`: CONTEXT `file://` paths and ADD sources to their files
    /// (where the build would read them), image references to their registry pages.
    pub fn links(&self, uri: &Url) -> Vec<lsp_types::DocumentLink> {
        let Some(doc) = self.docs.get(uri) else {
            return Vec::new();
        };
        links::links(doc, self.project.as_ref())
            .into_iter()
            .filter_map(|l| {
                let (target, tooltip) = match l.target {
                    links::Target::File(p) => (Url::from_file_path(p).ok()?, None),
                    links::Target::Page(u, what) => {
                        (Url::parse(&u).ok()?, Some(format!("Open on {what}")))
                    }
                };
                Some(lsp_types::DocumentLink {
                    range: doc.range(l.span, self.encoding),
                    target: Some(target),
                    tooltip,
                    data: None,
                })
            })
            .collect()
    }

    /// `textDocument/inlayHint`: in `range`, the value of each `${NAME}` and the digest the lock
    /// pins an unpinned reference to.
    pub fn inlay_hints(&self, uri: &Url, range: Range) -> Vec<lsp_types::InlayHint> {
        let Some(doc) = self.docs.get(uri) else {
            return Vec::new();
        };
        let from = doc.offset(range.start, self.encoding);
        let to = doc.offset(range.end, self.encoding);
        links::hints(doc, self.project.as_ref(), from, to)
            .into_iter()
            .map(|h| lsp_types::InlayHint {
                position: doc
                    .range(otters_agentfile::Span::new(h.at, h.at), self.encoding)
                    .start,
                label: lsp_types::InlayHintLabel::String(h.label),
                kind: None,
                text_edits: None,
                tooltip: Some(lsp_types::InlayHintTooltip::String(h.tooltip)),
                padding_left: Some(true),
                padding_right: None,
                data: None,
            })
            .collect()
    }

    /// Quick fixes of the findings on the lines of `range`, and pins of the image references in it
    /// that `Agentfile.lock` has a digest for.
    ///
    /// A suppression's reason is a snippet tab stop (`${1:reason}`) for a client that takes
    /// snippet edits in a workspace edit (LSP 3.18 `workspace.workspaceEdit.snippetEditSupport`),
    /// else the text `<reason>`, which AF214 reports until it is replaced.
    ///
    /// `only` is the client's `context.only`: the kinds it wants (`quickfix`, `source.fixAll`,
    /// `source`…); `None` is the quick fixes. `source.fixAll.otters`, when asked for, is one edit
    /// that applies every safe fix of the document, as `otters lint --fix` does ("fix on save").
    pub fn code_actions(
        &self,
        uri: &Url,
        range: Range,
        only: Option<&[lsp_types::CodeActionKind]>,
    ) -> Vec<serde_json::Value> {
        let Some(doc) = self.docs.get(uri) else {
            return Vec::new();
        };
        let wants = |kind: &str| {
            only.is_none_or(|o| {
                o.iter().any(|k| {
                    let k = k.as_str();
                    kind == k || kind.strip_prefix(k).is_some_and(|r| r.starts_with('.'))
                })
            })
        };
        let mut out = if wants(lsp_types::CodeActionKind::QUICKFIX.as_str()) {
            self.quick_fixes(doc, range)
        } else {
            Vec::new()
        };
        // A source action is for a client that asks for it (on save, or its source menu), not
        // for every light bulb.
        if only.is_some() && wants(convert::FIX_ALL) {
            if let Some(fixed) = doc.fixed() {
                out.push(json(convert::replace_all(doc, fixed, self.encoding)));
            }
        }
        out
    }

    /// The quick fixes of `code_actions`.
    fn quick_fixes(&self, doc: &Document, range: Range) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        // The whole lines of the range: a cursor anywhere on a line sees that line's fixes.
        let start = doc.offset(Position::new(range.start.line, 0), self.encoding);
        let end_line = Position::new(range.end.line, u32::MAX);
        let end = doc.offset(end_line, self.encoding).max(start);
        let touches = |s: otters_agentfile::Span| s.start <= end && start <= s.end;
        for d in doc
            .diagnostics
            .iter()
            .filter(|d| d.span.is_some_and(touches))
        {
            let lsp = convert::diagnostic(doc, d, self.encoding);
            let suppress = otters_agentfile::check::fixes::suppression(&doc.file, doc.ast(), d);
            for fix in &d.fixes {
                out.push(json(convert::action(
                    doc,
                    fix,
                    Some(lsp.clone()),
                    self.encoding,
                )));
            }
            if let Some(fix) = &suppress {
                let action = convert::action(doc, fix, Some(lsp.clone()), self.encoding);
                out.push(if self.client.snippet_edits {
                    convert::with_snippet_reason(doc, fix, action, self.encoding)
                } else {
                    json(action)
                });
            }
        }
        let refs: Vec<_> = lock::image_refs(doc)
            .into_iter()
            .filter(|r| touches(r.span))
            .collect();
        if !refs.is_empty() {
            if let Some(l) = lock::read(doc, self.project.as_ref()) {
                for r in &refs {
                    if let Some(fix) = lock::entry(&l, r).and_then(|e| lock::pin_fix(doc, r, e)) {
                        out.push(json(convert::action(doc, &fix, None, self.encoding)));
                    }
                }
            }
        }
        out
    }

    pub fn symbols(&self, uri: &Url) -> Vec<DocumentSymbol> {
        self.docs
            .get(uri)
            .map(|d| outline::symbols(d, self.encoding))
            .unwrap_or_default()
    }

    pub fn folding(&self, uri: &Url) -> Vec<FoldingRange> {
        self.docs.get(uri).map(outline::folding).unwrap_or_default()
    }

    pub fn definition(&self, uri: &Url, pos: Position) -> Option<Location> {
        let (doc, offset) = self.at(uri, pos)?;
        match navigate::definition(doc, self.project.as_ref(), offset)? {
            navigate::Target::Here(span) => {
                Some(Location::new(uri.clone(), doc.range(span, self.encoding)))
            }
            navigate::Target::File(path) => Some(Location::new(
                Url::from_file_path(path).ok()?,
                Range::default(),
            )),
        }
    }

    fn occurrences(
        &self,
        uri: &Url,
        pos: Position,
    ) -> Option<(&Document, String, Vec<navigate::Occurrence>)> {
        let (doc, offset) = self.at(uri, pos)?;
        let (name, all) = navigate::occurrences(doc, offset)?;
        Some((doc, name, all))
    }

    /// `textDocument/references`: every place the ARG or ENV name at `pos` is written
    /// (declarations only when `declarations`).
    pub fn references(&self, uri: &Url, pos: Position, declarations: bool) -> Vec<Location> {
        let Some((doc, _, all)) = self.occurrences(uri, pos) else {
            return Vec::new();
        };
        all.into_iter()
            .filter(|o| declarations || !o.declaration)
            .map(|o| Location::new(uri.clone(), doc.range(o.span, self.encoding)))
            .collect()
    }

    /// `textDocument/documentHighlight`: the same places, declarations as writes.
    pub fn highlights(&self, uri: &Url, pos: Position) -> Vec<lsp_types::DocumentHighlight> {
        let Some((doc, _, all)) = self.occurrences(uri, pos) else {
            return Vec::new();
        };
        all.into_iter()
            .map(|o| lsp_types::DocumentHighlight {
                range: doc.range(o.span, self.encoding),
                kind: Some(if o.declaration {
                    lsp_types::DocumentHighlightKind::WRITE
                } else {
                    lsp_types::DocumentHighlightKind::READ
                }),
            })
            .collect()
    }

    /// `textDocument/prepareRename`: the range of the ARG or ENV name at `pos`, or why nothing
    /// there can be renamed.
    pub fn prepare_rename(&self, uri: &Url, pos: Position) -> Result<Range, String> {
        let (doc, offset) = self
            .at(uri, pos)
            .ok_or_else(|| "the document is not open".to_owned())?;
        let (_, all) = navigate::occurrences(doc, offset).ok_or_else(|| {
            "only an ARG or ENV name (or a ${NAME} use) can be renamed".to_owned()
        })?;
        all.iter()
            .find(|o| o.span.start <= offset && offset <= o.span.end)
            .map(|o| doc.range(o.span, self.encoding))
            .ok_or_else(|| "only an ARG or ENV name (or a ${NAME} use) can be renamed".to_owned())
    }

    /// `textDocument/rename`: every place of the name at `pos`, rewritten to `new_name`.
    pub fn rename(
        &self,
        uri: &Url,
        pos: Position,
        new_name: &str,
    ) -> Result<lsp_types::WorkspaceEdit, String> {
        self.prepare_rename(uri, pos)?;
        if !navigate::is_name(new_name) {
            return Err(format!(
                "`{new_name}` is not a valid ARG or ENV name: a letter or `_`, then letters, digits or `_`"
            ));
        }
        let (doc, _, all) = self.occurrences(uri, pos).ok_or_else(String::new)?;
        let edits = all
            .into_iter()
            .map(|o| TextEdit::new(doc.range(o.span, self.encoding), new_name.to_owned()))
            .collect();
        Ok(lsp_types::WorkspaceEdit::new(HashMap::from([(
            uri.clone(),
            edits,
        )])))
    }

    /// One edit replacing the whole text with its formatted form (none when it is already
    /// formatted), or why it cannot be formatted (syntax errors): the client shows that.
    pub fn formatting(&self, uri: &Url) -> Result<Vec<TextEdit>, String> {
        let Some(doc) = self.docs.get(uri) else {
            return Ok(Vec::new());
        };
        let new = format::formatted(doc)?;
        if new == doc.text() {
            return Ok(Vec::new());
        }
        let whole = otters_agentfile::Span::new(0, doc.text().len());
        Ok(vec![TextEdit::new(doc.range(whole, self.encoding), new)])
    }

    /// `textDocument/rangeFormatting`: the formatting edits of the lines `range` covers (a range
    /// ending at the start of a line does not cover that line), or why the document cannot be
    /// formatted.
    pub fn range_formatting(&self, uri: &Url, range: Range) -> Result<Vec<TextEdit>, String> {
        let Some(doc) = self.docs.get(uri) else {
            return Ok(Vec::new());
        };
        let first = range.start.line as usize;
        let mut last = range.end.line as usize;
        if range.end.character == 0 && last > first {
            last -= 1;
        }
        Ok(format::range_edits(doc, first, last.max(first))?
            .into_iter()
            .map(|(span, text)| TextEdit::new(doc.range(span, self.encoding), text))
            .collect())
    }
}
