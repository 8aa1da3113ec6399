//! Values of the OCI image and distribution specs: digests, descriptors, media types, platforms.

pub mod descriptor;
pub mod digest;
pub mod media_type;
pub mod platform;
