//! The typed model: AST → [`model::Agentfile`] (ARG expansion, CONFIG typing), and the config
//! blob's canonical JSON in both directions.
//!
//! Takes: an AST and build args. Returns: the model plus diagnostics. Must never: do I/O, or
//! stop at the first problem.

pub mod model;

pub use model::*;
