//! The local image store: an OCI image layout with atomic writes, tag names, verified reads and
//! pruning.
//!
//! Store API used by the other crates ([`layout::Store`]):
//! - `Store::open(root)` — create or open a layout (`$OTTERS_HOME/store` by default).
//! - `put_blob_from_reader(reader, progress)`, `blob_writer()` (streamed, hashed while written),
//!   `put_blob_bytes(bytes)` → `(Digest, size)`.
//! - `blob_path(&digest)`, `open_blob(&digest)`, `has_blob(&digest)`, `read_blob(&digest)` (small
//!   JSON only; digest-checked), `open_verified(&digest)` (streamed, digest-checked at end of file).
//! - `put_manifest(bytes, media_type)` → `Descriptor`; `tag(ref, &descriptor)`; `untag(ref)`;
//!   `resolve(ref)` (tag as given or with `:latest`, digest, `name@digest`, or ≥4-digit prefix);
//!   `list()` → `(ref name, Descriptor)` in ref-name order.
//! - [`query`]: the images with their sizes, one image's manifest and config, the images a list
//!   of names selects (read-only; what `images`, `inspect` and `save` show).
//! - Tag names are the user's reference text with `:latest` added when untagged ([`refname`]).
//!
//! Must never: print, or write a file in place (every write is temp file + fsync + rename).

pub mod layout;
pub mod prune;
pub mod query;
pub mod refname;
pub mod verify;
