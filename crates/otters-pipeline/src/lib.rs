//! The otters pipeline, on top of the Agentfile language and the OCI crate:
//!
//! ```text
//!   └─ resolve  FROM parent merged; RUNTIME/BIN/FROM pinned to digests      registry I/O, lockfile
//!   └─ lower    model + pins → artifact plan (blobs, config, manifest)      pure, deterministic
//!   └─ build    plan → layers, config, manifest in the store; tags          I/O
//!   └─ run      image → materialised agent tree → exec runtime              I/O, exec
//! ```
//!
//! Beside the stages, `project` finds a project's files (the Agentfile a path names, `otters.toml`)
//! and `lock` writes `Agentfile.lock`, and `copy` moves an agent with everything it pins: entry
//! points every front end shares; `target` is an image named on the command line, in the
//! local store or its registry.
//!
//! Nothing here prints: progress goes through callbacks, results and errors are values.

pub mod archive;
pub mod attach;
pub mod attest;
pub mod binpack;
pub mod build;
pub mod copy;
pub mod export;
pub mod inspect;
pub mod keyless;
pub mod kube;
pub mod lint;
pub mod lock;
pub mod lower;
pub mod project;
pub mod reformat;
pub mod resolve;
pub mod run;
pub mod signing;
pub mod target;
pub mod transfer;
pub mod trust;
pub mod view;
