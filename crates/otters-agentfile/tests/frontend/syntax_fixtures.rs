//! One harness for the `syntax` and `ir` stages: every fixture under `testdata/syntax/{ok,err}`
//! becomes snapshots of its AST, its model (config-blob JSON) and its diagnostics.
//!
//! `ok/` fixtures must produce no error; `err/` fixtures must produce at least one.

use otters_agentfile::diagnostic::{Diagnostic, SourceFile};
use otters_agentfile::syntax::{Args, Ast, LineKind, Token, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn tok(t: &Token) -> String {
    format!("{:?}@{}..{}", t.text, t.span.start, t.span.end)
}

fn opt(t: Option<&Token>) -> String {
    t.map_or_else(|| "-".to_owned(), tok)
}

fn val(v: &Value) -> String {
    match v {
        Value::Bare(t) => tok(t),
        Value::Quoted(t) => format!("quoted {}", tok(t)),
    }
}

/// A compact, reviewable rendering of the lossless AST: one line per logical line.
fn render_ast(file: &SourceFile, ast: &Ast) -> String {
    let mut out = String::new();
    if let Some(b) = ast.bom {
        let _ = writeln!(out, "bom {}..{}", b.start, b.end);
    }
    for line in &ast.lines {
        let n = file.line_of(line.span.start);
        let what = match &line.kind {
            LineKind::Blank => "blank".to_owned(),
            LineKind::Comment { text } => format!("comment {}", tok(text)),
            LineKind::Directive { value } => format!("directive {}", tok(value)),
            LineKind::Error { text, heredoc } => {
                format!(
                    "error {} heredoc={}",
                    tok(text),
                    heredoc.as_ref().map_or("-".into(), |h| h.marker.clone())
                )
            }
            LineKind::Instruction(i) => {
                let args = render_args(&i.args);
                let heredoc = i.heredoc.as_ref().map_or(String::new(), |h| {
                    format!(
                        " <<{}{}{} body={:?}",
                        if h.strip_tabs { "-" } else { "" },
                        if h.quoted { "(quoted)" } else { "" },
                        h.marker,
                        h.body
                    )
                });
                format!(
                    "{} ({:?}) {args}{heredoc}",
                    i.keyword.as_str(),
                    i.keyword_token.text
                )
            }
        };
        let _ = writeln!(out, "{n:>3} {what}");
    }
    out
}

/// One instruction's arguments, as [`render_ast`] shows them.
fn render_args(args: &Args) -> String {
    match args {
        Args::From { image } | Args::Runtime { image } => tok(image),
        Args::Model { model } => tok(model),
        Args::Name { name } => tok(name),
        Args::Context {
            name,
            description,
            file,
        } => {
            format!(
                "{} desc={} file={}",
                tok(name),
                opt(description.as_ref()),
                opt(file.as_ref())
            )
        }
        Args::Config {
            key,
            required,
            value,
            description,
        } => format!(
            "{} required={} value={} desc={}",
            tok(key),
            required.is_some(),
            value.as_ref().map_or("-".into(), val),
            opt(description.as_ref())
        ),
        Args::Env {
            key,
            value,
            description,
        } => {
            format!(
                "{} value={} desc={}",
                tok(key),
                val(value),
                opt(description.as_ref())
            )
        }
        Args::Bin {
            name,
            image,
            description,
        } => {
            format!(
                "{} {} desc={}",
                tok(name),
                tok(image),
                opt(description.as_ref())
            )
        }
        Args::Exec { args } => args.iter().map(tok).collect::<Vec<_>>().join(", "),
        Args::Add {
            src,
            dst,
            description,
        } => {
            format!(
                "{} dst={} desc={}",
                tok(src),
                opt(dst.as_ref()),
                opt(description.as_ref())
            )
        }
        Args::Label { key, value } => format!("{} = {}", tok(key), val(value)),
        Args::Arg { key, value } => {
            format!("{} = {}", tok(key), value.as_ref().map_or("-".into(), val))
        }
        Args::Capability { names } => names.iter().map(tok).collect::<Vec<_>>().join(" "),
        Args::Mount {
            target,
            mode,
            description,
        } => {
            format!(
                "{} mode={} desc={}",
                tok(target),
                opt(mode.as_ref()),
                opt(description.as_ref())
            )
        }
        Args::Egress {
            target,
            description,
        } => format!("{} desc={}", tok(target), opt(description.as_ref())),
    }
}

fn render_diags(file: &SourceFile, diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let s = d.span_or_start();
        let a = file.line_col(s.start);
        let b = file.line_col(s.end);
        let _ = writeln!(
            out,
            "{}:{}-{}:{} {}[{}] {}",
            a.line, a.column, b.line, b.column, d.severity, d.code, d.message
        );
        if let Some(h) = &d.help {
            let _ = writeln!(out, "    help: {h}");
        }
    }
    out
}

fn run_dir(kind: &str) -> usize {
    let dir = crate::workspace("testdata/syntax").join(kind);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in &paths {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(path).unwrap();
        let text = match otters_agentfile::syntax::decode(&bytes) {
            Ok(t) => t.to_owned(),
            Err(d) => {
                assert_eq!(kind, "err", "{stem}: ok fixture is not UTF-8");
                let file = SourceFile::new(
                    path.display().to_string(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                );
                snap(
                    &format!("{kind}__{stem}__diagnostics"),
                    &render_diags(&file, &[d]),
                );
                continue;
            }
        };
        let file = SourceFile::new(format!("{stem}.agentfile"), text);
        let ast = otters_agentfile::syntax::parse(&file);
        let (model, ir_diags) = otters_agentfile::ir::from_ast(&ast, &file, &BTreeMap::new());
        let mut diags: Vec<Diagnostic> = ast.diagnostics.iter().chain(&ir_diags).cloned().collect();
        diags.sort_by_key(|d| (d.start(), d.code));
        let errors = diags.iter().filter(|d| d.is_error()).count();
        match kind {
            "ok" => assert_eq!(errors, 0, "{stem}: {}", render_diags(&file, &diags)),
            _ => assert!(errors > 0, "{stem}: an err fixture produced no error"),
        }
        snap(&format!("{kind}__{stem}__ast"), &render_ast(&file, &ast));
        snap(
            &format!("{kind}__{stem}__diagnostics"),
            &render_diags(&file, &diags),
        );
        if kind == "ok" {
            let blob = otters_agentfile::ir::config_blob(&model).unwrap();
            snap(
                &format!("{kind}__{stem}__model"),
                &String::from_utf8(blob).unwrap(),
            );
        }
    }
    paths.len()
}

fn snap(name: &str, value: &str) {
    insta::with_settings!({
        snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots/syntax"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, value);
    });
}

#[test]
fn ok_fixtures() {
    assert!(run_dir("ok") >= 5);
}

#[test]
fn err_fixtures() {
    assert!(run_dir("err") >= 7);
}
