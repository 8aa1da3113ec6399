//! pest pairs → [`Ast`]. Every line becomes exactly one [`Line`]; every problem a diagnostic.

use super::ast::{Args, Ast, Heredoc, Instruction, Keyword, Line, LineKind, Token, Value};
use super::errors;
use super::unquote::unquote;
use super::{AgentfileParser, Rule};
use crate::diagnostic::{Code, Diagnostic, Span};
use pest::iterators::{Pair, Pairs};
use pest::Parser as _;

pub fn parse(text: &str) -> Ast {
    let mut ast = Ast::default();
    let pairs = match AgentfileParser::parse(Rule::file, text) {
        Ok(mut p) => p.next().map(Pair::into_inner),
        Err(e) => {
            // The grammar accepts every line, so this only happens on inputs it cannot describe
            // at all; report it rather than panic.
            let at = match e.location {
                pest::error::InputLocation::Pos(p) | pest::error::InputLocation::Span((p, _)) => p,
            };
            ast.diagnostics.push(
                Diagnostic::new(
                    Code::MalformedInstruction,
                    Span::point(at),
                    "this text cannot be read as an Agentfile",
                )
                .with_help("check the line for stray control characters"),
            );
            None
        }
    };
    let Some(pairs) = pairs else { return ast };
    let mut b = Builder {
        text,
        diags: Vec::new(),
    };
    for pair in pairs {
        match pair.as_rule() {
            Rule::bom => ast.bom = Some(pair.as_span().into()),
            Rule::EOI => {}
            _ => {
                let span = b.line_span(&pair);
                let kind = b.line(pair);
                ast.lines.push(Line { span, kind });
            }
        }
    }
    if let Some(bom) = ast.bom {
        b.diags.insert(0, errors::byte_order_mark(bom));
    }
    ast.diagnostics = b.diags;
    ast
}

struct Builder<'t> {
    text: &'t str,
    diags: Vec<Diagnostic>,
}

impl Builder<'_> {
    /// A line pair's span without its final line break.
    fn line_span(&self, pair: &Pair<Rule>) -> Span {
        let s = pair.as_span();
        let mut end = s.end();
        let bytes = self.text.as_bytes();
        if end > s.start() && bytes[end - 1] == b'\n' {
            end -= 1;
            if end > s.start() && bytes[end - 1] == b'\r' {
                end -= 1;
            }
        }
        Span::new(s.start(), end)
    }

    fn line(&mut self, pair: Pair<Rule>) -> LineKind {
        match pair.as_rule() {
            Rule::comment_line => {
                let c = pair.into_inner().next();
                LineKind::Comment {
                    text: c.map_or_else(|| Token::new("", Span::default()), |c| trimmed(&c)),
                }
            }
            Rule::directive_line => {
                let value = pair
                    .into_inner()
                    .next()
                    .and_then(|d| d.into_inner().next())
                    .map_or_else(|| Token::new("", Span::default()), |v| trimmed(&v));
                LineKind::Directive { value }
            }
            Rule::instruction_line => {
                let mut inner = pair.into_inner();
                let Some(ins) = inner.next() else {
                    return LineKind::Blank;
                };
                let heredoc = self.heredoc(inner.next(), inner.next());
                LineKind::Instruction(Box::new(self.instruction(ins, heredoc)))
            }
            Rule::bad_line => {
                let mut inner = pair.into_inner();
                let Some(text) = inner.next() else {
                    return LineKind::Blank;
                };
                let heredoc = self.heredoc(inner.next(), inner.next());
                let token = trimmed(&text);
                self.bad_line(&token);
                LineKind::Error {
                    text: token,
                    heredoc: heredoc.map(Box::new),
                }
            }
            _ => LineKind::Blank,
        }
    }

    fn heredoc(&mut self, open: Option<Pair<Rule>>, body: Option<Pair<Rule>>) -> Option<Heredoc> {
        let (open, body) = (open?, body?);
        let opener: Span = open.as_span().into();
        let mut strip_tabs = false;
        let mut quoted = false;
        let mut marker = String::new();
        for p in open.into_inner() {
            match p.as_rule() {
                Rule::strip_tabs => strip_tabs = true,
                Rule::quoted_marker | Rule::bare_marker => {
                    quoted = p.as_rule() == Rule::quoted_marker;
                    marker = p
                        .into_inner()
                        .next()
                        .map(|m| m.as_str().to_owned())
                        .unwrap_or_default();
                }
                _ => {}
            }
        }
        let body_start = body.as_span().start();
        let mut body_end = body_start;
        let mut lines: Vec<&str> = Vec::new();
        let mut terminator = None;
        for p in body.into_inner() {
            match p.as_rule() {
                Rule::body_line => {
                    body_end = p.as_span().end();
                    let l = p.as_str();
                    let l = l.strip_suffix('\n').unwrap_or(l);
                    let l = l.strip_suffix('\r').unwrap_or(l);
                    lines.push(if strip_tabs {
                        l.trim_start_matches('\t')
                    } else {
                        l
                    });
                }
                Rule::heredoc_terminator => {
                    let s = p.as_span();
                    let t = p.as_str().trim_end_matches(['\n', '\r']);
                    let lead = t.len() - t.trim_start().len();
                    terminator = Some(Span::new(s.start() + lead, s.start() + t.trim_end().len()));
                }
                _ => {}
            }
        }
        if terminator.is_none() {
            self.diags
                .push(errors::unterminated_heredoc(opener, &marker));
        }
        let mut body_text = lines.join("\n");
        let trimmed_len = body_text.trim_end_matches('\n').len();
        body_text.truncate(trimmed_len);
        let body_span = Span::new(body_start, body_end.max(body_start));
        Some(Heredoc {
            marker,
            strip_tabs,
            quoted,
            opener,
            body: body_text,
            body_span,
            terminator,
        })
    }

    fn instruction(&mut self, pair: Pair<Rule>, heredoc: Option<Heredoc>) -> Instruction {
        let span: Span = pair.as_span().into();
        let rule = pair.as_rule();
        // Keyword rules are silent (a pair for each keyword tried would cost more than the rest of
        // the line): the keyword is the instruction's text up to the first blank or `[`.
        let text = pair.as_str();
        let kw_len = text.find([' ', '\t', '[']).unwrap_or(text.len());
        let kw = Token::new(&text[..kw_len], Span::new(span.start, span.start + kw_len));
        let parts = pair.into_inner();
        let keyword = keyword_of(rule);
        let args = self.args(keyword, parts);
        Instruction {
            keyword,
            keyword_token: kw,
            args,
            heredoc,
            span,
        }
    }

    fn args(&mut self, keyword: Keyword, parts: Pairs<'_, Rule>) -> Args {
        let mut it = parts.into_iter().peekable();
        let next_word = |it: &mut std::iter::Peekable<Pairs<'_, Rule>>| -> Token {
            it.next().map_or_else(
                || Token::new("", Span::default()),
                |p| Token::new(p.as_str(), p.as_span().into()),
            )
        };
        macro_rules! opt {
            ($rule:path) => {
                match it.peek() {
                    Some(p) if p.as_rule() == $rule => it.next(),
                    _ => None,
                }
            };
        }
        match keyword {
            Keyword::From => Args::From {
                image: next_word(&mut it),
            },
            Keyword::Runtime => Args::Runtime {
                image: next_word(&mut it),
            },
            Keyword::Model => Args::Model {
                model: next_word(&mut it),
            },
            Keyword::Name => Args::Name {
                name: next_word(&mut it),
            },
            Keyword::Context => {
                let name = next_word(&mut it);
                let description = opt!(Rule::string).map(|p| self.string(&p));
                let file = opt!(Rule::fileref).map(|p| {
                    let s: Span = p.as_span().into();
                    Token::new(&p.as_str()["file://".len()..], s)
                });
                Args::Context {
                    name,
                    description,
                    file,
                }
            }
            Keyword::Config => {
                let key = next_word(&mut it);
                let required = opt!(Rule::required).map(|p| p.as_span().into());
                let value = opt!(Rule::value).map(|p| self.value(p));
                let description = opt!(Rule::string).map(|p| self.string(&p));
                Args::Config {
                    key,
                    required,
                    value,
                    description,
                }
            }
            Keyword::Env => {
                let key = next_word(&mut it);
                let value = opt!(Rule::value).map_or_else(
                    || Value::Bare(Token::new("", Span::default())),
                    |p| self.value(p),
                );
                let description = opt!(Rule::string).map(|p| self.string(&p));
                Args::Env {
                    key,
                    value,
                    description,
                }
            }
            Keyword::Bin => {
                let name = next_word(&mut it);
                let image = next_word(&mut it);
                let description = opt!(Rule::string).map(|p| self.string(&p));
                Args::Bin {
                    name,
                    image,
                    description,
                }
            }
            Keyword::Exec => Args::Exec {
                args: it.map(|p| self.string(&p)).collect(),
            },
            Keyword::Add => {
                let src = next_word(&mut it);
                let dst = opt!(Rule::word).map(|p| Token::new(p.as_str(), p.as_span().into()));
                let description = opt!(Rule::string).map(|p| self.string(&p));
                Args::Add {
                    src,
                    dst,
                    description,
                }
            }
            Keyword::Label => {
                let key = next_word(&mut it);
                let value = opt!(Rule::value).map_or_else(
                    || Value::Bare(Token::new("", Span::default())),
                    |p| self.value(p),
                );
                Args::Label { key, value }
            }
            Keyword::Arg => {
                let key = next_word(&mut it);
                let value = opt!(Rule::value).map(|p| self.value(p));
                Args::Arg { key, value }
            }
            Keyword::Capability => Args::Capability {
                names: it
                    .map(|p| Token::new(p.as_str(), p.as_span().into()))
                    .collect(),
            },
            // Fields are evaluated in the order written: the tokens in the order of the line.
            Keyword::Mount => Args::Mount {
                target: next_word(&mut it),
                mode: opt!(Rule::mount_mode).map(|p| Token::new(p.as_str(), p.as_span().into())),
                description: opt!(Rule::string).map(|p| self.string(&p)),
            },
            Keyword::Egress => Args::Egress {
                target: next_word(&mut it),
                description: opt!(Rule::string).map(|p| self.string(&p)),
            },
        }
    }

    fn value(&mut self, pair: Pair<Rule>) -> Value {
        let span: Span = pair.as_span().into();
        match pair.into_inner().next() {
            Some(p) if p.as_rule() == Rule::string => Value::Quoted(self.string(&p)),
            Some(p) => Value::Bare(Token::new(p.as_str(), p.as_span().into())),
            None => Value::Bare(Token::new("", span)),
        }
    }

    /// Unquotes a `string` pair; a bad escape is reported and the raw text kept.
    fn string(&mut self, pair: &Pair<Rule>) -> Token {
        let span: Span = pair.as_span().into();
        let raw = pair.as_str();
        let inner = &raw[1..raw.len().saturating_sub(1).max(1)];
        match unquote(inner) {
            Ok(s) => Token::new(s, span),
            Err(e) => {
                let at = span.start + 1;
                self.diags.push(errors::invalid_escape(
                    Span::new(at + e.start, at + e.end),
                    &e.message,
                ));
                Token::new(inner, span)
            }
        }
    }

    /// Explains a line no rule fits: an unknown keyword, or what its instruction expected.
    fn bad_line(&mut self, text: &Token) {
        let first_end = text
            .text
            .find([' ', '\t', '[', '='])
            .unwrap_or(text.text.len());
        let first = &text.text[..first_end];
        let first_span = Span::new(text.span.start, text.span.start + first_end);
        let Some(keyword) = Keyword::parse(first) else {
            self.diags
                .push(errors::unknown_instruction(first_span, first));
            return;
        };
        let (mut pos, mut expected) = match AgentfileParser::parse(Rule::single, &text.text) {
            Ok(_) => (
                text.text.len(),
                "unexpected text after the instruction".to_owned(),
            ),
            Err(e) => describe(&e, &text.text),
        };
        if pos <= first_end {
            // pest stopped at the keyword: the arguments are missing or shaped wrongly as a whole.
            let rest = &text.text[first_end..];
            let lead = rest.len() - rest.trim_start().len();
            pos = if rest.trim().is_empty() {
                text.text.len()
            } else {
                first_end + lead
            };
            expected = shape_problem(keyword, rest.trim());
        }
        let at = text.span.start + pos;
        let rest = &text.text[pos.min(text.text.len())..];
        let tok_len = rest.find([' ', '\t']).unwrap_or(rest.len());
        self.diags.push(errors::malformed(
            Span::new(at, at + tok_len),
            keyword,
            &expected,
        ));
    }
}

/// What is wrong with an instruction's arguments taken as a whole.
fn shape_problem(keyword: Keyword, rest: &str) -> String {
    if rest.is_empty() {
        let what = match keyword {
            Keyword::From => "the parent image (or `scratch`)",
            Keyword::Runtime => "the runtime image",
            Keyword::Model => "the model (`provider/model`)",
            Keyword::Name => "the agent name",
            Keyword::Context => "the context name",
            Keyword::Config => "the config key",
            Keyword::Env => "`KEY=value`",
            Keyword::Bin => "the tool name and its image",
            Keyword::Exec => "the argument list",
            Keyword::Add => "the source path",
            Keyword::Label => "`key=value`",
            Keyword::Arg => "the argument name",
            Keyword::Capability => "at least one capability name",
            Keyword::Mount => "the target path",
            Keyword::Egress => "the host (`host[:port]`, or `none`)",
        };
        return format!("missing {what}");
    }
    match keyword {
        Keyword::Env | Keyword::Label if !rest.contains('=') => {
            "missing `=` between the key and the value".to_owned()
        }
        Keyword::Env | Keyword::Label => "missing the value after `=`".to_owned(),
        Keyword::Bin if rest.split_whitespace().count() < 2 => {
            "missing the image after the tool name".to_owned()
        }
        Keyword::Exec => {
            "expected a list of quoted strings separated by commas, like [\"serve\", \"-v\"]"
                .to_owned()
        }
        _ => format!(
            "unexpected `{}`",
            rest.split_whitespace().next().unwrap_or(rest)
        ),
    }
}

/// A pest error on one instruction as (offset, "expected …" text).
fn describe(e: &pest::error::Error<Rule>, text: &str) -> (usize, String) {
    let pos = match e.location {
        pest::error::InputLocation::Pos(p) | pest::error::InputLocation::Span((p, _)) => p,
    };
    let mut wanted: Vec<&str> = Vec::new();
    if let pest::error::ErrorVariant::ParsingError { positives, .. } = &e.variant {
        for r in positives {
            let w = match r {
                Rule::word | Rule::value => "a value",
                Rule::string => "a quoted string",
                Rule::fileref => "a file:// reference",
                Rule::required => "`!`",
                Rule::mount_mode => "`ro` or `rw`",
                Rule::EOI => "the end of the line",
                _ => continue,
            };
            if !wanted.contains(&w) {
                wanted.push(w);
            }
        }
    }
    let rest = text.get(pos..).unwrap_or("");
    let found = rest.split([' ', '\t']).next().unwrap_or("");
    let expected = match (wanted.is_empty(), found.is_empty()) {
        (true, true) => "the line ends too early".to_owned(),
        (true, false) => format!("unexpected `{found}`"),
        (false, true) => format!("missing {}", wanted.join(" or ")),
        (false, false) => format!("unexpected `{found}`, expected {}", wanted.join(" or ")),
    };
    (pos, expected)
}

fn trimmed(p: &Pair<Rule>) -> Token {
    let s = p.as_str();
    let t = s.trim_end();
    Token::new(
        t,
        Span::new(p.as_span().start(), p.as_span().start() + t.len()),
    )
}

fn keyword_of(rule: Rule) -> Keyword {
    match rule {
        Rule::runtime => Keyword::Runtime,
        Rule::model => Keyword::Model,
        Rule::name => Keyword::Name,
        Rule::context => Keyword::Context,
        Rule::config => Keyword::Config,
        Rule::env => Keyword::Env,
        Rule::bin => Keyword::Bin,
        Rule::exec => Keyword::Exec,
        Rule::add => Keyword::Add,
        Rule::label => Keyword::Label,
        Rule::arg => Keyword::Arg,
        Rule::capability => Keyword::Capability,
        Rule::mount => Keyword::Mount,
        Rule::egress => Keyword::Egress,
        _ => Keyword::From,
    }
}
