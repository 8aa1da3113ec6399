//! The verify gate in front of `run`, `export` and `kube`: the image a reference names, fetched
//! into the store and held to [`Gate`] and the organisation policy before anything of it is
//! materialised.
//!
//! Takes: the gate (who must have signed), the store, a registry fetcher, a reference and the pull
//! policy. Returns: what was fetched and who signed it. Must never: read a layer of an image the
//! gate has not passed.
use crate::fetch::RegistryFetcher;
use crate::prepare::{self, Fetched, PrepareError, Pull};
use otters_oci::Store;
use otters_pipeline::trust::verify::{Gate, GateError};
use otters_supply::signer::Who;

/// Why `run`, `export` or `kube` has no image to work on: it could not be fetched, or the gate
/// refused it. Each said as its cause says it, the cause kept a link of the chain.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0}")]
    Fetch(#[from] PrepareError),
    #[error("{0}")]
    Gate(#[from] GateError),
    #[error("{0}")]
    Policy(#[from] crate::hold::HoldError),
}

/// The image `reference` names, from the store or pulled as `pull` allows, then held to `gate`
/// (see [`Gate::check`]) and to the organisation `policy` (see [`crate::hold`]) before anything
/// of it is materialised: what was fetched, and who signed.
pub fn fetch(
    gate: &Gate<'_>,
    policy: &otters_policy::Policy,
    store: &Store,
    registry: &RegistryFetcher,
    reference: &str,
    pull: Pull,
    verb: &'static str,
) -> Result<(Fetched, Option<Who>), FetchError> {
    let fetched = prepare::fetch_image(store, registry, reference, pull)?;
    let who = gate.check(store, reference, &fetched.digest, verb)?;
    let reach = crate::hold::Reach {
        insecure: gate.insecure,
        may_contact: gate.may_contact,
    };
    crate::hold::hold(policy, store, reference, &fetched.digest, reach, verb)?;
    Ok((fetched, who))
}
