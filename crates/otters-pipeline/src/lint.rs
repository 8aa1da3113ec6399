//! The lint driver behind `otters lint`: its flags' values → the inputs, each with its config and
//! [`check::Options`] → each file checked (and with `--fix`, its safe fixes written) → the
//! findings and the counts of the summary line. The CLI keeps the flags and the printers.
//!
//! Takes: a [`Request`] (paths and flag values) and standard input. Returns: [`Loaded`] files,
//! [`Checked`] results, [`Counts`]. Must never: print, or leave a fixed file half written (the
//! fixes go through `otters_core::rewrite`).
use crate::project::{self, ConfigFinder, Input, LintFlags, ProjectError};
use otters_agentfile::check::{self, config, Options};
use otters_agentfile::diagnostic::{apply_safe_fixes, Diagnostic, Severity, SourceFile};
use otters_core::files::ReadError;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What `otters lint` was asked, as values.
#[derive(Debug, Default)]
pub struct Request<'a> {
    /// Agentfiles or directories; `-` is standard input.
    pub paths: &'a [PathBuf],
    /// Every Agentfile below each directory.
    pub recursive: bool,
    /// The name standard input is checked as.
    pub stdin_filename: Option<&'a Path>,
    /// One config file for every input, instead of the search for `otters.toml`.
    pub config: Option<&'a Path>,
    /// The capability catalogue file.
    pub capabilities: Option<&'a Path>,
    /// The openotters versions to check portability against (`none` turns it off).
    pub targets: &'a [String],
    /// ARG values.
    pub build_args: BTreeMap<String, String>,
    /// Write each file's safe fixes.
    pub fix: bool,
    /// The user's organisation policy (config.toml, `OTTERS_POLICY`, named files); each input's
    /// `otters.toml` narrows it.
    pub policy: otters_policy::Policy,
}

/// Why linting could not start or a file could not be read or fixed (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error(
        "a name for standard input is given, but standard input (`-`) is not among the inputs"
    )]
    StdinFilenameWithoutStdin,
    #[error("fixing rewrites files; standard input cannot be fixed")]
    FixStdin,
    #[error("target {0:?} is not an openotters version otters knows; use alpha.50, L or none")]
    Target(String),
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("cannot fix {}: {source}", path.display())]
    FixStat {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot fix {}: it is a symbolic link; fix the file it points to", .0.display())]
    FixSymlink(PathBuf),
    #[error(transparent)]
    Rewrite(#[from] otters_core::rewrite::RewriteError),
    #[error("{} names no Agentfile", .0.display())]
    NoAgentfile(PathBuf),
    #[error(transparent)]
    Policy(#[from] otters_policy::PolicyError),
}

/// One Agentfile read, with what checking it needs.
#[derive(Debug)]
pub struct Loaded {
    /// The name findings give the file.
    pub name: String,
    pub bytes: Vec<u8>,
    /// Its `otters.toml` (or `--config`).
    pub config: config::LintConfig,
    /// What the file is checked with ([`project::lint_options`]).
    pub opts: Options,
    /// The file to rewrite with the safe fixes (`--fix`).
    pub fix: Option<PathBuf>,
}

/// Finds and reads every input (and its config) before anything is checked, so a file that
/// cannot be read stops the run with no partial output. `store` is the local store, for what
/// it knows of RUNTIME and BIN images.
pub fn load(
    req: &Request<'_>,
    store: &Path,
    mut stdin: impl std::io::Read,
) -> Result<Vec<Loaded>, LintError> {
    if req.stdin_filename.is_some() && !req.paths.iter().any(|p| p.as_os_str() == "-") {
        return Err(LintError::StdinFilenameWithoutStdin);
    }
    let inputs = project::agentfiles(req.paths, req.recursive, req.stdin_filename)?;
    if req.fix && inputs.iter().any(|i| matches!(i, Input::Stdin(_))) {
        return Err(LintError::FixStdin);
    }
    let catalogue = req
        .capabilities
        .map(project::read_capabilities)
        .transpose()?;
    let given = req
        .config
        .map(|p| project::load_config(p, false))
        .transpose()?;
    let targets = if req.targets.is_empty() {
        None
    } else {
        Some(config::parse_targets(req.targets).map_err(LintError::Target)?)
    };
    let mut flags = LintFlags {
        build_args: req.build_args.clone(),
        catalogue,
        targets,
        policy: None,
    };
    let mut configs = ConfigFinder::default();
    let mut loaded = Vec::with_capacity(inputs.len());
    for input in &inputs {
        let bytes = input.read(&mut stdin)?;
        let config = match &given {
            Some(c) => c.clone(),
            None => configs.find(&input.dir())?.unwrap_or_default(),
        };
        flags.policy = Some(std::sync::Arc::new(req.policy.for_project(&input.dir())?));
        loaded.push(Loaded {
            name: input.name(),
            bytes,
            opts: project::lint_options(input, &config, &flags, store),
            config,
            fix: match input {
                Input::File { path, .. } if req.fix => Some(path.clone()),
                _ => None,
            },
        });
    }
    Ok(loaded)
}

/// The options `otters lint FILE` checks the file at `path` with, as the language server checks
/// a document: the file as an input, its `otters.toml` (lint's own search), the references its
/// lock pins, its directory as the build context, the user's policy (config.toml and
/// `OTTERS_POLICY`) narrowed by the project's; `store` as in [`load`].
pub fn options_for(path: &Path, store: &Path) -> Result<Options, LintError> {
    let input = project::agentfiles(&[path.to_path_buf()], false, None)?
        .pop()
        .ok_or_else(|| LintError::NoAgentfile(path.to_path_buf()))?;
    let config = ConfigFinder::default()
        .find(&input.dir())?
        .unwrap_or_default();
    let policy = otters_policy::Policy::user(&[])?.for_project(&input.dir())?;
    let flags = LintFlags {
        policy: Some(std::sync::Arc::new(policy)),
        ..LintFlags::default()
    };
    Ok(project::lint_options(&input, &config, &flags, store))
}

/// One file's findings.
#[derive(Debug)]
pub struct Checked {
    pub file: SourceFile,
    pub diagnostics: Vec<Diagnostic>,
    /// The file's `fail-on` from its config.
    pub fail_on: Option<Severity>,
    /// The fixed file could not be written (its findings are those before the fixes).
    pub unwritten: Option<LintError>,
    /// The names of the ARGs the file declares, for [`unused_build_args`].
    pub args: BTreeSet<String>,
}

impl Loaded {
    /// Checks the file; with `--fix`, writes its safe fixes and checks the fixed text.
    pub fn check(self) -> Checked {
        let (mut file, mut analysis) = check::analyze_bytes(&self.name, &self.bytes, &self.opts);
        drop(self.bytes);
        let mut unwritten = None;
        if let Some(path) = &self.fix {
            if let Some(fixed) = apply_safe_fixes(&file.text, &analysis.diagnostics) {
                match write_fixed(path, &fixed) {
                    Err(e) => unwritten = Some(e),
                    Ok(()) => {
                        (file, analysis) =
                            check::analyze_bytes(&self.name, fixed.as_bytes(), &self.opts);
                    }
                }
            }
        }
        Checked {
            file,
            args: analysis.model.agent.args.keys().cloned().collect(),
            diagnostics: analysis.diagnostics,
            fail_on: self.config.fail_on,
            unwritten,
        }
    }
}

/// The `--build-arg` names no ARG declares, for build's and lint's warning: `declared` says
/// whether a name is an ARG (for lint, of any linted file: the union of every file's
/// [`Checked::args`], so a name one file of several declares is used).
pub fn unused_build_args(
    build_args: &BTreeMap<String, String>,
    declared: impl Fn(&str) -> bool,
) -> Vec<String> {
    build_args
        .keys()
        .filter(|k| !declared(k))
        .cloned()
        .collect()
}

/// Writes `text` to the file at `path` through `otters_core::rewrite` (atomic replace, in place
/// for a hard-linked file, never a read-only one). A symbolic link is not rewritten: fix the file
/// it points to.
pub fn write_fixed(path: &Path, text: &str) -> Result<(), LintError> {
    let meta = std::fs::symlink_metadata(path).map_err(|source| LintError::FixStat {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(LintError::FixSymlink(path.to_path_buf()));
    }
    otters_core::rewrite::rewrite(path, text.as_bytes())?;
    Ok(())
}

/// Findings by severity, and files checked, for the summary line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub files: usize,
    pub errors: usize,
    pub warnings: usize,
    pub info: usize,
}

impl Counts {
    /// Counts one file and its findings.
    pub fn add(&mut self, diags: &[Diagnostic]) {
        self.files += 1;
        for d in diags {
            match d.severity {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
                Severity::Info => self.info += 1,
            }
        }
    }
}

impl std::fmt::Display for Counts {
    /// "2 errors, 1 warning in 3 files", or "no problems in 1 file".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let files = plural(self.files, "file", "files");
        let parts: Vec<String> = [
            (self.errors, "error", "errors"),
            (self.warnings, "warning", "warnings"),
            (self.info, "info", "info"),
        ]
        .into_iter()
        .filter(|(n, ..)| *n > 0)
        .map(|(n, one, many)| plural(n, one, many))
        .collect();
        if parts.is_empty() {
            write!(f, "no problems in {files}")
        } else {
            write!(f, "{} in {files}", parts.join(", "))
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_files_and_findings() {
        let c = |files, errors, warnings, info| {
            Counts {
                files,
                errors,
                warnings,
                info,
            }
            .to_string()
        };
        assert_eq!(c(1, 0, 0, 0), "no problems in 1 file");
        assert_eq!(c(3, 2, 1, 0), "2 errors, 1 warning in 3 files");
        assert_eq!(c(2, 1, 0, 4), "1 error, 4 info in 2 files");
    }

    #[test]
    fn stdin_rules_are_checked_before_anything_is_read() {
        let dash = [PathBuf::from("-")];
        let named = Request {
            paths: &[],
            stdin_filename: Some(Path::new("Agentfile")),
            ..Request::default()
        };
        let e = load(&named, Path::new("/nonexistent"), std::io::empty()).unwrap_err();
        assert!(matches!(e, LintError::StdinFilenameWithoutStdin), "{e}");
        let fix = Request {
            paths: &dash,
            fix: true,
            ..Request::default()
        };
        let e = load(&fix, Path::new("/nonexistent"), std::io::empty()).unwrap_err();
        assert!(matches!(e, LintError::FixStdin), "{e}");
    }

    #[test]
    fn a_file_is_checked_with_its_own_config() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("otters.toml"),
            "[lint.severity]\nAF201 = \"off\"\n",
        )
        .unwrap();
        let file = dir.path().join("Agentfile");
        std::fs::write(&file, "FROM a\n").unwrap();
        let opts = options_for(&file, &dir.path().join("store")).unwrap();
        assert_eq!(opts.severity_overrides.len(), 1);
    }

    #[test]
    fn a_fix_never_writes_through_a_symbolic_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, "FROM a\n").unwrap();
        let link = dir.path().join("Agentfile");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = write_fixed(&link, "FROM b\n").unwrap_err();
        assert!(matches!(e, LintError::FixSymlink(_)), "{e}");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "FROM a\n");
        write_fixed(&real, "FROM b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "FROM b\n");
    }
}
