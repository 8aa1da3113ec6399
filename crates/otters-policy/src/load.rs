//! Where a policy comes from, and how the layers are put together: `$OTTERS_HOME/config.toml`,
//! the files `OTTERS_POLICY` names, the files a command names, then the project's `otters.toml`
//! (the nearest above the Agentfile's directory).
//!
//! Takes: file paths and directories. Returns: a [`Policy`] whose layers only narrow each other,
//! or a [`PolicyError`] naming the file and line. Must never: read more than a small file's bytes,
//! follow the project's `otters.toml` out of its directory, accept a named policy file without a
//! `[policy]` table, or accept layers whose intersection allows no MODEL provider.

pub use crate::error::PolicyError;
use crate::model::{Layer, Policy, Source};
use otters_agentfile::check::config::FILE_NAMES;
use otters_core::files::{self, read_confined, read_named, MAX_SMALL_FILE};
use std::path::{Path, PathBuf};

/// The variable naming policy files (`:`-separated), each held as a command-line one is.
pub const POLICY_ENV: &str = "OTTERS_POLICY";

/// The layer `source`'s file holds (`None`: the file does not exist, when `missing_ok`, or has no
/// `[policy]` table, when `table_optional`).
fn read_layer(
    source: Source,
    missing_ok: bool,
    table_optional: bool,
) -> Result<Option<Layer>, PolicyError> {
    let path = source.path().clone();
    let bytes = match &source {
        Source::Project(p) => {
            let (root, rel) = files::parent_and_name(p);
            read_confined(&root, &rel, p, "config file", MAX_SMALL_FILE)
        }
        _ => read_named(&path, "policy", MAX_SMALL_FILE),
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) if missing_ok && e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let text = String::from_utf8(bytes).map_err(|_| PolicyError::NotUtf8(path.clone()))?;
    let base = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    match crate::parse::layer(&text, source, &base)? {
        None if !table_optional => Err(PolicyError::NoTable(path)),
        other => Ok(other),
    }
}

/// A layer from TOML text (tests, and callers holding the text): `source` names where it came from.
pub fn parse_layer(text: &str, source: Source, base: &Path) -> Result<Option<Layer>, PolicyError> {
    crate::parse::layer(text, source, base)
}

impl Policy {
    /// The user's policy: `$OTTERS_HOME/config.toml`'s `[policy]` (if any), the files
    /// [`POLICY_ENV`] names, then `files`, in that order.
    pub fn user(files: &[PathBuf]) -> Result<Policy, PolicyError> {
        let home = otters_core::home::otters_home().join("config.toml");
        let mut policy = Policy::default();
        if let Some(l) = read_layer(Source::Home(home), true, true)? {
            policy.push(l)?;
        }
        let env = std::env::var_os(POLICY_ENV).unwrap_or_default();
        for p in std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()) {
            if let Some(l) = read_layer(Source::Env(p), false, false)? {
                policy.push(l)?;
            }
        }
        for p in files {
            if let Some(l) = read_layer(Source::File(p.clone()), false, false)? {
                policy.push(l)?;
            }
        }
        Ok(policy)
    }

    /// This policy narrowed by the `[policy]` of the `otters.toml` nearest to `dir` (itself or a
    /// directory above), if there is one.
    pub fn for_project(&self, dir: &Path) -> Result<Policy, PolicyError> {
        let mut out = self.clone();
        if let Some(path) = project_config(dir) {
            if let Some(l) = read_layer(Source::Project(path), false, true)? {
                out.push(l)?;
            }
        }
        Ok(out)
    }

    /// Adds `layer` after the others. Refused when, together with them, it allows no MODEL
    /// provider (an empty list alone is refused when it is parsed).
    pub fn push(&mut self, layer: Layer) -> Result<(), PolicyError> {
        let narrowing = layer.providers.as_ref().map(|r| r.origin.clone());
        self.layers.push(layer);
        if let (Some(origin), Some(left)) =
            (narrowing, self.allowed_names(|l| l.providers.as_ref()))
        {
            if left.is_empty() {
                self.layers.pop();
                return Err(PolicyError::At {
                    origin,
                    message: "`providers`: with the layers before it, no MODEL provider is left (each layer can only narrow the ones before); list a provider every layer allows".to_owned(),
                });
            }
        }
        Ok(())
    }
}

/// The `otters.toml` (or `.otters.toml`) in `dir` or the nearest directory above it.
pub fn project_config(dir: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    start
        .ancestors()
        .find_map(|d| FILE_NAMES.iter().map(|n| d.join(n)).find(|c| c.is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_named_file_must_hold_a_policy_and_a_missing_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.toml");
        fs::write(&p, "[lint]\nfail-on = \"error\"\n").unwrap();
        let e = read_layer(Source::File(p.clone()), false, false).unwrap_err();
        assert!(matches!(e, PolicyError::NoTable(_)), "{e}");
        let e = read_layer(Source::File(dir.path().join("none")), false, false).unwrap_err();
        assert!(matches!(e, PolicyError::Read(_)), "{e}");
        // The user's config file may be missing, or say nothing of policy.
        assert!(
            read_layer(Source::Home(dir.path().join("none")), true, true)
                .unwrap()
                .is_none()
        );
        assert!(read_layer(Source::Home(p), true, true).unwrap().is_none());
    }

    #[test]
    fn the_project_layer_is_the_nearest_otters_toml() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        fs::create_dir_all(&deep).unwrap();
        fs::write(
            dir.path().join("otters.toml"),
            "[policy]\nbins = [\"curl\"]\n",
        )
        .unwrap();
        let p = Policy::default().for_project(&deep).unwrap();
        assert_eq!(p.layers.len(), 1);
        assert!(matches!(p.layers[0].source, Source::Project(_)));
        assert_eq!(p.layers[0].bins.as_ref().unwrap().origin.line, 2);
    }

    #[test]
    fn layers_that_together_allow_no_provider_are_refused_at_the_narrowing_line() {
        let base = Path::new("/");
        let a = parse_layer(
            "[policy]\nproviders = [\"openai\"]\n",
            Source::Home("/h.toml".into()),
            base,
        )
        .unwrap()
        .unwrap();
        let b = parse_layer(
            "\n[policy]\nproviders = [\"anthropic\"]\n",
            Source::Project("/p/otters.toml".into()),
            base,
        )
        .unwrap()
        .unwrap();
        let mut p = Policy::default();
        p.push(a).unwrap();
        let e = p.push(b).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid policy /p/otters.toml:3: `providers`"),
            "{e}"
        );
        assert_eq!(p.layers.len(), 1);
    }
}
