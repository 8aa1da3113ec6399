//! The `lower` stage (see docs/architecture.md).
