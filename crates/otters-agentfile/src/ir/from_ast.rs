//! AST → typed model: ARG expansion, CONFIG typing, CONTEXT override-in-place, RUNTIME clearing
//! CONFIGs, CAPABILITY de-duplication, ADD destination normalisation.

use super::diags;
use super::model::{
    Add, Agent, Agentfile, Bin, Config, ConfigValue, Context, Egress, Env, Mount, Node,
    DEFAULT_SYNTAX,
};
use super::names::basename;
use crate::diagnostic::{Code, Diagnostic, SourceFile, Span};
use crate::syntax::{Args, Ast, Instruction, Keyword, LineKind, Token, Value};
use std::collections::BTreeMap;

/// The longest value one token may expand to: 128 KiB, the most Linux passes for one
/// environment string (`MAX_ARG_STRLEN`), so no longer value could reach a runtime anyway.
pub const MAX_EXPANDED_VALUE: usize = 128 * 1024;

/// The most bytes ARG references may substitute in one file: 1 MiB, the size of the largest
/// Agentfile otters reads, so expansion can at most double what the author wrote.
pub const MAX_EXPANDED_TOTAL: usize = 1024 * 1024;

/// Builds the model. Never fails: problems are returned as diagnostics beside a best-effort model.
pub fn from_ast(
    ast: &Ast,
    file: &SourceFile,
    build_args: &BTreeMap<String, String>,
) -> (Agentfile, Vec<Diagnostic>) {
    let mut l = Lowerer {
        src: &file.text,
        build_args,
        diags: Vec::new(),
        args: BTreeMap::new(),
        agent: Agent::default(),
        syntax: None,
        expanded: 0,
        expansion_exhausted: false,
        first_from: None,
        seen_instruction: false,
        config_spans: Vec::new(),
        context_spans: BTreeMap::new(),
        capability_spans: BTreeMap::new(),
    };
    l.directives(ast);
    for ins in ast.instructions() {
        l.check_written_form(ins);
        l.instruction(ins);
    }
    l.check_from(ast);
    let model = Agentfile {
        syntax: l.syntax.take().unwrap_or_else(|| DEFAULT_SYNTAX.to_owned()),
        agent: l.agent,
    };
    (model, l.diags)
}

struct Lowerer<'a> {
    src: &'a str,
    /// `--build-arg` values: they override an ARG's default.
    build_args: &'a BTreeMap<String, String>,
    diags: Vec<Diagnostic>,
    /// ARGs with a value, declared so far.
    args: BTreeMap<String, String>,
    agent: Agent,
    syntax: Option<String>,
    /// Bytes substituted for `${NAME}` references so far, in the whole file.
    expanded: usize,
    /// Set once [`MAX_EXPANDED_TOTAL`] was reached: later references stay literal, unreported.
    expansion_exhausted: bool,
    /// The first FROM's span.
    first_from: Option<Span>,
    /// True once an instruction was seen (FROM must come first).
    seen_instruction: bool,
    /// The span of each CONFIG in `agent.configs` (a RUNTIME clears both).
    config_spans: Vec<Span>,
    /// Name → (index in `contexts`, span of the first declaration): replacing stays O(log n).
    context_spans: BTreeMap<String, (usize, Span)>,
    capability_spans: BTreeMap<String, Span>,
}

impl Lowerer<'_> {
    /// Checks of how an instruction is written, whatever it is: keyword case, a heredoc it
    /// ignores or whose marker recurs in its body, and FROM first.
    fn check_written_form(&mut self, ins: &Instruction) {
        if ins.keyword_token.text != ins.keyword.as_str() {
            self.diags.push(diags::keyword_case(
                ins.keyword_token.span,
                &ins.keyword_token.text,
                ins.keyword,
            ));
        }
        if let Some(h) = &ins.heredoc {
            if !ins.keyword.takes_heredoc() && !h.body.is_empty() {
                self.diags
                    .push(diags::ignored_heredoc(h.opener, ins.keyword));
            }
            self.marker_in_body(h);
        }
        if !self.seen_instruction && ins.keyword != Keyword::From {
            self.diags
                .push(diags::from_not_first(ins.span, ins.keyword));
        }
        self.seen_instruction = true;
    }

    /// Adds one instruction to the model: one arm per instruction.
    fn instruction(&mut self, ins: &Instruction) {
        match &ins.args {
            Args::From { image } => self.from(ins, image),
            Args::Runtime { image } => self.runtime(ins, image),
            Args::Model { model } => self.agent.model = Some(self.node(model)),
            Args::Name { name } => self.agent.name = Some(self.node(name)),
            Args::Context {
                name,
                description,
                file,
            } => {
                let ctx = self.context(ins, name, description.as_ref(), file.as_ref());
                self.declare_context(ins, ctx);
            }
            Args::Config {
                key,
                required,
                value,
                description,
            } => {
                let cfg = self.config(
                    ins.span,
                    key,
                    required.is_some(),
                    value.as_ref(),
                    description.as_ref(),
                );
                self.config_spans.push(ins.span);
                self.agent.configs.push(cfg);
            }
            Args::Env {
                key,
                value,
                description,
            } => {
                let env = self.env(ins, key, value, description.as_ref());
                self.agent.envs.push(env);
            }
            Args::Bin {
                name,
                image,
                description,
            } => {
                let bin = self.bin(ins, name, image, description.as_ref());
                self.agent.bins.push(bin);
            }
            Args::Exec { args } => {
                if args.is_empty() {
                    self.diags.push(diags::empty_exec(ins.span));
                }
                let values = args.iter().map(|a| self.expand(a)).collect();
                self.agent.exec = Some(Node::new(values, ins.span));
            }
            Args::Add {
                src,
                dst,
                description,
            } => {
                let add = self.add(ins.span, src, dst.as_ref(), description.as_ref());
                self.agent.adds.push(add);
            }
            Args::Label { key, value } => {
                let k = self.expand(key);
                let v = self.expand(value.token());
                self.agent.labels.insert(k, Node::new(v, ins.span));
            }
            Args::Arg { key, value } => self.arg(ins, key, value.as_ref()),
            Args::Capability { names } => self.capabilities(names),
            Args::Mount {
                target,
                mode,
                description,
            } => {
                let mount = self.mount(ins, target, mode.as_ref(), description.as_ref());
                self.agent.mounts.push(mount);
            }
            Args::Egress {
                target,
                description,
            } => {
                let egress = Egress {
                    target: self.expand(target),
                    description: description.as_ref().map(|d| self.expand(d)),
                    span: Some(ins.span),
                };
                self.agent.egress.push(egress);
            }
        }
    }

    /// The first FROM names the parent; a later one is reported.
    fn from(&mut self, ins: &Instruction, image: &Token) {
        if let Some(first) = self.first_from {
            self.diags.push(diags::duplicate_from(ins.span, first));
        } else {
            self.first_from = Some(ins.span);
            self.agent.from = Some(self.node(image));
        }
    }

    /// RUNTIME clears the CONFIGs above it (each reported).
    fn runtime(&mut self, ins: &Instruction, image: &Token) {
        for (cfg, span) in self.agent.configs.iter().zip(&self.config_spans) {
            self.diags
                .push(diags::config_cleared(*span, ins.span, &cfg.key));
        }
        self.agent.configs.clear();
        self.config_spans.clear();
        self.agent.runtime = Some(self.node(image));
    }

    /// A CONTEXT of a name declared above replaces it in place (reported).
    fn declare_context(&mut self, ins: &Instruction, ctx: Context) {
        if let Some(&(i, first)) = self.context_spans.get(&ctx.name) {
            self.diags
                .push(diags::shadowed_context(ins.span, first, &ctx.name));
            self.agent.contexts[i] = ctx;
        } else {
            self.context_spans
                .insert(ctx.name.clone(), (self.agent.contexts.len(), ins.span));
            self.agent.contexts.push(ctx);
        }
    }

    fn env(
        &mut self,
        ins: &Instruction,
        key: &Token,
        value: &Value,
        description: Option<&Token>,
    ) -> Env {
        Env {
            key: self.expand(key),
            value: self.expand(value.token()),
            description: description.map(|d| self.expand(d)),
            span: Some(ins.span),
            key_span: Some(key.span),
        }
    }

    fn bin(
        &mut self,
        ins: &Instruction,
        name: &Token,
        image: &Token,
        description: Option<&Token>,
    ) -> Bin {
        Bin {
            name: self.expand(name),
            image: self.expand(image),
            description: description.map(|d| self.expand(d)),
            usage: ins
                .heredoc
                .as_ref()
                .map(|h| h.body.clone())
                .filter(|b| !b.is_empty()),
            span: Some(ins.span),
            name_span: Some(name.span),
            image_span: Some(image.span),
        }
    }

    /// An ARG with a value (its `--build-arg`, else its default) is recorded and expands below.
    fn arg(&mut self, ins: &Instruction, key: &Token, value: Option<&Value>) {
        let k = self.expand(key);
        let default = value.map(|v| self.expand(v.token()));
        if let Some(v) = self.build_args.get(&k).cloned().or(default) {
            self.args.insert(k.clone(), v.clone());
            self.agent.args.insert(k, Node::new(v, ins.span));
        }
    }

    /// CAPABILITY names, each kept once (a repeat is reported).
    fn capabilities(&mut self, names: &[Token]) {
        for n in names {
            let name = self.expand(n);
            if let Some(first) = self.capability_spans.get(&name) {
                self.diags
                    .push(diags::duplicate_capability(n.span, *first, &name));
            } else {
                self.capability_spans.insert(name.clone(), n.span);
                self.agent.capabilities.push(Node::new(name, n.span));
            }
        }
    }

    fn mount(
        &mut self,
        ins: &Instruction,
        target: &Token,
        mode: Option<&Token>,
        description: Option<&Token>,
    ) -> Mount {
        let read_only = mode.is_some_and(|m| m.text.eq_ignore_ascii_case("ro"));
        Mount {
            target: self.expand(target),
            read_only,
            description: description.map(|d| self.expand(d)),
            span: Some(ins.span),
        }
    }

    /// A file without FROM is reported, unless parsing already failed on the FROM line.
    fn check_from(&mut self, ast: &Ast) {
        if self.first_from.is_none()
            && ast.diagnostics.iter().all(|d| {
                !matches!(
                    d.code,
                    Code::MalformedInstruction | Code::UnknownInstruction
                )
            })
        {
            let span = ast
                .lines
                .first()
                .map_or(Span::point(0), |l| Span::point(l.span.start));
            self.diags.push(diags::missing_from(span));
        }
    }

    fn directives(&mut self, ast: &Ast) {
        for (i, line) in ast.lines.iter().enumerate() {
            if let LineKind::Directive { value } = &line.kind {
                let on_first_line = i == 0 && !self.src[..line.span.start].contains('\n');
                if !on_first_line {
                    self.diags.push(diags::misplaced_directive(line.span));
                } else if value.text != DEFAULT_SYNTAX {
                    self.diags
                        .push(diags::unsupported_syntax(value.span, &value.text));
                } else {
                    self.syntax = Some(value.text.clone());
                }
            }
        }
    }

    fn marker_in_body(&mut self, h: &crate::syntax::Heredoc) {
        if h.marker.len() < 2 {
            return;
        }
        let body = &self.src[h.body_span.start..h.body_span.end.min(self.src.len())];
        let mut offset = h.body_span.start;
        for line in body.split_inclusive('\n') {
            let t = line.trim();
            // The cheap test first: most body lines do not start with the marker, and splitting
            // every line into words was a tenth of a lint's instructions (issue 22).
            if t.starts_with(&h.marker) && has_word(t, &h.marker) {
                let lead = line.len() - line.trim_start().len();
                self.diags.push(diags::heredoc_marker_in_body(
                    Span::new(offset + lead, offset + lead + t.len()),
                    &h.marker,
                ));
            }
            offset += line.len();
        }
    }

    fn node(&mut self, t: &Token) -> Node<String> {
        Node::new(self.expand(t), t.span)
    }

    /// Replaces each `${NAME}` of an ARG declared above; an undefined one stays literal (AF203).
    ///
    /// Expansion is bounded (AF117): a value may grow to [`MAX_EXPANDED_VALUE`] bytes, and one
    /// file may substitute [`MAX_EXPANDED_TOTAL`] bytes in all. A reference that would pass
    /// either limit, and the rest of its token, stay literal, so `ARG b=${a}${a}` chains grow
    /// linearly, never exponentially.
    fn expand(&mut self, t: &Token) -> String {
        let text = &t.text;
        if !text.contains("${") {
            return text.clone();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        // Where in the source to look for the next reference, so that locating every reference
        // of a long token costs one pass over it, not one pass per reference.
        let mut cursor = t.span.start;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            let Some(close) = after.find('}') else {
                out.push_str(&rest[i..]);
                rest = "";
                break;
            };
            let name = &after[..close];
            let written = &rest[i..i + 3 + close];
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
            match self.args.get(name) {
                Some(_) if valid && self.expansion_exhausted => out.push_str(written),
                Some(v) if valid => {
                    let too_long = out.len() + v.len() > MAX_EXPANDED_VALUE;
                    let too_much = self.expanded + v.len() > MAX_EXPANDED_TOTAL;
                    if too_long || too_much {
                        let span = self.locate(t.span, written, &mut cursor);
                        let d = if too_much {
                            self.expansion_exhausted = true;
                            diags::expansion_too_long_total(span, name, MAX_EXPANDED_TOTAL)
                        } else {
                            diags::expansion_too_long_value(span, name, MAX_EXPANDED_VALUE)
                        };
                        self.diags.push(d);
                        // The rest of this value stays as written: one finding per value.
                        out.push_str(&rest[i..]);
                        return out;
                    }
                    self.expanded += v.len();
                    out.push_str(v);
                    self.locate(t.span, written, &mut cursor);
                }
                _ => {
                    if valid {
                        let span = self.locate(t.span, written, &mut cursor);
                        self.diags.push(diags::undefined_arg(span, name));
                    }
                    out.push_str(written);
                }
            }
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        out
    }

    /// The exact span of `needle` inside a token's source text at or after `*cursor`, else the
    /// token's span. Moves the cursor past the match.
    fn locate(&self, within: Span, needle: &str, cursor: &mut usize) -> Span {
        let from = (*cursor).clamp(within.start, within.end);
        match self.src.get(from..within.end).and_then(|s| s.find(needle)) {
            Some(i) => {
                let span = Span::new(from + i, from + i + needle.len());
                *cursor = span.end;
                span
            }
            None => within,
        }
    }

    fn context(
        &mut self,
        ins: &Instruction,
        name: &Token,
        description: Option<&Token>,
        file: Option<&Token>,
    ) -> Context {
        let body = ins
            .heredoc
            .as_ref()
            .map(|h| h.body.clone())
            .filter(|b| !b.is_empty());
        if let (Some(f), Some(h)) = (file, ins.heredoc.as_ref().filter(|h| !h.body.is_empty())) {
            self.diags.push(diags::context_file_and_heredoc(
                f.span, h.opener, &name.text,
            ));
        }
        let file_path = file.map(|f| self.expand(f));
        Context {
            name: self.expand(name),
            description: description.map(|d| self.expand(d)),
            content: if file_path.is_some() { None } else { body },
            file: file_path,
            span: Some(ins.span),
            name_span: Some(name.span),
            file_span: file.map(|f| f.span),
        }
    }

    fn config(
        &mut self,
        span: Span,
        key: &Token,
        required: bool,
        value: Option<&Value>,
        description: Option<&Token>,
    ) -> Config {
        let key_text = self.expand(key);
        let typed = value.map(|v| {
            let text = self.expand(v.token());
            if v.is_quoted() {
                return ConfigValue::String(text);
            }
            let typed = type_config_value(&text);
            if let ConfigValue::Float(f) = typed {
                if !f.is_finite() {
                    self.diags
                        .push(diags::non_finite_config(v.token().span, &key_text, &text));
                    return ConfigValue::String(text);
                }
            }
            typed
        });
        Config {
            key: key_text,
            value: typed,
            description: description.map(|d| self.expand(d)),
            required,
            span: Some(span),
            key_span: Some(key.span),
        }
    }

    fn add(
        &mut self,
        span: Span,
        src: &Token,
        dst: Option<&Token>,
        description: Option<&Token>,
    ) -> Add {
        let src_text = self.expand(src);
        let base = basename(&src_text);
        let name = match dst {
            None => base.to_owned(),
            Some(d) => {
                let written = self.expand(d);
                let mut name = written.as_str();
                let deprecated = name.starts_with('/');
                name = name
                    .strip_prefix("/data/")
                    .unwrap_or(name)
                    .trim_start_matches('/');
                while let Some(rest) = name.strip_prefix("./") {
                    name = rest;
                }
                let name = if name.is_empty() || name.ends_with('/') {
                    format!("{name}{base}")
                } else {
                    name.to_owned()
                };
                if deprecated {
                    self.diags
                        .push(diags::deprecated_add(d.span, &written, &name));
                }
                name
            }
        };
        Add {
            src: src_text,
            name,
            description: description.map(|d| self.expand(d)),
            span: Some(span),
            src_span: Some(src.span),
            name_span: Some(dst.map_or(src.span, |d| d.span)),
        }
    }
}

/// Types an unquoted CONFIG value as openotters does (Go `ParseBool`-exact `true`/`false`,
/// `ParseInt` base 10, then `ParseFloat`, else a string).
pub fn type_config_value(text: &str) -> ConfigValue {
    match text {
        "true" => return ConfigValue::Bool(true),
        "false" => return ConfigValue::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = text.parse::<i64>() {
            return ConfigValue::Int(i);
        }
    }
    let looks_numeric = digits
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && digits.bytes().any(|b| b.is_ascii_digit());
    let special = matches!(
        digits.to_ascii_lowercase().as_str(),
        "inf" | "infinity" | "nan"
    );
    if looks_numeric || special {
        if let Ok(f) = text.parse::<f64>() {
            return ConfigValue::Float(f);
        }
    }
    ConfigValue::String(text.to_owned())
}

/// True when `word` is one of `line`'s words (runs of letters, digits, `_` and `-`).
fn has_word(line: &str, word: &str) -> bool {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .any(|w| w == word)
}
