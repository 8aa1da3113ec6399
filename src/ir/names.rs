//! The shapes names must have (spec §b.2 and DESIGN §2) and the names the language reserves, as
//! plain values and functions: the checker and the run shim both read them from here.

/// ENV keys the executor sets itself (spec L, §b.1 ENV and §g.4); an Agentfile or `-e` may not.
pub const RESERVED_ENV_KEYS: [&str; 10] = [
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "TMPDIR",
    "LANG",
    "OTTERS_AGENT_ROOT",
    "OTTERSD_URL",
    "OTTERS_AGENT_TOKEN",
];

/// POSIX `path.Base` of a slash path, ignoring trailing slashes: the default name of an ADD, and
/// how a bin's binary is matched by file name.
pub fn basename(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    t.rsplit('/').next().unwrap_or(t)
}

/// Provider credentials come from the host at run time, never from an image.
pub fn is_credential_key(key: &str) -> bool {
    key.ends_with("_API_KEY") || key.ends_with("_API_BASE")
}

/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`: a name that is safe as one file name.
pub fn is_path_safe(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$` (DNS-1123 label), or with `_` allowed inside when
/// `underscore` is set (capability names in otters' dialect).
pub fn is_label(s: &str, underscore: bool) -> bool {
    let b = s.as_bytes();
    let end_ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && end_ok(&b[0])
        && end_ok(&b[b.len() - 1])
        && b.iter()
            .all(|c| end_ok(c) || *c == b'-' || (underscore && *c == b'_'))
}

/// `^[A-Z_][A-Z0-9_]*$`.
pub fn is_env_key(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_uppercase() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

/// A best-effort repair of `s` into a DNS-1123 label (lower case, `_`/`.`/space → `-`), for help
/// texts. `None` when nothing sensible comes out.
pub fn to_label(s: &str) -> Option<String> {
    let mapped: String = s
        .chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' => c,
            _ => '-',
        })
        .collect();
    let t = mapped.trim_matches('-').to_owned();
    is_label(&t, false).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        for ok in ["a", "A.b_c-1", "0", &"x".repeat(63)] {
            assert!(is_path_safe(ok), "{ok}");
        }
        for bad in ["", ".a", "-a", "a b", "a/b", "é", &"x".repeat(64)] {
            assert!(!is_path_safe(bad), "{bad}");
        }
        assert!(is_label("max-tokens", false) && is_label("a", false));
        assert!(!is_label("max_tokens", false) && is_label("max_tokens", true));
        assert!(!is_label("-a", true) && !is_label("a-", false) && !is_label("A", true));
        assert!(
            is_env_key("_X1") && is_env_key("GH_TOKEN") && !is_env_key("1X") && !is_env_key("a")
        );
        assert_eq!(to_label("Max_Tokens").as_deref(), Some("max-tokens"));
        assert_eq!(to_label("__"), None);
    }
}
