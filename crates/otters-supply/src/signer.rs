//! Who must have signed an image, named ([`Who`]: a key file, or a keyless identity, issuer and
//! trusted-root file) and read ([`Loaded`]: the key parsed, the trusted root's file read (its
//! contents are read once, by the first bundle checked), the identity pattern compiled), as
//! `otters verify` and the run gate take it from flags or `config.toml`.
//!
//! Takes: paths and strings. Returns: the [`Signer`] [`crate::verify`] checks, and how a report
//! names it; or a [`LoadError`]. Must never: read more than a bundle's size of trusted root, or
//! compile an unanchored identity pattern.

use crate::bundle::MAX_BUNDLE;
use crate::keyless_verify::{Identity, PatternError, TrustedRoot};
use crate::keys::{KeyError, PublicKey};
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

/// Why a [`Who`] could not be read. Each says what it read (a key file, the trusted root's file,
/// the pattern) and nothing of where it was named.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Key(KeyError),
    #[error("{0} (the trusted root: Sigstore's trusted_root.json)")]
    Root(otters_core::files::ReadError),
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

/// A [`Who`] read: the key, or the trusted root and the compiled pattern.
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
        root: TrustedRoot,
    },
}

impl Loaded {
    /// Reads the key or the trusted root `who` names.
    ///
    /// # Errors
    /// A key file that is not a public key, a trusted root that cannot be read, an identity
    /// pattern that is not a regular expression: which, naming the file or the pattern.
    pub fn load(who: Who) -> Result<Loaded, LoadError> {
        Ok(match who {
            Who::Key(path) => Loaded::Key {
                key: PublicKey::read(&path).map_err(LoadError::Key)?,
                path,
            },
            Who::Keyless {
                identity,
                regexp,
                issuer,
                root,
            } => Loaded::Keyless {
                root: TrustedRoot::new(
                    otters_core::files::read_named(&root, "trusted root", MAX_BUNDLE as u64)
                        .map_err(LoadError::Root)?,
                ),
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
