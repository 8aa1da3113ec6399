//! The `resolve` stage (see docs/architecture.md).
