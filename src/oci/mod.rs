//! The `oci` stage: the local image store (an OCI image layout), oci-archive files, and the
//! writer that turns a lowered [`crate::lower::Plan`] into blobs, a manifest and tags.
//!
//! Takes: plans, store paths, archive paths. Returns: descriptors and typed errors. Must never:
//! print, or write a file in place (every write is temp file + fsync + rename).
//!
//! Store API used by the other stages (`layout::Store`):
//! - `Store::open(root)` — create or open a layout (`$OTTERS_HOME/store` by default).
//! - `put_blob_from_reader(reader, progress)`, `blob_writer()` (streamed, hashed while written),
//!   `put_blob_bytes(bytes)` → `(Digest, size)`.
//! - `blob_path(&digest)`, `open_blob(&digest)`, `has_blob(&digest)`, `read_blob(&digest)` (small
//!   JSON only; digest-checked), `open_verified(&digest)` (streamed, digest-checked at end of file).
//! - `put_manifest(bytes, media_type)` → [`Descriptor`]; `tag(ref, &descriptor)`; `untag(ref)`;
//!   `resolve(ref)` (tag as given or with `:latest`, digest, `name@digest`, or ≥4-digit prefix);
//!   `list()` → `(ref name, Descriptor)` in ref-name order.
//! - Tag names are the user's reference text with `:latest` added when untagged ([`refname`]).

pub mod descriptor;
pub mod digest;
pub mod layout;
pub mod refname;

pub use descriptor::Descriptor;
pub use digest::Digest;
pub use layout::{Store, StoreError};
pub mod archive;
pub mod auth;
pub mod hash_cache;
pub mod ignore;
pub mod inputs;
pub mod nofollow;
pub mod path_io;
pub mod prune;
pub mod registry;
pub mod registry_check;
pub mod registry_config;
pub mod registry_http;
pub mod registry_platform;
pub mod registry_sources;
pub mod registry_transfer;
pub mod tar_reader;
pub mod tarball;
pub mod verify;
pub mod write;
