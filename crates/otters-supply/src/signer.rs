//! Who must have signed an image, named ([`Who`]: a key file, or a keyless identity, issuer and
//! trusted-root file) and read ([`Loaded`]: the key parsed, the trusted root read, the identity
//! pattern compiled), as `otters verify` and the run gate take it from flags or `config.toml`.
//!
//! Takes: paths and strings. Returns: the [`Signer`] [`crate::verify`] checks, and how a report
//! names it. Must never: read more than a bundle's size of trusted root, or compile an unanchored
//! identity pattern.

use crate::bundle::MAX_BUNDLE;
use crate::keyless_verify::Identity;
use crate::keys::PublicKey;
use crate::verify::Signer;
use otters_core::escape::escape;
use std::path::PathBuf;

/// Who must have signed an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who {
    /// A key-based signature by the public key in this file.
    Key(PathBuf),
    /// A keyless signature by this identity (exact, or with `regexp` an anchored regular
    /// expression) from this OIDC issuer, under the trusted root in this file.
    Keyless {
        identity: String,
        regexp: bool,
        issuer: String,
        root: PathBuf,
    },
}

/// A [`Who`] read: the key, or the trusted root's bytes and the compiled pattern.
pub enum Loaded {
    Key {
        path: PathBuf,
        key: PublicKey,
    },
    Keyless {
        identity: String,
        /// The identity as a regular expression, compiled and anchored.
        pattern: Option<Identity<'static>>,
        issuer: String,
        root: Vec<u8>,
    },
}

impl Loaded {
    /// Reads the key or the trusted root `who` names.
    ///
    /// # Errors
    /// A key file that is not a public key, a trusted root that cannot be read, an identity
    /// pattern that is not a regular expression: a sentence naming the file or the pattern.
    pub fn load(who: Who) -> Result<Loaded, String> {
        Ok(match who {
            Who::Key(path) => Loaded::Key {
                key: PublicKey::read(&path).map_err(|e| e.to_string())?,
                path,
            },
            Who::Keyless {
                identity,
                regexp,
                issuer,
                root,
            } => Loaded::Keyless {
                root: otters_core::files::read_named(&root, "trusted root", MAX_BUNDLE as u64)
                    .map_err(|e| format!("{e} (the trusted root: Sigstore's trusted_root.json)"))?,
                pattern: regexp.then(|| Identity::regexp(&identity)).transpose()?,
                identity,
                issuer,
            },
        })
    }

    /// The signer [`crate::verify::verify_image`] checks.
    pub fn signer(&self) -> Signer<'_> {
        match self {
            Loaded::Key { key, .. } => Signer::Key(key),
            Loaded::Keyless {
                identity,
                pattern,
                issuer,
                root,
            } => Signer::Keyless {
                identity: pattern.clone().unwrap_or(Identity::Exact(identity)),
                issuer,
                trusted_root: root,
            },
        }
    }

    /// The signer as a report names it: the key's path, or `IDENTITY (ISSUER)` (a pattern as
    /// `/RE/`), escaped.
    pub fn describe(&self) -> String {
        match self {
            Loaded::Key { path, .. } => path.display().to_string(),
            Loaded::Keyless {
                identity,
                pattern,
                issuer,
                ..
            } => {
                let id = match pattern {
                    Some(_) => format!("/{identity}/"),
                    None => identity.clone(),
                };
                format!("{} ({})", escape(&id), escape(issuer))
            }
        }
    }
}
