//! The verify gate in front of `run`, `export` and `kube`: the image a reference names, fetched
//! into the store and held to [`Gate`] before anything of it is read.
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
}

/// The image `reference` names, from the store or pulled as `pull` allows, then held to `gate`
/// (see [`Gate::check`]) before anything of it is read: what was fetched, and who signed.
pub fn fetch(
    gate: &Gate<'_>,
    store: &Store,
    registry: &RegistryFetcher,
    reference: &str,
    pull: Pull,
    verb: &'static str,
) -> Result<(Fetched, Option<Who>), FetchError> {
    let fetched = prepare::fetch_image(store, registry, reference, pull)?;
    let who = gate.check(store, reference, &fetched.digest, verb)?;
    Ok((fetched, who))
}
