//! Signing and verification, orchestrated over the store and registries: who must have signed and
//! the checks that ask ([`verify`]), signing an image with a key or keylessly ([`signing`],
//! [`keyless`]), and in-toto attestations over it ([`attest`]). The cryptography and the bundle
//! formats are `otters-supply`'s; this group finds the images, reads and writes the referrers, and
//! says what failed.
//!
//! ```text
//!   verify    who must have signed (flags, [verify]); verify_image; the run/export/kube gate
//!   signing   a signature referrer over a digest, in the store and its registry
//!   keyless   Fulcio certificate, Rekor entry, timestamp: a keyless signer's round trip
//!   attest    SBOM, provenance and custom predicates as attestation referrers
//! ```

pub mod attest;
pub mod keyless;
pub mod signing;
pub mod verify;
