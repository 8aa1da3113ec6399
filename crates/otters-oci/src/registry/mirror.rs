//! Registry mirrors on the read path: which hosts a pull asks, in which order, and which host
//! answered.
//!
//! Takes: the `mirrors` lists of `config.toml` (`[registry."docker.io"] mirrors = ["m:5000"]`).
//! Returns: the order in which manifest and blob reads are tried (each usable mirror, then the
//! registry itself) and a record of the hosts that served them. Must never: send a write (push,
//! mount, upload) to a mirror, give a mirror the registry's credentials (a mirror is asked as the
//! registry it is: its own `config.toml` settings, its own stored credentials), or let a mirror's
//! answer skip the digest checks (a manifest or blob that does not match its digest is refused
//! and the next host asked). See docs/registries.md, "Mirrors".
//!
//! A mirror that fails (unreachable, TLS, 5xx, refused, wrong content) is skipped for the rest of
//! the client's life; one that answers 404 is asked again for the next document (mirrors are often
//! partial). The registry's own answer, success or error, is final.

use crate::reference::Reference;
use crate::registry::config::RegistryConfig;
use std::collections::HashSet;
use std::sync::Mutex;

/// The mirror configuration and what the client learnt about the mirrors.
pub(crate) struct Mirrors {
    config: RegistryConfig,
    /// False for a client with fixed credentials (`otters login`), which are meant for one
    /// registry only: it never asks a mirror.
    enabled: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Mirrors not asked again.
    skipped: HashSet<String>,
    /// Hosts that answered reads, in first-use order.
    served: Vec<String>,
    /// The host that answered the latest read.
    last: Option<String>,
    /// Mirrors given up on, and why (for the CLI to say).
    failures: Vec<MirrorFailure>,
}

/// A mirror that was given up on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorFailure {
    pub mirror: String,
    /// The registry the mirror stood in for.
    pub registry: String,
    pub reason: String,
}

impl Mirrors {
    pub(crate) fn new(config: RegistryConfig, enabled: bool) -> Self {
        Mirrors {
            config,
            enabled,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `r` as each usable mirror would be asked for it (same repository, tag and digest).
    pub(super) fn candidates(&self, r: &Reference) -> Vec<Reference> {
        if !self.enabled {
            return Vec::new();
        }
        let skipped = self.state().skipped.clone();
        self.config
            .mirrors(&r.registry)
            .into_iter()
            .filter(|m| !skipped.contains(m))
            .map(|m| Reference {
                registry: m,
                ..r.clone()
            })
            .collect()
    }

    pub(super) fn served(&self, host: &str) {
        let mut s = self.state();
        if !s.served.iter().any(|h| h == host) {
            s.served.push(host.to_owned());
        }
        s.last = Some(host.to_owned());
    }

    pub(super) fn give_up(&self, mirror: &str, registry: &str, reason: String) {
        let mut s = self.state();
        if s.skipped.insert(mirror.to_owned()) {
            s.failures.push(MirrorFailure {
                mirror: mirror.to_owned(),
                registry: registry.to_owned(),
                reason,
            });
        }
    }

    /// The hosts that answered reads, in first-use order.
    pub(super) fn served_hosts(&self) -> Vec<String> {
        self.state().served.clone()
    }

    /// The mirrors given up on, and why.
    pub(super) fn failures(&self) -> Vec<MirrorFailure> {
        self.state().failures.clone()
    }

    /// The host that answered the latest read.
    pub(super) fn last(&self) -> Option<String> {
        self.state().last.clone()
    }
}
