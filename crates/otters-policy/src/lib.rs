//! The organisation policy (issue 35): what any agent may be — where its images come from, which
//! model providers, capabilities, BINs, mounts and EGRESS destinations it may have, whether its
//! images must be pinned and whose signature they must carry — read from `[policy]` tables in
//! layers that can only narrow, and held against an Agentfile's model.
//!
//! Takes: TOML text and files (`$OTTERS_HOME/config.toml`, policy files, `otters.toml`), and typed
//! Agentfile models. Returns: a [`Policy`], its [`Violation`]s for a model, and the same as lint
//! diagnostics (`AF5xx`). Must never: turn a malformed or empty policy into "allow all", use the
//! network, or print. The signature rule is only carried here: the pipeline verifies it.

pub mod check;
pub mod egress;
mod error;
pub mod load;
pub mod model;
mod parse;

pub use check::{check_agent, RuleName, Violation};
pub use load::{PolicyError, POLICY_ENV};
pub use model::{Layer, MountLevel, Origin, Pattern, Policy, Rule, Signature, Source};

#[cfg(test)]
mod tests;
