//! The `check` stage (see docs/architecture.md).
