//! OCI without Agentfiles: the spec's values (digests, descriptors, media types, platforms), the
//! local image store (an OCI image layout), oci-archive files, and a registry client with its
//! authentication. Everything read from outside (registry answers, archives, store files) is
//! validated here before it is used.
//!
//! Depends on `otters-core` only among otters crates; never on the Agentfile language.

pub mod archive;
pub mod copy;
pub mod path_io;
pub mod reference;
pub mod referrers;
pub mod registry;
pub mod spec;
pub mod store;
pub mod validate;
pub mod web;

pub use spec::descriptor::Descriptor;
pub use spec::digest::Digest;
pub use spec::media_type::MediaType;
pub use spec::platform::Platform;
pub use store::layout::{Store, StoreError};
