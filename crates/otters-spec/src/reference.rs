//! OCI references: the distribution grammar and Docker Hub normalisation.
//!
//! Takes: a reference string as a user writes it (`alpine`, `ghcr.io/o/bin:1.2`,
//! `127.0.0.1:5000/a/b@sha256:…`). Returns: a normalised [`Reference`] (registry always set,
//! `library/` added for single-component Docker Hub names) or a [`ReferenceError`] that quotes the
//! offending text and says how to fix it. Must never: do I/O, or accept a reference that a
//! registry would reject (upper-case repositories, bad tags, short digests).
//!
//! Grammar (github.com/distribution/reference, restated):
//! `reference := name [":" tag] ["@" digest]`, `name := [domain "/"] path`,
//! `domain := host [":" port]`, `path := component ("/" component)*`,
//! `component := [a-z0-9]+ (separator [a-z0-9]+)*` with separator `.`, `_`, `__` or `-`+,
//! `tag := [\w][\w.-]{0,127}`, `digest := algorithm ":" hex`. The first path element is a domain
//! when it contains `.` or `:`, is `localhost`, or has an upper-case letter.

use std::fmt;

/// Docker Hub's canonical registry name.
pub const DOCKER_HUB: &str = "docker.io";
/// The host Docker Hub's registry API actually answers on.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";
/// The key Docker Hub credentials live under in `config.json`.
pub const DOCKER_HUB_AUTH_KEY: &str = "https://index.docker.io/v1/";

const MAX_NAME_LEN: usize = 255;
const MAX_TAG_LEN: usize = 128;

/// A parsed, normalised image reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    /// Registry host with optional port, e.g. `docker.io`, `127.0.0.1:5000`, `[::1]:5000`.
    pub registry: String,
    /// Repository path, e.g. `library/alpine`, `openotters/bin/jq`.
    pub repository: String,
    pub tag: Option<String>,
    /// The pinned digest, e.g. `sha256:9f86…` (parsed: only sha256 digests pin).
    pub digest: Option<crate::Digest>,
}

/// Why a reference string is not a valid reference.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("empty image reference: write a name such as `alpine` or `ghcr.io/org/image:tag`")]
    Empty,
    #[error(
        "invalid reference `{text}`: it contains whitespace; references are written without spaces"
    )]
    Whitespace { text: String },
    #[error(
        "invalid reference `{text}`: repository name `{repo}` must be lowercase (try `{lower}`)"
    )]
    Uppercase {
        text: String,
        repo: String,
        lower: String,
    },
    #[error("invalid reference `{text}`: path component `{component}` {why}; components are lower-case letters and digits joined by `.`, `_`, `__` or `-`")]
    BadComponent {
        text: String,
        component: String,
        why: &'static str,
    },
    #[error("invalid reference `{text}`: registry host `{host}` is not a valid host[:port]")]
    BadDomain { text: String, host: String },
    #[error("invalid reference `{text}`: tag `{tag}` {why}; tags are up to 128 characters of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`")]
    BadTag {
        text: String,
        tag: String,
        why: &'static str,
    },
    #[error("invalid reference `{text}`: digest `{digest}` {why}; write `@sha256:` followed by 64 lower-case hex digits")]
    BadDigest {
        text: String,
        digest: String,
        why: &'static str,
    },
    #[error("invalid reference `{text}`: the name is longer than 255 characters")]
    TooLong { text: String },
}

impl Reference {
    /// Parses and normalises a reference (see the module docs for the grammar).
    pub fn parse(text: &str) -> Result<Reference, ReferenceError> {
        if text.is_empty() {
            return Err(ReferenceError::Empty);
        }
        if text.chars().any(char::is_whitespace) {
            return Err(ReferenceError::Whitespace {
                text: text.to_owned(),
            });
        }
        let (rest, digest) = match text.split_once('@') {
            Some((n, d)) => (n, Some(parse_digest(text, d)?)),
            None => (text, None),
        };
        // The tag is after the last `:` that follows the last `/` (a `:` before it is a port).
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => {
                let at = last_slash + i;
                (&rest[..at], Some(parse_tag(text, &rest[at + 1..])?))
            }
            None => (rest, None),
        };
        if name.is_empty() {
            return Err(ReferenceError::BadComponent {
                text: text.to_owned(),
                component: String::new(),
                why: "is empty",
            });
        }
        let (registry, path) = split_domain(name);
        let registry = match registry {
            Some(host) => {
                check_domain(text, host)?;
                if host == "index.docker.io" || host == "registry-1.docker.io" {
                    DOCKER_HUB.to_owned()
                } else {
                    host.to_owned()
                }
            }
            None => DOCKER_HUB.to_owned(),
        };
        check_path(text, path)?;
        let repository = if registry == DOCKER_HUB && !path.contains('/') {
            format!("library/{path}")
        } else {
            path.to_owned()
        };
        if registry.len() + 1 + repository.len() > MAX_NAME_LEN {
            return Err(ReferenceError::TooLong {
                text: text.to_owned(),
            });
        }
        Ok(Reference {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The short form a user would type: `alpine:3`, `org/x`, `ghcr.io/o/x:1`.
    pub fn familiar(&self) -> String {
        let name = if self.registry == DOCKER_HUB {
            self.repository
                .strip_prefix("library/")
                .unwrap_or(&self.repository)
                .to_owned()
        } else {
            format!("{}/{}", self.registry, self.repository)
        };
        let mut s = name;
        if let Some(t) = &self.tag {
            s.push(':');
            s.push_str(t);
        }
        if let Some(d) = &self.digest {
            s.push('@');
            s.push_str(d.as_str());
        }
        s
    }

    /// `registry/repository` without tag or digest.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The tag, or `latest` when there is neither tag nor digest.
    pub fn tag_or_latest(&self) -> &str {
        self.tag.as_deref().unwrap_or("latest")
    }

    /// What to ask the registry for: the digest when pinned, else the tag (default `latest`).
    pub fn selector(&self) -> &str {
        self.digest
            .as_ref()
            .map(crate::Digest::as_str)
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The normalised `name:tag` form used for cycle detection (spec §c).
    pub fn name_tag(&self) -> String {
        format!("{}:{}", self.name(), self.tag_or_latest())
    }

    /// A copy with the digest set (tag kept, for readability).
    #[must_use]
    pub fn with_digest(&self, digest: &crate::Digest) -> Reference {
        Reference {
            digest: Some(digest.clone()),
            ..self.clone()
        }
    }

    /// The host the registry API answers on (`registry-1.docker.io` for Docker Hub).
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// The registry host without its port (and without IPv6 brackets).
    pub fn host(&self) -> &str {
        host_of(&self.registry)
    }

    /// True for registries on this machine: `localhost`, `127.0.0.0/8`, `::1`. Only these may be
    /// reached over plain HTTP without `--insecure`.
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(&self.registry)
    }
}

/// The image `reference` resolved to `digest`, as one reference other tools parse:
/// `NAME[:TAG]@DIGEST` (a digest the reference already held replaced, never repeated), or the
/// digest alone when the reference was a digest or a prefix of one. Not escaped: the text is the
/// user's and an image's.
pub fn pinned(reference: &str, digest: &crate::Digest) -> String {
    let name = reference.split_once('@').map_or(reference, |(n, _)| n);
    let bare = name.strip_prefix("sha256:").unwrap_or(name);
    if name.is_empty() || (!bare.is_empty() && digest.hex().starts_with(bare)) {
        return digest.to_string();
    }
    format!("{name}@{digest}")
}

/// True when a `host[:port]` names this machine: `localhost`, or a loopback IP literal. A name
/// under `.localhost` is not enough: glibc's resolver hands such names to DNS, which could answer
/// with a remote address that would then get plain HTTP and credentials.
pub fn is_loopback_host(registry: &str) -> bool {
    let host = host_of(registry);
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

fn host_of(registry: &str) -> &str {
    if let Some(rest) = registry.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    registry.rsplit_once(':').map_or(registry, |(h, _)| h)
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Reference {
    type Err = ReferenceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reference::parse(s)
    }
}

fn split_domain(name: &str) -> (Option<&str>, &str) {
    match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    }
}

fn check_domain(text: &str, host: &str) -> Result<(), ReferenceError> {
    let bad = || ReferenceError::BadDomain {
        text: text.to_owned(),
        host: host.to_owned(),
    };
    let (h, port) = if let Some(rest) = host.strip_prefix('[') {
        let (ip6, after) = rest.split_once(']').ok_or_else(bad)?;
        if ip6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad());
        }
        match after {
            "" => (None, None),
            p => (None, Some(p.strip_prefix(':').ok_or_else(bad)?)),
        }
    } else {
        match host.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(host), None),
        }
    };
    if let Some(p) = port {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.parse::<u16>().is_err() {
            return Err(bad());
        }
    }
    if let Some(h) = h {
        let ok = !h.is_empty()
            && h.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !ok {
            return Err(bad());
        }
    }
    Ok(())
}

fn check_path(text: &str, path: &str) -> Result<(), ReferenceError> {
    if path.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(ReferenceError::Uppercase {
            text: text.to_owned(),
            repo: path.to_owned(),
            lower: text.to_ascii_lowercase(),
        });
    }
    for component in path.split('/') {
        if let Some(why) = component_problem(component) {
            return Err(ReferenceError::BadComponent {
                text: text.to_owned(),
                component: component.to_owned(),
                why,
            });
        }
    }
    Ok(())
}

/// Why a path component breaks `[a-z0-9]+ (separator [a-z0-9]+)*`, or `None` when it is valid.
fn component_problem(c: &str) -> Option<&'static str> {
    if c.is_empty() {
        return Some("is empty (a `//` or a trailing `/`)");
    }
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return Some("must start and end with a letter or digit");
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-');
        if !ok {
            return Some(if sep.bytes().all(|x| matches!(x, b'.' | b'_' | b'-')) {
                "has a separator sequence that is not allowed"
            } else {
                "contains a character that is not allowed"
            });
        }
    }
    None
}

fn parse_tag(text: &str, tag: &str) -> Result<String, ReferenceError> {
    let bad = |why| ReferenceError::BadTag {
        text: text.to_owned(),
        tag: tag.to_owned(),
        why,
    };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = tag.chars();
    match chars.next() {
        None => return Err(bad("is empty")),
        Some(c) if !word(c) => return Err(bad("starts with a character that is not allowed")),
        Some(_) => {}
    }
    if !chars.all(|c| word(c) || c == '.' || c == '-') {
        return Err(bad("contains a character that is not allowed"));
    }
    if tag.len() > MAX_TAG_LEN {
        return Err(bad("is longer than 128 characters"));
    }
    Ok(tag.to_owned())
}

fn parse_digest(text: &str, d: &str) -> Result<crate::Digest, ReferenceError> {
    let bad = |why| ReferenceError::BadDigest {
        text: text.to_owned(),
        digest: d.to_owned(),
        why,
    };
    let Some((algo, hex)) = d.split_once(':') else {
        return Err(bad("has no `algorithm:` prefix"));
    };
    let algo_ok = !algo.is_empty()
        && algo.split(['+', '.', '_', '-']).all(|c| {
            !c.is_empty()
                && c.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if !algo_ok {
        return Err(bad("has an invalid algorithm"));
    }
    let hex_ok = |n: usize| {
        hex.len() == n
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    match algo {
        "sha256" if !hex_ok(64) => Err(bad("is not 64 lower-case hex digits")),
        "sha512" if !hex_ok(128) => Err(bad("is not 128 lower-case hex digits")),
        "sha256" => crate::Digest::parse(d).map_err(|_| bad("is not 64 lower-case hex digits")),
        _ if algo == "sha512"
            || (hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())) =>
        {
            Err(bad(
                "uses an algorithm other than sha256, the only one images are pinned by",
            ))
        }
        _ => Err(bad("is not a known algorithm with a hex value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn full(s: &str) -> String {
        Reference::parse(s).map_or_else(|e| format!("ERR {e}"), |r| r.to_string())
    }

    #[test]
    fn normalises_table() {
        let d = format!("sha256:{H}");
        let cases: Vec<(String, String)> = vec![
            ("alpine".into(), "docker.io/library/alpine".into()),
            ("alpine:3.20".into(), "docker.io/library/alpine:3.20".into()),
            ("org/img".into(), "docker.io/org/img".into()),
            ("docker.io/alpine".into(), "docker.io/library/alpine".into()),
            ("index.docker.io/org/x:1".into(), "docker.io/org/x:1".into()),
            ("localhost/x".into(), "localhost/x".into()),
            ("localhost:5000/meteo".into(), "localhost:5000/meteo".into()),
            (
                "127.0.0.1:5000/a/b/c:v1.0-rc_1".into(),
                "127.0.0.1:5000/a/b/c:v1.0-rc_1".into(),
            ),
            ("ghcr.io/o/bin/jq".into(), "ghcr.io/o/bin/jq".into()),
            ("[::1]:5000/x".into(), "[::1]:5000/x".into()),
            (format!("ghcr.io/o/x@{d}"), format!("ghcr.io/o/x@{d}")),
            (format!("ghcr.io/o/x:1@{d}"), format!("ghcr.io/o/x:1@{d}")),
            (
                "a__b/c---d/e.f_g".into(),
                "docker.io/a__b/c---d/e.f_g".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(full(&input), want, "input {input}");
        }
    }

    #[test]
    fn rejects_table() {
        let cases = [
            ("", "empty image reference"),
            ("Alpine", "must be lowercase"),
            ("org/Img", "must be lowercase"),
            ("a b", "whitespace"),
            ("a//b", "is empty"),
            ("a/b/", "is empty"),
            ("-a", "must start and end"),
            ("a...b", "separator sequence"),
            ("a_-b", "separator sequence"),
            ("a:", "tag `` is empty"),
            ("a:.x", "starts with a character"),
            ("a:x/y", "ERR"),
            ("a@sha256:abc", "64 lower-case hex"),
            ("a@md5", "no `algorithm:` prefix"),
            ("a@sha512:", "128 lower-case hex"),
            ("host:port/x", "not a valid host"),
            ("ex_ample.com/x", "not a valid host"),
            ("a$b", "not allowed"),
        ];
        for (input, want) in cases {
            let got = full(input);
            assert!(
                got.starts_with("ERR") && got.contains(want),
                "input {input:?}: {got}"
            );
        }
    }

    #[test]
    fn the_digest_is_parsed_and_only_sha256_pins() {
        let r = Reference::parse(&format!("a:1@sha256:{H}")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.digest,
            Some(crate::Digest::parse(&format!("sha256:{H}")).unwrap())
        );
        assert_eq!(r.selector(), format!("sha256:{H}"));
        for other in [format!("a@sha512:{H}{H}"), format!("a@blake3:{H}")] {
            assert_eq!(
                full(&other),
                format!("ERR invalid reference `{other}`: digest `{}` uses an algorithm other than sha256, the only one images are pinned by; write `@sha256:` followed by 64 lower-case hex digits", &other[2..])
            );
        }
    }

    #[test]
    fn familiar_and_helpers() {
        let r = Reference::parse("alpine").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.familiar(), "alpine");
        assert_eq!(r.name_tag(), "docker.io/library/alpine:latest");
        assert_eq!(r.api_host(), DOCKER_HUB_API);
        assert!(!r.is_loopback());
        let r = Reference::parse("127.0.0.1:5000/x/y:2").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.familiar(), "127.0.0.1:5000/x/y:2");
        assert_eq!(r.host(), "127.0.0.1");
        assert!(r.is_loopback());
        assert!(is_loopback_host("localhost:5000"));
        assert!(is_loopback_host("[::1]:5000"));
        assert!(!is_loopback_host("example.com:5000"));
        assert!(!is_loopback_host("registry.localhost:5000"));
        assert!(!is_loopback_host("localhost.example.com:5000"));
        assert!(is_loopback_host("127.8.9.10:5000"));
        let long = format!("{}:t", "a".repeat(129));
        assert!(Reference::parse(&"a".repeat(300)).is_err());
        assert!(Reference::parse(&long).is_ok());
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,80}") {
            let _ = Reference::parse(&s);
        }

        #[test]
        fn display_round_trips(
            host in prop_oneof![Just(String::new()), "[a-z]{1,8}\\.[a-z]{2,4}(:[0-9]{2,5})?"],
            comps in prop::collection::vec("[a-z0-9]{1,4}([._-][a-z0-9]{1,4})?", 1..4),
            tag in prop::option::of("[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}"),
            dig in prop::option::of("[0-9a-f]{64}"),
        ) {
            let mut s = String::new();
            if !host.is_empty() { s.push_str(&host); s.push('/'); }
            s.push_str(&comps.join("/"));
            if let Some(t) = &tag { s.push(':'); s.push_str(t); }
            if let Some(d) = &dig { s.push_str("@sha256:"); s.push_str(d); }
            let parsed = Reference::parse(&s);
            if let Ok(r) = parsed {
                let again = Reference::parse(&r.to_string());
                prop_assert_eq!(again.as_ref().ok(), Some(&r));
                let fam = Reference::parse(&r.familiar());
                prop_assert_eq!(fam.as_ref().ok(), Some(&r));
                prop_assert_eq!(r.tag, tag);
            } else if !host.contains(':') || host.split(':').nth(1).and_then(|p| p.parse::<u16>().ok()).is_some() {
                prop_assert!(false, "valid reference rejected: {} ({:?})", s, parsed);
            }
        }
    }
}
