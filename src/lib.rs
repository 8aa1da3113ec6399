//! otters: a compiler pipeline from Agentfiles to reproducible OCI artifacts.
//!
//! ```text
//! Agentfile bytes
//!   └─ syntax   pest grammar → lossless AST with byte spans + diagnostics   never fails
//!   └─ ir       AST → typed model (ARG expansion, CONFIG typing)            never fails
//!   └─ check    validation errors + lints, each with a stable code          pure
//!   └─ resolve  FROM parent merged; RUNTIME/BIN/FROM pinned to digests      registry I/O, lockfile
//!   └─ lower    model + pins → artifact plan (blobs, config, manifest)      pure, deterministic
//!   └─ oci      local store (OCI image layout), archives, registry client   I/O
//!   └─ run      image → materialised agent tree → exec runtime              I/O, exec
//! ```
//!
//! `syntax`, `ir`, `check` and `lower` do no I/O of their own: they take bytes (and, where files are
//! named, a reading trait) and return values plus diagnostics. Only [`cli`] prints.

pub mod build;
pub mod check;
pub mod cli;
pub mod diagnostic;
pub mod home;
pub mod ir;
pub mod json;
pub mod lower;
pub mod oci;
pub mod project_files;
pub mod reference;
pub mod resolve;
pub mod run;
pub mod syntax;

pub use diagnostic::{Diagnostic, Severity, Span};
