//! EGRESS destinations (otters' addition): `EGRESS host[:port]` typed, matched and shown, and the
//! effective policy of an agent (undeclared, nothing, or an allow-list).
//!
//! Takes: the text written after EGRESS (or read from a config blob). Returns: a [`Dest`] or what
//! is wrong with it, as a [`Problem`]. Must never: resolve a name, do I/O, or accept a host that a
//! proxy, a `NetworkPolicy` and a `CiliumNetworkPolicy` would read differently.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::model::Agent;

/// The port of `EGRESS host` without `:port`.
pub const DEFAULT_PORT: u16 = 443;

/// The word of `EGRESS none`.
pub use super::model::EGRESS_NONE as NONE;

/// A declared host: a DNS name, a single-label wildcard, or an IP literal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name, lower case, without a trailing dot.
    Name(String),
    /// `*.example.com`: the suffix (`example.com`), lower case; matches exactly one more label.
    Wildcard(String),
    V4(Ipv4Addr),
    V6(Ipv6Addr),
}

impl Host {
    /// Whether `host` (a name or IP literal as a client sent it; `[v6]` accepted) is this host.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host);
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match self {
            Host::Name(n) => n.eq_ignore_ascii_case(host),
            Host::Wildcard(suffix) => {
                host.len() > suffix.len() + 1
                    && host.is_char_boundary(host.len() - suffix.len() - 1)
                    && {
                        let (label, rest) = host.split_at(host.len() - suffix.len() - 1);
                        rest[1..].eq_ignore_ascii_case(suffix)
                            && rest.starts_with('.')
                            && dns_label(label)
                    }
            }
            Host::V4(ip) => bare.parse::<Ipv4Addr>().is_ok_and(|x| x == *ip),
            Host::V6(ip) => bare.parse::<Ipv6Addr>().is_ok_and(|x| x == *ip),
        }
    }

    /// Whether this host is an IP literal (a `NetworkPolicy` can name it exactly).
    pub fn is_ip(&self) -> bool {
        matches!(self, Host::V4(_) | Host::V6(_))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Wildcard(s) => write!(f, "*.{s}"),
            Host::V4(ip) => write!(f, "{ip}"),
            Host::V6(ip) => write!(f, "{ip}"),
        }
    }
}

/// One declared destination: a host and a port.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dest {
    pub host: Host,
    pub port: u16,
}

impl Dest {
    /// Whether a connection to `host:port` is this destination.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        self.port == port && self.host.matches(host)
    }
}

impl fmt::Display for Dest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::V6(ip) => write!(f, "[{ip}]:{}", self.port),
            h => write!(f, "{h}:{}", self.port),
        }
    }
}

/// What is wrong with an EGRESS target: its host part or its port part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    Host(String),
    Port(String),
}

/// Parses `host`, `host:port`, `[v6]`, `[v6]:port`, a bare IPv6 literal (port 443), or
/// `*.suffix[:port]`.
pub fn parse(target: &str) -> Result<Dest, Problem> {
    if let Some(rest) = target.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return Err(Problem::Host("opens `[` without a closing `]`".into()));
        };
        let ip = inside
            .parse::<Ipv6Addr>()
            .map_err(|_| Problem::Host(format!("`[{inside}]` is not an IPv6 address")))?;
        let port = match after {
            "" => DEFAULT_PORT,
            p => port(
                p.strip_prefix(':')
                    .ok_or_else(|| Problem::Port(format!("`{p}` follows the address")))?,
            )?,
        };
        return Ok(Dest {
            host: Host::V6(ip),
            port,
        });
    }
    if target.matches(':').count() > 1 {
        return match target.parse::<Ipv6Addr>() {
            Ok(ip) => Ok(Dest {
                host: Host::V6(ip),
                port: DEFAULT_PORT,
            }),
            Err(_) => Err(Problem::Host(
                "has several `:` but is not an IPv6 address (write an IPv6 address with a port as `[addr]:port`)"
                    .into(),
            )),
        };
    }
    let (h, p) = match target.split_once(':') {
        Some((h, p)) => (h, port(p)?),
        None => (target, DEFAULT_PORT),
    };
    Ok(Dest {
        host: host(h)?,
        port: p,
    })
}

/// A port: 1 to 65535, decimal digits only.
fn port(p: &str) -> Result<u16, Problem> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::Port(format!(
            "`{p}` is not a port (1 to 65535, digits only)"
        )));
    }
    match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Problem::Port(format!("`{p}` is not a port (1 to 65535)"))),
    }
}

/// A host without its port.
fn host(h: &str) -> Result<Host, Problem> {
    if h.is_empty() {
        return Err(Problem::Host("has no host".into()));
    }
    if let Ok(ip) = h.parse::<Ipv4Addr>() {
        return Ok(Host::V4(ip));
    }
    if let Some(suffix) = h.strip_prefix("*.") {
        dns_name(suffix)?;
        if !suffix.contains('.') {
            return Err(Problem::Host(
                "covers a whole top-level domain; name at least two labels after `*.`".into(),
            ));
        }
        return Ok(Host::Wildcard(suffix.to_ascii_lowercase()));
    }
    if h.contains('*') {
        return Err(Problem::Host(
            "has a `*` that is not a whole first label (only `*.example.com` is a wildcard)".into(),
        ));
    }
    dns_name(h)?;
    Ok(Host::Name(h.to_ascii_lowercase()))
}

/// A DNS name of letter-digit-hyphen labels, at most 253 characters, not all digits at the end.
fn dns_name(n: &str) -> Result<(), Problem> {
    if n.len() > 253 {
        return Err(Problem::Host("is longer than 253 characters".into()));
    }
    if let Some(bad) = n.split('.').find(|l| !dns_label(l)) {
        return Err(Problem::Host(if bad.is_empty() {
            "has an empty label (two dots, or a dot at an end)".into()
        } else {
            format!("has the label `{bad}` (labels are 1 to 63 letters, digits or `-`, not starting or ending with `-`)")
        }));
    }
    if n.rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Problem::Host(
            "ends in a numeric label but is not an IPv4 address".into(),
        ));
    }
    Ok(())
}

fn dns_label(l: &str) -> bool {
    (1..=63).contains(&l.len())
        && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !l.starts_with('-')
        && !l.ends_with('-')
}

/// One allowed destination with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allowed {
    pub dest: Dest,
    pub description: Option<String>,
}

/// What an agent declared about its network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// No EGRESS: the agent runs with the network it is given.
    Undeclared,
    /// `EGRESS none`: no network at all.
    Nothing,
    /// These destinations only (each once, in declaration order).
    Allow(Vec<Allowed>),
}

impl Agent {
    /// The agent's egress policy. A malformed target is left out (lint reports it; a build
    /// fails on it); `none` wins over any host (AF120 reports the mix).
    pub fn egress_policy(&self) -> Policy {
        if self.egress.is_empty() {
            return Policy::Undeclared;
        }
        if self.egress.iter().any(super::model::Egress::is_none) {
            return Policy::Nothing;
        }
        let mut out: Vec<Allowed> = Vec::new();
        for e in &self.egress {
            if let Ok(dest) = parse(&e.target) {
                if !out.iter().any(|a| a.dest == dest) {
                    out.push(Allowed {
                        dest,
                        description: e.description.clone(),
                    });
                }
            }
        }
        Policy::Allow(out)
    }
}

/// EGRESS targets of a model read from an image: each parses, `none` stands alone, none twice.
/// The first problem, as (index, what); `ir::names` makes it an `InvalidName`.
pub(super) fn check_artifact(a: &Agent) -> Result<(), (usize, String)> {
    let bad = |index: usize, what: String| Err((index, what));
    let none = a.egress.iter().any(super::model::Egress::is_none);
    let mut seen = std::collections::BTreeSet::new();
    for (i, e) in a.egress.iter().enumerate() {
        if e.is_none() {
            if a.egress.len() > 1 {
                return bad(i, "`none` is declared beside hosts".into());
            }
            continue;
        }
        match parse(&e.target) {
            Err(Problem::Host(w) | Problem::Port(w)) => {
                return bad(i, format!("{} {w}", shown(&e.target)))
            }
            Ok(d) if !seen.insert(d.clone()) => {
                return bad(i, format!("{d} is declared twice"));
            }
            Ok(_) if none => return bad(i, "a host is declared beside `none`".into()),
            Ok(_) => {}
        }
    }
    Ok(())
}

/// A target read from an image, as an error shows it: quoted, escaped, at most 64 characters.
fn shown(s: &str) -> String {
    let t: String = s.chars().take(64).collect();
    let cut = if t.len() < s.len() { "…" } else { "" };
    format!("{t:?}{cut}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> String {
        parse(s).map_or_else(|e| format!("{e:?}"), |d| d.to_string())
    }

    #[test]
    fn parses_every_form_and_refuses_the_rest() {
        let cases = [
            ("api.example.com", "api.example.com:443"),
            ("API.Example.com:8443", "api.example.com:8443"),
            ("*.example.com", "*.example.com:443"),
            ("10.0.0.1:80", "10.0.0.1:80"),
            ("[2001:db8::1]:853", "[2001:db8::1]:853"),
            ("2001:db8::1", "[2001:db8::1]:443"),
            ("[::1]", "[::1]:443"),
            ("localhost:8080", "localhost:8080"),
        ];
        for (input, want) in cases {
            assert_eq!(ok(input), want, "{input}");
        }
        for bad in [
            "",
            ":443",
            "a..b",
            "-a.com",
            "a.com:0",
            "a.com:65536",
            "a.com:+1",
            "a.com:",
            "*.com",
            "a.*.com",
            "*",
            "1.2.3",
            "[::1",
            "[zz]:1",
            "[::1]x",
            "a:b:c",
            "a_b.com",
            "a.com.",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed as {}", ok(bad));
        }
        assert!(matches!(parse("a.com:x"), Err(Problem::Port(_))));
        assert!(matches!(parse("a b:1"), Err(Problem::Host(_))));
    }

    #[test]
    fn matching_is_exact_by_host_and_port() {
        let d = parse("api.example.com").unwrap();
        assert!(d.matches("API.example.com", 443) && d.matches("api.example.com.", 443));
        assert!(!d.matches("api.example.com", 80) && !d.matches("x.api.example.com", 443));
        let w = parse("*.example.com:80").unwrap();
        assert!(w.matches("a.example.com", 80));
        for no in [
            "example.com",
            "a.b.example.com",
            ".example.com",
            "aexample.com",
            "é.example.com",
        ] {
            assert!(!w.matches(no, 80), "{no}");
        }
        let v6 = parse("[2001:db8::1]:853").unwrap();
        assert!(v6.matches("[2001:db8:0::1]", 853) && v6.matches("2001:db8::1", 853));
        assert!(!v6.matches("[2001:db8::2]", 853));
        let v4 = parse("10.0.0.1:80").unwrap();
        assert!(v4.matches("10.0.0.1", 80) && !v4.matches("10.0.0.01x", 80));
    }
}
