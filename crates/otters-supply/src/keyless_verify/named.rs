//! Who a Sigstore bundle says signed it, read for a report and **not verified**: the certificate's
//! identity (SAN) and OIDC issuer for a keyless bundle, the public-key hint for a key-based one,
//! and the predicate type its statement claims.
//!
//! Takes: bundle bytes (at most [`MAX_BUNDLE`](crate::bundle::MAX_BUNDLE)). Returns: a [`Named`]
//! signer and the claimed predicate type, or why the bundle could not be read. Must never: be
//! taken as a verdict (nothing here checks a signature, a chain or a log: `verify` does), or
//! panic on any input. The certificate is read with the same DER reader as verification.

use super::der::{issuer_of, parse_cert, sans};
use super::root::b64_at;
use serde_json::Value as J;

/// The signer a bundle names, unverified.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Named {
    /// A key-based bundle: its public-key hint (what `otters key` prints, cosign's key id;
    /// empty when the bundle gives none).
    Key(String),
    /// A keyless bundle: the certificate's SANs (comma-separated) and its OIDC issuer (empty when
    /// the certificate has no issuer extension).
    Keyless { identity: String, issuer: String },
}

impl Named {
    /// As a report names it: `IDENTITY (ISSUER)` as `otters verify` does for a keyless signer,
    /// `key HINT` for a key (`key (no hint)` without one). Not escaped: the caller escapes.
    pub fn describe(&self) -> String {
        match self {
            Named::Key(h) if h.is_empty() => "key (no hint)".to_owned(),
            Named::Key(h) => format!("key {h}"),
            Named::Keyless { identity, issuer } if issuer.is_empty() => identity.clone(),
            Named::Keyless { identity, issuer } => format!("{identity} ({issuer})"),
        }
    }
}

/// What a bundle names: its signer, and the predicate type its DSSE statement claims (`None`
/// when the payload is not readable as a statement).
///
/// # Errors
/// The bundle is too large, not JSON, or its certificate is not a readable X.509 certificate.
pub fn named(bundle: &[u8]) -> Result<(Named, Option<String>), String> {
    if bundle.len() > crate::bundle::MAX_BUNDLE {
        return Err("the bundle is too large".to_owned());
    }
    let b: J =
        serde_json::from_slice(bundle).map_err(|e| format!("the bundle is not JSON: {e}"))?;
    let material = b.get("verificationMaterial");
    let leaf = material
        .and_then(|m| m.get("certificate"))
        .map(|_| b64_at(&b, "/verificationMaterial/certificate/rawBytes"))
        .or_else(|| {
            // A v0.2 bundle carries the leaf first in a chain.
            material
                .and_then(|m| m.get("x509CertificateChain"))
                .map(|_| {
                    b64_at(
                        &b,
                        "/verificationMaterial/x509CertificateChain/certificates/0/rawBytes",
                    )
                })
        });
    let signer = match leaf {
        Some(der) => {
            let der = der.map_err(|e| e.to_string())?;
            let cert = parse_cert(&der).map_err(|e| e.to_string())?;
            let names = sans(&cert).map_err(|e| e.to_string())?;
            Named::Keyless {
                identity: if names.is_empty() {
                    "(a certificate with no email or URI identity)".to_owned()
                } else {
                    names.join(", ")
                },
                issuer: issuer_of(&cert)
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default(),
            }
        }
        None => Named::Key(
            b.pointer("/verificationMaterial/publicKey/hint")
                .and_then(J::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
    };
    let predicate = b64_at(&b, "/dsseEnvelope/payload")
        .ok()
        .and_then(|p| serde_json::from_slice::<J>(&p).ok())
        .and_then(|s| s.get("predicateType")?.as_str().map(str::to_owned));
    Ok((signer, predicate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeyPair;
    use crate::statement::{Statement, Subject, SIGN_PREDICATE};

    #[test]
    fn a_keyless_bundle_names_its_certificate_identity_and_issuer() {
        let bundle = include_bytes!("../../testdata/keyless/bundle.json");
        let (who, _) = named(bundle).unwrap();
        let id = "https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main";
        let issuer = "https://token.actions.githubusercontent.com";
        assert_eq!(
            who,
            Named::Keyless {
                identity: id.to_owned(),
                issuer: issuer.to_owned()
            }
        );
        assert_eq!(who.describe(), format!("{id} ({issuer})"));
    }

    #[test]
    fn a_key_bundle_names_its_key_hint_and_a_junk_one_says_why() {
        let key = KeyPair::generate();
        let st = Statement::signature(Subject {
            name: "agents/x".to_owned(),
            digest: otters_spec::digest::Digest::of(b"x"),
        });
        let bundle = crate::bundle::sign(&st, &key);
        let (who, predicate) = named(&bundle).unwrap();
        assert_eq!(who, Named::Key(key.public().hint()));
        assert_eq!(who.describe(), format!("key {}", key.public().hint()));
        assert_eq!(predicate.as_deref(), Some(SIGN_PREDICATE));
        assert!(named(b"{")
            .unwrap_err()
            .starts_with("the bundle is not JSON"));
        let bad_cert = br#"{"verificationMaterial":{"certificate":{"rawBytes":"AAAA"}}}"#;
        assert!(named(bad_cert)
            .unwrap_err()
            .starts_with("the certificate is not"));
        let no_cert = br#"{"verificationMaterial":{"certificate":{}}}"#;
        assert!(named(no_cert).unwrap_err().contains("rawBytes"));
    }
}
