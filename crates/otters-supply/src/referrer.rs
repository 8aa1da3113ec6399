//! What a supply-chain referrer is, for people and for title-based tools: its kind (signature,
//! SBOM, provenance, attestation) from its `artifactType` and predicate annotations, and the file
//! name (`org.opencontainers.image.title`) its layer carries, so `oras pull` saves
//! `signature.sigstore.json` rather than `sha256:…`.
//!
//! Takes: a referrer's artifact type and annotations (untrusted: only ever displayed, escaped by
//! the caller). Returns: short descriptions and fixed file names.

use crate::bundle::BUNDLE_V03;
use crate::provenance::SLSA_PROVENANCE_V1;
use crate::sbom::{CYCLONEDX_MEDIA_TYPE, CYCLONEDX_PREDICATE};
use crate::statement::{PAYLOAD_TYPE, SIGN_PREDICATE};
use crate::verify::ANN_BUNDLE_PREDICATE;
use std::collections::BTreeMap;

/// Annotation on an unsigned in-toto statement referrer: its predicate type.
pub const ANN_PREDICATE_TYPE: &str = "in-toto.io/predicate-type";

/// A referrer's kind: `signature`, `SBOM`, `provenance`, `signed SBOM`, `signed provenance`,
/// `signed attestation` or `attestation`; `None` for anything else (an `otters attach` file).
pub fn kind(artifact_type: Option<&str>, annotations: &BTreeMap<String, String>) -> Option<String> {
    let named = |k: &str| annotations.get(k).map(String::as_str);
    match artifact_type? {
        BUNDLE_V03 => Some(match named(ANN_BUNDLE_PREDICATE) {
            Some(SIGN_PREDICATE) => "signature".to_owned(),
            Some(CYCLONEDX_PREDICATE) => "signed SBOM".to_owned(),
            Some(SLSA_PROVENANCE_V1) => "signed provenance".to_owned(),
            Some(_) => "signed attestation".to_owned(),
            None => "signature or attestation".to_owned(),
        }),
        CYCLONEDX_MEDIA_TYPE => Some("SBOM".to_owned()),
        PAYLOAD_TYPE => Some(match named(ANN_PREDICATE_TYPE) {
            Some(SLSA_PROVENANCE_V1) => "provenance".to_owned(),
            _ => "attestation".to_owned(),
        }),
        _ => None,
    }
}

/// The title of the layer holding a document of `predicate_type`, as a Sigstore bundle when
/// `signed`.
pub fn title(predicate_type: &str, signed: bool) -> &'static str {
    match (predicate_type, signed) {
        (CYCLONEDX_PREDICATE, false) => "sbom.cdx.json",
        (CYCLONEDX_PREDICATE, true) => "sbom.cdx.sigstore.json",
        (SLSA_PROVENANCE_V1, false) => "provenance.intoto.json",
        (SLSA_PROVENANCE_V1, true) => "provenance.intoto.sigstore.json",
        (SIGN_PREDICATE, _) => "signature.sigstore.json",
        (_, true) => "attestation.sigstore.json",
        (_, false) => "attestation.intoto.json",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_titles() {
        let ann = |k: &str, v: &str| BTreeMap::from([(k.to_owned(), v.to_owned())]);
        assert_eq!(
            kind(Some(BUNDLE_V03), &ann(ANN_BUNDLE_PREDICATE, SIGN_PREDICATE)).as_deref(),
            Some("signature")
        );
        assert_eq!(
            kind(
                Some(PAYLOAD_TYPE),
                &ann(ANN_PREDICATE_TYPE, SLSA_PROVENANCE_V1)
            )
            .as_deref(),
            Some("provenance")
        );
        assert_eq!(
            kind(Some(CYCLONEDX_MEDIA_TYPE), &BTreeMap::new()).as_deref(),
            Some("SBOM")
        );
        assert_eq!(kind(Some("application/x"), &BTreeMap::new()), None);
        assert_eq!(title(SIGN_PREDICATE, true), "signature.sigstore.json");
        assert_eq!(title(CYCLONEDX_PREDICATE, false), "sbom.cdx.json");
    }
}
