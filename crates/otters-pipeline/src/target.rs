//! An image a front end names (`otters inspect`, `discover`, `attach`, `sign`, `verify`): in the
//! local store, or in its registry, resolved to its manifest descriptor now; its referrers listed
//! and read from the same side, and a new referrer published there ([`Target::share`]: also to
//! the registry a local image's reference names, when that registry holds the same digest).
//!
//! Takes: the local store, a reference as the user wrote it, and [`Place`] (where to look).
//! Returns: a [`Target`], or a [`TargetError`] that speaks of the reference (the front end adds
//! its flag names). Must never: read an implied Docker Hub for a local tag (`agents/demo:1` is a
//! tag, not `docker.io/agents/demo:1`), push a referrer to a registry that does not answer for
//! its subject's digest itself (never a mirror's word), or print.
use otters_core::escape::escape;
use otters_oci::reference::{Reference, ReferenceError};
use otters_oci::registry::referrers::push_referrer;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::{ClientOptions, RegistryClient, RegistryError};
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::store::query::ImageDetails;
use otters_oci::{Descriptor, Digest, Platform, Store, StoreError};

/// Where an image is looked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The local store only.
    Local,
    /// The registry the reference names only.
    Remote,
    /// The local store; a registry reference the store does not hold is read from its registry.
    Auto,
}

/// An image resolved to its manifest descriptor: in the local store, or in a registry (the
/// reference pinned to the digest it resolved to). The store is kept either way: a referrer is
/// written there before it is published.
pub enum Target {
    Local(Store, Descriptor),
    Remote(Store, Box<RegistryClient>, Reference, Descriptor),
}

/// Why an image or its referrers could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("cannot read {} from the local store: {source}", escape(.reference))]
    Store {
        reference: String,
        source: StoreError,
    },
    #[error("no image {} in the local store", escape(.0))]
    NotInStore(String),
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// `context: source`: what was being done with the registry, and its error.
    #[error("{context}: {source}")]
    Registry {
        context: String,
        source: Box<RegistryError>,
    },
    #[error(transparent)]
    Client(Box<RegistryError>),
    #[error("cannot read the store's referrers: {0}")]
    Referrers(#[source] StoreError),
    #[error(transparent)]
    Read(StoreError),
    #[error("manifest {digest} is not valid JSON: {source}")]
    BadManifest {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("blob {digest} is {size} bytes, more than {max}")]
    TooLarge { digest: Digest, size: u64, max: u64 },
}

/// The registry reference `reference` spells out (`HOST/…`), if it names one: never an implied
/// Docker Hub for a local tag such as `agents/demo:1`.
pub fn names_registry(reference: &str) -> Option<Reference> {
    Reference::parse(reference)
        .ok()
        .filter(|r| reference.starts_with(&format!("{}/", r.registry)))
}

fn client(insecure: bool) -> Result<RegistryClient, TargetError> {
    RegistryClient::new(ClientOptions {
        insecure,
        ..ClientOptions::default()
    })
    .map_err(client_error)
}

impl Target {
    /// The image `reference` names, looked for where `place` says; `insecure` allows plain HTTP
    /// and unverified TLS for a registry not on this machine.
    pub fn resolve(
        store: Store,
        reference: &str,
        place: Place,
        insecure: bool,
    ) -> Result<Target, TargetError> {
        Ok(Target::resolve_read(store, reference, place, insecure)?.0)
    }

    /// [`Target::resolve`], and for a remote image the manifest bytes fetched to resolve it (so a
    /// reader does not fetch them again by digest).
    pub fn resolve_read(
        store: Store,
        reference: &str,
        place: Place,
        insecure: bool,
    ) -> Result<(Target, Option<Vec<u8>>), TargetError> {
        let remote = |store, r: &Reference| {
            Target::remote_read(store, r, insecure).map(|(t, b)| (t, Some(b)))
        };
        if place == Place::Remote {
            return remote(store, &Reference::parse(reference)?);
        }
        let held = store
            .resolve(reference)
            .map_err(|source| TargetError::Store {
                reference: reference.to_owned(),
                source,
            })?;
        match (held, place, names_registry(reference)) {
            (Some(d), ..) => Ok((Target::Local(store, d), None)),
            (None, Place::Auto, Some(r)) => remote(store, &r),
            (None, ..) => Err(TargetError::NotInStore(reference.to_owned())),
        }
    }

    /// The image in the registry `r` names, resolved there now.
    pub fn remote(store: Store, r: &Reference, insecure: bool) -> Result<Target, TargetError> {
        Ok(Target::remote_read(store, r, insecure)?.0)
    }

    /// [`Target::remote`] and the manifest bytes it fetched.
    pub fn remote_read(
        store: Store,
        r: &Reference,
        insecure: bool,
    ) -> Result<(Target, Vec<u8>), TargetError> {
        let client = client(insecure)?;
        let (d, bytes) = client
            .subject_manifest(r)
            .map_err(|source| TargetError::Registry {
                context: format!("cannot read {}", r.familiar()),
                source: Box::new(source),
            })?;
        let pinned = r.with_digest(&d.digest);
        Ok((Target::Remote(store, Box::new(client), pinned, d), bytes))
    }

    /// This image as the registry `r` names holds it (same digest): where `verify` looks when
    /// the store has no signature of an image that came from a registry.
    pub fn in_registry(&self, r: &Reference, insecure: bool) -> Result<Target, TargetError> {
        let d = self.descriptor().clone();
        Ok(Target::Remote(
            self.store().clone(),
            Box::new(client(insecure)?),
            r.with_digest(&d.digest),
            d,
        ))
    }

    pub fn descriptor(&self) -> &Descriptor {
        match self {
            Target::Local(_, d) | Target::Remote(_, _, _, d) => d,
        }
    }

    pub fn store(&self) -> &Store {
        match self {
            Target::Local(s, _) | Target::Remote(s, ..) => s,
        }
    }

    /// The registry reference (pinned to the digest) of a remote image.
    pub fn registry_reference(&self) -> Option<&Reference> {
        match self {
            Target::Remote(_, _, r, _) => Some(r),
            Target::Local(..) => None,
        }
    }

    /// The repository name a statement about this image names (no tag, no digest).
    pub fn subject_name(&self, reference: &str) -> String {
        match self {
            Target::Remote(_, _, r, _) => r.name(),
            Target::Local(..) => {
                let name = reference.split('@').next().unwrap_or(reference);
                if name.starts_with("sha256:") {
                    return name.to_owned();
                }
                otters_oci::store::query::repository_and_tag(name).0
            }
        }
    }

    /// The referrers of `subject`, of `artifact_type` when given.
    pub fn referrers(
        &self,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> Result<Vec<Descriptor>, TargetError> {
        match self {
            Target::Local(store, _) => {
                let list = store.referrers(subject).map_err(TargetError::Referrers)?;
                Ok(otters_oci::referrers::filter(list, artifact_type))
            }
            Target::Remote(_, client, r, _) => Ok(client
                .referrers(r, subject, artifact_type)
                .map_err(|source| listing_error(r, source))?
                .entries),
        }
    }

    /// The referrers of `subject` (of `artifact_type` when given) with their kind filled in, and
    /// the registry requests that took: an entry that lacks its `artifactType` (a `skopeo copy`
    /// of a tag-schema index drops it) is classified by its manifest.
    pub fn listing(
        &self,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> Result<(Vec<Descriptor>, usize), TargetError> {
        let Target::Remote(_, client, r, _) = self else {
            return Ok((self.referrers(subject, artifact_type)?, 0));
        };
        let mut listing = client
            .referrers(r, subject, artifact_type)
            .map_err(|source| listing_error(r, source))?;
        let mut requests = listing.requests;
        for d in listing
            .entries
            .iter_mut()
            .filter(|d| d.artifact_type.is_none())
        {
            requests += 1;
            // A manifest that cannot be read stays unclassified; `discover` still lists it.
            let _ = client.classify(r, d);
        }
        Ok((listing.entries, requests))
    }

    /// A referrer's manifest bytes (digest-checked).
    pub fn manifest(&self, d: &Descriptor) -> Result<Vec<u8>, TargetError> {
        match self {
            Target::Local(store, _) => store.read_blob(&d.digest).map_err(TargetError::Read),
            Target::Remote(_, client, r, _) => Ok(client
                .fetch_manifest(&r.with_digest(&d.digest))
                .map_err(client_error)?
                .bytes),
        }
    }

    /// A small blob of a referrer (digest-checked, at most `max` bytes).
    pub fn blob(&self, d: &Descriptor, max: u64) -> Result<Vec<u8>, TargetError> {
        if d.size > max {
            return Err(TargetError::TooLarge {
                digest: d.digest.clone(),
                size: d.size,
                max,
            });
        }
        match self {
            Target::Local(store, _) => store.read_blob(&d.digest).map_err(TargetError::Read),
            Target::Remote(_, client, r, _) => {
                client.fetch_blob(r, &d.digest, max).map_err(client_error)
            }
        }
    }

    /// Records a referrer (already in the local store) of this image: for a remote image, pushes
    /// it to its registry too.
    pub fn publish(&self, referrer: &Descriptor) -> Result<(), TargetError> {
        if let Target::Remote(store, client, r, subject) = self {
            let mut sources = Sources::load(store.root());
            let mut report = TransferReport::new(
                r.to_string(),
                subject.digest.clone(),
                subject.media_type.clone(),
            );
            let result = push_referrer(
                client,
                store,
                &subject.digest,
                referrer,
                r,
                &mut sources,
                &mut |_| {},
                &mut report,
            );
            let _ = sources.save();
            result.map_err(|source| TargetError::Registry {
                context: format!("cannot push the referrer to {}", r.familiar()),
                source: Box::new(source),
            })?;
        }
        Ok(())
    }
}

/// Where a referrer [`Target::share`] recorded went.
#[derive(Debug, PartialEq, Eq)]
pub enum Shared {
    /// The local store and the registry: `REPOSITORY@DIGEST`, the subject there.
    Registry(String),
    /// The local store only, for this reason.
    StoreOnly(StoreOnly),
}

/// Why a referrer stayed in the local store.
#[derive(Debug, PartialEq, Eq)]
pub enum StoreOnly {
    /// The reference names no registry (a local tag or a digest).
    NoRegistry,
    /// `--local` was given.
    Asked,
    /// The registry does not hold the image (yet): `(registry, repository)`.
    NotInRegistry(String, String),
    /// The registry could not be asked, or refused the referrer: `(registry, why)`.
    Failed(String, String),
}

impl Target {
    /// Records a referrer (already in the local store) where the image is: a remote image's
    /// registry gets it (an error if it cannot); a local image whose `reference` names a
    /// registry that holds the same digest gets it pushed there too, unless `local_only`. A
    /// registry that lacks the image, or cannot be reached, leaves the referrer in the store
    /// and says why: the store holds a valid referrer either way.
    pub fn share(
        &self,
        referrer: &Descriptor,
        reference: &str,
        local_only: bool,
        insecure: bool,
    ) -> Result<Shared, TargetError> {
        if let Some(r) = self.registry_reference() {
            self.publish(referrer)?;
            let subject = format!("{}@{}", r.name(), self.descriptor().digest);
            return Ok(Shared::Registry(subject));
        }
        let Some(r) = names_registry(reference) else {
            return Ok(Shared::StoreOnly(StoreOnly::NoRegistry));
        };
        if local_only {
            return Ok(Shared::StoreOnly(StoreOnly::Asked));
        }
        let digest = &self.descriptor().digest;
        let failed = |e: &dyn std::error::Error| {
            Shared::StoreOnly(StoreOnly::Failed(r.registry.clone(), one_line(e)))
        };
        let there = match Target::remote(self.store().clone(), &r.with_digest(digest), insecure) {
            Ok(t) => t,
            Err(TargetError::Registry { source, .. })
                if matches!(*source, RegistryError::NotFound { .. }) =>
            {
                let repository = r.name();
                return Ok(Shared::StoreOnly(StoreOnly::NotInRegistry(
                    r.registry, repository,
                )));
            }
            Err(e) => return Ok(failed(&e)),
        };
        Ok(match there.publish(referrer) {
            Ok(()) => Shared::Registry(format!("{}@{digest}", r.name())),
            Err(e) => failed(&e),
        })
    }
}

/// `inspect` of an image in its registry: the manifest (of `platform`'s image when `r` names an
/// index and a platform is given) and its config blob; no layer is fetched, nothing is written.
pub fn remote_details(
    client: &RegistryClient,
    r: &Reference,
    platform: Option<&Platform>,
) -> Result<ImageDetails, TargetError> {
    let inspecting = |source: RegistryError| TargetError::Registry {
        context: format!("cannot inspect {}", r.familiar()),
        source: Box::new(source),
    };
    let top = client.fetch_manifest(r).map_err(inspecting)?;
    let fetched = match platform {
        Some(p) if top.media_type.is_index() => client.resolve(r, p).map_err(inspecting)?.manifest,
        _ => top,
    };
    let manifest: ManifestDoc =
        serde_json::from_slice(&fetched.bytes).map_err(|source| TargetError::BadManifest {
            digest: fetched.digest.clone(),
            source,
        })?;
    let config = match &manifest.config {
        Some(c) => {
            let bytes = client
                .fetch_blob(r, &c.digest, MAX_CONFIG)
                .map_err(|source| TargetError::Registry {
                    context: format!("cannot read the config of {}", r.familiar()),
                    source: Box::new(source),
                })?;
            serde_json::from_slice::<serde_json::Value>(&bytes).ok()
        }
        None => None,
    };
    let mut descriptor = Descriptor::new(
        fetched.media_type,
        fetched.digest,
        fetched.bytes.len() as u64,
    );
    descriptor.artifact_type = serde_json::from_slice::<serde_json::Value>(&fetched.bytes)
        .ok()
        .and_then(|v| v["artifactType"].as_str().map(str::to_owned));
    Ok(ImageDetails {
        descriptor,
        bytes: fetched.bytes,
        manifest,
        config,
    })
}

/// The largest config blob `inspect` reads from a registry.
const MAX_CONFIG: u64 = 64 << 20;

fn client_error(e: RegistryError) -> TargetError {
    TargetError::Client(Box::new(e))
}

fn listing_error(r: &Reference, source: RegistryError) -> TargetError {
    TargetError::Registry {
        context: format!("cannot list the referrers of {}", r.familiar()),
        source: Box::new(source),
    }
}

/// An error and its causes on one line, each cause once, as a verification reason quotes it.
pub(crate) use otters_oci::validate::error_chain_whole as one_line;

/// The referrers `verify` and the run gate read: the local store's, or the registry's.
impl otters_supply::verify::Referrers for Target {
    fn list(&self, subject: &Digest) -> Result<Vec<Descriptor>, String> {
        self.referrers(subject, None).map_err(|e| one_line(&e))
    }

    fn manifest(&self, d: &Descriptor) -> Result<Vec<u8>, String> {
        Target::manifest(self, d).map_err(|e| one_line(&e))
    }

    fn blob(&self, d: &Descriptor, max: u64) -> Result<Vec<u8>, String> {
        Target::blob(self, d, max).map_err(|e| one_line(&e))
    }

    fn is_local(&self) -> bool {
        matches!(self, Target::Local(..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_reference_that_spells_its_registry_names_one() {
        assert!(names_registry("agents/demo:1").is_none());
        assert!(names_registry("demo").is_none());
        let r = names_registry("127.0.0.1:5000/team/demo:1").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
    }

    #[test]
    fn a_cause_already_quoted_is_said_once() {
        let io = otters_oci::path_io::PathIoError {
            action: "read",
            path: "x".into(),
            source: std::io::Error::other("the disk is full"),
        };
        let e = TargetError::Referrers(StoreError::Io(io));
        assert_eq!(
            one_line(&e),
            "cannot read the store's referrers: cannot read x: the disk is full"
        );
    }
}
