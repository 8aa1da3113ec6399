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
//! ```

use crate::project_files::{read_named, ReadError, MAX_SMALL_FILE};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name inside `$OTTERS_HOME`.
pub const CONFIG_FILE: &str = "config.toml";

/// Settings for one registry (`[registry."HOST:PORT"]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistrySettings {
    /// Plain HTTP and unverified TLS allowed, as `--insecure` allows for every registry.
    #[serde(default)]
    pub insecure: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    #[serde(default)]
    registry: BTreeMap<String, RegistrySettings>,
}

/// What `config.toml` says about registries; empty when there is no file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistryConfig {
    registries: BTreeMap<String, RegistrySettings>,
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
    #[error("{}: registry \"{name}\" is not a HOST or HOST:PORT (no scheme, path or spaces); write it as it appears in image references, e.g. [registry.\"reg.example:5000\"]", path.display())]
    Name { path: PathBuf, name: String },
}

impl RegistryConfig {
    /// `$OTTERS_HOME/config.toml`.
    pub fn default_path() -> PathBuf {
        crate::cli::otters_home().join(CONFIG_FILE)
    }

    /// Reads `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<Self, RegistryConfigError> {
        let bytes = match read_named(path, "registry configuration", MAX_SMALL_FILE) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => return Ok(RegistryConfig::default()),
            Err(e) => return Err(e.into()),
        };
        let text = String::from_utf8_lossy(&bytes);
        Self::parse(&text, path)
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
        for name in shape.registry.keys() {
            if !valid_name(name) {
                return Err(RegistryConfigError::Name {
                    path: path.to_owned(),
                    name: clip(name, 100),
                });
            }
        }
        Ok(RegistryConfig {
            registries: shape.registry,
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

    /// Whether `registry` may use plain HTTP and unverified TLS by configuration.
    pub fn insecure(&self, registry: &str) -> bool {
        self.get(registry).is_some_and(|s| s.insecure)
    }
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
        assert_eq!(parse("").unwrap(), RegistryConfig::default());
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
    fn missing_file_is_empty_and_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            RegistryConfig::load(&d.path().join("config.toml")).unwrap(),
            RegistryConfig::default()
        );
        std::fs::create_dir(d.path().join("config.toml")).unwrap();
        let e = RegistryConfig::load(&d.path().join("config.toml")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
