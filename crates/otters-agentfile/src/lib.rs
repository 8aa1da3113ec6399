//! The Agentfile language: from bytes to a checked, typed model, with a diagnostic for every problem.
//!
//! ```text
//! Agentfile bytes
//!   └─ syntax   pest grammar → lossless AST with byte spans + diagnostics   never fails
//!   └─ ir       AST → typed model (ARG expansion, CONFIG typing)            never fails
//!   └─ check    validation errors + lints, each with a stable code          pure
//!   └─ fmt      lossless AST → canonical text (otters fmt)                   pure
//! ```
//!
//! No module here does I/O of its own: they take bytes (and, where files are named, a reading
//! trait) and return values plus [`Diagnostic`]s. The crate depends on nothing async, networked or
//! terminal-bound, so an editor's language server or a WebAssembly playground can use it whole.

pub mod check;
#[cfg(test)]
mod corpus;
pub mod diagnostic;
pub mod fmt;
pub mod ir;
pub mod syntax;

pub use diagnostic::{Code, Diagnostic, Severity, Span};
