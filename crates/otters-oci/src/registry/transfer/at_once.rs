//! Up to [`UPLOADS_AT_ONCE`] blobs of one manifest moved at once, their results handed on in
//! manifest order, the first failure ending the run: shared by push and by the registry-to-registry
//! relay.

use crate::registry::error::RegistryError;
use futures_util::StreamExt as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// Most blobs of one manifest uploaded at once, by a push and by a copy between registries: the
/// small ones (config, small layers) then ride alongside the large one instead of each adding its
/// round trips (`POST`, `PATCH`, `PUT`, of which the registry makes the last durable) to the
/// transfer; 4 keeps the registry's load and the open connections small (a copy holds one
/// connection to each side per blob), and a copy's memory at 4 chunks in flight.
pub(crate) const UPLOADS_AT_ONCE: usize = 4;

/// Runs `tasks` (one per blob of a manifest, in manifest order) up to [`UPLOADS_AT_ONCE`] at
/// once, and hands each one's result to `done` in manifest order, whichever ends first. The first
/// task that fails (in the order failures happen, not in manifest order) ends the run at once: it
/// sets `stop`, so the bodies still on their way end at their next chunk (even one the transport
/// would go on sending), drops the tasks still running (none of them sends the `PUT` that
/// completes an upload), and returns its error.
pub(crate) async fn at_once<T>(
    tasks: Vec<impl std::future::Future<Output = Result<T, RegistryError>>>,
    stop: &AtomicBool,
    mut done: impl FnMut(usize, T),
) -> Result<(), RegistryError> {
    let mut order = InOrder::new(tasks.len());
    let numbered = tasks
        .into_iter()
        .enumerate()
        .map(|(i, task)| async move { task.await.map(|t| (i, t)) });
    let mut running = futures_util::stream::iter(numbered).buffer_unordered(UPLOADS_AT_ONCE);
    while let Some(ended) = running.next().await {
        let (i, t) = ended.inspect_err(|_| stop.store(true, Ordering::Relaxed))?;
        for (i, t) in order.arrived(i, t) {
            done(i, t);
        }
    }
    Ok(())
}

/// The results of tasks that end in any order, handed on in manifest order.
struct InOrder<T> {
    /// Results that arrived before an earlier blob's, held until they are due.
    held: Vec<Option<T>>,
    /// The first blob not handed on yet.
    next: usize,
}

impl<T> InOrder<T> {
    fn new(blobs: usize) -> Self {
        InOrder {
            held: std::iter::repeat_with(|| None).take(blobs).collect(),
            next: 0,
        }
    }

    /// Records that blob `i` ended with `t`; returns the blobs now due (their index and result),
    /// in manifest order: none while an earlier blob is still on its way.
    fn arrived(&mut self, i: usize, t: T) -> Vec<(usize, T)> {
        self.held[i] = Some(t);
        let mut due = Vec::new();
        while let Some(t) = self.held.get_mut(self.next).and_then(Option::take) {
            due.push((self.next, t));
            self.next += 1;
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Outcome;

    #[test]
    fn results_are_handed_on_in_manifest_order_whatever_order_they_end_in() {
        let mut order = InOrder::new(4);
        assert_eq!(order.arrived(2, Outcome::Uploaded), []);
        assert_eq!(order.arrived(0, Outcome::Skipped), [(0, Outcome::Skipped)]);
        assert_eq!(
            order.arrived(1, Outcome::Mounted),
            [(1, Outcome::Mounted), (2, Outcome::Uploaded)]
        );
        assert_eq!(
            order.arrived(3, Outcome::Uploaded),
            [(3, Outcome::Uploaded)]
        );
    }
}
