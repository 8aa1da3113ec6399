//! Pins: the digests that RUNTIME and BIN references resolved to.
//!
//! Takes: nothing (a plain value the `resolve` stage fills from registries or `Agentfile.lock`).
//! Returns: lookups by BIN name. Must never: be filled by `lower` itself — lowering only reads pins.

use otters_oci::Digest;
use std::collections::BTreeMap;

/// One resolved reference: the reference as written and the digest it pinned to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub reference: String,
    /// The manifest (or index) the reference resolved to.
    pub digest: Digest,
}

/// Every pin of one build. A reference with no pin is built unpinned (ref only, no digest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    pub runtime: Option<Pin>,
    /// Keyed by BIN name.
    pub bins: BTreeMap<String, Pin>,
}

impl Pins {
    /// The runtime digest, when the pin is for this reference.
    pub fn runtime_digest(&self, reference: &str) -> Option<&Digest> {
        self.runtime
            .as_ref()
            .filter(|p| p.reference == reference)
            .map(|p| &p.digest)
    }

    /// The digest of BIN `name`, when its pin is for this reference.
    pub fn bin_digest(&self, name: &str, reference: &str) -> Option<&Digest> {
        self.bins
            .get(name)
            .filter(|p| p.reference == reference)
            .map(|p| &p.digest)
    }
}
