//! What a `copy --dry-run` lists besides the images: the referrers each would take along, found
//! where the copy would read them (the source registry's referrers API or tag schema, or the
//! store a layout or archive was loaded into), the same walk a copy makes: every manifest of the
//! image (an index and each of its entries), then referrers of referrers, [`MAX_DEPTH`] deep.
//!
//! Takes: the client (for a registry source), the store and a closure node. Returns: the
//! referrers listed, each with its subject. Must never: fetch more than a listing and an index per
//! image, or write anything.

use super::closure::Node;
use super::CopyError;
use otters_oci::referrers::{MAX_DEPTH, MAX_REFERRERS};
use otters_oci::registry::{RegistryClient, RegistryError};
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Descriptor, Digest, Store};

/// A referrer a copy takes along.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ListedReferrer {
    /// The digest of the referrer's manifest.
    pub digest: Digest,
    /// The manifest (of the image, or another referrer) it refers to.
    pub subject: Digest,
    /// What it is (`signature`, `SBOM`, …), when otters knows its type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its `artifactType`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

/// The referrers of `node`: from its registry when `client` is given, else from the store.
pub(super) fn referrers(
    client: Option<&RegistryClient>,
    store: &Store,
    node: &Node,
) -> Result<Vec<ListedReferrer>, CopyError> {
    let manifests = match client {
        Some(c) => {
            let mut out = vec![node.descriptor.digest.clone()];
            if node.descriptor.media_type.is_index() {
                let top = c.fetch_manifest(&node.source)?;
                let doc =
                    ManifestDoc::parse(&top.bytes).map_err(|e| RegistryError::BadDocument {
                        reference: node.source.familiar(),
                        reason: e.to_string(),
                    })?;
                out.extend(doc.manifests.into_iter().map(|m| m.digest));
            }
            out
        }
        None => otters_oci::copy::manifests(store, &node.descriptor)?,
    };
    let list = |subject: &Digest| -> Result<Vec<Descriptor>, CopyError> {
        Ok(match client {
            Some(c) => {
                c.referrers(&node.source.with_digest(subject), subject, None)?
                    .entries
            }
            None => store.referrers(subject)?,
        })
    };
    let mut out = Vec::new();
    for m in manifests {
        let mut todo = vec![(m, 0)];
        while let Some((subject, depth)) = todo.pop() {
            // In a stable order (a registry lists them as they were added, which may race).
            let mut listed = list(&subject)?;
            listed.sort_by_cached_key(|d| {
                let kind =
                    otters_supply::referrer::kind(d.artifact_type.as_deref(), &d.annotations);
                (kind, d.artifact_type.clone(), d.digest.to_string())
            });
            for d in listed {
                if out.len() >= MAX_REFERRERS {
                    return Err(RegistryError::BadDocument {
                        reference: node.source.familiar(),
                        reason: format!("it has more than {MAX_REFERRERS} referrers"),
                    }
                    .into());
                }
                if depth + 1 < MAX_DEPTH {
                    todo.push((d.digest.clone(), depth + 1));
                }
                out.push(ListedReferrer {
                    kind: otters_supply::referrer::kind(d.artifact_type.as_deref(), &d.annotations),
                    artifact_type: d.artifact_type.clone(),
                    digest: d.digest,
                    subject: subject.clone(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::closure::Role;
    use otters_oci::reference::Reference;

    /// A referrer descriptor of `artifact_type`, named by `n`.
    fn referrer(artifact_type: &str, n: &[u8]) -> Descriptor {
        let mut d = Descriptor::new(
            "application/vnd.oci.image.manifest.v1+json",
            Digest::of(n),
            1,
        );
        d.artifact_type = Some(artifact_type.to_owned());
        d
    }

    #[test]
    fn a_dry_run_lists_referrers_and_theirs_in_a_stable_order() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path().join("store")).unwrap_or_else(|e| panic!("{e}"));
        let image = Descriptor::new(
            "application/vnd.oci.image.manifest.v1+json",
            Digest::of(b"image"),
            1,
        );
        let sbom = referrer("application/vnd.cyclonedx+json", b"sbom");
        let other = referrer("text/x-other", b"other");
        let signature = referrer("application/vnd.cyclonedx+json", b"sig-of-sbom");
        for d in [&other, &sbom] {
            store
                .add_referrer(&image.digest, d)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        store
            .add_referrer(&sbom.digest, &signature)
            .unwrap_or_else(|e| panic!("{e}"));
        let node = Node {
            role: Role::Image,
            written: "reg/x:1".into(),
            source: Reference::parse("reg/x:1")
                .unwrap_or_else(|e| panic!("{e}"))
                .with_digest(&image.digest),
            descriptor: image.clone(),
            platforms: Vec::new(),
            by: None,
        };
        let listed = referrers(None, &store, &node).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(Digest, Digest, Option<String>)> = listed
            .into_iter()
            .map(|r| (r.digest, r.subject, r.kind))
            .collect();
        // By kind (none first), then type and digest; referrers of referrers after their level.
        assert_eq!(
            got,
            [
                (other.digest.clone(), image.digest.clone(), None),
                (
                    sbom.digest.clone(),
                    image.digest.clone(),
                    Some("SBOM".into())
                ),
                (
                    signature.digest.clone(),
                    sbom.digest.clone(),
                    Some("SBOM".into())
                ),
            ]
        );
    }
}
