//! `-v HOST:TARGET[:DESC][:ro|rw]` parsing (spec §g.8) and the check of declared MOUNTs.
//!
//! Takes: the user's `-v` texts, a way to look up environment variables and the home directory,
//! and the agent's declared MOUNTs. Returns: validated [`UserMount`]s. Must never: touch the
//! filesystem beyond checking that a host path exists, or accept a target that escapes the tree
//! (`..`) or shadows a directory otters owns.

use otters_agentfile::ir::Mount;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// One validated `-v` mount.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UserMount {
    /// Absolute host path (after `$VAR`/`~` expansion; symlinks are kept as given).
    pub host: PathBuf,
    /// Absolute, cleaned in-agent path.
    pub target: String,
    /// What the mount is for (`-v HOST:TARGET:DESC`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the agent may only read it (`:ro`).
    pub read_only: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MountError {
    #[error("-v {spec:?}: must be HOST:TARGET[:DESC][:ro|:rw]")]
    Shape { spec: String },
    #[error("-v {spec:?}: unknown mount mode {mode:?}; the mode is `ro` (read-only) or `rw` (read-write), and a description may not be a mount option word")]
    UnknownMode { spec: String, mode: String },
    #[error("-v {spec:?}: host path {host} does not exist; create it or fix the path")]
    HostMissing { spec: String, host: String },
    #[error("-v {spec:?}: target {target:?} must be an absolute path other than / (e.g. /data)")]
    TargetNotAbsolute { spec: String, target: String },
    #[error("-v {spec:?}: target {target:?} must not contain `..`")]
    TargetDotDot { spec: String, target: String },
    #[error("-v {spec:?}: target {target} is reserved by otters ({reserved} and below); choose another target")]
    TargetReserved {
        spec: String,
        target: String,
        reserved: &'static str,
    },
    #[error("-v {spec:?}: target {target} is mounted twice; give each mount its own target")]
    Duplicate { spec: String, target: String },
    #[error("-v {spec:?}: cannot expand {var}: the variable is not set")]
    UnsetVariable { spec: String, var: String },
    #[error("declared mount(s) missing: {targets}")]
    DeclaredMissing { targets: String },
    #[error("-v {host}:{target}:rw: the container runs as {user} (otters runs as root, and a container never runs as root), which cannot write {host} (owner {owner}, mode {mode:o}): every write of the agent there would fail with \"Permission denied\". Give that user access (`chown -R {user} {host}`, or `setfacl -m u:{uid}:rwX {host}`), mount it read-only (`:ro`), or run otters as the user who owns it")]
    ContainerCannotWrite {
        host: String,
        target: String,
        user: String,
        uid: u32,
        owner: String,
        mode: u32,
    },
}

/// With the docker executor run by root, the container user `(uid, gid)` must be able to write
/// every read-write host mount, or the agent's writes fail silently inside the container (issue
/// 18.3). Judged from the owner and mode bits; a path with an access ACL, or one that cannot be
/// read now, is left to the kernel.
pub fn check_container_writes(
    mounts: &[UserMount],
    (uid, gid): (u32, u32),
) -> Result<(), MountError> {
    use std::os::unix::fs::MetadataExt as _;
    for m in mounts.iter().filter(|m| !m.read_only) {
        let Ok(meta) = std::fs::metadata(&m.host) else {
            continue;
        };
        let has_acl =
            rustix::fs::getxattr(&m.host, "system.posix_acl_access", &mut [0u8; 0][..]).is_ok();
        // Writing a directory's entries needs w and x; a file needs w.
        let need = if meta.is_dir() { 0o3 } else { 0o2 };
        let mode = meta.mode() & 0o7777;
        let bits = if meta.uid() == uid {
            mode >> 6
        } else if meta.gid() == gid {
            mode >> 3
        } else {
            mode
        };
        if has_acl || bits & need == need {
            continue;
        }
        let shown = |p: &Path| otters_oci::validate::escape_text(&p.display().to_string(), 200);
        return Err(MountError::ContainerCannotWrite {
            host: shown(&m.host),
            target: m.target.clone(),
            user: format!("{uid}:{gid}"),
            uid,
            owner: format!("{}:{}", meta.uid(), meta.gid()),
            mode,
        });
    }
    Ok(())
}

/// Targets that belong to otters and may not be mounted over.
const RESERVED_TARGETS: &[&str] = &[
    "/etc/context",
    "/etc/data",
    "/usr/bin",
    "/usr/local/bin",
    "/var",
];
/// Exact targets that may not be mounted over either (the tree's own files and dirs).
const RESERVED_EXACT: &[&str] = &[
    "/etc",
    "/etc/Agentfile",
    "/etc/agent.yaml",
    "/usr",
    "/usr/local",
    "/opt/bins",
    "/opt/runtime",
    "/workspace",
    "/home",
    "/tmp",
];

/// What parsing needs from the host: variables and the home directory.
pub trait HostLookup {
    fn var(&self, key: &str) -> Option<String>;
    fn home(&self) -> Option<PathBuf>;
    fn cwd(&self) -> PathBuf;
}

/// The real host.
pub struct RealHost;

impl HostLookup for RealHost {
    fn var(&self, key: &str) -> Option<String> {
        std::env::var(key).ok()
    }
    fn home(&self) -> Option<PathBuf> {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    }
    fn cwd(&self) -> PathBuf {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    }
}

/// Parse one `-v` text (no existence check, no duplicate check).
pub fn parse(spec: &str, host: &dyn HostLookup) -> Result<UserMount, MountError> {
    let shape = || MountError::Shape {
        spec: spec.to_owned(),
    };
    let (body, read_only) = match spec.rsplit_once(':') {
        Some((b, m)) if m.eq_ignore_ascii_case("ro") => (b, true),
        Some((b, m)) if m.eq_ignore_ascii_case("rw") => (b, false),
        // A docker-style option where the mode goes (`readonly`, `ro,z`, …) would otherwise be
        // read as a description and the mount would silently be read-write.
        Some((b, m)) if b.contains(':') && looks_like_mode(m) => {
            return Err(MountError::UnknownMode {
                spec: spec.to_owned(),
                mode: m.to_owned(),
            })
        }
        _ => (spec, false),
    };
    let (host_text, rest) = body.split_once(':').ok_or_else(shape)?;
    if rest.is_empty() || host_text.is_empty() {
        return Err(shape());
    }
    let (target_text, description) = match rest.split_once(':') {
        Some((t, d)) => (t, Some(d.to_owned()).filter(|d| !d.is_empty())),
        None => (rest, None),
    };
    let expanded = expand_vars(host_text, host).map_err(|var| MountError::UnsetVariable {
        spec: spec.to_owned(),
        var,
    })?;
    let with_home = match expanded.strip_prefix('~') {
        Some(tail) if tail.is_empty() || tail.starts_with('/') => match host.home() {
            Some(h) => format!("{}{tail}", h.display()),
            None => expanded.clone(),
        },
        _ => expanded.clone(),
    };
    let host_path = {
        let p = PathBuf::from(&with_home);
        if p.is_absolute() {
            clean(&p)
        } else {
            clean(&host.cwd().join(p))
        }
    };
    let target = validate_target(spec, target_text)?;
    Ok(UserMount {
        host: host_path,
        target,
        description,
        read_only,
    })
}

/// Docker and podman volume options (and comma lists of them), which otters does not take.
fn looks_like_mode(m: &str) -> bool {
    const OPTIONS: &[&str] = &[
        "ro",
        "rw",
        "readonly",
        "read-only",
        "read_only",
        "readwrite",
        "read-write",
        "z",
        "shared",
        "rshared",
        "slave",
        "rslave",
        "private",
        "rprivate",
        "nocopy",
        "copy",
        "consistent",
        "cached",
        "delegated",
        "u",
        "O",
        "exec",
        "noexec",
        "suid",
        "nosuid",
        "dev",
        "nodev",
        "bind",
        "rbind",
    ];
    !m.is_empty()
        && m.split(',').all(|o| {
            let o = o.trim();
            OPTIONS.iter().any(|k| k.eq_ignore_ascii_case(o))
        })
}

/// Parse every `-v`, check that hosts exist and targets are distinct.
pub fn parse_all(specs: &[String], host: &dyn HostLookup) -> Result<Vec<UserMount>, MountError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(specs.len());
    for spec in specs {
        let m = parse(spec, host)?;
        if !m.host.exists() {
            return Err(MountError::HostMissing {
                spec: spec.clone(),
                host: m.host.display().to_string(),
            });
        }
        if !seen.insert(m.target.clone()) {
            return Err(MountError::Duplicate {
                spec: spec.clone(),
                target: m.target,
            });
        }
        out.push(m);
    }
    Ok(out)
}

/// Merge the declared MOUNTs with the user's: a user mount takes the declared description and
/// read-only flag when it gives none (`ro` from either side wins). Declared targets with no user
/// mount are an error unless `allow_missing` (they are then returned as the missing list).
pub fn merge_declared(
    user: &mut [UserMount],
    declared: &[Mount],
    allow_missing: bool,
) -> Result<Vec<String>, MountError> {
    let mut missing = Vec::new();
    for d in declared {
        let target = clean_target(&d.target);
        match user.iter_mut().find(|m| m.target == target) {
            Some(m) => {
                m.read_only |= d.read_only;
                if m.description.is_none() {
                    m.description.clone_from(&d.description);
                }
            }
            None => missing.push(target),
        }
    }
    if !missing.is_empty() && !allow_missing {
        return Err(MountError::DeclaredMissing {
            targets: missing.join(", "),
        });
    }
    Ok(missing)
}

fn validate_target(spec: &str, raw: &str) -> Result<String, MountError> {
    let err_abs = || MountError::TargetNotAbsolute {
        spec: spec.to_owned(),
        target: raw.to_owned(),
    };
    if !raw.starts_with('/') {
        return Err(err_abs());
    }
    if Path::new(raw)
        .components()
        .any(|c| c == Component::ParentDir)
    {
        return Err(MountError::TargetDotDot {
            spec: spec.to_owned(),
            target: raw.to_owned(),
        });
    }
    let target = clean_target(raw);
    if target == "/" {
        return Err(err_abs());
    }
    for r in RESERVED_TARGETS {
        if target == *r || target.starts_with(&format!("{r}/")) {
            return Err(MountError::TargetReserved {
                spec: spec.to_owned(),
                target,
                reserved: r,
            });
        }
    }
    if let Some(r) = RESERVED_EXACT.iter().find(|r| **r == target) {
        return Err(MountError::TargetReserved {
            spec: spec.to_owned(),
            target,
            reserved: r,
        });
    }
    Ok(target)
}

/// `//a/./b/` → `/a/b` (no `..` handling: callers refuse it first).
fn clean_target(raw: &str) -> String {
    let parts: Vec<&str> = raw
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// Lexical clean of an absolute host path (resolves `.` and `..` without touching the disk).
fn clean(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Expand `$VAR` and `${VAR}`; an unset variable is an error (returned as its name).
fn expand_vars(s: &str, host: &dyn HostLookup) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            let Some(end) = braced.find('}') else {
                out.push('$');
                rest = after;
                continue;
            };
            (&braced[..end], end + 2)
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        out.push_str(&host.var(name).ok_or_else(|| name.to_owned())?);
        rest = &after[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_container_user_must_be_able_to_write_rw_mounts() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mount = |read_only| UserMount {
            host: dir.path().to_owned(),
            target: "/out".into(),
            description: None,
            read_only,
        };
        // Not this process's user (nor group): 0755 lets it read only.
        let other = (0xfffe_fff0, 0xfffe_fff0);
        let err = check_container_writes(&[mount(false)], other).unwrap_err();
        assert!(err.to_string().contains("mode 755"), "{err}");
        assert_eq!(check_container_writes(&[mount(true)], other), Ok(()));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(check_container_writes(&[mount(false)], other), Ok(()));
    }

    use super::*;

    struct FakeHost;
    impl HostLookup for FakeHost {
        fn var(&self, key: &str) -> Option<String> {
            (key == "DATA").then(|| "/srv/data".to_owned())
        }
        fn home(&self) -> Option<PathBuf> {
            Some(PathBuf::from("/home/u"))
        }
        fn cwd(&self) -> PathBuf {
            PathBuf::from("/work")
        }
    }

    fn p(s: &str) -> Result<UserMount, MountError> {
        parse(s, &FakeHost)
    }

    #[test]
    fn host_target_only_is_rw() {
        let m = p("/a:/b").unwrap();
        assert_eq!(
            (m.host, m.target.as_str(), m.read_only, m.description),
            (PathBuf::from("/a"), "/b", false, None)
        );
    }

    #[test]
    fn ro_suffix_and_description_with_colons() {
        let m = p("/a:/b:notes: see http://x:ro").unwrap();
        assert!(m.read_only);
        assert_eq!(m.description.as_deref(), Some("notes: see http://x"));
        let m = p("/a:/b:rw").unwrap();
        assert!(!m.read_only);
        assert_eq!(m.description, None);
    }

    #[test]
    fn modes_are_case_insensitive_and_unknown_modes_refused() {
        assert!(p("/a:/b:RO").unwrap().read_only);
        assert!(p("/a:/b:Ro").unwrap().read_only);
        assert!(p("/a:/b:notes:RO").unwrap().read_only);
        assert!(!p("/a:/b:RW").unwrap().read_only);
        for bad in [
            "/a:/b:readonly",
            "/a:/b:ro,z",
            "/a:/b:Z",
            "/a:/b:desc:read-only",
        ] {
            let e = p(bad).unwrap_err();
            assert!(matches!(e, MountError::UnknownMode { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("`ro`"), "{e}");
        }
        // A description that is not an option word stays a description.
        let m = p("/a:/b:read only inputs").unwrap();
        assert_eq!(m.description.as_deref(), Some("read only inputs"));
        assert!(!m.read_only);
    }

    #[test]
    fn expansion_home_and_relative() {
        assert_eq!(p("$DATA/x:/d").unwrap().host, PathBuf::from("/srv/data/x"));
        assert_eq!(p("${DATA}:/d").unwrap().host, PathBuf::from("/srv/data"));
        assert_eq!(
            p("~/notes:/d").unwrap().host,
            PathBuf::from("/home/u/notes")
        );
        assert_eq!(p("./rel/../r2:/d").unwrap().host, PathBuf::from("/work/r2"));
        assert_eq!(
            p("$NOPE:/d"),
            Err(MountError::UnsetVariable {
                spec: "$NOPE:/d".into(),
                var: "NOPE".into()
            })
        );
    }

    #[test]
    fn bad_shapes_and_targets() {
        assert!(matches!(p("/a"), Err(MountError::Shape { .. })));
        assert!(matches!(p("/a:"), Err(MountError::Shape { .. })));
        assert!(matches!(p("/a::ro"), Err(MountError::Shape { .. })));
        assert!(matches!(
            p("/a:rel"),
            Err(MountError::TargetNotAbsolute { .. })
        ));
        assert!(matches!(
            p("/a:/"),
            Err(MountError::TargetNotAbsolute { .. })
        ));
        assert!(matches!(
            p("/a:/x/../etc"),
            Err(MountError::TargetDotDot { .. })
        ));
        assert!(matches!(
            p("/a:/etc/context/x"),
            Err(MountError::TargetReserved { .. })
        ));
        assert!(matches!(
            p("/a:/var/lib"),
            Err(MountError::TargetReserved { .. })
        ));
        assert!(matches!(
            p("/a:/workspace"),
            Err(MountError::TargetReserved { .. })
        ));
        assert_eq!(p("/a://data/./x/").unwrap().target, "/data/x");
    }

    #[test]
    fn duplicates_and_missing_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let e = parse_all(&[format!("{d}:/x"), format!("{d}:/x/:ro")], &FakeHost).unwrap_err();
        assert!(matches!(e, MountError::Duplicate { .. }), "{e}");
        let e = parse_all(&[format!("{d}/nope:/x")], &FakeHost).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn declared_mounts_merge_and_gate() {
        let declared = vec![
            Mount {
                target: "/data".into(),
                read_only: true,
                description: Some("inputs".into()),
                span: None,
            },
            Mount {
                target: "/out".into(),
                read_only: false,
                description: None,
                span: None,
            },
        ];
        let mut user = vec![p("/a:/data").unwrap()];
        let e = merge_declared(&mut user, &declared, false).unwrap_err();
        assert_eq!(e.to_string(), "declared mount(s) missing: /out");
        let missing = merge_declared(&mut user, &declared, true).unwrap();
        assert_eq!(missing, vec!["/out".to_owned()]);
        assert!(user[0].read_only);
        assert_eq!(user[0].description.as_deref(), Some("inputs"));
    }
}
