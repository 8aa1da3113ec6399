//! Referrers in a registry: discovery through `GET /v2/<name>/referrers/<digest>` or, where a
//! registry lacks that API, the tag schema's `sha256-<hex>` index; push and pull of an image's
//! referrers with it.
//!
//! Takes: a [`RegistryClient`], a [`Store`], references and subject digests. Returns: validated
//! lists of referrer descriptors, and transfer reports. Must never: trust a registry's list (it is
//! capped and validated by [`crate::referrers::parse_index`], and every pulled referrer must name
//! the subject it was listed for), or overwrite a tag-schema index without merging what is there:
//! the index is read, merged, written, and read again, and the merge is repeated when an entry
//! went missing because another writer raced us.

use crate::progress::Progress;
use crate::reference::Reference;
use crate::referrers::{
    descriptor_of, filter, index_bytes, merge, parse_index, plain_media_type, subject_of,
    tag_schema, MAX_DEPTH, MAX_REFERRERS,
};
use crate::registry::client::RegistryClient;
use crate::registry::error::RegistryError;
use crate::registry::http::encode_component;
use crate::registry::sources::Sources;
use crate::registry::transfer::manifest::read_doc;
use crate::registry::transfer::pull::pull_image;
use crate::registry::transfer::push::push_node;
use crate::registry::transfer::report::TransferReport;
use crate::spec::descriptor::{Descriptor, INDEX_V1};
use crate::spec::digest::Digest;
use crate::store::layout::Store;
use crate::validate::{error_chain, read_capped, Kind, MAX_MANIFEST};
use reqwest::header::CONTENT_TYPE;

/// How a registry listed referrers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// The OCI 1.1 referrers API.
    Api,
    /// The `sha256-<hex>` tag schema (a registry without the API).
    TagSchema,
}

/// Referrers of one subject as a registry lists them.
#[derive(Clone, Debug)]
pub struct Listing {
    pub entries: Vec<Descriptor>,
    pub via: Via,
    /// Registry requests the listing took (the listing itself, the tag-schema fallback, and the
    /// manifests read to classify entries that lacked their `artifactType`).
    pub requests: usize,
}

/// How often a tag-schema update is retried when a concurrent writer dropped an entry.
const TAG_SCHEMA_ATTEMPTS: usize = 5;

impl RegistryClient {
    /// The referrers of `subject` in `r`'s repository, of `artifact_type` when given.
    pub fn referrers(
        &self,
        r: &Reference,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> Result<Listing, RegistryError> {
        self.block_on(self.referrers_async(r, subject, artifact_type))
    }

    async fn referrers_async(
        &self,
        r: &Reference,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> Result<Listing, RegistryError> {
        let mut path = format!("/v2/{}/referrers/{subject}", r.repository);
        if let Some(at) = artifact_type {
            path = format!("{path}?artifactType={}", encode_component(at));
        }
        let missing = || RegistryError::NotFound {
            reference: String::new(),
        };
        let bad = |why: String| RegistryError::BadDocument {
            reference: format!("{}@{subject}", r.name()),
            reason: format!("{why}; nothing was stored"),
        };
        match self
            .pull_get(
                r,
                &path,
                Some(INDEX_V1),
                crate::registry::http::Call::Small,
                None,
                missing,
            )
            .await
        {
            Ok(resp) => {
                let header = resp
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(|s| s.split(';').next().unwrap_or(s).trim().to_owned());
                let bytes = match read_capped(resp, MAX_MANIFEST).await {
                    Ok(Some(b)) => b,
                    Ok(None) => {
                        return Err(bad(format!(
                            "its referrers list is more than {MAX_MANIFEST} bytes"
                        )))
                    }
                    Err(e) => {
                        return Err(RegistryError::Unreachable {
                            registry: r.registry.clone(),
                            reason: error_chain(&e),
                        })
                    }
                };
                let entries = parse_index(&bytes, header.as_deref()).map_err(bad)?;
                // The filter is applied here too: a registry may ignore it.
                self.filtered(r, entries, artifact_type, Via::Api, 1).await
            }
            // No referrers API (distribution 2.8 answers 404): the tag schema.
            Err(RegistryError::NotFound { .. }) => {
                let entries = self.tag_schema_index(r, subject, false).await?;
                self.filtered(r, entries, artifact_type, Via::TagSchema, 2)
                    .await
            }
            Err(e) => Err(e),
        }
    }

    /// `entries` of `artifact_type` (all when `None`). To filter, an entry that lacks its type
    /// (`skopeo copy` drops `artifactType` from a tag-schema index) is classified by its manifest
    /// first; without a filter, entries are returned as listed.
    async fn filtered(
        &self,
        r: &Reference,
        mut entries: Vec<Descriptor>,
        artifact_type: Option<&str>,
        via: Via,
        mut requests: usize,
    ) -> Result<Listing, RegistryError> {
        if artifact_type.is_some() {
            for d in entries.iter_mut().filter(|d| d.artifact_type.is_none()) {
                self.classify_async(r, d).await?;
                requests += 1;
            }
        }
        Ok(Listing {
            entries: filter(entries, artifact_type),
            via,
            requests,
        })
    }

    /// Fills in the `artifactType` (and, when it has none, the annotations) of a listed referrer
    /// that lacks it, from its manifest: the manifest's `artifactType`, else its config's media
    /// type, as the referrers API derives it. Costs one manifest read; nothing is stored.
    pub fn classify(&self, r: &Reference, d: &mut Descriptor) -> Result<(), RegistryError> {
        if d.artifact_type.is_some() {
            return Ok(());
        }
        self.block_on(self.classify_async(r, d))
    }

    async fn classify_async(&self, r: &Reference, d: &mut Descriptor) -> Result<(), RegistryError> {
        let f = self
            .fetch_manifest_async(r, d.digest.as_str(), Some(Kind::Manifest))
            .await?;
        let found = descriptor_of(&f.bytes, &f.media_type);
        d.artifact_type = found.artifact_type.filter(|t| plain_media_type(t));
        if d.annotations.is_empty() {
            d.annotations = found.annotations;
        }
        Ok(())
    }

    /// The `sha256-<hex>` index of `subject` (empty when the tag does not exist). `upstream`: read
    /// from the registry itself, never a mirror (a read that feeds a write: a stale mirror's copy
    /// merged and written back would delete the referrers added since).
    async fn tag_schema_index(
        &self,
        r: &Reference,
        subject: &Digest,
        upstream: bool,
    ) -> Result<Vec<Descriptor>, RegistryError> {
        let tag = tag_schema(subject);
        let fetched = if upstream {
            self.fetch_manifest_upstream(r, &tag, Some(Kind::Index))
                .await
        } else {
            self.fetch_manifest_async(r, &tag, Some(Kind::Index)).await
        };
        match fetched {
            Ok(f) => parse_index(&f.bytes, Some(f.media_type.as_str())).map_err(|why| {
                RegistryError::BadDocument {
                    reference: format!("{}:{tag}", r.name()),
                    reason: format!("{why}; nothing was stored"),
                }
            }),
            Err(RegistryError::NotFound { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Adds `entry` to the tag-schema index of `subject`: read, merge, write, read again; when the
    /// second read lacks an entry that was written (another writer's update replaced ours), the
    /// merge is done again on what is there now.
    pub(crate) async fn update_tag_schema(
        &self,
        r: &Reference,
        subject: &Digest,
        entry: &Descriptor,
    ) -> Result<(), RegistryError> {
        let tag = tag_schema(subject);
        for _ in 0..TAG_SCHEMA_ATTEMPTS {
            let mut list = self.tag_schema_index(r, subject, true).await?;
            if !merge(&mut list, std::slice::from_ref(entry)) {
                return Ok(());
            }
            if list.len() > MAX_REFERRERS {
                return Err(RegistryError::BadDocument {
                    reference: format!("{}@{subject}", r.name()),
                    reason: format!("it has more than {MAX_REFERRERS} referrers"),
                });
            }
            self.put_manifest_async(r, &tag, INDEX_V1, &index_bytes(&list))
                .await?;
            let now = self.tag_schema_index(r, subject, true).await?;
            if list
                .iter()
                .all(|d| now.iter().any(|n| n.digest == d.digest))
            {
                return Ok(());
            }
        }
        Err(RegistryError::Protocol {
            registry: r.registry.clone(),
            what: format!(
                "a referrers tag {tag} that other writers kept replacing; run the command again"
            ),
        })
    }

    /// Fetches the manifest `r` names from the registry itself (never a mirror: `sign --remote`
    /// and `attach --remote` write referrers of what this returns, so a stale mirror's tag must
    /// not choose the image) and returns its descriptor.
    pub fn subject_descriptor(&self, r: &Reference) -> Result<Descriptor, RegistryError> {
        Ok(self.subject_manifest(r)?.0)
    }

    /// [`Self::subject_descriptor`] and the manifest's bytes as fetched (digest-checked by
    /// construction: the digest is of these bytes), so a reader need not fetch them again.
    pub fn subject_manifest(&self, r: &Reference) -> Result<(Descriptor, Vec<u8>), RegistryError> {
        let f = self.block_on(self.fetch_manifest_upstream(r, r.selector(), None))?;
        let d = Descriptor::new(f.media_type, f.digest, f.bytes.len() as u64);
        Ok((d, f.bytes))
    }
}

/// Pushes the referrer `d` (a manifest in `store`) of `subject` to `dest`'s repository: its
/// blobs, the manifest by digest, and, when the registry did not index its subject itself, an
/// entry in the tag-schema index.
#[allow(clippy::too_many_arguments)]
pub fn push_referrer(
    client: &RegistryClient,
    store: &Store,
    subject: &Digest,
    d: &Descriptor,
    dest: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
) -> Result<(), RegistryError> {
    push_node(client, store, d, dest, sources, progress, report, 0)?;
    let bytes = read_doc(store, &d.digest)?;
    let indexed = client.block_on(client.put_manifest_async(
        dest,
        d.digest.as_str(),
        d.media_type.as_str(),
        &bytes,
    ))?;
    if !indexed {
        client.block_on(client.update_tag_schema(dest, subject, d))?;
    }
    sources.add(&d.digest, dest);
    report.referrers.push(d.digest.clone());
    Ok(())
}

/// Pushes every referrer the store has for `subject` (and theirs, [`MAX_DEPTH`] deep).
pub fn push_referrers(
    client: &RegistryClient,
    store: &Store,
    subject: &Digest,
    dest: &Reference,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
) -> Result<(), RegistryError> {
    let mut todo = vec![(subject.clone(), 0)];
    while let Some((s, depth)) = todo.pop() {
        for d in store.referrers(&s)? {
            push_referrer(client, store, &s, &d, dest, sources, progress, report)?;
            if depth + 1 < MAX_DEPTH {
                todo.push((d.digest, depth + 1));
            }
        }
    }
    Ok(())
}

/// Pulls the referrers `r`'s registry lists for `subject` (and theirs, [`MAX_DEPTH`] deep, at
/// most [`MAX_REFERRERS`] in all) into the store and records them there.
pub fn pull_referrers(
    client: &RegistryClient,
    store: &Store,
    r: &Reference,
    subject: &Digest,
    sources: &mut Sources,
    progress: Progress<'_>,
    report: &mut TransferReport,
) -> Result<(), RegistryError> {
    let mut todo = vec![(subject.clone(), 0)];
    let mut count = 0;
    while let Some((s, depth)) = todo.pop() {
        for listed in client.referrers(r, &s, None)?.entries {
            count += 1;
            if count > MAX_REFERRERS {
                return Err(RegistryError::BadDocument {
                    reference: r.familiar(),
                    reason: format!("it has more than {MAX_REFERRERS} referrers"),
                });
            }
            let (desc, sub) = pull_image(
                client,
                store,
                &r.with_digest(&listed.digest),
                sources,
                progress,
            )?;
            let bytes = store.read_blob(&desc.digest)?;
            if subject_of(&bytes).map(|d| d.digest) != Some(s.clone()) {
                return Err(RegistryError::BadDocument {
                    reference: r.familiar(),
                    reason: format!(
                        "the registry lists {} as a referrer of {s}, but it does not name {s} as its subject",
                        listed.digest
                    ),
                });
            }
            report.absorb(sub);
            store.add_referrer(&s, &descriptor_of(&bytes, &desc.media_type))?;
            report.referrers.push(desc.digest.clone());
            if depth + 1 < MAX_DEPTH {
                todo.push((desc.digest, depth + 1));
            }
        }
    }
    Ok(())
}
