//! The `fmt` stage: one canonical layout for an Agentfile, built on the lossless AST.
//!
//! Takes: Agentfile bytes or text. Returns: the canonical text, or the syntax errors that stop
//! formatting (with the source they point into, for rendering). Must never: reorder, drop or
//! add an instruction or comment, change a heredoc body, change what the file parses to, or do
//! I/O. The layout is stated in docs/fmt.md; [`unified`] shows what formatting would change.

mod diff;
mod layout;
mod quote;
#[cfg(test)]
mod tests;

pub use diff::{line_changes, unified, LineChange};
pub use quote::quote;

use crate::diagnostic::{Code, Diagnostic, SourceFile};
use crate::syntax;

/// Why a file was not formatted: its syntax errors, and the text they point into.
#[derive(Debug)]
pub struct Refused {
    pub file: SourceFile,
    pub diagnostics: Vec<Diagnostic>,
}

/// The byte-order-mark error (AF002): the one syntax error formatting repairs, by dropping the
/// mark.
const BOM_CODE: Code = Code::ByteOrderMark;

/// Formats Agentfile text. `Err` holds the syntax errors when there are any.
pub fn format_str(text: &str) -> Result<String, Vec<Diagnostic>> {
    let ast = syntax::parse_str(text);
    let errors: Vec<Diagnostic> = ast
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && d.code != BOM_CODE)
        .cloned()
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(layout::render(text, &ast))
}

/// Formats the bytes of a file called `name`: decodes them (AF001 when they are not UTF-8), then
/// [`format_str`].
pub fn format_bytes(name: &str, bytes: &[u8]) -> Result<String, Refused> {
    match syntax::decode(bytes) {
        Ok(text) => format_str(text).map_err(|diagnostics| Refused {
            file: SourceFile::new(name, text),
            diagnostics,
        }),
        Err(d) => {
            let valid = d.start().min(bytes.len());
            Err(Refused {
                file: SourceFile::new(name, String::from_utf8_lossy(&bytes[..valid])),
                diagnostics: vec![d],
            })
        }
    }
}
