//! The editor's settings for the server: the `otters` section of `initializationOptions`,
//! `workspace/didChangeConfiguration` and `workspace/configuration` (each client sends one of
//! them), laid over what the project (`otters.toml`, the lock) gives, as `otters lint`'s flags
//! are laid over it.
//!
//! ```json
//! { "otters": { "targets": ["alpha.50"], "capabilities": "caps.txt",
//!               "buildArgs": { "VERSION": "2" }, "run": "onSave" } }
//! ```
//!
//! Takes: JSON from the client (the section itself, or an object holding it under `otters`).
//! Returns: [`Settings`], or why they do not fit (shown on each document's first line; the
//! defaults are used meanwhile). Must never: fail the session on bad settings.

use crate::Project;
use otters_agentfile::check::{config, Options};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// When documents are checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Run {
    /// On open, every change and save (the default).
    #[default]
    OnType,
    /// On open and save only: findings do not move while you type.
    OnSave,
}

/// The settings, each as `otters lint`'s flag of the same meaning.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// `--target`: the openotters versions the portability lints check (`["none"]`: none);
    /// unset, `otters.toml`'s `[portability] targets`.
    #[serde(default)]
    pub targets: Option<Vec<String>>,
    /// `--capabilities FILE`: the capability list AF211 and completion use, relative to the
    /// workspace root.
    #[serde(default)]
    pub capabilities: Option<PathBuf>,
    /// `--build-arg K=V` for every document.
    #[serde(default)]
    pub build_args: BTreeMap<String, String>,
    /// When documents are checked.
    #[serde(default)]
    pub run: Run,
    /// The editor's own keys in the same section (VS Code's `otters.path`, `otters.trace`):
    /// read and ignored, so that they are not unknown fields.
    #[serde(default, rename = "path")]
    editor_path: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "trace")]
    editor_trace: Option<serde::de::IgnoredAny>,
}

impl Settings {
    /// Reads the client's JSON: `null` is the defaults, an object with an `otters` key is that
    /// key's value, else the object is the section.
    pub fn from_json(v: &serde_json::Value) -> Result<Settings, String> {
        let section = v.get("otters").unwrap_or(v);
        if section.is_null() {
            return Ok(Settings::default());
        }
        Settings::deserialize(section).map_err(|e| format!("otters settings: {e}"))
    }

    /// The options for the file at `path`: the project's, with these settings over them; and
    /// why something could not be used (an invalid `otters.toml`, a bad setting).
    pub fn options(
        &self,
        project: &dyn Project,
        path: Option<&Path>,
        root: Option<&Path>,
    ) -> (Options, Option<String>) {
        let (mut opts, mut problem) = match project.options(path) {
            Ok(o) => (o, None),
            Err(e) => (Options::default(), Some(e)),
        };
        let mut bad = |e: String| {
            problem.get_or_insert(e);
        };
        if let Some(t) = &self.targets {
            match config::parse_targets(t) {
                Ok(t) => opts.portability = Some(t),
                Err(t) => bad(format!(
                    "otters settings: targets: {t:?} is not an openotters version otters knows; use \"alpha.50\", \"L\" or \"none\""
                )),
            }
        }
        if let Some(file) = &self.capabilities {
            let file = match root {
                Some(r) if file.is_relative() => r.join(file),
                _ => file.clone(),
            };
            match project.capabilities(&file) {
                Ok(c) => opts.capability_catalogue = Some(c),
                Err(e) => bad(format!("otters settings: capabilities: {e}")),
            }
        }
        opts.build_args.extend(self.build_args.clone());
        (opts, problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_section_is_read_bare_or_under_otters() {
        let want = Settings {
            targets: Some(vec!["alpha.50".to_owned()]),
            build_args: BTreeMap::from([("V".to_owned(), "2".to_owned())]),
            run: Run::OnSave,
            ..Settings::default()
        };
        let bare = json!({"targets": ["alpha.50"], "buildArgs": {"V": "2"}, "run": "onSave"});
        assert_eq!(Settings::from_json(&bare).unwrap(), want);
        assert_eq!(Settings::from_json(&json!({"otters": bare})).unwrap(), want);
        // VS Code answers with its own keys of the section too.
        let vscode = json!({"path": "otters", "trace": {"server": "off"}, "run": "onSave",
            "targets": ["alpha.50"], "buildArgs": {"V": "2"}, "capabilities": null});
        assert_eq!(Settings::from_json(&vscode).unwrap().run, Run::OnSave);
        assert_eq!(
            Settings::from_json(&json!(null)).unwrap(),
            Settings::default()
        );
        assert_eq!(
            Settings::from_json(&json!({"otters": null})).unwrap(),
            Settings::default()
        );
        let e = Settings::from_json(&json!({"target": ["L"]})).unwrap_err();
        assert!(
            e.starts_with("otters settings: unknown field `target`"),
            "{e}"
        );
        let e = Settings::from_json(&json!({"run": "always"})).unwrap_err();
        assert!(e.contains("unknown variant `always`"), "{e}");
    }

    #[test]
    fn settings_lie_over_the_project_as_lint_flags_do() {
        let s = Settings {
            targets: Some(vec!["none".to_owned()]),
            capabilities: Some(PathBuf::from("caps.txt")),
            build_args: BTreeMap::from([("V".to_owned(), "2".to_owned())]),
            ..Settings::default()
        };
        let (o, problem) = s.options(&crate::NoProject, None, Some(Path::new("/ws")));
        assert_eq!(o.portability, Some(vec![]));
        assert_eq!(o.build_args.get("V").map(String::as_str), Some("2"));
        // NoProject reads no capability list: said, and the rest still applies.
        assert_eq!(
            problem.as_deref(),
            Some(
                "otters settings: capabilities: /ws/caps.txt: this server reads no capability list"
            )
        );
    }
}
