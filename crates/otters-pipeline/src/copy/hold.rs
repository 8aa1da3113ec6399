//! The organisation policy held before `copy` or `save --with-deps` moves anything: every agent
//! of the walk (the image named and its FROM parents) by the Agentfile its config blob records,
//! and the image named by each signature rule, with the verification walk `verify` uses.
//!
//! Takes: the view the walk read from, its nodes, where the image named can be verified, and the
//! policy. Returns: nothing, or [`CopyError::Policy`] naming every violation. Must never: fetch a
//! pinned image, write or push anything (it runs before the first move).

use super::closure::{Node, View};
use super::CopyError;
use crate::target::Target;
use crate::trust::verify::{explain, load, of_policy};
use otters_agentfile::ir::from_config_blob;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::MediaType;
use otters_policy::{check_agent, Policy, RuleName, Violation};
use otters_supply::verify::{verify_local_first, Fallback, VerifyOptions};

const MAX_SMALL: u64 = 4 << 20;

/// The config blobs of `node`'s agent manifests (none when it is not an agent).
fn models(view: &dyn View, node: &Node) -> Result<Vec<otters_agentfile::ir::Agentfile>, String> {
    let manifest = |d: &otters_oci::Digest| -> Result<ManifestDoc, String> {
        let found = view
            .manifest(&node.source.with_digest(d), &node.written)
            .map_err(|e| e.to_string())?;
        match found {
            super::closure::Lookup::Found(f) => {
                ManifestDoc::parse(&f.bytes).map_err(|e| format!("not a valid manifest: {e}"))
            }
            super::closure::Lookup::Missing(_) => Err(format!("{} is missing", node.written)),
        }
    };
    let top = manifest(&node.descriptor.digest)?;
    let mut docs = Vec::new();
    if node.descriptor.media_type.is_index() {
        for m in top.manifests.iter().filter(|m| m.media_type.is_manifest()) {
            docs.push(manifest(&m.digest)?);
        }
    } else {
        docs.push(top);
    }
    let mut out = Vec::new();
    for doc in docs {
        let Some(c) = doc
            .config
            .filter(|c| c.media_type == MediaType::AgentConfig)
        else {
            continue;
        };
        let bytes = view
            .blob(&node.source, &c.digest, MAX_SMALL)
            .map_err(|e| e.to_string())?;
        out.push(from_config_blob(&bytes).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// Refuses the copy unless every agent of `nodes` keeps `policy`, and the first (the image named,
/// readable as `root`) verifies for each signature rule.
pub(super) fn hold(
    view: &dyn View,
    nodes: &[Node],
    root: Option<&Target>,
    policy: &Policy,
) -> Result<(), CopyError> {
    if policy.is_empty() || nodes.is_empty() {
        return Ok(());
    }
    let mut violations: Vec<Violation> = Vec::new();
    for node in nodes {
        let bad = |message| CopyError::PolicyUnreadable {
            reference: node.written.clone(),
            message,
        };
        for model in models(view, node).map_err(bad)? {
            for v in check_agent(policy, &model.agent) {
                if !violations.contains(&v) {
                    violations.push(v);
                }
            }
        }
    }
    let image = &nodes[0];
    for rule in policy.signatures() {
        let signer = load(of_policy(&rule.value)).map_err(|e| CopyError::PolicyUnreadable {
            reference: image.written.clone(),
            message: e.to_string(),
        })?;
        let digest = &image.descriptor.digest;
        let opts = VerifyOptions::by(signer.signer());
        let verified = match root {
            Some(t) => verify_local_first(
                t,
                Box::new(|| Ok(None)),
                digest,
                &opts,
                Fallback::WhenUnsigned,
            )
            .map_err(|e| explain(&e, digest, &opts.predicate_type, &signer, &image.written).0),
            None => Err(format!("{} cannot be verified here", image.written)),
        };
        if let Err(message) = verified {
            violations.push(Violation {
                rule: RuleName::Signature,
                value: rule.value.to_string(),
                message,
                span: None,
                origin: rule.origin.clone(),
                help: "sign the image with the signer the policy names (`otters sign`)".to_owned(),
            });
        }
    }
    if violations.is_empty() {
        return Ok(());
    }
    Err(CopyError::Policy {
        reference: image.written.clone(),
        violations,
    })
}

/// [`hold`] for a walk read from a registry: the image named is verified where it is.
pub(super) fn hold_remote(
    view: &dyn View,
    nodes: &[Node],
    store: &otters_oci::Store,
    insecure: bool,
    policy: &Policy,
) -> Result<(), CopyError> {
    if policy.is_empty() {
        return Ok(());
    }
    let client = otters_oci::registry::RegistryClient::new(otters_oci::registry::ClientOptions {
        insecure,
        ..otters_oci::registry::ClientOptions::default()
    })?;
    let root = nodes.first().map(|n| {
        let r = n.source.with_digest(&n.descriptor.digest);
        Target::Remote(store.clone(), Box::new(client), r, n.descriptor.clone())
    });
    hold(view, nodes, root.as_ref(), policy)
}
