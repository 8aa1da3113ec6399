//! Values of the OCI image and distribution specs, as oci-spec-rs is for oci-client: digests,
//! media types, descriptors, platforms, image references, the openotters annotation keys
//! (`annotations`), the one manifest and index model (`descriptor::ManifestDoc`) and the one
//! graph walk over them (`graph::walk`). No I/O and no network stack, so the supply-chain crate
//! and the language server can use them without linking an HTTP client.
//!
//! Depends on `otters-core` only among otters crates.

pub mod annotations;
pub mod descriptor;
pub mod digest;
pub mod graph;
pub mod media_type;
pub mod platform;
pub mod reference;

pub use descriptor::Descriptor;
pub use digest::Digest;
pub use media_type::MediaType;
pub use platform::Platform;
pub use reference::Reference;
