//! `otters kube REF` end to end: the agent fetched (pulled when missing, unless offline), its
//! manifest for the platform loaded, its runnable export found (the store's referrers, else the
//! registry's), and the objects made with [`super::manifests`].
//!
//! Takes: the store, the reference, the export's platform and the object options. Returns: the
//! YAML. Must never: point a cluster at an export of another agent or platform, or at an image
//! no registry holds.
use super::{KubeError, Manifests, Options};
use crate::export;
use crate::extract::Limits;
use crate::fetch::RegistryFetcher;
use crate::prepare::{self, PrepareError, Pull};
use crate::source::{self, Fetcher, SourceError};
use otters_core::escape::escape;
use otters_oci::reference::Reference;
use otters_oci::registry::{ClientOptions, RegistryClient, RegistryError};
use otters_oci::{Digest, Platform, Store, StoreError};

/// Where the agent and its export may come from.
#[derive(Clone, Debug, Default)]
pub struct Fetch {
    /// Use only the local store.
    pub offline: bool,
    /// The registry client's options (`--insecure`).
    pub client: ClientOptions,
}

/// Why the objects could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AgentKubeError {
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("{} has no {what} export for {platform}; run `otters export {} --as {what} --push` first", escape(.reference), escape(.reference))]
    NoExport {
        reference: String,
        platform: Box<Platform>,
        what: &'static str,
    },
    /// An agent built for one platform, asked for another than this machine's: the plain
    /// `otters export` would export it for this machine, never for `platform`.
    #[error("{} has no {what} export for {platform}, and an agent built for one platform is exported for that platform only", escape(.reference))]
    NoExportForPlatform {
        reference: String,
        platform: Box<Platform>,
        what: &'static str,
    },
    #[error("{} has no {what} export in the store, and its registry could not be asked for one", escape(.reference))]
    ExportLookup {
        reference: String,
        what: &'static str,
        #[source]
        source: Box<RegistryError>,
    },
    #[error("cannot check the {what} export listed for {}: otters could not make the export of the agent to compare it with", escape(.reference))]
    Derive {
        reference: String,
        what: &'static str,
        #[source]
        source: Box<crate::export::ExportError>,
    },
    #[error("the {what} export listed for {} ({}) is not the one otters makes of this agent ({derived}): it was made from another agent, platform or reference, or planted; run `otters export {} --as {what} --push` to publish the right one", escape(.reference), .listed.join(", "), escape(.reference))]
    NotItsExport {
        reference: String,
        what: &'static str,
        listed: Vec<String>,
        derived: Digest,
    },
    #[error("{} names no registry, so a cluster cannot pull its export; push the agent and run `otters export REF --as runnable --push`", escape(.0))]
    NoRegistry(String),
    #[error("a pod that mounts the tree from images runs the agent's own RUNTIME image, by the digest the agent pins; it cannot run another image ({})", escape(.0))]
    ImageWithTree(String),
    #[error("cannot mount the tree of {} from images", escape(.reference))]
    Tree {
        reference: String,
        #[source]
        source: Box<super::tree::TreeError>,
    },
    #[error("cannot make Kubernetes objects for {reference}")]
    Objects {
        reference: String,
        #[source]
        source: Box<KubeError>,
    },
}

/// The YAML (and its warnings) that runs the agent `reference` names in the image `image`, by
/// default the agent's runnable export for `platform` as `REPO@sha256:…` (`opts.image` is set
/// to it).
pub fn agent_objects(
    store: &Store,
    reference: &str,
    platform: &Platform,
    fetch: &Fetch,
    image: Option<&str>,
    mut opts: Options,
) -> Result<Manifests, AgentKubeError> {
    let registry = RegistryFetcher::new(fetch.client.clone());
    let pull = if fetch.offline {
        Pull::Never
    } else {
        Pull::Missing
    };
    let top = prepare::fetch_image(store, &registry, reference, pull)?.digest;
    let manifest = source::agent_manifest(store, reference, &top, platform)?;
    let agent = source::load_agent(store, reference, &manifest)?;
    let local = crate::source::LocalOnly;
    let fetcher: &dyn Fetcher = if fetch.offline { &local } else { &registry };
    if opts.tree_image {
        if let Some(i) = image {
            return Err(AgentKubeError::ImageWithTree(i.to_owned()));
        }
        let what = export::As::Tree;
        let tree = find_export(store, reference, &top, platform, fetch, fetcher, what)
            .map_err(|e| for_platform(e, manifest == top))?;
        let (runtime, volumes) = super::tree::tree_volumes(store, fetcher, &agent, platform, tree)
            .map_err(|e| AgentKubeError::Tree {
                reference: reference.to_owned(),
                source: Box::new(e),
            })?;
        opts.image = runtime;
        opts.tree = Some(volumes);
    } else {
        opts.image = if let Some(i) = image {
            i.to_owned()
        } else {
            let what = export::As::Runnable;
            find_export(store, reference, &top, platform, fetch, fetcher, what)
                .map_err(|e| for_platform(e, manifest == top))?
        };
    }
    super::manifests(&agent, &opts).map_err(|e| AgentKubeError::Objects {
        reference: reference.to_owned(),
        source: Box::new(e),
    })
}

/// [`AgentKubeError::NoExportForPlatform`] for `NoExport` of a `single`-platform agent (not an
/// index) asked for another platform than this machine's; any other error as it is.
fn for_platform(e: AgentKubeError, single: bool) -> AgentKubeError {
    match e {
        AgentKubeError::NoExport {
            reference,
            platform,
            what,
        } if single && *platform != export::linux_host() => AgentKubeError::NoExportForPlatform {
            reference,
            platform,
            what,
        },
        e => e,
    }
}

/// The agent's runnable export as `REPO@sha256:…`: one the store's referrers list, else (unless
/// offline) one the registry's list, and only the one otters makes of this agent. Whoever can
/// write a referrer (an archive loaded with the agent, a registry user) can list an "export"; an
/// export is reproducible, so the listed one is used only when its digest is the digest
/// [`export::derive`] gives for the agent, its reference and `platform` (an agent index: every
/// platform, as `otters export` makes it).
pub fn find_export(
    store: &Store,
    reference: &str,
    top: &Digest,
    platform: &Platform,
    fetch: &Fetch,
    fetcher: &dyn Fetcher,
    what: export::As,
) -> Result<String, AgentKubeError> {
    let parsed = Reference::parse(reference).ok();
    let mut listed = export::exports_as(store, top, what)?;
    let name = what.annotation();
    let mut derived: Option<Digest> = None;
    let mut derive = || -> Result<Digest, AgentKubeError> {
        if let Some(d) = &derived {
            return Ok(d.clone());
        }
        let is_index = store.read_blob(top).ok().is_some_and(|b| {
            otters_oci::spec::descriptor::ManifestDoc::parse(&b)
                .is_ok_and(|doc| doc.media_type == Some(otters_oci::MediaType::OciIndex))
        });
        let wanted = (!is_index).then_some(platform);
        let made = export::derive_as(
            store,
            fetcher,
            reference,
            top,
            wanted,
            &Limits::default(),
            what,
        )
        .map_err(|e| AgentKubeError::Derive {
            reference: reference.to_owned(),
            what: name,
            source: Box::new(e),
        })?;
        derived = Some(made.descriptor.digest.clone());
        Ok(made.descriptor.digest)
    };
    let mut found = None;
    if export::pick_export(&listed, platform).is_some() {
        let d = derive()?;
        found = listed.iter().any(|e| e.digest == d).then_some(d);
    }
    if found.is_none() && !fetch.offline {
        if let Some(r) = &parsed {
            let lookup = |source| AgentKubeError::ExportLookup {
                reference: reference.to_owned(),
                what: name,
                source: Box::new(source),
            };
            let client = RegistryClient::new(fetch.client.clone()).map_err(lookup)?;
            let remote = export::remote_exports(&client, r, top, what).map_err(lookup)?;
            if export::pick_export(&remote, platform).is_some() {
                let d = derive()?;
                found = remote.iter().any(|e| e.digest == d).then_some(d);
            }
            listed.extend(remote);
        }
    }
    let digest = match found {
        Some(d) => d,
        None if export::pick_export(&listed, platform).is_none() => {
            return Err(AgentKubeError::NoExport {
                reference: reference.to_owned(),
                platform: Box::new(platform.clone()),
                what: name,
            })
        }
        None => {
            return Err(AgentKubeError::NotItsExport {
                reference: reference.to_owned(),
                what: name,
                listed: shown(&listed),
                derived: derive()?,
            })
        }
    };
    let r = parsed.ok_or_else(|| AgentKubeError::NoRegistry(reference.to_owned()))?;
    Ok(format!("{}@{digest}", r.name()))
}

/// The digests of `listed` for a message: the first three, then how many more.
fn shown(listed: &[otters_oci::Descriptor]) -> Vec<String> {
    let mut out: Vec<String> = listed
        .iter()
        .take(3)
        .map(|e| e.digest.to_string())
        .collect();
    if listed.len() > 3 {
        out.push(format!("and {} more", listed.len() - 3));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_without_an_export_says_how_to_make_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let top = Digest::of(b"agent");
        let offline = Fetch {
            offline: true,
            ..Fetch::default()
        };
        let platform = Platform::parse("linux/amd64").unwrap();
        let e = find_export(
            &store,
            "r.example/a:1",
            &top,
            &platform,
            &offline,
            &crate::source::LocalOnly,
            export::As::Runnable,
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, AgentKubeError::NoExport { .. }), "{text}");
        assert!(
            text.contains("run `otters export r.example/a:1 --as runnable --push` first"),
            "{text}"
        );
    }

    #[test]
    fn only_a_single_platform_agent_asked_for_another_platform_is_told_to_rebuild() {
        let no_export = |platform: Platform| AgentKubeError::NoExport {
            reference: "r.example/a:1".into(),
            platform: Box::new(platform),
            what: "runnable",
        };
        let other = Platform::parse("linux/s390x").unwrap();
        assert!(matches!(
            for_platform(no_export(other.clone()), true),
            AgentKubeError::NoExportForPlatform { .. }
        ));
        // An index exports every platform it has; this machine's is what `otters export` makes.
        assert!(matches!(
            for_platform(no_export(other), false),
            AgentKubeError::NoExport { .. }
        ));
        assert!(matches!(
            for_platform(no_export(export::linux_host()), true),
            AgentKubeError::NoExport { .. }
        ));
    }
}
