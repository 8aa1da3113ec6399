//! The `syntax` stage (see docs/architecture.md).
