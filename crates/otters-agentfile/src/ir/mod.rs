//! The `ir` stage: AST → typed [`Agentfile`] model (ARG expansion, CONFIG typing), and the config
//! blob's canonical JSON in both directions.
//!
//! Takes: an AST, its source and build args. Returns: the model plus diagnostics. Must never: do
//! I/O, or stop at the first problem.

mod blob;
mod diags;
pub mod egress;
mod from_ast;
pub mod model;
pub mod names;

pub use blob::{config_blob, from_config_blob, to_json, BlobError, CONFIG_MEDIA_TYPE};
pub use from_ast::{from_ast, type_config_value, MAX_EXPANDED_TOTAL, MAX_EXPANDED_VALUE};
pub use model::*;

#[cfg(test)]
mod tests;
