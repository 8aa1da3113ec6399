//! Supply-chain documents for otters images, with no network: ECDSA P-256 signing keys, in-toto
//! statements signed in DSSE envelopes inside key-based Sigstore bundles (and their verification),
//! a `CycloneDX` SBOM and SLSA provenance made from a build's pinned inputs; and which of an
//! image's referrers verify it (`verify`, over a source the caller provides).
//!
//! ```text
//! keys and signers   keys (P-256, PEM), signer (key or keyless identity), keyless (Fulcio/Rekor/TSA
//!                    requests, no transport), blob (sign-blob/verify-blob)
//! documents          statement (in-toto), bundle (Sigstore bundle, DSSE), sbom, provenance,
//!                    inputs (what a build pinned), referrer (the artifact that carries them)
//! verification       verify (which referrers verify an image), keyless_verify (certificates, SCTs,
//!                    transparency log, timestamps, the trusted root)
//! ```
//!
//! Depends on `otters-core` (canonical JSON) and `otters-oci`'s `spec` values only; attaching these
//! documents to images as OCI referrers is the registry side's work.

pub mod blob;
pub mod bundle;
pub mod inputs;
pub mod keyless;
pub mod keyless_verify;
pub mod keys;
pub mod provenance;
pub mod referrer;
pub mod sbom;
pub mod signer;
pub mod statement;
pub mod verify;

#[cfg(test)]
mod tests;
