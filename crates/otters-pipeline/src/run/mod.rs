//! The `run` stage: an agent image → a materialised agent tree → the runtime, executed on the host
//! (system executor) or through a docker-compatible CLI (docker executor).
//!
//! Takes: an agent image (manifest, config blob, layers, pinned `agent.yaml`), its runtime and
//! BIN images, all brought into the store by a [`source::Fetcher`], and the user's options. Returns: a [`plan::RunPlan`] (printable with `--dry-run`) and, when executed, never
//! returns on success (the process becomes the runtime or the docker CLI). Must never: write
//! outside the agent root and its sibling temp dir, write a credential to disk, or inherit the
//! host environment into the runtime.

pub(crate) mod bins;
pub(crate) mod context_docs;
pub mod decompress;
pub mod env;
pub mod exec;
pub mod extract;
pub mod fetch;
pub mod marker;
pub mod materialise;
pub mod mounts;
pub mod overrides;
pub mod plan;
pub mod prepare;
pub mod request;
pub mod source;
pub(crate) mod tree;
