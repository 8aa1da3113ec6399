//! The `check` stage (see docs/architecture.md).

pub mod registry;
