//! The `run` stage (see docs/architecture.md).
