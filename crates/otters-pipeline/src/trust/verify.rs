//! Who must have signed an image, and the checks that ask: a key or a keyless identity from
//! `otters verify`'s and `otters run`'s flags or `[verify]` in config.toml ([`who`],
//! [`for_run`]), `otters verify`'s check ([`verify_image`]), the run gate ([`verify_for_run`]),
//! and how a failed verification reads ([`explain`]).
//!
//! Takes: the values of the flags and of `[verify]`, the store, a reference and its digest.
//! Returns: a [`Who`], or the gate's answer. Must never: accept a signature over another digest
//! than the one the run resolved, or ask an implied Docker Hub about a local tag.
use crate::target::{names_registry, one_line, Target};
use otters_core::escape::escape;
use otters_oci::registry::config::{RegistryConfig, RegistryConfigError, VerifySettings};
use otters_oci::registry::{ClientOptions, RegistryClient};
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, MediaType, Store, StoreError};
use otters_supply::keyless_verify::PatternError;
use otters_supply::signer::{LoadError, Loaded, Who};
use otters_supply::statement::SIGN_PREDICATE;
use otters_supply::verify::{
    verify_local_first, Fallback, ImageVerifyError, OpenSource, Referrers, Verdict, VerifyOptions,
};
use std::path::{Path, PathBuf};

/// A keyless identity as given: the SAN exactly or as a pattern, the issuer, the trusted root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub identity: Option<String>,
    pub identity_regexp: Option<String>,
    pub issuer: Option<String>,
    pub trusted_root: Option<PathBuf>,
}

impl Identity {
    /// `[verify]`'s keyless keys.
    pub fn of_config(v: &VerifySettings) -> Identity {
        Identity {
            identity: v.certificate_identity.clone(),
            identity_regexp: v.certificate_identity_regexp.clone(),
            issuer: v.certificate_oidc_issuer.clone(),
            trusted_root: v.trusted_root.clone(),
        }
    }

    /// Whether an identity (exact or pattern) is named.
    pub fn named(&self) -> bool {
        self.identity.is_some() || self.identity_regexp.is_some()
    }
}

/// Half a keyless identity, or a pattern that is not one regular expression.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WhoError {
    #[error("keyless verification needs the certificate's OIDC issuer beside the identity (for GitHub Actions: https://token.actions.githubusercontent.com)")]
    NoIssuer,
    #[error("keyless verification needs a trusted root (Sigstore's trusted_root.json; see docs/supply-chain.md for where the public-good one comes from)")]
    NoRoot,
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// The same, in `[verify]` of a config file.
    #[error("[verify] in {}", path.display())]
    InConfig {
        path: PathBuf,
        #[source]
        source: Box<WhoError>,
    },
}

/// The signer `key` or `id` name; `None` when they name none.
pub fn who(key: Option<&Path>, id: &Identity) -> Result<Option<Who>, WhoError> {
    if let Some(k) = key {
        return Ok(Some(Who::Key(k.to_owned())));
    }
    let (identity, regexp) = match (&id.identity, &id.identity_regexp) {
        (Some(id), _) => (id.clone(), false),
        (None, Some(re)) => (re.clone(), true),
        (None, None) => return Ok(None),
    };
    let issuer = id.issuer.clone().ok_or(WhoError::NoIssuer)?;
    let root = id.trusted_root.clone().ok_or(WhoError::NoRoot)?;
    // A pattern is checked here, with the rest of the identity, so that one from `[verify]` is
    // said to come from there (`for_run`), not from a flag.
    if regexp {
        otters_supply::keyless_verify::Identity::regexp(&identity)?;
    }
    Ok(Some(Who::Keyless {
        identity,
        regexp,
        issuer,
        root,
    }))
}

/// The signer a policy's `[policy.signature]` names, as the gate and `verify` take it.
pub fn of_policy(sig: &otters_policy::Signature) -> Who {
    match sig {
        otters_policy::Signature::Key(k) => Who::Key(k.clone()),
        otters_policy::Signature::Keyless {
            identity,
            regexp,
            issuer,
            trusted_root,
        } => Who::Keyless {
            identity: identity.clone(),
            regexp: *regexp,
            issuer: issuer.clone(),
            root: trusted_root.clone(),
        },
    }
}

/// Who must have signed an image `otters run` runs: the `key` or identity given (the issuer and
/// trusted root, when not given, from `[verify]`), else `[verify]` of the config file at `path`
/// (`key`, or the keyless keys).
pub fn for_run(
    key: Option<&Path>,
    given: &Identity,
    config: &VerifySettings,
    path: &Path,
) -> Result<Option<Who>, WhoError> {
    if key.is_some() || given.named() {
        let merged = Identity {
            issuer: given
                .issuer
                .clone()
                .or_else(|| config.certificate_oidc_issuer.clone()),
            trusted_root: given
                .trusted_root
                .clone()
                .or_else(|| config.trusted_root.clone()),
            ..given.clone()
        };
        return who(key, &merged);
    }
    who(config.key.as_deref(), &Identity::of_config(config)).map_err(|e| WhoError::InConfig {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// A signer that cannot be read (a key file, a trusted root, an identity pattern).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct SignerError(#[from] pub LoadError);

/// Reads the key or trusted root `who` names.
pub fn load(who: Who) -> Result<Loaded, SignerError> {
    Ok(Loaded::load(who)?)
}

/// Why an image did not verify, as a sentence naming the image, the signer and how to sign it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unverified(pub String);

/// Why `reference` (`digest`) did not verify for `signer` with `predicate_type`.
pub fn explain(
    e: &ImageVerifyError,
    digest: &Digest,
    predicate_type: &str,
    signer: &Loaded,
    reference: &str,
) -> Unverified {
    let image = escape(&otters_oci::reference::pinned(reference, digest)).into_owned();
    let by = signer.describe();
    Unverified(match e {
        ImageVerifyError::NotSigned => {
            let r = escape(reference);
            let sign = match signer {
                Loaded::Key { .. } => format!("`otters sign {r} --key KEY`"),
                Loaded::Keyless { .. } => format!("`otters sign {r} --keyless`"),
            };
            format!(
                "{image} is not signed: it has no Sigstore bundle referrer (sign it with {sign})"
            )
        }
        ImageVerifyError::List(_) => format!("{image}: {e}"),
        e @ ImageVerifyError::NoneVerifies { .. } if predicate_type == SIGN_PREDICATE => {
            format!("{image} has no valid signature by {by}: {e}")
        }
        e @ ImageVerifyError::NoneVerifies { .. } => format!(
            "{image} has no valid attestation of type {} by {by}: {e}",
            escape(predicate_type)
        ),
    })
}

/// Why `otters verify` did not say "Verified OK".
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Who(#[from] WhoError),
    #[error("no key and no keyless identity to verify the image with")]
    NoSigner,
    #[error(transparent)]
    Signer(#[from] SignerError),
    /// A predicate type that is neither a URI nor a known name: the sentence says which.
    #[error("{0}")]
    PredicateType(String),
    /// Only the store was to be read (`Place::Local`), and it holds no signature.
    #[error("{} has no signature in the local store; fetch its referrers with `otters pull --referrers {}`", escape(&otters_oci::reference::pinned(.reference, .digest)), escape(.reference))]
    NotInStore { reference: String, digest: Digest },
    #[error(transparent)]
    Unverified(#[from] Unverified),
}

/// The signer `key` or `identity` names, and the check's options (`predicate_type`: a URI or
/// one of `otters_supply::verify::predicate_type`'s names; none: a signature).
pub fn verifier(
    key: Option<&Path>,
    identity: &Identity,
    predicate_type: Option<&str>,
) -> Result<Loaded, VerifyError> {
    let who = who(key, identity)?.ok_or(VerifyError::NoSigner)?;
    let signer = load(who)?;
    if let Some(t) = predicate_type {
        otters_supply::verify::predicate_type(t).map_err(VerifyError::PredicateType)?;
    }
    Ok(signer)
}

/// What verified: by whom (a key's description, or the certificate's identity and issuer) and
/// the predicate type of the statement.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    pub by: String,
    pub predicate_type: String,
    /// Which copy of the image was checked, and where its signatures were read.
    pub checked: Checked,
}

/// Which copy of an image `otters verify` checked.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    /// The local store's copy, with the store's signatures; `registry` is the registry the
    /// reference names (not asked: its tag may have moved since), if any.
    Store { registry: Option<String> },
    /// The local store's copy (its digest), with signatures read from `registry`, where the
    /// store had none.
    StoreInRegistry { registry: String },
    /// The image the reference names in its registry now.
    Registry { registry: String },
}

/// `otters verify`: the image `target` resolved to must carry a bundle by `signer` over its
/// digest (of `predicate_type`, else a signature). Read from the local store first; when the
/// store has none and `reference` names a registry (and `local_only` is not set), from that
/// registry, after `on_fallback(registry)`.
pub fn verify_image(
    target: &Target,
    reference: &str,
    signer: &Loaded,
    predicate_type: Option<&str>,
    local_only: bool,
    insecure: bool,
    on_fallback: &mut dyn FnMut(&str),
) -> Result<Verified, VerifyError> {
    let mut opts = VerifyOptions::by(signer.signer());
    if let Some(t) = predicate_type {
        opts.predicate_type =
            otters_supply::verify::predicate_type(t).map_err(VerifyError::PredicateType)?;
    }
    let digest = target.descriptor().digest.clone();
    let registry = names_registry(reference).filter(|_| matches!(target, Target::Local(..)));
    let fell_back = std::cell::Cell::new(false);
    // Nothing in the store (a plain `pull` brings no referrers): look where it came from.
    let second: Box<OpenSource<'_>> = match &registry {
        Some(r) if !local_only => Box::new(|| {
            fell_back.set(true);
            on_fallback(&r.registry);
            let remote = target.in_registry(r, insecure).map_err(|e| one_line(&e))?;
            Ok(Some(Box::new(remote) as Box<dyn Referrers>))
        }),
        _ => Box::new(|| Ok(None)),
    };
    let verdict = match verify_local_first(target, second, &digest, &opts, Fallback::WhenUnsigned) {
        Ok(v) => v,
        Err(ImageVerifyError::NotSigned) if registry.is_some() && local_only => {
            return Err(VerifyError::NotInStore {
                reference: reference.to_owned(),
                digest,
            })
        }
        Err(e) => {
            let why = explain(&e, &digest, &opts.predicate_type, signer, reference);
            return Err(VerifyError::Unverified(why));
        }
    };
    let by = match &verdict {
        Verdict::Key(_) => signer.describe(),
        Verdict::Keyless(v) => format!("{} ({})", escape(&v.identity), escape(&v.issuer)),
    };
    let checked = match (target.registry_reference(), registry) {
        (Some(r), _) => Checked::Registry {
            registry: r.registry.clone(),
        },
        (None, Some(r)) if fell_back.get() => Checked::StoreInRegistry {
            registry: r.registry,
        },
        (None, r) => Checked::Store {
            registry: r.map(|r| r.registry),
        },
    };
    Ok(Verified {
        by,
        predicate_type: verdict.predicate_type().to_owned(),
        checked,
    })
}

/// Why the gate of `run`, `export` or `kube` refused.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Config(#[from] RegistryConfigError),
    /// Said as the `WhoError` says it (a cause already quoted is not repeated), and kept a link of
    /// the chain so the front end sees which flag, or which file, to fix.
    #[error("{0}")]
    Who(#[from] WhoError),
    #[error(transparent)]
    Signer(#[from] SignerError),
    #[error(transparent)]
    Read(#[from] StoreError),
    #[error("refusing to {verb} an unverified image")]
    Unverified {
        verb: &'static str,
        #[source]
        source: Unverified,
    },
}

/// The gate `run`, `export` and `kube` share: who must have signed the agent (their
/// `--verify-key` or keyless identity flags, else `[verify]` in `$OTTERS_HOME/config.toml`), and
/// how the signature may be looked for.
#[derive(Clone, Debug, Default)]
pub struct Gate<'a> {
    pub key: Option<&'a Path>,
    pub identity: Identity,
    /// `--insecure` for the registry a signature is read from.
    pub insecure: bool,
    /// Whether the registry the reference names may be asked (not offline, not `--pull never`).
    pub may_contact: bool,
}

impl Gate<'_> {
    /// Who must have signed, if anyone: the flags, else `[verify]` in config.toml.
    pub fn who(&self) -> Result<Option<Who>, GateError> {
        let path = RegistryConfig::default_path();
        let config = RegistryConfig::load(&path)?;
        Ok(for_run(
            self.key,
            &self.identity,
            &config.verify_settings(),
            &path,
        )?)
    }

    /// Holds the image `reference` resolved to, `digest`, to the gate: when a signer is wanted,
    /// refuses it (to `verb` it: run, export, deploy) unless that signer's signature covers the
    /// digest. Returns the signer wanted, if any.
    pub fn check(
        &self,
        store: &Store,
        reference: &str,
        digest: &Digest,
        verb: &'static str,
    ) -> Result<Option<Who>, GateError> {
        let Some(who) = self.who()? else {
            return Ok(None);
        };
        verify_for_run(
            store,
            reference,
            digest,
            &who,
            self.insecure,
            self.may_contact,
        )
        .map_err(|e| match e {
            GateError::Unverified { source, .. } => GateError::Unverified { verb, source },
            e => e,
        })?;
        Ok(Some(who))
    }
}

/// The run gate (`otters run --verify-key`, `--certificate-identity…`): the image `digest` (what
/// `reference` resolved to for this run) must carry a signature by `who`, found in the local
/// store or, when the run may contact a registry and `reference` names one, in that registry.
pub fn verify_for_run(
    store: &Store,
    reference: &str,
    digest: &Digest,
    who: &Who,
    insecure: bool,
    may_contact: bool,
) -> Result<(), GateError> {
    let signer = load(who.clone())?;
    let opts = VerifyOptions::by(signer.signer());
    let bytes = store.read_blob(digest)?;
    let media_type = ManifestDoc::parse(&bytes)
        .ok()
        .and_then(|m| m.media_type)
        .unwrap_or(MediaType::OciManifest);
    let d = Descriptor::new(media_type, digest.clone(), bytes.len() as u64);
    let local = Target::Local(store.clone(), d.clone());
    // Only a reference that names its registry (never an implied Docker Hub for a local tag).
    let remote = names_registry(reference).filter(|_| may_contact);
    let second: Box<OpenSource<'_>> = Box::new(move || {
        let Some(r) = remote else { return Ok(None) };
        let client = RegistryClient::new(ClientOptions {
            insecure,
            ..ClientOptions::default()
        })
        .map_err(|e| e.to_string())?;
        let remote = Target::Remote(store.clone(), Box::new(client), r.with_digest(digest), d);
        Ok(Some(Box::new(remote) as Box<dyn Referrers>))
    });
    verify_local_first(&local, second, digest, &opts, Fallback::OnAnyFailure)
        .map(|_| ())
        .map_err(|e| {
            let source = explain(&e, digest, &opts.predicate_type, &signer, reference);
            GateError::Unverified {
                verb: "run",
                source,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(identity: Option<&str>, issuer: Option<&str>, root: Option<&str>) -> Identity {
        Identity {
            identity: identity.map(str::to_owned),
            issuer: issuer.map(str::to_owned),
            trusted_root: root.map(PathBuf::from),
            ..Identity::default()
        }
    }

    #[test]
    fn a_verifier_needs_a_signer_and_a_known_predicate_type() {
        assert!(matches!(
            verifier(None, &Identity::default(), None),
            Err(VerifyError::NoSigner)
        ));
        assert!(matches!(
            verifier(None, &id(Some("me"), None, None), None),
            Err(VerifyError::Who(WhoError::NoIssuer))
        ));
        let dir = tempfile::tempdir().unwrap();
        let key = otters_supply::keys::KeyPair::generate();
        let public = dir.path().join("k.pub");
        std::fs::write(&public, key.public().to_pem().unwrap()).unwrap();
        match verifier(Some(&public), &Identity::default(), Some("nonsense")) {
            Err(VerifyError::PredicateType(why)) => {
                assert!(why.contains("nonsense") && !why.contains("--"), "{why}");
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a nonsense predicate type was accepted"),
        }
        assert!(verifier(Some(&public), &Identity::default(), Some("slsaprovenance1")).is_ok());
    }

    #[test]
    fn half_an_identity_names_what_is_missing() {
        assert_eq!(who(None, &Identity::default()), Ok(None));
        assert_eq!(
            who(Some(Path::new("k.pub")), &Identity::default()),
            Ok(Some(Who::Key("k.pub".into())))
        );
        assert_eq!(
            who(None, &id(Some("me"), None, None)),
            Err(WhoError::NoIssuer)
        );
        assert_eq!(
            who(None, &id(Some("me"), Some("i"), None)),
            Err(WhoError::NoRoot)
        );
        let regexp = Identity {
            identity_regexp: Some("m.*".into()),
            ..id(None, Some("i"), Some("r.json"))
        };
        assert!(matches!(
            who(None, &regexp),
            Ok(Some(Who::Keyless { regexp: true, .. }))
        ));
    }

    #[test]
    fn run_takes_the_flags_then_the_config() {
        let config = VerifySettings {
            key: Some("config.pub".into()),
            certificate_oidc_issuer: Some("https://issuer".into()),
            trusted_root: Some("root.json".into()),
            ..VerifySettings::default()
        };
        let path = Path::new("/home/me/.otters/config.toml");
        // A flag identity takes the issuer and root from the config.
        let got = for_run(None, &id(Some("me"), None, None), &config, path).unwrap();
        assert_eq!(
            got,
            Some(Who::Keyless {
                identity: "me".into(),
                regexp: false,
                issuer: "https://issuer".into(),
                root: "root.json".into(),
            })
        );
        // Nothing given: the config's key.
        let got = for_run(None, &Identity::default(), &config, path).unwrap();
        assert_eq!(got, Some(Who::Key("config.pub".into())));
        // Half an identity in the config: the error names the file.
        let half = VerifySettings {
            certificate_identity: Some("me".into()),
            ..VerifySettings::default()
        };
        let e = for_run(None, &Identity::default(), &half, path).unwrap_err();
        assert_eq!(e.to_string(), "[verify] in /home/me/.otters/config.toml");
        assert!(matches!(e, WhoError::InConfig { source, .. } if *source == WhoError::NoIssuer));
    }

    /// Issue 33: a pattern that is not one expression is refused with the rest of the identity,
    /// so one from the config file is said to be the file's (the front end names no flag then).
    #[test]
    fn a_malformed_pattern_is_refused_where_it_was_given() {
        let path = Path::new("/home/me/.otters/config.toml");
        let config = VerifySettings {
            certificate_identity_regexp: Some("a)|(b".into()),
            certificate_oidc_issuer: Some("https://issuer".into()),
            trusted_root: Some("root.json".into()),
            ..VerifySettings::default()
        };
        let e = for_run(None, &Identity::default(), &config, path).unwrap_err();
        assert!(
            matches!(&e, WhoError::InConfig { source, .. } if matches!(**source, WhoError::Pattern(_))),
            "{e:?}"
        );
        // Given as a flag, the same pattern is the flag's: not wrapped.
        let given = Identity {
            identity_regexp: Some("a)|(b".into()),
            ..Identity::default()
        };
        let e = for_run(None, &given, &config, path).unwrap_err();
        assert!(matches!(e, WhoError::Pattern(_)), "{e:?}");
        assert!(!e.to_string().contains("--"), "{e}");
    }
}
