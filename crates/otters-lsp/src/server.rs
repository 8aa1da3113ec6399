//! The message loop: the initialize handshake (position encoding chosen there), requests
//! dispatched to [`State`], diagnostics published after every open, change and save, and the
//! shutdown/exit sequence.
//!
//! A request the server does not know gets `MethodNotFound`, one whose parameters do not fit
//! gets `InvalidParams`, a second `initialize` gets `InvalidRequest` (and a body that is not JSON
//! gets `ParseError` from the transport); none ends the session. A handler that panicked (a bug) answers
//! `InternalError` and the session goes on.

use crate::position::Encoding;
use crate::settings::Settings;
use crate::state::State;
use crate::Project;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeConfiguration, DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument,
    DidOpenTextDocument, DidSaveTextDocument, Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    CodeActionRequest, CodeLensRequest, Completion, DocumentDiagnosticRequest,
    DocumentHighlightRequest, DocumentLinkRequest, DocumentSymbolRequest, FoldingRangeRequest,
    Formatting, GotoDefinition, HoverRequest, InlayHintRequest, PrepareRenameRequest,
    RangeFormatting, References, Rename, Request as _, SemanticTokensFullDeltaRequest,
    SemanticTokensFullRequest, WorkspaceDiagnosticRequest,
};
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionProviderCapability, CompletionOptions,
    FoldingRangeProviderCapability, HoverProviderCapability, InitializeParams, OneOf,
    PositionEncodingKind, PublishDiagnosticsParams, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Serves on standard input and output until `exit`. `Ok(true)` when the client shut the
/// server down before `exit` (exit status 0), `Ok(false)` when it did not (status 1, as LSP
/// asks).
pub fn run_stdio(project: Box<dyn Project>) -> Result<bool, String> {
    let (connection, io) = crate::transport::stdio();
    let clean = run(&connection, project)?;
    drop(connection);
    io.join()?;
    Ok(clean)
}

/// The encoding the client offers that the server prefers: UTF-8 when offered, else UTF-16.
pub fn negotiate(params: &InitializeParams) -> Encoding {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref());
    if offered.is_some_and(|o| o.contains(&PositionEncodingKind::UTF8)) {
        Encoding::Utf8
    } else {
        Encoding::Utf16
    }
}

pub fn capabilities(enc: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(match enc {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["{".to_owned()]),
            ..CompletionOptions::default()
        }),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![
                CodeActionKind::QUICKFIX,
                CodeActionKind::new(crate::convert::FIX_ALL),
            ]),
            ..CodeActionOptions::default()
        })),
        document_symbol_provider: Some(OneOf::Left(true)),
        folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        document_range_formatting_provider: Some(OneOf::Left(true)),
        document_link_provider: Some(lsp_types::DocumentLinkOptions {
            resolve_provider: Some(false),
            work_done_progress_options: lsp_types::WorkDoneProgressOptions::default(),
        }),
        inlay_hint_provider: Some(OneOf::Left(true)),
        code_lens_provider: Some(lsp_types::CodeLensOptions {
            resolve_provider: Some(false),
        }),
        execute_command_provider: Some(lsp_types::ExecuteCommandOptions {
            commands: crate::lens::COMMANDS
                .iter()
                .map(|(c, _)| (*c).to_owned())
                .collect(),
            work_done_progress_options: lsp_types::WorkDoneProgressOptions::default(),
        }),
        references_provider: Some(OneOf::Left(true)),
        document_highlight_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(lsp_types::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: lsp_types::WorkDoneProgressOptions::default(),
        })),
        semantic_tokens_provider: Some(
            lsp_types::SemanticTokensServerCapabilities::SemanticTokensOptions(
                lsp_types::SemanticTokensOptions {
                    legend: crate::semantic::legend(),
                    full: Some(lsp_types::SemanticTokensFullOptions::Delta { delta: Some(true) }),
                    range: None,
                    ..lsp_types::SemanticTokensOptions::default()
                },
            ),
        ),
        ..ServerCapabilities::default()
    }
}

/// Runs the session on `connection`; see [`run_stdio`].
pub fn run(connection: &Connection, project: Box<dyn Project>) -> Result<bool, String> {
    let (mut state, mut session) = handshake(connection, project)?;
    let mut shut_down = false;
    for msg in &connection.receiver {
        match msg {
            Message::Request(req) => {
                if shut_down {
                    respond(
                        connection,
                        Response::new_err(
                            req.id,
                            ErrorCode::InvalidRequest as i32,
                            "the server is shutting down".to_owned(),
                        ),
                    );
                    continue;
                }
                if req.method == "initialize" {
                    respond(
                        connection,
                        Response::new_err(
                            req.id,
                            ErrorCode::InvalidRequest as i32,
                            "the server is already initialized (initialize is sent once)"
                                .to_owned(),
                        ),
                    );
                    continue;
                }
                if req.method == "shutdown" {
                    shut_down = true;
                    respond(connection, Response::new_ok(req.id, ()));
                    continue;
                }
                if req.method == "workspace/executeCommand" {
                    let sender = connection.sender.clone();
                    let response = match parse::<lsp_types::ExecuteCommandParams>(req) {
                        Ok((id, p)) => answer(
                            id,
                            state
                                .execute_command(&p.command, &p.arguments, move |m| {
                                    let _ = sender.send(m);
                                })
                                .map(|()| serde_json::Value::Null),
                        ),
                        Err(e) => *e,
                    };
                    respond(connection, response);
                    continue;
                }
                let id = req.id.clone();
                let response = catch_unwind(AssertUnwindSafe(|| request(&state, req)))
                    .unwrap_or_else(|_| {
                        Response::new_err(
                            id,
                            ErrorCode::InternalError as i32,
                            "the request failed inside otters (a bug: please report it)".to_owned(),
                        )
                    });
                respond(connection, response);
            }
            Message::Notification(n) => {
                if n.method == "exit" {
                    return Ok(shut_down);
                }
                let rechecks = matches!(
                    n.method.as_str(),
                    DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD
                );
                if n.method == DidChangeConfiguration::METHOD {
                    // A client that answers `workspace/configuration` is asked (its
                    // notification may carry nothing); another sends the settings in it.
                    if session.config_pull {
                        session.ask_configuration(state.root.as_ref());
                        continue;
                    }
                    let settings = n.params.get("settings").unwrap_or(&serde_json::Value::Null);
                    let published = state.configure(Settings::from_json(settings));
                    if !session.deliver(&state, published, true) {
                        return Ok(shut_down);
                    }
                    continue;
                }
                let published = catch_unwind(AssertUnwindSafe(|| notification(&mut state, n)))
                    .unwrap_or_default();
                if !session.deliver(&state, published, rechecks) {
                    return Ok(shut_down);
                }
            }
            Message::Response(r) => {
                let configuration = matches!(&r.id.to_string(), s if s.contains(CONFIGURATION));
                if let (true, Some(result)) = (configuration, r.result) {
                    let section = result.get(0).cloned().unwrap_or_default();
                    let published = state.configure(Settings::from_json(&section));
                    if !session.deliver(&state, published, true) {
                        return Ok(shut_down);
                    }
                }
            }
        }
    }
    // The client went away without `exit`.
    Ok(false)
}

/// The initialize handshake: what the client offers, the capabilities answered, the state.
fn handshake(
    connection: &Connection,
    project: Box<dyn Project>,
) -> Result<(State, Session<'_>), String> {
    let (id, params) = connection.initialize_start().map_err(|e| e.to_string())?;
    let snippet_edits = params
        .pointer("/capabilities/workspace/workspaceEdit/snippetEditSupport")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let pull = params
        .pointer("/capabilities/textDocument/diagnostic")
        .is_some_and(serde_json::Value::is_object);
    let params_refresh = params
        .pointer("/capabilities/workspace/diagnostics/refreshSupport")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    // Settings: `initializationOptions`, then (a client that answers it) `workspace/configuration`.
    let init_settings = params
        .get("initializationOptions")
        .map(crate::settings::Settings::from_json);
    let config_pull = params
        .pointer("/capabilities/workspace/configuration")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let plain_hover = plain(&params, "/capabilities/textDocument/hover/contentFormat");
    let plain_docs = plain(
        &params,
        "/capabilities/textDocument/completion/completionItem/documentationFormat",
    );
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let enc = negotiate(&params);
    let mut caps = capabilities(enc);
    if pull {
        caps.diagnostic_provider = Some(lsp_types::DiagnosticServerCapabilities::Options(
            lsp_types::DiagnosticOptions {
                identifier: Some("otters".to_owned()),
                inter_file_dependencies: false,
                workspace_diagnostics: true,
                ..lsp_types::DiagnosticOptions::default()
            },
        ));
    }
    let result = serde_json::json!({
        "capabilities": caps,
        "serverInfo": ServerInfo {
            name: "otters".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        },
    });
    connection
        .initialize_finish(id, result)
        .map_err(|e| e.to_string())?;
    let mut state = State::new(project, enc);
    state.client = crate::state::ClientCaps {
        snippet_edits,
        plain_hover,
        plain_docs,
    };
    state.pull = pull;
    state.root = root(&params);
    if let Some(s) = init_settings {
        state.configure(s);
    }
    let mut session = Session {
        connection,
        refresh: pull && params_refresh,
        config_pull,
        sent: 0,
    };
    // `initialize_finish` waited for `initialized`: ask for the settings now.
    session.ask_configuration(state.root.as_ref());
    Ok((state, session))
}

/// Whether the formats the client lists at `pointer` leave markdown out (a client that lists
/// none takes markdown, as most do).
fn plain(params: &serde_json::Value, pointer: &str) -> bool {
    params
        .pointer(pointer)
        .and_then(serde_json::Value::as_array)
        .is_some_and(|f| !f.iter().any(|k| k == "markdown"))
}

/// The prefix of the ids of the server's `workspace/configuration` requests.
const CONFIGURATION: &str = "otters-configuration-";

/// What the loop sends on its own: diagnostics, refresh and configuration requests.
struct Session<'c> {
    connection: &'c Connection,
    /// The client pulls diagnostics and takes `workspace/diagnostic/refresh`.
    refresh: bool,
    /// The client answers `workspace/configuration`.
    config_pull: bool,
    /// Requests sent, for their ids.
    sent: u64,
}

impl Session<'_> {
    fn send_request(&mut self, prefix: &str, method: &str, params: serde_json::Value) {
        self.sent += 1;
        let r = Request::new(
            format!("{prefix}{}", self.sent).into(),
            method.to_owned(),
            params,
        );
        let _ = self.connection.sender.send(Message::Request(r));
    }

    /// Asks the client for the `otters` section of its settings (when it answers that).
    fn ask_configuration(&mut self, root: Option<&std::path::PathBuf>) {
        if !self.config_pull {
            return;
        }
        let scope = root.and_then(|r| lsp_types::Url::from_directory_path(r).ok());
        let params = serde_json::json!({"items": [{"section": "otters", "scopeUri": scope}]});
        self.send_request(CONFIGURATION, "workspace/configuration", params);
    }

    /// Publishes `published`, or for a client that pulls diagnostics, after a recheck, asks it
    /// to pull again. `false` when the client is gone.
    fn deliver(
        &mut self,
        state: &State,
        mut published: Vec<PublishDiagnosticsParams>,
        rechecked: bool,
    ) -> bool {
        if state.pull {
            // The client asks for them (textDocument/diagnostic); after a save or a project
            // change, it is told to ask again.
            if self.refresh && rechecked {
                self.send_request(
                    "otters-refresh-",
                    "workspace/diagnostic/refresh",
                    serde_json::Value::Null,
                );
            }
            published.clear();
        }
        for p in published {
            let n = Notification::new(PublishDiagnostics::METHOD.to_owned(), p);
            if self
                .connection
                .sender
                .send(Message::Notification(n))
                .is_err()
            {
                return false;
            }
        }
        true
    }
}

/// The workspace root: the first workspace folder, else `rootUri`, as a directory.
#[allow(deprecated)] // rootUri: the only root older clients (Neovim 0.7) send.
fn root(params: &InitializeParams) -> Option<std::path::PathBuf> {
    params
        .workspace_folders
        .as_ref()
        .and_then(|f| f.first())
        .map(|f| &f.uri)
        .or(params.root_uri.as_ref())
        .and_then(|u| u.to_file_path().ok())
}

fn respond(connection: &Connection, r: Response) {
    // A closed channel means the client is gone; the loop ends on its own.
    let _ = connection.sender.send(Message::Response(r));
}

fn parse<P: DeserializeOwned>(req: Request) -> Result<(lsp_server::RequestId, P), Box<Response>> {
    let id = req.id.clone();
    serde_json::from_value(req.params)
        .map(|p| (req.id, p))
        .map_err(|e| {
            Box::new(Response::new_err(
                id,
                ErrorCode::InvalidParams as i32,
                e.to_string(),
            ))
        })
}

fn ok<R: Serialize>(id: lsp_server::RequestId, r: R) -> Response {
    Response::new_ok(id, r)
}

/// The result, or a `RequestFailed` error with why (the client shows the message).
fn answer<R: Serialize>(id: lsp_server::RequestId, r: Result<R, String>) -> Response {
    match r {
        Ok(r) => ok(id, r),
        Err(why) => Response::new_err(id, ErrorCode::RequestFailed as i32, why),
    }
}

/// Answers one request.
pub fn request(state: &State, req: Request) -> Response {
    macro_rules! handle {
        ($kind:ty, |$p:ident| $body:expr) => {
            match parse::<<$kind as lsp_types::request::Request>::Params>(req) {
                Ok((id, $p)) => ok(id, $body),
                Err(e) => *e,
            }
        };
    }
    match req.method.as_str() {
        HoverRequest::METHOD => handle!(HoverRequest, |p| {
            let at = p.text_document_position_params;
            state.hover(&at.text_document.uri, at.position)
        }),
        Completion::METHOD => handle!(Completion, |p| {
            let at = p.text_document_position;
            state.completion(&at.text_document.uri, at.position)
        }),
        CodeActionRequest::METHOD => handle!(CodeActionRequest, |p| state.code_actions(
            &p.text_document.uri,
            p.range,
            p.context.only.as_deref()
        )),
        DocumentSymbolRequest::METHOD => {
            handle!(DocumentSymbolRequest, |p| state
                .symbols(&p.text_document.uri))
        }
        FoldingRangeRequest::METHOD => {
            handle!(FoldingRangeRequest, |p| state.folding(&p.text_document.uri))
        }
        GotoDefinition::METHOD => handle!(GotoDefinition, |p| {
            let at = p.text_document_position_params;
            state.definition(&at.text_document.uri, at.position)
        }),
        Formatting::METHOD => match parse::<lsp_types::DocumentFormattingParams>(req) {
            Ok((id, p)) => answer(id, state.formatting(&p.text_document.uri)),
            Err(e) => *e,
        },
        RangeFormatting::METHOD => match parse::<lsp_types::DocumentRangeFormattingParams>(req) {
            Ok((id, p)) => answer(id, state.range_formatting(&p.text_document.uri, p.range)),
            Err(e) => *e,
        },
        References::METHOD => handle!(References, |p| {
            let at = p.text_document_position;
            state.references(
                &at.text_document.uri,
                at.position,
                p.context.include_declaration,
            )
        }),
        DocumentHighlightRequest::METHOD => handle!(DocumentHighlightRequest, |p| {
            let at = p.text_document_position_params;
            state.highlights(&at.text_document.uri, at.position)
        }),
        PrepareRenameRequest::METHOD => match parse::<lsp_types::TextDocumentPositionParams>(req) {
            Ok((id, p)) => answer(id, state.prepare_rename(&p.text_document.uri, p.position)),
            Err(e) => *e,
        },
        Rename::METHOD => match parse::<lsp_types::RenameParams>(req) {
            Ok((id, p)) => {
                let at = p.text_document_position;
                answer(
                    id,
                    state.rename(&at.text_document.uri, at.position, &p.new_name),
                )
            }
            Err(e) => *e,
        },
        DocumentLinkRequest::METHOD => {
            handle!(DocumentLinkRequest, |p| state.links(&p.text_document.uri))
        }
        CodeLensRequest::METHOD => {
            handle!(CodeLensRequest, |p| state.code_lenses(&p.text_document.uri))
        }
        InlayHintRequest::METHOD => handle!(InlayHintRequest, |p| state
            .inlay_hints(&p.text_document.uri, p.range)),
        SemanticTokensFullRequest::METHOD => handle!(SemanticTokensFullRequest, |p| state
            .semantic_tokens(&p.text_document.uri, None)),
        SemanticTokensFullDeltaRequest::METHOD => {
            handle!(SemanticTokensFullDeltaRequest, |p| state.semantic_tokens(
                &p.text_document.uri,
                Some(p.previous_result_id.as_str())
            ))
        }
        WorkspaceDiagnosticRequest::METHOD => handle!(WorkspaceDiagnosticRequest, |p| {
            let previous = p
                .previous_result_ids
                .into_iter()
                .map(|r| (r.uri, r.value))
                .collect();
            state.workspace_diagnostics(&previous)
        }),
        DocumentDiagnosticRequest::METHOD => handle!(DocumentDiagnosticRequest, |p| state
            .pull_diagnostics(&p.text_document.uri, p.previous_result_id.as_deref())),
        _ => Response::new_err(
            req.id,
            ErrorCode::MethodNotFound as i32,
            format!("otters lsp does not handle {}", req.method),
        ),
    }
}

/// Applies one notification; returns the diagnostics to publish.
pub fn notification(state: &mut State, n: Notification) -> Vec<PublishDiagnosticsParams> {
    fn params<P: DeserializeOwned>(n: Notification) -> Option<P> {
        serde_json::from_value(n.params).ok()
    }
    match n.method.as_str() {
        DidOpenTextDocument::METHOD => params::<lsp_types::DidOpenTextDocumentParams>(n)
            .map(|p| {
                let d = p.text_document;
                vec![state.open(d.uri, d.version, d.text)]
            })
            .unwrap_or_default(),
        DidChangeTextDocument::METHOD => params::<lsp_types::DidChangeTextDocumentParams>(n)
            .and_then(|p| {
                let d = p.text_document;
                state.change(&d.uri, d.version, p.content_changes)
            })
            .into_iter()
            .collect(),
        DidCloseTextDocument::METHOD => params::<lsp_types::DidCloseTextDocumentParams>(n)
            .map(|p| vec![state.close(&p.text_document.uri)])
            .unwrap_or_default(),
        DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD => state.recheck_all(),
        _ => Vec::new(),
    }
}
