//! What a build gives back: its output ([`BuildOutput`]) or its error ([`BuildError`]), and the
//! internal result of the phases after analysis.

use super::inputs::AgentignoreError;
use super::write::WriteError;
use crate::lower;
use crate::resolve::LockError;
use otters_agentfile::diagnostic::{Diagnostic, SourceFile};
use otters_core::files::ReadError;
use otters_oci::archive::ArchiveError;
use otters_oci::reference::ReferenceError;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::RegistryError;
use otters_oci::spec::descriptor::Descriptor;
use otters_oci::spec::platform::BadPlatform;
use otters_oci::store::refname::RefNameError;
use otters_oci::{Digest, StoreError};
use std::path::PathBuf;

/// What happened to `Agentfile.lock`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockWrite {
    pub path: PathBuf,
    /// False when the file already held these bytes (it was not rewritten).
    pub changed: bool,
    pub images: usize,
}

/// A successful build.
#[derive(Clone, Debug)]
pub struct BuildOutput {
    /// The manifest in the store.
    pub descriptor: Descriptor,
    /// The tags given, as stored.
    pub tags: Vec<String>,
    /// The Agentfile, to render [`Self::diagnostics`] against.
    pub file: SourceFile,
    /// Warnings and lints of analysis and resolution (no errors).
    pub diagnostics: Vec<Diagnostic>,
    /// `None` when nothing was resolved or the Agentfile came from stdin.
    pub lock: Option<LockWrite>,
    /// One report per pushed tag, in tag order.
    pub pushed: Vec<TransferReport>,
    /// `build_args` keys no ARG of the Agentfile declares (the CLI warns, as docker does).
    pub unused_build_args: Vec<String>,
    /// With `BuildOptions::supply_inputs` set: what the build consumed, for its SBOM and provenance.
    pub supply: Option<otters_supply::inputs::BuildInputs>,
}

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("build context {} is not a directory; give a directory that holds the Agentfile and the files it adds", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot read Agentfile {}: {source}; pass the Agentfile with -f, relative to the context", path.display())]
    ReadAgentfile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The Agentfile or `.agentignore` cannot be used (too large, not a regular file, linked
    /// out of the context).
    #[error("{0}")]
    ProjectFile(ReadError),
    #[error("{0} has errors; nothing was built")]
    Invalid(String),
    /// The organisation policy cannot be read (the error names the file and line).
    #[error("{0}")]
    Policy(#[from] otters_policy::PolicyError),
    #[error("cannot resolve the images {0} names; nothing was built")]
    Unresolved(String),
    #[error("{0} names build inputs that cannot be used; nothing was built")]
    Inputs(String),
    /// The platform asked for is not one (the front end names its flag).
    #[error("platform: {0}")]
    Platform(#[from] BadPlatform),
    #[error("an SBOM, provenance or signature attaches to one platform's image; a build for several platforms cannot take them yet: build for one platform at a time to attach them")]
    SupplyMultiPlatform,
    /// A tag asked for is not one (the front end names its flag).
    #[error("tag {tag}: {source}")]
    Tag { tag: String, source: RefNameError },
    #[error("cannot open build context {}: {source}", path.display())]
    Context {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Ignore {
        path: PathBuf,
        source: AgentignoreError,
    },
    #[error("cannot lower {name}: {source}")]
    Lower {
        name: String,
        source: lower::LowerError,
    },
    #[error("cannot write the image into {}: {source}", store.display())]
    Write { store: PathBuf, source: WriteError },
    #[error("cannot tag the image: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("the image was built ({digest}) but {source}")]
    Lock { digest: Digest, source: LockError },
    #[error("the image was built ({digest}) but the push to {reference} failed: {source}")]
    Push {
        digest: Digest,
        reference: String,
        source: RegistryError,
    },
    #[error("the image was built ({digest}) but its inputs cannot be read again for its SBOM and provenance: {source}")]
    Supply {
        digest: Digest,
        source: std::io::Error,
    },
    #[error("the image was built ({digest}) but cannot be pushed as {reference}: {source}")]
    PushReference {
        digest: Digest,
        reference: String,
        source: ReferenceError,
    },
}

/// A failed build: what failed, and the diagnostics to show against the Agentfile (warnings
/// found before the failure included).
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct BuildError {
    pub kind: ErrorKind,
    pub file: Option<SourceFile>,
    pub diagnostics: Vec<Diagnostic>,
}

impl From<ErrorKind> for BuildError {
    fn from(kind: ErrorKind) -> Self {
        BuildError {
            kind,
            file: None,
            diagnostics: Vec::new(),
        }
    }
}

/// A failed phase after analysis: what failed and, when the phase found diagnostics of its own,
/// those (added to the diagnostics shown so far, which are then sorted by position).
pub(super) struct Failed {
    kind: ErrorKind,
    found: Option<Vec<Diagnostic>>,
}

impl From<ErrorKind> for Failed {
    fn from(kind: ErrorKind) -> Self {
        Failed { kind, found: None }
    }
}

impl Failed {
    /// A failure that found `diagnostics` to show.
    pub(super) fn with(kind: ErrorKind, diagnostics: Vec<Diagnostic>) -> Self {
        Failed {
            kind,
            found: Some(diagnostics),
        }
    }

    /// The build error: the diagnostics shown so far, with those this failure found.
    pub(super) fn into_error(self, file: SourceFile, mut shown: Vec<Diagnostic>) -> BuildError {
        if let Some(found) = self.found {
            shown.extend(found);
            shown.sort_by_key(Diagnostic::start);
        }
        BuildError {
            kind: self.kind,
            file: Some(file),
            diagnostics: shown,
        }
    }
}

/// What the phases after analysis produce.
pub(super) struct Stored {
    pub(super) descriptor: Descriptor,
    pub(super) tags: Vec<String>,
    pub(super) lock: Option<LockWrite>,
    pub(super) pushed: Vec<TransferReport>,
    pub(super) supply: Option<otters_supply::inputs::BuildInputs>,
}
