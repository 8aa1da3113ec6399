//! The lossless syntax tree: every physical line is kept (blank, comment, directive, instruction
//! or error) with exact byte spans, so a formatter or language server can be built on it.

use crate::diagnostic::{Diagnostic, Span};

/// A parsed Agentfile. Building it never fails: problems are in `diagnostics`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ast {
    /// The span of a leading U+FEFF, if any.
    pub bom: Option<Span>,
    pub lines: Vec<Line>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Ast {
    /// The instructions, in file order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.lines.iter().filter_map(|l| match &l.kind {
            LineKind::Instruction(i) => Some(&**i),
            _ => None,
        })
    }
}

/// One logical line: a physical line, or an instruction line together with its heredoc body.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// From the first byte of the line to the end of its last physical line, line break excluded.
    pub span: Span,
    pub kind: LineKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LineKind {
    Blank,
    Comment {
        text: Token,
    },
    /// `# syntax=VALUE` (recognised on any line; the checker says where it counts).
    Directive {
        value: Token,
    },
    /// Boxed, like the error's heredoc, so that a blank, comment or bad line costs a few dozen
    /// bytes, not the size of the largest instruction: a 1 MiB file of one-character lines is
    /// half a million lines.
    Instruction(Box<Instruction>),
    /// A line no rule fits; its diagnostic is in [`Ast::diagnostics`].
    Error {
        text: Token,
        heredoc: Option<Box<Heredoc>>,
    },
}

/// A token's text and where it was written. For quoted strings, `text` is the unquoted value and
/// `span` covers the quotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub span: Span,
}

impl Token {
    pub fn new(text: impl Into<String>, span: Span) -> Self {
        Self {
            text: text.into(),
            span,
        }
    }
}

/// A value that may be written bare or quoted; quoting matters for CONFIG typing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Bare(Token),
    Quoted(Token),
}

impl Value {
    pub fn token(&self) -> &Token {
        match self {
            Value::Bare(t) | Value::Quoted(t) => t,
        }
    }

    pub fn is_quoted(&self) -> bool {
        matches!(self, Value::Quoted(_))
    }
}

/// The instruction keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Keyword {
    From,
    Runtime,
    Model,
    Name,
    Context,
    Config,
    Env,
    Bin,
    Exec,
    Add,
    Label,
    Arg,
    Capability,
    Mount,
    Egress,
}

impl Keyword {
    pub const ALL: [Keyword; 15] = [
        Keyword::From,
        Keyword::Runtime,
        Keyword::Model,
        Keyword::Name,
        Keyword::Context,
        Keyword::Config,
        Keyword::Env,
        Keyword::Bin,
        Keyword::Exec,
        Keyword::Add,
        Keyword::Label,
        Keyword::Arg,
        Keyword::Capability,
        Keyword::Mount,
        Keyword::Egress,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Keyword::From => "FROM",
            Keyword::Runtime => "RUNTIME",
            Keyword::Model => "MODEL",
            Keyword::Name => "NAME",
            Keyword::Context => "CONTEXT",
            Keyword::Config => "CONFIG",
            Keyword::Env => "ENV",
            Keyword::Bin => "BIN",
            Keyword::Exec => "EXEC",
            Keyword::Add => "ADD",
            Keyword::Label => "LABEL",
            Keyword::Arg => "ARG",
            Keyword::Capability => "CAPABILITY",
            Keyword::Mount => "MOUNT",
            Keyword::Egress => "EGRESS",
        }
    }

    /// Case-insensitive look-up.
    pub fn parse(s: &str) -> Option<Keyword> {
        Keyword::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(s))
    }

    /// The usage line shown when an instruction is malformed.
    pub fn usage(self) -> &'static str {
        match self {
            Keyword::From => "FROM scratch | FROM <agent-image>",
            Keyword::Runtime => "RUNTIME <image>",
            Keyword::Model => "MODEL <provider>/<model>",
            Keyword::Name => "NAME <name>",
            Keyword::Context => "CONTEXT <NAME> [\"description\"] [file://<path> | <<MARKER]",
            Keyword::Config => "CONFIG <key>[!][=<value>] [\"description\"]",
            Keyword::Env => "ENV <KEY>=<value> [\"description\"]",
            Keyword::Bin => "BIN <name> <image> [\"description\"] [<<MARKER]",
            Keyword::Exec => "EXEC [\"arg\", ...]",
            Keyword::Add => "ADD <src> [<dst>] [\"description\"]",
            Keyword::Label => "LABEL <key>=<value>",
            Keyword::Arg => "ARG <NAME>[=<default>]",
            Keyword::Capability => "CAPABILITY <name> [<name>...]",
            Keyword::Mount => "MOUNT </absolute/target> [ro|rw] [\"description\"]",
            Keyword::Egress => "EGRESS <host>[:<port>] [\"description\"] | EGRESS none",
        }
    }

    /// Whether a heredoc body means something on this instruction.
    pub fn takes_heredoc(self) -> bool {
        matches!(self, Keyword::Context | Keyword::Bin)
    }
}

/// One instruction with its arguments and optional heredoc.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub keyword: Keyword,
    /// The keyword as written (`from`, `From`, `FROM`).
    pub keyword_token: Token,
    pub args: Args,
    pub heredoc: Option<Heredoc>,
    /// The instruction's own line, without the heredoc body.
    pub span: Span,
}

/// A heredoc: its opener, body (verbatim, trailing line breaks removed) and terminator.
#[derive(Clone, Debug, PartialEq)]
pub struct Heredoc {
    pub marker: String,
    /// `<<-`: leading tabs were stripped from body lines and the terminator.
    pub strip_tabs: bool,
    /// `<<"M"` or `<<'M'`.
    pub quoted: bool,
    pub opener: Span,
    pub body: String,
    /// From the first body byte to the end of the last body line.
    pub body_span: Span,
    /// `None` when the file ended first (an error has been reported).
    pub terminator: Option<Span>,
}

/// The arguments of each instruction, as written (no ARG expansion yet).
#[derive(Clone, Debug, PartialEq)]
pub enum Args {
    From {
        image: Token,
    },
    Runtime {
        image: Token,
    },
    Model {
        model: Token,
    },
    Name {
        name: Token,
    },
    Context {
        name: Token,
        description: Option<Token>,
        file: Option<Token>,
    },
    Config {
        key: Token,
        required: Option<Span>,
        value: Option<Value>,
        description: Option<Token>,
    },
    Env {
        key: Token,
        value: Value,
        description: Option<Token>,
    },
    Bin {
        name: Token,
        image: Token,
        description: Option<Token>,
    },
    Exec {
        args: Vec<Token>,
    },
    Add {
        src: Token,
        dst: Option<Token>,
        description: Option<Token>,
    },
    Label {
        key: Token,
        value: Value,
    },
    Arg {
        key: Token,
        value: Option<Value>,
    },
    Capability {
        names: Vec<Token>,
    },
    Mount {
        target: Token,
        mode: Option<Token>,
        description: Option<Token>,
    },
    Egress {
        target: Token,
        description: Option<Token>,
    },
}

impl Args {
    /// Every token of the arguments, in the order written.
    pub fn tokens(&self) -> Vec<&Token> {
        fn opt(t: Option<&Token>) -> Vec<&Token> {
            t.into_iter().collect()
        }
        match self {
            Args::From { image } | Args::Runtime { image } => vec![image],
            Args::Model { model } => vec![model],
            Args::Name { name } => vec![name],
            Args::Context {
                name,
                description,
                file,
            } => [vec![name], opt(description.as_ref()), opt(file.as_ref())].concat(),
            Args::Config {
                key,
                value,
                description,
                ..
            } => [
                vec![key],
                value.iter().map(Value::token).collect(),
                opt(description.as_ref()),
            ]
            .concat(),
            Args::Env {
                key,
                value,
                description,
            } => [vec![key, value.token()], opt(description.as_ref())].concat(),
            Args::Bin {
                name,
                image,
                description,
            } => [vec![name, image], opt(description.as_ref())].concat(),
            Args::Exec { args } => args.iter().collect(),
            Args::Add {
                src,
                dst,
                description,
            } => [vec![src], opt(dst.as_ref()), opt(description.as_ref())].concat(),
            Args::Label { key, value } => vec![key, value.token()],
            Args::Arg { key, value } => {
                [vec![key], value.iter().map(Value::token).collect()].concat()
            }
            Args::Capability { names } => names.iter().collect(),
            Args::Mount {
                target,
                mode,
                description,
            } => [vec![target], opt(mode.as_ref()), opt(description.as_ref())].concat(),
            Args::Egress {
                target,
                description,
            } => [vec![target], opt(description.as_ref())].concat(),
        }
    }
}
