//! Constructors for the diagnostics the `ir` stage raises while it builds the model.

use crate::diagnostic::{Code, Diagnostic, Fix, Span};
use crate::syntax::Keyword;

pub fn unsupported_syntax(span: Span, value: &str) -> Diagnostic {
    Diagnostic::new(
        Code::UnsupportedSyntax,
        span,
        format!("unsupported syntax `{value}`"),
    )
    .with_label("not a supported grammar")
    .with_help(format!(
        "use `# syntax={}` or remove the line",
        super::DEFAULT_SYNTAX
    ))
}

pub fn missing_from(span: Span) -> Diagnostic {
    Diagnostic::new(Code::MissingFrom, span, "the Agentfile has no FROM instruction")
        .with_help("start the file with `FROM scratch`, or `FROM <agent-image>` to inherit from a parent agent")
}

pub fn from_not_first(span: Span, keyword: Keyword) -> Diagnostic {
    Diagnostic::new(Code::FromNotFirst, span, format!("{} comes before FROM", keyword.as_str()))
        .with_label("FROM must be the first instruction")
        .with_help("move the FROM line above every other instruction (comments and blank lines may precede it)")
}

pub fn duplicate_from(span: Span, first: Span) -> Diagnostic {
    Diagnostic::new(Code::DuplicateFrom, span, "FROM appears more than once")
        .with_label("second FROM")
        .with_secondary(first, "first FROM here")
        .with_help("an Agentfile has exactly one FROM; delete one of them")
}

pub fn context_file_and_heredoc(file: Span, opener: Span, name: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ContextFileAndHeredoc,
        file,
        format!("CONTEXT {name} has both a file:// reference and a heredoc"),
    )
    .with_label("file reference")
    .with_secondary(opener, "heredoc")
    .with_help("keep one: either the file:// reference or the inline heredoc body")
}

pub fn empty_exec(span: Span) -> Diagnostic {
    Diagnostic::new(Code::EmptyExec, span, "EXEC needs at least one argument")
        .with_label("empty list")
        .with_help("write `EXEC [\"serve\"]`, or delete the line to use the runtime's default")
}

pub fn non_finite_config(span: Span, key: &str, value: &str) -> Diagnostic {
    Diagnostic::new(
        Code::NonFiniteConfigValue,
        span,
        format!("CONFIG {key}: `{value}` is not a finite number"),
    )
    .with_label("NaN and infinities cannot be stored")
    .with_help(format!(
        "quote it to keep it as text (`{key}=\"{value}\"`) or use a finite number"
    ))
}

pub fn undefined_arg(span: Span, name: &str) -> Diagnostic {
    Diagnostic::new(
        Code::UndefinedArg,
        span,
        format!("`${{{name}}}` refers to no ARG declared above"),
    )
    .with_label("left as literal text")
    .with_help(format!(
        "declare `ARG {name}=<default>` before this line, or pass `--build-arg {name}=<value>`"
    ))
}

pub fn shadowed_context(span: Span, first: Span, name: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ShadowedDeclaration,
        span,
        format!("CONTEXT {name} replaces an earlier CONTEXT {name}"),
    )
    .with_label("this one wins")
    .with_secondary(first, "earlier declaration, discarded")
    .with_help("delete one of the two, or give them different names")
}

pub fn config_cleared(span: Span, runtime: Span, key: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ConfigClearedByRuntime,
        span,
        format!("CONFIG {key} is discarded by a later RUNTIME"),
    )
    .with_label("cleared")
    .with_secondary(runtime, "RUNTIME clears every CONFIG above it")
    .with_help("move the CONFIG lines below the RUNTIME line")
}

pub fn deprecated_add(span: Span, written: &str, normalised: &str) -> Diagnostic {
    Diagnostic::new(
        Code::DeprecatedAddForm,
        span,
        format!("ADD destination `{written}` uses the old absolute form"),
    )
    .with_label(format!("stored as `{normalised}`"))
    .with_help(format!(
        "write the destination relative to etc/data: `{normalised}`"
    ))
}

pub fn keyword_case(span: Span, written: &str, keyword: Keyword) -> Diagnostic {
    Diagnostic::new(
        Code::KeywordCase,
        span,
        format!("keyword `{written}` is not upper-case"),
    )
    .with_help(format!("write `{}`", keyword.as_str()))
    .with_fix(Fix::replace(
        format!("Write `{}`", keyword.as_str()),
        span,
        keyword.as_str(),
        true,
    ))
}

pub fn heredoc_marker_in_body(span: Span, marker: &str) -> Diagnostic {
    Diagnostic::new(Code::HeredocMarkerInBody, span, format!("the heredoc body contains its own marker `{marker}`"))
        .with_label("this line is body text, not the terminator")
        .with_help(format!("the body ends only at a line holding exactly `{marker}`; pick a marker that does not occur in the text"))
}

pub fn misplaced_directive(span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::MisplacedSyntaxDirective,
        span,
        "`# syntax=` only counts on the first line; here it is a comment",
    )
    .with_help("move it to line 1, or delete it")
}

pub fn ignored_heredoc(span: Span, keyword: Keyword) -> Diagnostic {
    Diagnostic::new(
        Code::IgnoredHeredoc,
        span,
        format!("{} takes no heredoc; its body is ignored", keyword.as_str()),
    )
    .with_label("ignored")
    .with_help("only CONTEXT and BIN take a heredoc body; remove it")
}

pub fn duplicate_capability(span: Span, first: Span, name: &str) -> Diagnostic {
    Diagnostic::new(
        Code::DuplicateCapability,
        span,
        format!("capability `{name}` is already listed"),
    )
    .with_secondary(first, "first listed here")
    .with_help("remove the repeated name")
}

/// `1 MiB`, `128 KiB`: a limit as people read it.
fn size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

pub fn expansion_too_long_value(span: Span, name: &str, limit: usize) -> Diagnostic {
    Diagnostic::new(
        Code::ArgExpansionTooLong,
        span,
        format!(
            "expanding `${{{name}}}` here would make a value longer than {}",
            size(limit)
        ),
    )
    .with_label("left unexpanded")
    .with_help(format!(
        "an ARG reference copies the ARG's whole value; keep each expanded value under {} (long text belongs in a CONTEXT heredoc or an ADDed file)",
        size(limit)
    ))
}

pub fn expansion_too_long_total(span: Span, name: &str, limit: usize) -> Diagnostic {
    Diagnostic::new(
        Code::ArgExpansionTooLong,
        span,
        format!(
            "expanding `${{{name}}}` here would make ARG references substitute more than {} in this file",
            size(limit)
        ),
    )
    .with_label("expansion stops here; this and later references are left unexpanded")
    .with_help(format!(
        "every `${{...}}` copies its ARG's whole value, so ARGs built from other ARGs grow fast; refer to long values less often (ARG references may substitute at most {} per file)",
        size(limit)
    ))
}
