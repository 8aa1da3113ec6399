//! Signatures and attestations as referrers of an image in the store, and their push after the
//! image: what `otters sign` attaches, and what `otters build --sbom --provenance --sign-key|
//! --sign-keyless` attaches and pushes (the SBOM is `CycloneDX` 1.6 and the provenance SLSA v1,
//! both made by `otters-supply` from the build's real inputs).
//!
//! Takes: the store, the subject's descriptor, statements and a signer (a callback that returns a
//! bundle's bytes: key-based or keyless, the caller's choice). Returns: the referrers' digests.
//! Must never: attach a document about any digest but the subject's, or read the wall clock (the
//! documents are functions of the inputs).

use crate::build::BuildOutput;
use otters_oci::reference::{Reference, ReferenceError};
use otters_oci::registry::referrers::push_referrers;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::{RegistryClient, RegistryError};
use otters_oci::spec::descriptor::ANN_TITLE;
use otters_oci::{Descriptor, Digest, Store, StoreError};
use otters_supply::bundle::BUNDLE_V03;
use otters_supply::referrer::{title, ANN_PREDICATE_TYPE};
use otters_supply::statement::{Statement, Subject, PAYLOAD_TYPE};
use otters_supply::verify::{ANN_BUNDLE_CONTENT, ANN_BUNDLE_PREDICATE};
use otters_supply::{provenance, sbom};
use std::collections::BTreeMap;

/// Why a [`Sign`] callback could not sign.
pub type SignError = Box<dyn std::error::Error + Send + Sync>;

/// Signs a statement: the Sigstore bundle's bytes, or why not.
pub type Sign<'a> = dyn FnMut(&Statement) -> Result<Vec<u8>, SignError> + 'a;

/// What a build attaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    /// A `CycloneDX` SBOM.
    pub sbom: bool,
    /// SLSA v1 provenance.
    pub provenance: bool,
}

/// Why attaching or pushing referrers failed.
#[derive(Debug, thiserror::Error)]
pub enum AttestError {
    #[error("cannot store the {what}")]
    Store {
        what: &'static str,
        #[source]
        source: StoreError,
    },
    #[error("cannot sign the {what}")]
    Sign {
        what: &'static str,
        #[source]
        source: SignError,
    },
    #[error("cannot push the referrers to {reference}")]
    Reference {
        reference: String,
        #[source]
        source: ReferenceError,
    },
    #[error("cannot push the referrers to {dest}")]
    Push {
        dest: String,
        #[source]
        source: Box<RegistryError>,
    },
}

fn stored(what: &'static str) -> impl FnOnce(StoreError) -> AttestError {
    move |source| AttestError::Store { what, source }
}

/// Records `bundle` (a Sigstore bundle over `statement`) as a referrer of `subject`: one bundle
/// layer, annotated as cosign annotates its bundles.
///
/// # Errors
/// The store's, when the bundle or the referrer manifest cannot be written.
pub fn attach_bundle(
    store: &Store,
    subject: &Descriptor,
    statement: &Statement,
    bundle: &[u8],
) -> Result<Descriptor, StoreError> {
    let (digest, size) = store.put_blob_bytes(bundle)?;
    let notes = BTreeMap::from([
        (ANN_BUNDLE_CONTENT.to_owned(), "dsse-envelope".to_owned()),
        (
            ANN_BUNDLE_PREDICATE.to_owned(),
            statement.predicate_type.clone(),
        ),
    ]);
    let mut layer = Descriptor::new(BUNDLE_V03, digest, size)
        .with_annotation(ANN_TITLE, title(&statement.predicate_type, true));
    layer.annotations.extend(notes.clone());
    store.attach(subject, BUNDLE_V03, &[layer], &notes)
}

/// An unsigned document as a referrer: one layer of `media_type`, artifactType the same.
///
/// # Errors
/// The store's, when the document or the referrer manifest cannot be written.
pub fn attach_document(
    store: &Store,
    subject: &Descriptor,
    media_type: &str,
    bytes: &[u8],
    predicate_type: &str,
) -> Result<Descriptor, StoreError> {
    let (digest, size) = store.put_blob_bytes(bytes)?;
    let notes = BTreeMap::from([(ANN_PREDICATE_TYPE.to_owned(), predicate_type.to_owned())]);
    let mut layer = Descriptor::new(media_type, digest, size)
        .with_annotation(ANN_TITLE, title(predicate_type, false));
    layer.annotations.extend(notes.clone());
    store.attach(subject, media_type, &[layer], &notes)
}

/// Signs `statement` with `sign` and attaches the bundle to `subject`.
fn signed(
    store: &Store,
    subject: &Descriptor,
    statement: &Statement,
    sign: &mut Sign<'_>,
    what: &'static str,
) -> Result<Descriptor, AttestError> {
    let bytes = sign(statement).map_err(|source| AttestError::Sign { what, source })?;
    attach_bundle(store, subject, statement, &bytes).map_err(stored(what))
}

/// Attaches what `wanted` asks for to the image `out` built; with `sign`, each document is a
/// signed DSSE attestation and the image is signed too. Returns what was attached, by name
/// (`sbom`, `provenance`, `signature`). Nothing when the build did not describe its inputs.
///
/// # Errors
/// [`AttestError`]: a store write or a signature failed.
pub fn attach_build(
    store: &Store,
    out: &BuildOutput,
    wanted: Wanted,
    mut sign: Option<&mut Sign<'_>>,
) -> Result<Vec<(&'static str, Digest)>, AttestError> {
    let Some(inputs) = &out.supply else {
        return Ok(Vec::new());
    };
    let subject = &out.descriptor;
    let mut done = Vec::new();
    if wanted.sbom {
        let d = match sign.as_deref_mut() {
            Some(s) => signed(store, subject, &sbom::statement(inputs), s, "SBOM")?,
            None => attach_document(
                store,
                subject,
                sbom::CYCLONEDX_MEDIA_TYPE,
                &sbom::to_bytes(inputs),
                sbom::CYCLONEDX_PREDICATE,
            )
            .map_err(stored("SBOM"))?,
        };
        done.push(("sbom", d.digest));
    }
    if wanted.provenance {
        let builder = provenance::DEFAULT_BUILDER_ID;
        let d = match sign.as_deref_mut() {
            Some(s) => signed(
                store,
                subject,
                &provenance::statement(inputs, builder),
                s,
                "provenance",
            )?,
            None => attach_document(
                store,
                subject,
                PAYLOAD_TYPE,
                &provenance::to_bytes(inputs, builder),
                provenance::SLSA_PROVENANCE_V1,
            )
            .map_err(stored("provenance"))?,
        };
        done.push(("provenance", d.digest));
    }
    if let Some(s) = sign {
        let statement = Statement::signature(Subject {
            name: inputs.agent.subject_name().to_owned(),
            digest: subject.digest.clone(),
        });
        let d = signed(store, subject, &statement, s, "signature")?;
        done.push(("signature", d.digest));
    }
    Ok(done)
}

/// The build pushed its tags before the referrers existed: pushes them now, after the image, to
/// each reference the build pushed.
///
/// # Errors
/// [`AttestError::Push`]: which destination refused, and why.
pub fn push_build_referrers(
    client: &RegistryClient,
    store: &Store,
    out: &BuildOutput,
) -> Result<(), AttestError> {
    let mut sources = Sources::load(store.root());
    for r in &out.pushed {
        let dest = Reference::parse(&r.reference).map_err(|source| AttestError::Reference {
            reference: r.reference.clone(),
            source,
        })?;
        let pinned = dest.with_digest(&out.descriptor.digest);
        let mut report = TransferReport::new(
            r.reference.clone(),
            out.descriptor.digest.clone(),
            out.descriptor.media_type.clone(),
        );
        push_referrers(
            client,
            store,
            &out.descriptor.digest,
            &pinned,
            &mut sources,
            &mut |_| {},
            &mut report,
        )
        .map_err(|source| AttestError::Push {
            dest: dest.familiar(),
            source: Box::new(source),
        })?;
    }
    let _ = sources.save();
    Ok(())
}
