//! The `egress` rule's matching: a policy entry (`HOST:PORT`) read as EGRESS reads a target, and
//! whether it covers a declared destination. The rule caps declarations; it does not require one
//! (`check` holds it, one violation per EGRESS line).
//!
//! Takes: policy entries and declared destinations. Returns: a [`Dest`] or what is wrong with the
//! entry; whether one covers the other. Must never: resolve a name, or let an allowed name (or a
//! different wildcard) cover a declared wildcard.

use otters_agentfile::ir::egress::{self, Dest, Host};

/// A policy `egress` entry: `HOST:PORT` with the port written (`[v6]:PORT` for an IPv6
/// literal), the host as EGRESS reads it; what is wrong otherwise.
pub fn parse_entry(entry: &str) -> Result<Dest, String> {
    let has_port = match entry.strip_prefix('[') {
        Some(rest) => rest.contains("]:"),
        None => entry.matches(':').count() == 1,
    };
    if !has_port {
        return Err("has no port".to_owned());
    }
    egress::parse(entry).map_err(|p| match p {
        egress::Problem::Host(w) | egress::Problem::Port(w) => w,
    })
}

/// Whether the allowed entry covers the declared destination: the same port, and the same host,
/// or an allowed `*.suffix` covering a declared name one label longer. A declared wildcard is
/// covered only by the same wildcard (a wildcard matches exactly one label, so no other is wider).
pub fn covers(allowed: &Dest, declared: &Dest) -> bool {
    allowed.port == declared.port
        && match (&allowed.host, &declared.host) {
            (Host::Wildcard(_), Host::Name(name)) => allowed.host.matches(name),
            (a, d) => a == d,
        }
}
