//! The otters run and deploy stack, on top of the pipeline: an agent image brought into the store,
//! materialised as an agent tree and executed, or pointed at another target — a runnable image
//! (`export`) or Kubernetes objects (`kube`). Export and kube are the run planner aimed elsewhere,
//! which is why they live here, beside it.
//!
//! ```text
//!   fetch, prepare   the image and its pins in the store, held to the verify gate (`gate`)
//!   source           an agent image read back: manifest, config, agent.yaml pins, BIN images
//!   plan             what will run: tree, env, mounts, launcher; printed by `run --dry-run`
//!   materialise      plan → the agent tree on disk (extract, tree, bins, context_docs, marker)
//!   exec             the tree → the runtime, on the host or through a docker-compatible CLI
//!   egress           a declared EGRESS held: allow-list proxy, internal network, cleanup
//!   export           the tree as a runnable OCI image, reproducible, subject-linked
//!   kube             the export as hardened Kubernetes objects
//! ```
//!
//! Takes: an agent image (manifest, config blob, layers, pinned `agent.yaml`), its runtime and
//! BIN images, all brought into the store by a [`source::Fetcher`], and the user's options.
//! Returns: a [`plan::RunPlan`] (printable with `--dry-run`) and, when executed, never returns on
//! success (the process becomes the runtime or the docker CLI). Must never: write outside the
//! agent root and its sibling temp dir, write a credential to disk, or inherit the host
//! environment into the runtime. Nothing here prints: results and errors are values.

pub(crate) mod bins;
pub(crate) mod context_docs;
pub mod decompress;
pub mod egress;
pub mod env;
pub mod exec;
pub mod export;
pub mod extract;
pub mod fetch;
pub mod gate;
pub mod hold;
pub mod kube;
pub mod marker;
pub mod materialise;
pub mod mounts;
pub mod overrides;
pub mod plan;
pub mod prepare;
pub mod request;
pub mod source;
pub(crate) mod tree;
