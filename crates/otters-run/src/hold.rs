//! The organisation policy held to an image before `run`, `export`, `kube`, `copy -r`, `save
//! --with-deps` or `policy check` act on it: the Agentfile the image records (its config blob),
//! and, for a signature rule, the same verification walk as the run gate.
//!
//! Takes: a policy, the store holding the image, its reference and digest. Returns: every
//! violation, or a refusal naming them all. Must never: read a tag again (the digest given is the
//! image checked), read a layer, or pass an image whose recorded model cannot be read.
use crate::source::{self, SourceError};
use otters_oci::Platform;
use otters_oci::{Digest, Store};
use otters_pipeline::trust::verify::{of_policy, verify_for_run, GateError};
use otters_policy::{check_agent, Policy, RuleName, Violation};

/// Why the policy could not be held, or refused the image.
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    #[error("{0}")]
    Source(#[from] SourceError),
    #[error("{0}")]
    Gate(#[from] GateError),
    #[error("refusing to {verb} {reference}: it breaks the organisation policy: {}", list(.violations))]
    Refused {
        verb: &'static str,
        reference: String,
        violations: Vec<Violation>,
    },
}

fn list(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("{} (rule `{}` at {})", v.message, v.rule, v.origin))
        .collect::<Vec<_>>()
        .join("; ")
}

/// How a signature may be looked for: in the store, then (when `may_contact`) in the registry the
/// reference names.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reach {
    pub insecure: bool,
    pub may_contact: bool,
}

/// The agent manifests of `digest`: itself, or every entry of an index the store holds (each
/// platform's recorded Agentfile is checked; at least one must be there).
fn agent_manifests(
    store: &Store,
    reference: &str,
    digest: &Digest,
) -> Result<Vec<Digest>, HoldError> {
    let host = source::agent_manifest(store, reference, digest, &Platform::host());
    let bytes = store.read_blob(digest).map_err(SourceError::from)?;
    let Ok(doc) = otters_oci::spec::descriptor::ManifestDoc::parse(&bytes) else {
        return Ok(vec![host?]);
    };
    if doc.manifests.is_empty() {
        return Ok(vec![digest.clone()]);
    }
    let held: Vec<Digest> = doc
        .manifests
        .iter()
        .filter(|m| store.has_blob(&m.digest))
        .map(|m| m.digest.clone())
        .collect();
    if held.is_empty() {
        return Ok(vec![host?]);
    }
    Ok(held)
}

/// Every way the image `digest` (what `reference` resolved to) breaks `policy`: the rules over its
/// recorded Agentfile (for an index, this machine's manifest), then each signature rule.
pub fn violations(
    policy: &Policy,
    store: &Store,
    reference: &str,
    digest: &Digest,
    reach: Reach,
) -> Result<Vec<Violation>, HoldError> {
    if policy.is_empty() {
        return Ok(Vec::new());
    }
    let mut out: Vec<Violation> = Vec::new();
    for manifest in agent_manifests(store, reference, digest)? {
        let image = source::load_agent(store, reference, &manifest)?;
        for v in check_agent(policy, &image.model.agent) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    for rule in policy.signatures() {
        let signer = of_policy(&rule.value);
        match verify_for_run(
            store,
            reference,
            digest,
            &signer,
            reach.insecure,
            reach.may_contact,
        ) {
            Ok(()) => {}
            Err(GateError::Unverified { source, .. }) => out.push(Violation {
                rule: RuleName::Signature,
                value: rule.value.to_string(),
                message: source.0,
                span: None,
                origin: rule.origin.clone(),
                help: "sign the image with the signer the policy names (`otters sign`)".to_owned(),
            }),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// Refuses (to `verb` it) the image unless it keeps every rule of `policy`.
pub fn hold(
    policy: &Policy,
    store: &Store,
    reference: &str,
    digest: &Digest,
    reach: Reach,
    verb: &'static str,
) -> Result<(), HoldError> {
    let violations = violations(policy, store, reference, digest, reach)?;
    if violations.is_empty() {
        return Ok(());
    }
    Err(HoldError::Refused {
        verb,
        reference: reference.to_owned(),
        violations,
    })
}
