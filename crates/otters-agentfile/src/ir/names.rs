//! The shapes names must have (spec §b.2 and DESIGN §2) and the names the language reserves, as
//! plain values and functions: the checker and the run shim both read them from here.
//!
//! [`check_artifact`] applies the same shapes to a model read back from an image (config blob),
//! so a name the parser would refuse in an Agentfile is refused in an image before any of it
//! becomes a path.

use super::model::Agent;

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

/// CONTEXT names the executor generates itself (`etc/context/<NAME>.md`).
pub const RESERVED_CONTEXT_NAMES: [&str; 3] = ["AGENT", "WORKSPACE", "MOUNTS"];

/// MOUNT targets inside directories that belong to the agent tree (openotters rejects them too).
pub const FORBIDDEN_MOUNT_DIRS: [&str; 5] = [
    "/etc/context",
    "/etc/data",
    "/usr/bin",
    "/usr/local/bin",
    "/var",
];

/// POSIX `path.Base` of a slash path, ignoring trailing slashes: the default name of an ADD, and
/// how a bin's binary is matched by file name.
pub fn basename(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    t.rsplit('/').next().unwrap_or(t)
}

/// Go's `filepath.Base` on a slash path: trailing slashes removed, then the last element; `""`
/// gives `"."` and a path of slashes gives `"/"`.
pub fn go_base(p: &str) -> &str {
    if p.is_empty() {
        return ".";
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/";
    }
    t.rsplit('/').next().unwrap_or(t)
}

/// Provider credentials come from the host at run time, never from an image.
pub fn is_credential_key(key: &str) -> bool {
    key.ends_with("_API_KEY") || key.ends_with("_API_BASE")
}

/// Variables that make the dynamic loader of every program the runtime starts load or trace code
/// (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, … on glibc and musl, `DYLD_*` on macOS) or retune
/// it (`GLIBC_TUNABLES`).
pub fn is_loader_key(key: &str) -> bool {
    key.starts_with("LD_") || key.starts_with("DYLD_") || key == "GLIBC_TUNABLES"
}

/// What is wrong with the shape of a normalised ADD destination (relative to `etc/data/`): empty,
/// absolute or climbing out with `..`. Components are checked with [`is_path_safe`].
pub fn add_destination_shape(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.starts_with('/') {
        Some("is absolute")
    } else if name.split('/').any(|c| c == "..") {
        Some("climbs out of etc/data with `..`")
    } else {
        None
    }
}

/// A relative path of path-safe components: an ADD destination, a file layer's title.
pub fn is_safe_rel(s: &str) -> bool {
    add_destination_shape(s).is_none() && s.split('/').all(is_path_safe)
}

/// A MOUNT target with `.` and empty components removed, or what is wrong with it.
pub fn mount_target(target: &str) -> Result<String, String> {
    if !target.starts_with('/') {
        return Err("is not an absolute path".to_owned());
    }
    let parts: Vec<&str> = target
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.contains(&"..") {
        return Err("contains `..`".to_owned());
    }
    if parts.is_empty() {
        return Err("is the root directory".to_owned());
    }
    if target.bytes().any(|b| b.is_ascii_control()) {
        return Err("contains a control character".to_owned());
    }
    let norm = format!("/{}", parts.join("/"));
    if let Some(f) = FORBIDDEN_MOUNT_DIRS
        .iter()
        .find(|f| norm == **f || norm.starts_with(&format!("{f}/")))
    {
        return Err(format!("is inside {f}, which belongs to the agent"));
    }
    Ok(norm)
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

/// A context layer title: `<NAME>.md` for a path-safe NAME (up to 66 characters), or any
/// path-safe name. openotters L caps the whole title at 63 (AF234 warns about that).
pub fn is_context_title(title: &str) -> bool {
    is_path_safe(title) || title.strip_suffix(".md").is_some_and(is_path_safe)
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

/// A name read from an image that the parser would have refused in an Agentfile. Displays as
/// `<field>[<index>] <what is wrong>`; callers prefix "invalid artifact: ".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}{} {what}", index.map(|i| format!("[{i}]")).unwrap_or_default())]
pub struct InvalidName {
    pub field: &'static str,
    pub index: Option<usize>,
    pub what: String,
}

/// How a value from an image is shown in an error: quoted, control characters escaped, at most 64
/// characters.
pub fn shown(s: &str) -> String {
    let mut t: String = s.chars().take(64).collect();
    let cut = t.len() < s.len();
    t = format!("{t:?}");
    if cut {
        t.push('…');
    }
    t
}

const PATH_SAFE_HELP: &str =
    "(names are 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit)";

/// Checks every name of a model read from an image as the parser checks an Agentfile's (AF104,
/// AF105, AF106, AF108, AF109, AF110, AF114, AF115, AF116), plus what `otters run` cannot pass
/// on (a NUL byte in an ENV value or EXEC argument). The first problem wins.
pub fn check_artifact(a: &Agent) -> Result<(), InvalidName> {
    check_name(a)?;
    check_contexts(a)?;
    check_configs(a)?;
    check_bins(a)?;
    check_adds(a)?;
    check_exec(a)?;
    check_envs(a)?;
    check_capabilities(a)?;
    check_mounts(a)?;
    super::egress::check_artifact(a).map_err(|(index, what)| InvalidName {
        field: "egress",
        index: Some(index),
        what,
    })
}

/// The first problem found, for [`check_artifact`].
fn bad(field: &'static str, index: Option<usize>, what: String) -> Result<(), InvalidName> {
    Err(InvalidName { field, index, what })
}

/// The NAME, a file name.
fn check_name(a: &Agent) -> Result<(), InvalidName> {
    if let Some(n) = a.name.as_ref().filter(|n| !n.value.is_empty()) {
        if !is_path_safe(&n.value) {
            return bad(
                "name",
                None,
                format!(
                    "{} is not a safe file name {PATH_SAFE_HELP}",
                    shown(&n.value)
                ),
            );
        }
    }
    Ok(())
}

/// CONTEXT names: file names, none reserved for a generated file.
fn check_contexts(a: &Agent) -> Result<(), InvalidName> {
    for (i, c) in a.contexts.iter().enumerate() {
        if RESERVED_CONTEXT_NAMES.contains(&c.name.as_str()) {
            return bad(
                "contexts",
                Some(i),
                format!("name {} is reserved for a generated file", shown(&c.name)),
            );
        }
        if !is_path_safe(&c.name) {
            return bad(
                "contexts",
                Some(i),
                format!(
                    "name {} is not a safe file name {PATH_SAFE_HELP}",
                    shown(&c.name)
                ),
            );
        }
    }
    Ok(())
}

/// CONFIG keys: DNS-1123 labels.
fn check_configs(a: &Agent) -> Result<(), InvalidName> {
    for (i, c) in a.configs.iter().enumerate() {
        if !is_label(&c.key, false) {
            return bad(
                "configs",
                Some(i),
                format!("key {} is not a DNS-1123 label", shown(&c.key)),
            );
        }
    }
    Ok(())
}

/// BIN names: file names.
fn check_bins(a: &Agent) -> Result<(), InvalidName> {
    for (i, b) in a.bins.iter().enumerate() {
        if !is_path_safe(&b.name) {
            return bad(
                "bins",
                Some(i),
                format!(
                    "name {} is not a safe file name {PATH_SAFE_HELP}",
                    shown(&b.name)
                ),
            );
        }
    }
    Ok(())
}

/// ADD names: relative paths of file names.
fn check_adds(a: &Agent) -> Result<(), InvalidName> {
    for (i, d) in a.adds.iter().enumerate() {
        if let Some(what) = add_destination_shape(&d.name) {
            return bad("adds", Some(i), format!("name {} {what}", shown(&d.name)));
        }
        if let Some(c) = d.name.split('/').find(|c| !is_path_safe(c)) {
            return bad(
                "adds",
                Some(i),
                format!(
                    "name {}: component {} is not a safe file name {PATH_SAFE_HELP}",
                    shown(&d.name),
                    shown(c)
                ),
            );
        }
    }
    Ok(())
}

/// EXEC arguments: no NUL byte.
fn check_exec(a: &Agent) -> Result<(), InvalidName> {
    if let Some(exec) = &a.exec {
        if let Some(i) = exec.value.iter().position(|s| s.contains('\0')) {
            return bad("exec", Some(i), "contains a NUL byte".to_owned());
        }
    }
    Ok(())
}

/// ENV keys: upper-case names, neither reserved nor credentials; values without NUL.
fn check_envs(a: &Agent) -> Result<(), InvalidName> {
    for (i, e) in a.envs.iter().enumerate() {
        if !is_env_key(&e.key) {
            return bad(
                "envs",
                Some(i),
                format!(
                    "key {} is not an upper-case name ([A-Z_][A-Z0-9_]*)",
                    shown(&e.key)
                ),
            );
        }
        if RESERVED_ENV_KEYS.contains(&e.key.as_str()) {
            return bad(
                "envs",
                Some(i),
                format!("key {} is reserved: otters sets it itself", e.key),
            );
        }
        if is_credential_key(&e.key) {
            return bad(
                "envs",
                Some(i),
                format!(
                    "key {} is reserved: provider credentials come from the host, never from an image",
                    e.key
                ),
            );
        }
        if e.value.contains('\0') {
            return bad(
                "envs",
                Some(i),
                format!("value of {} contains a NUL byte", e.key),
            );
        }
    }
    Ok(())
}

/// CAPABILITY names.
fn check_capabilities(a: &Agent) -> Result<(), InvalidName> {
    for (i, c) in a.capabilities.iter().enumerate() {
        if !is_label(&c.value, true) {
            return bad(
                "capabilities",
                Some(i),
                format!("{} is not a valid capability name", shown(&c.value)),
            );
        }
    }
    Ok(())
}

/// MOUNT targets: absolute paths, each declared once.
fn check_mounts(a: &Agent) -> Result<(), InvalidName> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, m) in a.mounts.iter().enumerate() {
        match mount_target(&m.target) {
            Err(what) => {
                return bad(
                    "mounts",
                    Some(i),
                    format!("target {} {what}", shown(&m.target)),
                )
            }
            Ok(norm) if !seen.insert(norm.clone()) => {
                return bad(
                    "mounts",
                    Some(i),
                    format!("target {norm} is declared twice"),
                )
            }
            Ok(_) => {}
        }
    }
    Ok(())
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
        assert!(is_safe_rel("docs/a.md") && !is_safe_rel("docs//a") && !is_safe_rel("a/../b"));
        let long = "C".repeat(63);
        assert!(is_context_title(&format!("{long}.md")) && is_context_title("SOUL.md"));
        assert!(!is_context_title(&format!("{long}x.md")) && !is_context_title(".md"));
        assert!(!is_context_title("../x.md"));
        assert!(is_loader_key("LD_PRELOAD") && is_loader_key("DYLD_INSERT_LIBRARIES"));
        assert!(is_loader_key("GLIBC_TUNABLES") && !is_loader_key("OLD_PATH"));
        assert_eq!(mount_target("//data/./x/").as_deref(), Ok("/data/x"));
        assert!(mount_target("/data\n/x").is_err() && mount_target("/var/x").is_err());
    }

    /// The first problem of a config blob, as `otters run` would report it.
    fn problem(agent: &str) -> String {
        let json = format!(
            r#"{{"syntax":"openotters/agentfile:1","agent":{{"from":"scratch",{agent}}}}}"#
        );
        match crate::ir::from_config_blob(json.as_bytes()) {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn artifact_names_are_checked_as_the_parser_checks_them() {
        let cases: &[(&str, &str)] = &[
            (r#""name":"ok-1""#, "ok"),
            (r#""name":"../x""#, r#"name "../x" is not a safe file name"#),
            (
                r#""bins":[{"name":"jq","image":"i"},{"name":"../../v","image":"i"}]"#,
                r#"bins[1] name "../../v" is not a safe file name"#,
            ),
            (r#""bins":[{"name":"a/b","image":"i"}]"#, "bins[0] name"),
            (r#""bins":[{"image":"i"}]"#, r#"bins[0] name "" is not"#),
            (r#""adds":[{"src":"a","name":"docs/a.md"}]"#, "ok"),
            (
                r#""adds":[{"src":"a","name":"../a"}]"#,
                "adds[0] name \"../a\" climbs out",
            ),
            (
                r#""adds":[{"src":"a","name":"/etc/x"}]"#,
                "adds[0] name \"/etc/x\" is absolute",
            ),
            (
                r#""adds":[{"src":"a","name":"d/.x"}]"#,
                "adds[0] name \"d/.x\": component \".x\"",
            ),
            (r#""adds":[{"src":"a","dst":"/data/x.json"}]"#, "ok"),
            // alpha.50 writes `etc/data/` + filepath.Base(dst): `/data/../x` lands at `x`.
            (r#""adds":[{"src":"a","dst":"/data/../x"}]"#, "ok"),
            (
                r#""adds":[{"src":"a","dst":"/data/.."}]"#,
                "adds[0] name \"..\" climbs out",
            ),
            (
                r#""adds":[{"src":"a","dst":""}]"#,
                "adds[0] name \".\": component \".\"",
            ),
            (
                r#""adds":[{"src":"a","dst":"/"}]"#,
                "adds[0] name \"/\" is absolute",
            ),
            (
                r#""contexts":[{"name":"SOUL"},{"name":"AGENT"}]"#,
                "contexts[1] name \"AGENT\" is reserved",
            ),
            (
                r#""contexts":[{"name":"a\nb"}]"#,
                r#"contexts[0] name "a\nb" is not"#,
            ),
            (
                r#""configs":[{"key":"Max"}]"#,
                "configs[0] key \"Max\" is not a DNS-1123 label",
            ),
            (
                r#""envs":[{"key":"PATH=/x:","value":"y"}]"#,
                r#"envs[0] key "PATH=/x:" is not an upper-case name"#,
            ),
            (
                r#""envs":[{"key":"PATH","value":"/x"}]"#,
                "envs[0] key PATH is reserved",
            ),
            (
                r#""envs":[{"key":"OPENAI_API_BASE","value":"http://evil"}]"#,
                "envs[0] key OPENAI_API_BASE is reserved: provider credentials",
            ),
            (r#""envs":[{"key":"LD_PRELOAD","value":"x"}]"#, "ok"),
            (
                r#""envs":[{"key":"A","value":"x\u0000y"}]"#,
                "envs[0] value of A contains a NUL byte",
            ),
            (
                r#""exec":["serve","a\u0000"]"#,
                "exec[1] contains a NUL byte",
            ),
            (
                r#""capabilities":["web","Bad Cap"]"#,
                r#"capabilities[1] "Bad Cap" is not a valid capability name"#,
            ),
            (
                r#""mounts":[{"target":"/data/../etc"}]"#,
                "mounts[0] target \"/data/../etc\" contains `..`",
            ),
            (
                r#""mounts":[{"target":"/usr/bin/x"}]"#,
                "mounts[0] target \"/usr/bin/x\" is inside /usr/bin",
            ),
            (
                r#""mounts":[{"target":"/d"},{"target":"/d/"}]"#,
                "mounts[1] target /d is declared twice",
            ),
        ];
        for (agent, want) in cases {
            let got = problem(agent);
            if *want == "ok" {
                assert_eq!(got, "ok", "{agent}");
            } else {
                assert!(got.contains(want), "{agent}:\n got {got}\nwant {want}");
            }
        }
    }

    #[test]
    fn null_or_mistyped_list_entries_are_named_with_their_field_and_index() {
        let nulls: &[(&str, &str)] = &[
            (r#""contexts":[{"name":"A"},null]"#, "contexts[1] is null"),
            (r#""configs":[null]"#, "configs[0] is null"),
            (
                r#""bins":[{"name":"a","image":"i"},null]"#,
                "bins[1] is null",
            ),
            (r#""adds":[{"src":"a","name":"a"},null]"#, "adds[1] is null"),
            (
                r#""envs":[null,{"key":"A","value":"1"}]"#,
                "envs[0] is null",
            ),
            (r#""capabilities":["web",null]"#, "capabilities[1] is null"),
            (r#""exec":["serve",null]"#, "exec[1] is null"),
            (r#""mounts":[{"target":"/d"},null]"#, "mounts[1] is null"),
            (
                r#""adds":[{"src":"a","name":"a"},"x"]"#,
                "adds[1] is not an object",
            ),
            (r#""capabilities":[1]"#, "capabilities[0] is not a string"),
        ];
        for (agent, want) in nulls {
            assert_eq!(problem(agent), *want, "{agent}");
        }
    }

    #[test]
    fn long_names_are_cut_in_messages() {
        let long = format!(r#""name":"{}""#, "x".repeat(500));
        assert!(
            problem(&long).contains("…"),
            "long names are cut in messages"
        );
    }
}
