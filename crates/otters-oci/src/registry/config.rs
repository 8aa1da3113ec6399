//! The registry configuration file, `$OTTERS_HOME/config.toml`: per-registry transport settings.
//!
//! Takes: the file's path (or its text). Returns: a [`RegistryConfig`] the transport asks per
//! registry. Must never: read more than [`MAX_SMALL_FILE`] bytes or anything but a regular file,
//! accept a key it does not know (a typo must not silently leave a registry secure or insecure),
//! or apply one registry's settings to another. See docs/registries.md, "Registry configuration".
//!
//! ```toml
//! [registry."reg.internal:5000"]
//! insecure = true   # plain HTTP and unverified TLS for this registry only
//! ca = "/etc/ssl/internal-ca.pem"   # also trusted, for this registry only
//!
//! [verify]
//! key = "ci.pub"   # `otters run` materialises only images signed by this key, or keyless:
//! # certificate-identity = "https://github.com/acme/agents/.github/workflows/release.yml@refs/heads/main"
//! # certificate-oidc-issuer = "https://token.actions.githubusercontent.com"
//! # trusted-root = "trusted_root.json"
//! [registry."docker.io"]
//! mirrors = ["mirror.internal:5000"]   # pulls try these first, in order; pushes never
//! ```
//!
//! Extra CA certificates also come from Docker's layout, `certs.d/HOST:PORT/*.crt` under
//! `/etc/docker` and `~/.docker` (or the directories [`CERTS_D_ENV`] lists).

use otters_core::files::{read_named, ReadError, MAX_SMALL_FILE};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name inside `$OTTERS_HOME`.
pub const CONFIG_FILE: &str = "config.toml";
/// Replaces the `certs.d` directories searched (`:`-separated; empty = none).
pub const CERTS_D_ENV: &str = "OTTERS_CERTS_D";
/// Most `*.crt` files read from one registry's `certs.d` directory.
pub const MAX_CERTS_D_FILES: usize = 16;

/// Settings for one registry (`[registry."HOST:PORT"]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrySettings {
    /// Plain HTTP and unverified TLS allowed, as `--insecure` allows for every registry.
    #[serde(default)]
    pub insecure: bool,
    /// A PEM file of CA certificates trusted for this registry (relative: to the file's directory).
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// Registries (`HOST[:PORT]`) tried in order before this one for pulls and resolution; each
    /// uses its own settings and credentials (see `registry::mirror`).
    #[serde(default)]
    pub mirrors: Vec<String>,
}

/// The file as it is read; also the source of its JSON Schema (`otters schema config-toml`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "$OTTERS_HOME/config.toml")]
pub struct FileShape {
    /// Per-registry settings, by `HOST[:PORT]`.
    #[serde(default)]
    registry: BTreeMap<String, RegistrySettings>,
    /// The signature policy of `otters run`.
    #[serde(default)]
    verify: VerifySettings,
    /// The organisation policy (docs/policy.md): read and checked by `otters-policy`.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    #[allow(
        dead_code,
        reason = "read by otters-policy; kept so the key is not unknown here"
    )]
    policy: Option<toml::Table>,
}

/// `[verify]`: the signature policy of `otters run`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifySettings {
    /// A public key (PKIX PEM) whose signature every image `otters run` materialises must carry
    /// (relative: to the file's directory).
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// Keyless: the SAN the signing certificate must name, exactly.
    #[serde(default, rename = "certificate-identity")]
    pub certificate_identity: Option<String>,
    /// Keyless: a regular expression the whole SAN must match.
    #[serde(default, rename = "certificate-identity-regexp")]
    pub certificate_identity_regexp: Option<String>,
    /// Keyless: the OIDC issuer the signing certificate must name, exactly.
    #[serde(default, rename = "certificate-oidc-issuer")]
    pub certificate_oidc_issuer: Option<String>,
    /// Keyless: Sigstore's `trusted_root.json` (relative: to the file's directory).
    #[serde(default, rename = "trusted-root")]
    pub trusted_root: Option<PathBuf>,
}

/// What `config.toml` says about registries; empty when there is no file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistryConfig {
    registries: BTreeMap<String, RegistrySettings>,
    verify: VerifySettings,
    /// The directory relative `ca` paths are taken from.
    base: PathBuf,
    /// Docker-style `certs.d` directories, searched in order.
    certs_d: Vec<PathBuf>,
}

/// One CA file trusted for a registry: where it came from and its bytes.
#[derive(Clone, Debug)]
pub struct CaFile {
    pub path: PathBuf,
    pub pem: Vec<u8>,
}

/// Why `config.toml` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RegistryConfigError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{}:{line}: {}{message}; fix or remove that line (see docs/registries.md, \"Registry configuration\")", path.display(), key.as_ref().map(|k| format!("`{k}`: ")).unwrap_or_default())]
    Syntax {
        path: PathBuf,
        line: usize,
        key: Option<String>,
        message: String,
    },
    #[error("cannot use CA certificate file {} for registry {registry}: {source}; give a PEM file of CA certificates (`ca =` in {CONFIG_FILE}, or certs.d/{registry}/*.crt)", path.display())]
    Ca {
        path: PathBuf,
        registry: String,
        source: CaError,
    },
    #[error("{}: mirror \"{name}\" of registry \"{registry}\" is not a HOST or HOST:PORT (no scheme, path or spaces); write it as it would appear in an image reference, e.g. mirrors = [\"mirror.example:5000\"]", path.display())]
    Mirror {
        path: PathBuf,
        registry: String,
        name: String,
    },
    #[error("{}: registry \"{name}\" is not a HOST or HOST:PORT (no scheme, path or spaces); write it as it appears in image references, e.g. [registry.\"reg.example:5000\"]", path.display())]
    Name { path: PathBuf, name: String },
}

/// Why a CA certificate file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The PEM does not parse (the message is the escaped chain of causes).
    #[error("{}", crate::validate::error_chain(.0))]
    Pem(#[source] reqwest::Error),
    #[error("it holds no PEM certificate")]
    Empty,
}

impl RegistryConfig {
    /// `$OTTERS_HOME/config.toml`.
    pub fn default_path() -> PathBuf {
        otters_core::home::otters_home().join(CONFIG_FILE)
    }

    /// Reads `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<Self, RegistryConfigError> {
        let bytes = match read_named(path, "registry configuration", MAX_SMALL_FILE) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut c = Self::parse(&text, path)?;
        c.certs_d = certs_d_dirs();
        Ok(c)
    }

    /// The same settings, with `dirs` as the `certs.d` directories.
    #[must_use]
    pub fn with_certs_d(mut self, dirs: Vec<PathBuf>) -> Self {
        self.certs_d = dirs;
        self
    }

    /// The CA files trusted for `registry` on top of the system's: its `ca`, then
    /// `certs.d/<registry>/*.crt` (sorted, at most [`MAX_CERTS_D_FILES`] per directory).
    pub fn ca_files(&self, registry: &str) -> Result<Vec<CaFile>, RegistryConfigError> {
        let mut paths = Vec::new();
        if let Some(ca) = self.get(registry).and_then(|s| s.ca.as_ref()) {
            paths.push(self.base.join(ca));
        }
        if valid_name(registry) && !registry.starts_with('.') {
            for dir in &self.certs_d {
                let Ok(rd) = std::fs::read_dir(dir.join(registry)) else {
                    continue;
                };
                let mut found: Vec<PathBuf> = rd
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "crt"))
                    .collect();
                found.sort();
                found.truncate(MAX_CERTS_D_FILES);
                paths.extend(found);
            }
        }
        paths
            .into_iter()
            .map(
                |path| match read_named(&path, "CA certificate", MAX_SMALL_FILE) {
                    Ok(pem) => Ok(CaFile { path, pem }),
                    Err(e) => Err(RegistryConfigError::Ca {
                        path,
                        registry: registry.to_owned(),
                        source: e.into(),
                    }),
                },
            )
            .collect()
    }

    /// Parses the text of `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, RegistryConfigError> {
        let shape: FileShape = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start.min(text.len()));
            let line = text[..at].matches('\n').count() + 1;
            let content = text.lines().nth(line - 1).unwrap_or_default();
            let key = content
                .split_once('=')
                .map(|(k, _)| k.trim())
                .filter(|k| !k.is_empty() && !k.starts_with('['))
                .map(|k| clip(k, 60));
            RegistryConfigError::Syntax {
                path: path.to_owned(),
                line,
                key,
                message: clip(e.message().trim(), 200),
            }
        })?;
        for (name, settings) in &shape.registry {
            if !valid_name(name) {
                return Err(RegistryConfigError::Name {
                    path: path.to_owned(),
                    name: clip(name, 100),
                });
            }
            if let Some(bad) = settings.mirrors.iter().find(|m| !valid_name(m)) {
                return Err(RegistryConfigError::Mirror {
                    path: path.to_owned(),
                    registry: clip(name, 100),
                    name: clip(bad, 100),
                });
            }
        }
        Ok(RegistryConfig {
            registries: shape.registry,
            verify: shape.verify,
            base: path.parent().map(Path::to_owned).unwrap_or_default(),
            certs_d: Vec::new(),
        })
    }

    /// The settings for `registry` (a reference's `host[:port]`), if the file has a table for it.
    /// Host names match without regard to case.
    pub fn get(&self, registry: &str) -> Option<&RegistrySettings> {
        self.registries.get(registry).or_else(|| {
            self.registries
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(registry))
                .map(|(_, v)| v)
        })
    }

    /// `[verify] key`: the public key `otters run` requires a signature by (absolute).
    pub fn verify_key(&self) -> Option<PathBuf> {
        self.verify.key.as_ref().map(|k| self.base.join(k))
    }

    /// `[verify]`, its paths made absolute: the signature policy of `otters run`.
    pub fn verify_settings(&self) -> VerifySettings {
        let mut v = self.verify.clone();
        v.key = self.verify_key();
        v.trusted_root = v.trusted_root.map(|r| self.base.join(r));
        v
    }

    /// The mirrors configured for `registry`, in the order to try them (none: the registry only).
    /// A mirror naming the registry itself is left out.
    pub fn mirrors(&self, registry: &str) -> Vec<String> {
        self.get(registry)
            .map(|s| {
                s.mirrors
                    .iter()
                    .filter(|m| !m.eq_ignore_ascii_case(registry))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether `registry` may use plain HTTP and unverified TLS by configuration.
    pub fn insecure(&self, registry: &str) -> bool {
        self.get(registry).is_some_and(|s| s.insecure)
    }
}

/// `$OTTERS_CERTS_D` (`:`-separated), else `/etc/docker/certs.d` and `~/.docker/certs.d`.
pub fn certs_d_dirs() -> Vec<PathBuf> {
    if let Some(v) = std::env::var_os(CERTS_D_ENV) {
        return std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    let mut dirs = vec![PathBuf::from("/etc/docker/certs.d")];
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        dirs.push(PathBuf::from(home).join(".docker/certs.d"));
    }
    dirs
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'))
}

fn clip(s: &str, max: usize) -> String {
    let s: String = s.chars().filter(|c| !c.is_control()).collect();
    if s.chars().count() > max {
        format!("{}…", s.chars().take(max).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RegistryConfig, RegistryConfigError> {
        RegistryConfig::parse(text, Path::new("/h/config.toml"))
    }

    #[test]
    fn insecure_is_per_registry() {
        let c = parse(
            "[registry.\"reg.internal:5000\"]\ninsecure = true\n\n[registry.\"other.example\"]\n",
        )
        .unwrap();
        assert!(c.insecure("reg.internal:5000"));
        assert!(c.insecure("REG.internal:5000"));
        assert!(!c.insecure("reg.internal:5001"));
        assert!(!c.insecure("reg.internal"));
        assert!(!c.insecure("other.example"));
        assert!(parse("").unwrap().get("reg.internal:5000").is_none());
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = parse("[registry.\"r:1\"]\n\ninsecure = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/h/config.toml:3: `insecure`: "), "{e}");
        assert!(e.contains("boolean"), "{e}");
        let e = parse("[registry.\"r:1\"]\ninsecur = true\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/h/config.toml:2: `insecur`: "), "{e}");
        assert!(e.contains("insecure"), "{e}");
        let e = parse("[registries.\"r:1\"]\ninsecure = true\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/h/config.toml:1: ") && e.contains("registries"),
            "{e}"
        );
        let e = parse("[registry.\"r:1\"\n").unwrap_err().to_string();
        assert!(e.starts_with("/h/config.toml:1: "), "{e}");
        let e = parse("[registry.\"https://r:1/x\"]\ninsecure = true\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a HOST or HOST:PORT"), "{e}");
    }

    #[test]
    fn mirrors_are_per_registry_and_checked() {
        let c = parse(
            "[registry.\"docker.io\"]\nmirrors = [\"m1.example:5000\", \"docker.io\", \"m2.example\"]\n",
        )
        .unwrap();
        assert_eq!(c.mirrors("docker.io"), ["m1.example:5000", "m2.example"]);
        assert_eq!(c.mirrors("DOCKER.io"), ["m1.example:5000", "m2.example"]);
        assert!(c.mirrors("m1.example:5000").is_empty());
        assert!(c.mirrors("quay.io").is_empty());
        let e = parse("[registry.\"docker.io\"]\nmirrors = [\"https://m.example/v2\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mirror \"https://m.example/v2\" of registry \"docker.io\""),
            "{e}"
        );
        let e = parse("[registry.\"docker.io\"]\nmirrors = \"m.example\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/h/config.toml:2: `mirrors`: "), "{e}");
    }

    #[test]
    fn ca_files_from_config_then_certs_d() {
        let d = tempfile::tempdir().unwrap();
        let cfg = d.path().join("config.toml");
        std::fs::write(d.path().join("ca.pem"), "A").unwrap();
        let reg = d.path().join("certs.d/r.example:5000");
        std::fs::create_dir_all(&reg).unwrap();
        std::fs::write(reg.join("b.crt"), "B").unwrap();
        std::fs::write(reg.join("client.key"), "K").unwrap();
        let c = RegistryConfig::parse("[registry.\"r.example:5000\"]\nca = \"ca.pem\"\n", &cfg)
            .unwrap()
            .with_certs_d(vec![d.path().join("certs.d")]);
        let files = c.ca_files("r.example:5000").unwrap();
        let pems: Vec<&[u8]> = files.iter().map(|f| f.pem.as_slice()).collect();
        assert_eq!(pems, [b"A".as_slice(), b"B".as_slice()]);
        assert!(c.ca_files("other.example").unwrap().is_empty());
        assert!(c.ca_files("..").unwrap().is_empty());
        let c = RegistryConfig::parse("[registry.\"r:1\"]\nca = \"missing.pem\"\n", &cfg).unwrap();
        let e = c.ca_files("r:1").unwrap_err().to_string();
        assert!(
            e.contains("missing.pem") && e.contains("registry r:1"),
            "{e}"
        );
    }

    #[test]
    fn missing_file_is_empty_and_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let c = RegistryConfig::load(&d.path().join("config.toml")).unwrap();
        assert!(c.registries.is_empty());
        std::fs::create_dir(d.path().join("config.toml")).unwrap();
        let e = RegistryConfig::load(&d.path().join("config.toml")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
