//! An Agentfile directory on one side of a diff: built, with the rules of `otters build`, into a
//! temporary store that is removed with the returned [`Built`].
//!
//! Takes: the directory (or Agentfile) path and whether to stay offline (every pin from
//! `Agentfile.lock`). Returns: the built agent as a `Target` the diff reads like any other.
//! Must never: write to the user's store, or push. As `otters build` and `otters run PATH` do, an
//! online build records new pins in `Agentfile.lock`; an offline one only reads it.
use otters_oci::Store;
use otters_pipeline::build::{self, AgentfileSource, BuildError, BuildOptions};
use otters_pipeline::target::Target;
use std::path::Path;

/// An agent built from an Agentfile directory, in a store that lives as long as this value.
pub struct Built {
    pub target: Target,
    /// Warnings and lints of the build, to show against the Agentfile.
    pub file: otters_agentfile::diagnostic::SourceFile,
    pub warnings: Vec<otters_agentfile::diagnostic::Diagnostic>,
    /// The FROM parent's digest as `Agentfile.lock` pins it (`None` for scratch or no lock).
    pub parent: Option<otters_oci::Digest>,
    _dir: tempfile::TempDir,
}

/// How an Agentfile directory is built, as `otters build` takes it.
#[derive(Clone, Debug, Default)]
pub struct How {
    pub pins: Pins,
    pub allow_unpinned: bool,
    pub platform: Option<String>,
    pub insecure: bool,
}

/// Where a directory's pins come from, as `otters build` takes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pins {
    /// Resolved against the registries; new pins are recorded in `Agentfile.lock`.
    #[default]
    Resolve,
    /// Resolved against the registries, failing (AF406) where that would change
    /// `Agentfile.lock`, as `otters build --locked`.
    Locked,
    /// Every pin from `Agentfile.lock`; no registry is contacted, as `otters build --offline`.
    Offline,
}

/// What went wrong making the temporary store, or the build itself.
#[derive(Debug, thiserror::Error)]
pub enum BuildDirError {
    #[error("cannot make a temporary store to build {}: {source}", .path.display())]
    Store {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Build(Box<BuildError>),
}

/// Builds the Agentfile at `path` (a directory or the Agentfile itself) into a temporary store;
/// `offline` takes every pin from `Agentfile.lock` and never contacts a registry;
/// `allow_unpinned` builds a reference that has no pin without a digest. A FROM parent the lock
/// pins is first brought from `user_store` when it holds it ([`crate::seed`]), so an offline
/// build finds it there as `otters build --offline` does.
pub fn build_dir(path: &Path, how: &How, user_store: &Store) -> Result<Built, BuildDirError> {
    let failed = |source: std::io::Error| BuildDirError::Store {
        path: path.to_owned(),
        source,
    };
    let dir = tempfile::Builder::new()
        .prefix("otters-diff-")
        .tempdir()
        .map_err(failed)?;
    let store = Store::open(dir.path().join("store"))
        .map_err(|e| failed(std::io::Error::other(e.to_string())))?;
    let (context, agentfile) = otters_pipeline::project::locate(path, None);
    let lock = otters_pipeline::resolve::lock_path_for(&agentfile);
    crate::seed::parents(user_store, &store, &lock);
    let opts = BuildOptions {
        tags: vec!["otters-diff/agent:latest".to_owned()],
        offline: how.pins == Pins::Offline,
        locked: how.pins == Pins::Locked,
        allow_unpinned: how.allow_unpinned,
        platform: how.platform.clone(),
        insecure: how.insecure,
        ..BuildOptions::new(context, AgentfileSource::Path(agentfile))
    };
    let out =
        build::build(&opts, &store, &mut |_| {}).map_err(|e| BuildDirError::Build(Box::new(e)))?;
    let warnings = out
        .diagnostics
        .into_iter()
        .filter(|d| d.severity >= otters_agentfile::diagnostic::Severity::Warning)
        .collect();
    // The lock as the build left it: the parent it was built from.
    let parent = otters_pipeline::resolve::Lockfile::read_all(&lock)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|l| l.images)
        .find(|e| e.role == otters_pipeline::resolve::Role::From)
        .map(|e| e.digest);
    Ok(Built {
        parent,
        target: Target::Local(store, out.descriptor),
        file: out.file,
        warnings,
        _dir: dir,
    })
}
