//! OCI without Agentfiles: the local image store (an OCI image layout), oci-archive files, and a
//! registry client with its authentication. Everything read from outside (registry answers, archives, store files) is
//! validated here before it is used.
//!
//! The spec's values (digests, descriptors, media types, platforms, references) live in
//! `otters-spec`; they are re-exported here at their old paths (`otters_oci::spec::…`,
//! `otters_oci::reference`) so callers need not name two crates.
//!
//! ```text
//! the store     store (blobs, index.json, leases, referrers, prune), path_io (confined writes)
//! archives      archive (oci-archive files and layout directories, save/load, which referrers travel)
//! registries    registry (client, auth, reads, writes, transfer: push/pull/relay), web (plain HTTPS
//!               for Fulcio/Rekor/TSA), referrers (the referrers API and its fallback tags)
//! moving        copy (image from any place to any place, streamed registry to registry)
//! checks        validate (bounds on every manifest, index and config read from outside)
//! reporting     progress (events a front end renders)
//! ```
//!
//! Depends on `otters-core` and `otters-spec` only among otters crates; never on the Agentfile
//! language.

pub mod archive;
pub mod copy;
pub mod path_io;
pub mod progress;
pub mod referrers;
pub mod registry;
pub mod store;
pub mod validate;
pub mod web;

pub use otters_spec as spec;
pub use otters_spec::reference;

pub use spec::descriptor::Descriptor;
pub use spec::digest::Digest;
pub use spec::media_type::MediaType;
pub use spec::platform::Platform;
pub use store::layout::{Store, StoreError};
