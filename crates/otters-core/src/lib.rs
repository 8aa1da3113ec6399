//! What the Agentfile front end and the OCI side of otters both need, and nothing else: Go-compatible
//! canonical JSON (the only writer of hashed JSON bytes), terminal-safe escaping of untrusted text,
//! bounded and confined file reads, writing a project file back (`rewrite`), calendar arithmetic
//! (`time`), where otters keeps its state (`$OTTERS_HOME`), and, beside the JSON writer, the one
//! YAML quoter (`yaml`) that the hashed `agent.yaml` and the `kube` objects share.
//!
//! Depends on no other otters crate and on nothing async, networked or terminal-bound.

pub mod escape;
pub mod files;
pub mod home;
pub mod json;
pub mod rewrite;
pub mod time;
pub mod yaml;
