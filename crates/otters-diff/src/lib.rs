//! `otters diff A B`: what changed between two agents, in the terms a reviewer and a CI gate
//! need (docs/diff.md).
//!
//! Takes: two agents, each read from the local store or its registry ([`side::read`], through
//! `otters_pipeline::target::Target`) or built from an Agentfile directory into a temporary
//! store ([`build::build_dir`]). Returns: each agent's [`side::Side`] (model, pins, context
//! texts, data layers, platforms, referrers) and the classified [`change::Change`] list
//! ([`classify::changes`]), then a re-pinned image's SBOM component delta ([`sbom::compare_pins`]). Must never: download a data (ADD) layer, write to the user's store,
//! or print; the views are the binary's.
pub mod build;
pub mod chain;
pub mod change;
pub mod classify;
pub mod egress;
pub mod sbom;
pub mod seed;
pub mod side;
pub mod text;

pub use change::{Change, Class, Kind, What};
pub use classify::{changes, Options};
pub use side::{DiffError, Side};
