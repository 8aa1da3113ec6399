//! `otters export --push`: the runnable export into the agent's repository, by digest, as a
//! referrer of the agent (so `otters kube` finds it there).
//!
//! Takes: a registry client, the store, the agent's digest, the export's descriptor and the
//! agent's reference. Returns: what was transferred. Must never: push the export under a tag
//! (only its subject, the agent, leads to it).
use otters_oci::reference::Reference;
use otters_oci::registry::referrers::push_referrer;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::{RegistryClient, RegistryError};
use otters_oci::{Descriptor, Digest, Store};

/// Pushes the export `d` of the agent `agent` into `dest`'s repository, as a referrer of the
/// agent; the blob sources learnt are saved in the store whether or not the push completes.
pub fn push_export(
    client: &RegistryClient,
    store: &Store,
    agent: &Digest,
    d: &Descriptor,
    dest: &Reference,
) -> Result<TransferReport, RegistryError> {
    let mut sources = Sources::load(store.root());
    let mut report = TransferReport::new(dest.to_string(), d.digest.clone(), d.media_type.clone());
    let result = push_referrer(
        client,
        store,
        agent,
        d,
        dest,
        &mut sources,
        &mut |_| {},
        &mut report,
    );
    let _ = sources.save();
    result.map(|()| report)
}
