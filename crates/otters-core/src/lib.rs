//! What the Agentfile front end and the OCI side of otters both need, and nothing else: Go-compatible
//! canonical JSON (the only writer of hashed JSON bytes), terminal-safe escaping of untrusted text,
//! bounded and confined file reads, writing a project file back (`rewrite`), calendar arithmetic (`time`), and where otters keeps its state (`$OTTERS_HOME`).
//!
//! Depends on no other otters crate and on nothing async, networked or terminal-bound.

pub mod escape;
pub mod files;
pub mod home;
pub mod json;
pub mod rewrite;
pub mod time;
