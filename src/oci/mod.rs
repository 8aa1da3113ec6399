//! The `oci` stage (see docs/architecture.md).
