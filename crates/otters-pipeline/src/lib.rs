//! The otters pipeline, on top of the Agentfile language, the OCI crate and the supply chain. Three
//! groups, each a layer over the ones before it:
//!
//! ```text
//! the compiler      Agentfile → artifact in the store
//!   lint, reformat  diagnostics and the canonical form, over a project's files (project)
//!   resolve         FROM parent merged; RUNTIME/BIN/FROM pinned to digests   registry I/O, lockfile (lock)
//!   lower           model + pins → artifact plan (blobs, config, agent.yaml)  pure, deterministic
//!   build           plan → layers, config, manifest in the store; tags        I/O
//! images            an artifact named on the command line and moved
//!   target          an image in the local store or its registry
//!   transfer, copy  push, pull, copy with everything it pins (closure), save
//!   archive, attach, inspect, binpack
//! trust             signing, keyless signing, attestations, verification and the verify gate
//! ```
//!
//! Running, exporting and deploying an agent is `otters-run`'s, on top of this crate; what a
//! result means to a user is the binary's (`view`).
//!
//! Nothing here prints: progress goes through callbacks, results and errors are values.

pub mod archive;
pub mod attach;
pub mod binpack;
pub mod build;
pub mod copy;
pub mod inspect;
pub mod lint;
pub mod lock;
pub mod lower;
pub mod project;
pub mod reformat;
pub mod resolve;
pub mod target;
pub mod transfer;
pub mod trust;
