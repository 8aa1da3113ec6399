//! Whole-image transfers between the local store and a registry (`push` and `pull`), and between
//! two registries without the store (`relay`, behind `otters copy`).
//!
//! Takes: a [`RegistryClient`], a [`Store`], a reference, and a progress callback. Returns: a
//! [`TransferReport`] saying what was uploaded, skipped, mounted or downloaded. Must never: put a
//! blob in the store before its digest has been checked (downloads go to a temp file that is
//! renamed only after verification), upload a blob the registry already has, or print.
//!
//! Push order: blobs (config and layers, each `HEAD`-checked first; a blob known to live in another
//! repository of the same registry is mounted), then child manifests, then the top manifest under
//! its tag. A push that was interrupted can simply be run again: what arrived is skipped.
//!
//! In files: `push`, `pull`, `relay` (registry to registry, also at `copy::stream`), `at_once`
//! (up to four blobs of a manifest at once, for push and relay), `report` (the report and a blob's
//! outcome), `manifest` (index depth, documents read and parsed). This file only names them and
//! re-exports the public items at their paths; the files import each other directly.
//!
//! [`RegistryClient`]: crate::registry::RegistryClient
//! [`Store`]: crate::store::layout::Store

pub(crate) mod at_once;
pub(crate) mod manifest;
pub(crate) mod pull;
pub(crate) mod push;
pub mod relay;
pub(crate) mod report;

pub use crate::progress::{Event, Outcome, Progress};
pub use pull::{pull_blob, pull_image, MAX_DOCUMENTS};
pub use push::push_image;
pub use report::TransferReport;
