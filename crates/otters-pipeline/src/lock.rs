//! `otters lock` as a library call: check an Agentfile, resolve the images it names to digests,
//! and write `Agentfile.lock` beside it when the pins changed.
//!
//! Takes: the context and Agentfile ([`crate::project::locate`]), build arguments, a platform and
//! the local store. Returns: a [`Locked`] (the pins, whether the file changed, warnings to show)
//! or a [`LockFailure`] carrying the diagnostics to show. Must never: write the lock when the
//! Agentfile has errors or a reference cannot be resolved, or print.

use crate::project;
use crate::resolve::{self, lockfile::Lockfile};
use otters_agentfile::check;
use otters_agentfile::diagnostic::{Diagnostic, SourceFile};
use otters_oci::Platform;
use otters_oci::Store;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to lock.
#[derive(Clone, Debug)]
pub struct LockRequest {
    /// The build context (see [`project::locate`]).
    pub context: PathBuf,
    /// The Agentfile (see [`project::locate`]).
    pub agentfile: PathBuf,
    pub build_args: BTreeMap<String, String>,
    pub platform: Platform,
    /// Allow plain HTTP and unverified TLS for registries not on this machine.
    pub insecure: bool,
    /// Where `config.json` is read from (default `$DOCKER_CONFIG` or `~/.docker`).
    pub docker_config: Option<PathBuf>,
    /// The local store (where FROM parents are pulled to), opened once the Agentfile is clean.
    pub store: PathBuf,
}

/// A lock written (or found up to date).
#[derive(Debug)]
pub struct Locked {
    pub file: SourceFile,
    /// Warnings of resolution, to show with `file`.
    pub warnings: Vec<Diagnostic>,
    pub lock: Lockfile,
    pub lock_path: PathBuf,
    /// False when the file on disk already held these pins.
    pub changed: bool,
}

/// Why no lock was written.
#[derive(Debug, thiserror::Error)]
pub enum LockFailure {
    #[error(transparent)]
    Read(#[from] otters_core::files::ReadError),
    /// The Agentfile has errors.
    #[error("{} has errors; Agentfile.lock was not written", .0.path.display())]
    Invalid(Box<Findings>),
    /// An image could not be resolved.
    #[error("cannot resolve the images {} names; Agentfile.lock was not written", .0.path.display())]
    Unresolved(Box<Findings>),
    #[error("cannot open the local store {}: {source}", root.display())]
    Store {
        root: PathBuf,
        source: otters_oci::StoreError,
    },
    #[error(transparent)]
    Write(#[from] resolve::LockError),
}

/// The diagnostics that stopped a lock, with the Agentfile they are about.
#[derive(Debug)]
pub struct Findings {
    pub path: PathBuf,
    pub file: SourceFile,
    pub diagnostics: Vec<Diagnostic>,
}

impl LockFailure {
    /// The Agentfile and the diagnostics that explain the failure, when there are some.
    pub fn diagnostics(&self) -> Option<(&SourceFile, &[Diagnostic])> {
        match self {
            LockFailure::Invalid(f) | LockFailure::Unresolved(f) => Some((&f.file, &f.diagnostics)),
            LockFailure::Read(_) | LockFailure::Store { .. } | LockFailure::Write(_) => None,
        }
    }
}

/// Checks, resolves and writes `Agentfile.lock` (see the module docs).
pub fn lock(req: &LockRequest) -> Result<Locked, LockFailure> {
    let bytes = project::read_agentfile(&req.context, &req.agentfile)?;
    let (file, model) = check_agentfile(&req.agentfile, &bytes, &req.build_args)?;
    let lock_path = resolve::lock_path_for(&req.agentfile);
    // FROM parents are pulled into it: leased, so a concurrent `prune` keeps what arrives.
    let store = Store::open(&req.store)
        .and_then(|s| s.leased())
        .map_err(|source| LockFailure::Store {
            root: req.store.clone(),
            source,
        })?;
    let opts = resolve::Options {
        offline: false,
        locked: false,
        allow_unpinned: false,
        platform: req.platform.clone(),
        insecure: req.insecure,
        lock_path: lock_path.clone(),
        store,
        docker_config: req.docker_config.clone(),
    };
    let resolution = resolve::resolve(&model, &opts).map_err(|diagnostics| {
        LockFailure::Unresolved(Box::new(Findings {
            path: req.agentfile.clone(),
            file: file.clone(),
            diagnostics,
        }))
    })?;
    let changed = resolution.lock.write_keeping_others(&lock_path)?;
    Ok(Locked {
        file,
        warnings: resolution.warnings,
        lock: resolution.lock,
        lock_path,
        changed,
    })
}

/// The checked model, or the errors that stop the lock.
fn check_agentfile(
    path: &Path,
    bytes: &[u8],
    build_args: &BTreeMap<String, String>,
) -> Result<(SourceFile, otters_agentfile::ir::Agentfile), LockFailure> {
    let opts = check::Options {
        build_args: build_args.clone(),
        ..check::Options::default()
    };
    let (file, analysis) = check::analyze_bytes(&path.display().to_string(), bytes, &opts);
    if analysis.has_errors() {
        return Err(LockFailure::Invalid(Box::new(Findings {
            path: path.to_owned(),
            file,
            diagnostics: analysis.diagnostics,
        })));
    }
    Ok((file, analysis.model))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn request(dir: &Path) -> LockRequest {
        let (context, agentfile) = project::locate(dir, None);
        LockRequest {
            context,
            agentfile,
            build_args: BTreeMap::new(),
            platform: Platform::host(),
            insecure: false,
            docker_config: Some(dir.join("no-docker-config")),
            store: dir.join("store"),
        }
    }

    #[test]
    fn an_agentfile_with_errors_writes_no_lock() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("Agentfile"), "BOGUS line\n").unwrap();
        let err = lock(&request(dir.path())).unwrap_err();
        let (_, diags) = err.diagnostics().unwrap();
        assert!(!diags.is_empty());
        assert!(err
            .to_string()
            .ends_with("has errors; Agentfile.lock was not written"));
        assert!(!dir.path().join("Agentfile.lock").exists());
        assert!(
            !dir.path().join("store").exists(),
            "no store opened for a bad file"
        );
    }

    #[test]
    fn a_missing_agentfile_is_a_read_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = lock(&request(dir.path())).unwrap_err();
        assert!(matches!(err, LockFailure::Read(_)), "{err}");
        assert!(err.diagnostics().is_none());
    }

    #[test]
    fn an_agentfile_naming_no_image_locks_nothing_twice() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("Agentfile"),
            "FROM scratch\nNAME a\nMODEL anthropic/claude\n",
        )
        .unwrap();
        let first = lock(&request(dir.path())).unwrap();
        assert!(first.lock.images.is_empty());
        assert_eq!(first.lock_path, dir.path().join("Agentfile.lock"));
        let second = lock(&request(dir.path())).unwrap();
        assert!(!second.changed);
    }
}
