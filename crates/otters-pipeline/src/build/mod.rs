//! The build entry point: Agentfile → checked model → resolved model and pins → plan → blobs and
//! manifest in a store → tags (→ oci-archive, `Agentfile.lock`, pushes).
//!
//! Takes: [`BuildOptions`], the target [`Store`] and a [`Progress`] sink. Returns: a
//! [`BuildOutput`] (descriptor, tags, warnings to show, lock and push results) or a [`BuildError`]
//! that carries the diagnostics and the [`SourceFile`] to render them against. Must never: print,
//! write `Agentfile.lock` before the image is in the store, write a lock for an Agentfile read from
//! stdin or in an `offline` build, or contact a registry with `offline` (resolution reads pins
//! from the lock alone).

// Rationale: `BuildError` carries the diagnostics and source file a failed build must show; one
// build returns it once, so its size costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

pub mod ci;
pub mod facts;
pub mod git_epoch;
pub(crate) mod hash_cache;
pub(crate) mod ignore;
pub(crate) mod inputs;
pub(crate) mod multi;
pub(crate) mod nofollow;
pub(crate) mod pgzip;
pub mod results;
pub(crate) mod tarball;
pub mod write;

use crate::build::hash_cache::HashCache;
use crate::build::ignore::Ignore;
use crate::build::inputs::{AgentignoreError, FsInputs};
use crate::lower::{self, plan, Pins};
use crate::resolve::{self, LockError};
use otters_agentfile::check;
use otters_agentfile::diagnostic::{Code, Diagnostic, SourceFile};
use otters_agentfile::ir::Agentfile;
use otters_core::files::{self, ReadError};
use otters_oci::archive::{self, ArchiveError};
use otters_oci::reference::{Reference, ReferenceError};
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::{self, Event, TransferReport};
use otters_oci::registry::{ClientOptions, RegistryClient, RegistryError};
use otters_oci::spec::descriptor::Descriptor;
use otters_oci::spec::platform::BadPlatform;
use otters_oci::store::refname::{new_tag_name, tag_name, RefNameError};
use otters_oci::{Digest, Platform, Store, StoreError};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use write::{write_plan, WriteError, WriteOptions};

/// Where the Agentfile comes from.
#[derive(Clone, Debug)]
pub enum AgentfileSource {
    /// A file on disk; `Agentfile.lock` lives beside it.
    Path(PathBuf),
    /// Bytes read from standard input; no lock file is read or written.
    Stdin(Vec<u8>),
}

/// What to build and how.
// Rationale: the flags mirror `otters build`'s switches one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The build context: ADD sources are relative to it, and nothing outside it is read.
    pub context: PathBuf,
    pub agentfile: AgentfileSource,
    /// Tags to give the image; empty means `<NAME>:latest` (`agent:latest` without NAME).
    pub tags: Vec<String>,
    pub build_args: BTreeMap<String, String>,
    /// `--label`: added to the Agentfile's LABELs (overriding one of the same key), so they reach
    /// the config blob and the manifest annotations exactly as a LABEL does.
    pub labels: BTreeMap<String, String>,
    /// `--annotation`: manifest annotations only, set last (they override LABELs and the title).
    pub annotations: BTreeMap<String, String>,
    /// `--annotations-from-ci` ([`ci::annotations`]): on every manifest (before `annotations`,
    /// which override them) and on a multi-platform index.
    pub ci_annotations: BTreeMap<String, String>,
    /// Also write the image to this oci-archive file.
    pub archive: Option<PathBuf>,
    /// Take every pin from `Agentfile.lock`; never contact a registry.
    pub offline: bool,
    /// Fail (AF406) when resolution would change `Agentfile.lock`.
    pub locked: bool,
    /// With `offline`: build references the lock does not pin without a digest (warning).
    pub allow_unpinned: bool,
    /// `os/arch[/variant]` to resolve RUNTIME and BIN images for; default this machine.
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine.
    pub insecure: bool,
    /// Push every tag to its registry after building.
    pub push: bool,
    /// The file-hash cache to use (`$OTTERS_HOME/cache/blobs.json`); `None` re-reads everything.
    pub hash_cache: Option<PathBuf>,
    pub source_date_epoch: Option<u64>,
    /// Where registry credentials are read from; default `$DOCKER_CONFIG` or `~/.docker`.
    pub docker_config: Option<PathBuf>,
    /// Describe the build's inputs for an SBOM and provenance ([`BuildOutput::supply`]).
    pub supply_inputs: bool,
}

impl BuildOptions {
    /// Options for building `agentfile` in `context` with every switch off.
    pub fn new(context: PathBuf, agentfile: AgentfileSource) -> Self {
        BuildOptions {
            context,
            agentfile,
            tags: Vec::new(),
            build_args: BTreeMap::new(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            ci_annotations: BTreeMap::new(),
            archive: None,
            offline: false,
            locked: false,
            allow_unpinned: false,
            platform: None,
            insecure: false,
            push: false,
            hash_cache: None,
            source_date_epoch: None,
            docker_config: None,
            supply_inputs: false,
        }
    }
}

/// Receives progress: large inputs being stored, and blobs being pushed.
pub trait Progress: write::Progress {
    /// A push to `reference` starts.
    fn push_started(&mut self, _reference: &str) {}
    fn transfer(&mut self, _event: &Event<'_>) {}
    /// The push to `reference` ended (successfully or not).
    fn push_finished(&mut self, _reference: &str) {}
}

/// Reports nothing.
pub struct NoProgress;

impl write::Progress for NoProgress {
    fn begin(&mut self, _: &str, _: u64) {}
    fn advance(&mut self, _: u64) {}
    fn end(&mut self) {}
}

impl Progress for NoProgress {}

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
    /// With [`BuildOptions::supply_inputs`]: what the build consumed, for its SBOM and provenance.
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

pub use crate::project::locate;
pub use inputs::source_path;

/// Reads the Agentfile: at most [`files::MAX_AGENTFILE`] bytes of a regular file. Inside
/// the context, a symlink is followed only while it stays inside the context (a repository's
/// `Agentfile -> /etc/shadow` must not become the Agentfile layer); a file named outside the
/// context with `-f` is confined to its own directory.
fn read_agentfile(context: &Path, path: &Path) -> Result<Vec<u8>, ErrorKind> {
    let (root, rel) = crate::project::confinement(context, path);
    files::read_confined(&root, &rel, path, "Agentfile", files::MAX_AGENTFILE).map_err(
        |e| match e {
            ReadError::Io { path, source } => ErrorKind::ReadAgentfile { path, source },
            e => ErrorKind::ProjectFile(e),
        },
    )
}

/// The Agentfile to build: its name in messages, its bytes, and its path (`None` from stdin).
struct AgentfileText {
    name: String,
    bytes: Vec<u8>,
    path: Option<PathBuf>,
}

/// A failed phase after analysis: what failed and, when the phase found diagnostics of its own,
/// those (added to the diagnostics shown so far, which are then sorted by position).
struct Failed {
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
    fn with(kind: ErrorKind, diagnostics: Vec<Diagnostic>) -> Self {
        Failed {
            kind,
            found: Some(diagnostics),
        }
    }

    /// The build error: the diagnostics shown so far, with those this failure found.
    fn into_error(self, file: SourceFile, mut shown: Vec<Diagnostic>) -> BuildError {
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
struct Stored {
    descriptor: Descriptor,
    tags: Vec<String>,
    lock: Option<LockWrite>,
    pushed: Vec<TransferReport>,
    supply: Option<otters_supply::inputs::BuildInputs>,
}

/// Builds (see the module docs).
pub fn build(
    opts: &BuildOptions,
    store: &Store,
    progress: &mut dyn Progress,
) -> Result<BuildOutput, BuildError> {
    check_tags(&opts.tags)?;
    if !opts.context.is_dir() {
        return Err(ErrorKind::NotADirectory(opts.context.clone()).into());
    }
    let agentfile = read_source(opts)?;
    let (file, analysis) = analyze(opts, &agentfile);
    if analysis.has_errors() {
        return Err(BuildError {
            kind: ErrorKind::Invalid(agentfile.name),
            file: Some(file),
            diagnostics: analysis.diagnostics,
        });
    }
    let unused_build_args = unused_build_args(opts, &analysis.model);
    let mut shown = analysis.diagnostics;
    match resolve_and_store(
        opts,
        store,
        progress,
        &agentfile,
        &analysis.model,
        &mut shown,
    ) {
        Ok(stored) => Ok(BuildOutput {
            descriptor: stored.descriptor,
            tags: stored.tags,
            file,
            diagnostics: shown,
            lock: stored.lock,
            pushed: stored.pushed,
            unused_build_args,
            supply: stored.supply,
        }),
        Err(failed) => Err(failed.into_error(file, shown)),
    }
}

/// The Agentfile's bytes, from standard input or read from disk (see [`read_agentfile`]).
fn read_source(opts: &BuildOptions) -> Result<AgentfileText, ErrorKind> {
    Ok(match &opts.agentfile {
        AgentfileSource::Stdin(bytes) => AgentfileText {
            name: "<stdin>".to_owned(),
            bytes: bytes.clone(),
            path: None,
        },
        AgentfileSource::Path(p) => AgentfileText {
            name: p.display().to_string(),
            bytes: read_agentfile(&opts.context, p)?,
            path: Some(p.clone()),
        },
    })
}

/// Parses and checks the Agentfile as the build sees it.
fn analyze(opts: &BuildOptions, agentfile: &AgentfileText) -> (SourceFile, check::Analysis) {
    let check_opts = check::Options {
        build_args: opts.build_args.clone(),
        // As in `otters lint`: a moving tag the lock pins is not reported (AF201). An unreadable
        // lock is reported by resolution (AF409).
        locked: agentfile
            .path
            .as_deref()
            .map(resolve::lockfile::pinned_beside)
            .unwrap_or_default(),
        // The portability lints (AF230–AF235) belong to `otters lint`, which reads their
        // targets from otters.toml; the build reads no otters.toml, so it leaves them out.
        portability: Some(Vec::new()),
        ..check::Options::default()
    };
    check::analyze_bytes(&agentfile.name, &agentfile.bytes, &check_opts)
}

/// The `build_args` keys no ARG declares (a declared one is recorded among the ARGs, the
/// override winning).
fn unused_build_args(opts: &BuildOptions, model: &Agentfile) -> Vec<String> {
    opts.build_args
        .keys()
        .filter(|k| !model.agent.args.contains_key(*k))
        .cloned()
        .collect()
}

/// Adds resolution's warnings to the analysis' findings: one finding per place and code, the
/// resolution's replacing the analysis' (issue 18.14: an unpinned RUNTIME was reported once by
/// lint, "uses the moving tag `latest`", and again by `--offline --allow-unpinned`, "is built
/// without a digest": four AF201 warnings for two references).
pub(super) fn add_warnings(shown: &mut Vec<Diagnostic>, warnings: &[Diagnostic]) {
    for w in warnings {
        match shown
            .iter()
            .position(|d| d.code == w.code && d.span == w.span)
        {
            Some(i) => shown[i] = w.clone(),
            None => shown.push(w.clone()),
        }
    }
}

/// The phases after a clean analysis: resolve, label, lower, write the image, tag it, save the
/// archive, write the lock, push. Warnings of resolution are added to `shown`.
fn resolve_and_store(
    opts: &BuildOptions,
    store: &Store,
    progress: &mut dyn Progress,
    agentfile: &AgentfileText,
    analyzed: &Agentfile,
    shown: &mut Vec<Diagnostic>,
) -> Result<Stored, Failed> {
    let mut platforms = multi::platforms(opts.platform.as_deref())?;
    if platforms.len() > 1 {
        return multi::resolve_and_store_each(
            opts, store, progress, agentfile, analyzed, &platforms, shown,
        );
    }
    let platform = platforms.remove(0);
    let resolution = resolve_images(opts, store, agentfile, analyzed, platform.clone())?;
    let (model, pins, inherited_adds) = match &resolution {
        Some(r) => {
            add_warnings(shown, &r.warnings);
            (&r.model, r.pins.clone(), r.inherited_adds.clone())
        }
        None => (analyzed, Pins::default(), Vec::new()),
    };
    let model = with_labels(model, &opts.labels);
    let tags = tags_for(&opts.tags, model.agent.name_str())?;
    let inputs = FsInputs::new(&opts.context).map_err(|source| ErrorKind::Context {
        path: opts.context.clone(),
        source,
    })?;
    let mut plan = lower_plan(opts, agentfile, &model, &pins, inherited_adds, &inputs)?;
    plan.annotations.extend(opts.ci_annotations.clone());
    plan.annotations.extend(opts.annotations.clone());
    let ignore = read_ignore(&inputs)?;
    // The image's blobs are written without a per-blob fsync and made durable in one pass
    // before any tag (or a user's `otters tag` of the printed digest) can point at them.
    let batch = store.batched();
    let descriptor = write_image(opts, &batch, &plan, &ignore, progress, &agentfile.name)?;
    batch.sync_batch().map_err(ErrorKind::from)?;
    tag_all(store, &descriptor, &tags)?;
    let supply = supply_phase(&SupplyPhase {
        opts,
        model: &model,
        pins: &pins,
        parent: resolution.as_ref().and_then(|r| r.parent.as_ref()),
        plan: &plan,
        root: inputs.root(),
        agentfile: (agentfile.path.as_deref(), &agentfile.bytes),
        tags: &tags,
        platform: &platform,
        descriptor: &descriptor,
    })?;
    save_archive(opts, store, &descriptor, &tags)?;
    let lock = write_lock(
        opts,
        resolution.as_ref().map(|r| std::slice::from_ref(&r.lock)),
        agentfile,
        &descriptor,
    )?;
    let pushed = push_if_asked(opts, store, &descriptor, &tags, progress)?;
    Ok(Stored {
        descriptor,
        tags,
        lock,
        pushed,
        supply,
    })
}

/// Points every tag at the image.
fn tag_all(store: &Store, descriptor: &Descriptor, tags: &[String]) -> Result<(), ErrorKind> {
    for t in tags {
        store.tag(t, descriptor)?;
    }
    Ok(())
}

/// With `-o`: the image, under its tags, into an oci-archive.
fn save_archive(
    opts: &BuildOptions,
    store: &Store,
    descriptor: &Descriptor,
    tags: &[String],
) -> Result<(), ErrorKind> {
    if let Some(dest) = &opts.archive {
        archive::save(store, descriptor, tags, dest)?;
    }
    Ok(())
}

/// With `--push`: [`push_tags`]; nothing otherwise.
fn push_if_asked(
    opts: &BuildOptions,
    store: &Store,
    descriptor: &Descriptor,
    tags: &[String],
    progress: &mut dyn Progress,
) -> Result<Vec<TransferReport>, ErrorKind> {
    if opts.push {
        push_tags(opts, store, descriptor, tags, progress)
    } else {
        Ok(Vec::new())
    }
}

/// What [`supply_phase`] reads.
struct SupplyPhase<'a> {
    opts: &'a BuildOptions,
    model: &'a otters_agentfile::ir::Agentfile,
    pins: &'a Pins,
    parent: Option<&'a resolve::lockfile::Entry>,
    plan: &'a plan::Plan,
    root: &'a Path,
    agentfile: (Option<&'a Path>, &'a [u8]),
    tags: &'a [String],
    platform: &'a Platform,
    descriptor: &'a Descriptor,
}

/// With `supply_inputs`: the build's inputs for its SBOM and provenance (see [`facts`]).
fn supply_phase(
    p: &SupplyPhase<'_>,
) -> Result<Option<otters_supply::inputs::BuildInputs>, ErrorKind> {
    if !p.opts.supply_inputs {
        return Ok(None);
    }
    facts::collect(&facts::Facts {
        model: p.model,
        pins: p.pins,
        parent: p.parent,
        plan: p.plan,
        root: p.root,
        agentfile: p.agentfile,
        tags: p.tags,
        build_args: &p.opts.build_args,
        platform: p.platform,
        manifest: &p.descriptor.digest,
    })
    .map(Some)
    .map_err(|source| ErrorKind::Supply {
        digest: p.descriptor.digest.clone(),
        source,
    })
}

/// Resolution: the FROM parent, RUNTIME and BIN pins; `None` when there is nothing to resolve.
fn resolve_images(
    opts: &BuildOptions,
    store: &Store,
    agentfile: &AgentfileText,
    model: &Agentfile,
    platform: Platform,
) -> Result<Option<resolve::Resolution>, Failed> {
    with_resolve_options(opts, store, agentfile, model, |ropts| {
        let ropts = resolve::Options {
            platform,
            ..ropts.clone()
        };
        resolve::resolve(model, &ropts)
    })
}

/// Runs `resolve` with the resolution options of this build (the host platform, for the caller
/// to replace); `None` when there is nothing to resolve.
fn with_resolve_options<T>(
    opts: &BuildOptions,
    store: &Store,
    agentfile: &AgentfileText,
    model: &Agentfile,
    resolver: impl FnOnce(&resolve::Options) -> Result<T, Vec<Diagnostic>>,
) -> Result<Option<T>, Failed> {
    let a = &model.agent;
    let needs_resolution = !a.is_scratch()
        || a.runtime.as_ref().is_some_and(|r| !r.value.is_empty())
        || !a.bins.is_empty();
    if !needs_resolution {
        return Ok(None);
    }
    // A stdin build has no lock: point resolution at a path that cannot exist.
    let scratch = tempfile::tempdir().map_err(|source| ErrorKind::Context {
        path: std::env::temp_dir(),
        source,
    })?;
    let lock_path = agentfile.path.as_deref().map_or_else(
        || scratch.path().join(resolve::LOCK_NAME),
        resolve::lock_path_for,
    );
    let ropts = resolve::Options {
        offline: opts.offline,
        locked: opts.locked,
        allow_unpinned: opts.allow_unpinned,
        platform: Platform::host(),
        insecure: opts.insecure,
        lock_path,
        store: store.clone(),
        docker_config: opts.docker_config.clone(),
    };
    resolver(&ropts)
        .map(Some)
        .map_err(|diags| Failed::with(ErrorKind::Unresolved(agentfile.name.clone()), diags))
}

/// The model with `--label`s added to its LABELs (borrowed as it is when there are none).
fn with_labels<'m>(model: &'m Agentfile, labels: &BTreeMap<String, String>) -> Cow<'m, Agentfile> {
    if labels.is_empty() {
        return Cow::Borrowed(model);
    }
    let mut m = model.clone();
    for (k, v) in labels {
        m.agent
            .labels
            .insert(k.clone(), otters_agentfile::ir::Node::new(v.clone(), None));
    }
    Cow::Owned(m)
}

/// Lowers the model to a plan of layers over the build context.
fn lower_plan(
    opts: &BuildOptions,
    agentfile: &AgentfileText,
    model: &Agentfile,
    pins: &Pins,
    inherited_adds: Vec<Descriptor>,
    inputs: &FsInputs,
) -> Result<plan::Plan, Failed> {
    let agentfile_dir = agentfile
        .path
        .as_deref()
        .map(|p| agentfile_dir(inputs.root(), p))
        .unwrap_or_default();
    let options = plan::Options {
        source_date_epoch: opts.source_date_epoch,
        agentfile_dir,
        inherited_adds,
    };
    lower::lower(model, &agentfile.bytes, pins, inputs, &options).map_err(|e| match e {
        lower::LowerError::Inputs(diags) => {
            Failed::with(ErrorKind::Inputs(agentfile.name.clone()), diags)
        }
        source @ lower::LowerError::Config(_) => ErrorKind::Lower {
            name: agentfile.name.clone(),
            source,
        }
        .into(),
    })
}

/// The context's `.agentignore` rules (none when it has no such file).
fn read_ignore(inputs: &FsInputs) -> Result<Ignore, ErrorKind> {
    let ignore_path = inputs.root().join(".agentignore");
    let text = inputs
        .read_agentignore()
        .map_err(|source| ErrorKind::Ignore {
            path: ignore_path.clone(),
            source,
        })?;
    match text {
        Some(text) => Ignore::parse(&text).map_err(|e| ErrorKind::Ignore {
            path: ignore_path,
            source: e.into(),
        }),
        None => Ok(Ignore::default()),
    }
}

/// Writes the plan's blobs and manifest into the store, through the hash cache when there is
/// one. An unusable input found while writing becomes a diagnostic at its ADD (AF302/AF303).
fn write_image(
    opts: &BuildOptions,
    store: &Store,
    plan: &plan::Plan,
    ignore: &Ignore,
    progress: &mut dyn Progress,
    name: &str,
) -> Result<Descriptor, Failed> {
    let mut cache = opts.hash_cache.as_ref().map(HashCache::load);
    let written = write_plan(
        store,
        plan,
        WriteOptions {
            ignore,
            cache: cache.as_mut(),
            progress: &mut *progress,
        },
    );
    let descriptor = match written {
        Ok(d) => d,
        Err(
            e @ WriteError::Input {
                span: Some(span), ..
            },
        ) => {
            let d = if e.is_escape() {
                Diagnostic::new(Code::BuildSourceEscapesContext, span, e.to_string())
            } else {
                Diagnostic::new(Code::BuildSourceUnreadable, span, e.to_string())
            };
            let d = d.with_help(
                "directory ADDs may hold only regular files, directories and symlinks that stay inside them",
            );
            return Err(Failed::with(ErrorKind::Inputs(name.to_owned()), vec![d]));
        }
        Err(source) => {
            return Err(ErrorKind::Write {
                store: store.root().to_owned(),
                source,
            }
            .into())
        }
    };
    if let Some(c) = &cache {
        // The cache only speeds builds up; failing to save it is not a build failure.
        let _ = c.save();
    }
    Ok(descriptor)
}

/// Writes `Agentfile.lock` beside the Agentfile, when something was resolved: the lock of one
/// platform ([`resolve::Lockfile::write_keeping_others`]) or of several
/// ([`resolve::Lockfile::multi_bytes`]). `--offline` reads the lock and never writes it (an
/// offline build learns nothing new); stdin has no lock.
fn write_lock(
    opts: &BuildOptions,
    locks: Option<&[resolve::Lockfile]>,
    agentfile: &AgentfileText,
    descriptor: &Descriptor,
) -> Result<Option<LockWrite>, ErrorKind> {
    let (Some(locks), Some(p)) = (locks, &agentfile.path) else {
        return Ok(None);
    };
    if opts.offline {
        return Ok(None);
    }
    let path = resolve::lock_path_for(p);
    let written = match locks {
        [one] => one.write_keeping_others(&path),
        several => resolve::Lockfile::write_multi_if_changed(several, &path),
    };
    let changed = written.map_err(|source| ErrorKind::Lock {
        digest: descriptor.digest.clone(),
        source,
    })?;
    Ok(Some(LockWrite {
        path,
        changed,
        images: locks.iter().map(|l| l.images.len()).sum(),
    }))
}

/// The tags to give: `wanted` as stored (each must follow the reference grammar, see
/// [`check_tags`]), or `<NAME>:latest`.
fn tags_for(wanted: &[String], name: Option<&str>) -> Result<Vec<String>, ErrorKind> {
    if wanted.is_empty() {
        let default = format!(
            "{}:latest",
            name.filter(|n| !n.is_empty()).unwrap_or("agent")
        );
        return tag_name(&default)
            .map(|t| vec![t])
            .map_err(|source| ErrorKind::Tag {
                tag: default,
                source,
            });
    }
    check_tags(wanted)
}

/// The stored names of the tags a user asked for (`-t`), or the first one that is not a valid
/// reference (with the rule it breaks and a suggestion). [`build`] calls it before it reads or
/// writes anything, so a bad tag costs nothing; a CLI may call it before opening the store.
pub fn check_tags(wanted: &[String]) -> Result<Vec<String>, ErrorKind> {
    wanted
        .iter()
        .map(|t| {
            new_tag_name(t).map_err(|source| ErrorKind::Tag {
                tag: t.clone(),
                source,
            })
        })
        .collect()
}

/// The Agentfile's directory relative to the (canonical) context root, `/`-separated, with
/// leading `..` when it lies outside; `""` when it is the root or cannot be found.
fn agentfile_dir(root: &Path, agentfile: &Path) -> String {
    let dir = agentfile
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return String::new();
    };
    let names = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    };
    let (from, to) = (names(root), names(&dir));
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts = vec!["..".to_owned(); from.len() - common];
    parts.extend(to[common..].iter().cloned());
    parts.join("/")
}

/// Pushes `descriptor` under every tag.
fn push_tags(
    opts: &BuildOptions,
    store: &Store,
    descriptor: &Descriptor,
    tags: &[String],
    progress: &mut dyn Progress,
) -> Result<Vec<TransferReport>, ErrorKind> {
    let client = RegistryClient::new(ClientOptions {
        insecure: opts.insecure,
        docker_config: opts.docker_config.clone(),
        ..ClientOptions::default()
    })
    .map_err(|source| ErrorKind::Push {
        digest: descriptor.digest.clone(),
        reference: tags.join(", "),
        source,
    })?;
    let mut sources = Sources::load(store.root());
    let mut reports = Vec::new();
    for tag in tags {
        let mut dest = Reference::parse(tag).map_err(|source| ErrorKind::PushReference {
            digest: descriptor.digest.clone(),
            reference: tag.clone(),
            source,
        })?;
        if dest.tag.is_none() && dest.digest.is_none() {
            dest.tag = Some("latest".into());
        }
        progress.push_started(tag);
        let result =
            transfer::push_image(&client, store, descriptor, &dest, &mut sources, &mut |e| {
                progress.transfer(&e);
            });
        progress.push_finished(tag);
        let _ = sources.save();
        reports.push(result.map_err(|source| ErrorKind::Push {
            digest: descriptor.digest.clone(),
            reference: dest.familiar(),
            source,
        })?);
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_given_tags() {
        assert_eq!(tags_for(&[], Some("meteo")).unwrap(), ["meteo:latest"]);
        assert_eq!(tags_for(&[], None).unwrap(), ["agent:latest"]);
        assert_eq!(
            tags_for(&["a".into(), "r.io/x:1".into()], Some("n")).unwrap(),
            ["a:latest", "r.io/x:1"]
        );
        assert!(matches!(
            tags_for(&["a b".into()], None),
            Err(ErrorKind::Tag { .. })
        ));
    }

    #[test]
    fn agentfile_dir_relative_to_the_context() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join("ctx/agents/a")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        let ctx = root.join("ctx");
        assert_eq!(agentfile_dir(&ctx, &ctx.join("Agentfile")), "");
        assert_eq!(
            agentfile_dir(&ctx, &ctx.join("agents/a/Agentfile")),
            "agents/a"
        );
        assert_eq!(
            agentfile_dir(&ctx, &root.join("elsewhere/Agentfile")),
            "../elsewhere"
        );
    }

    #[test]
    fn locate_context_and_file() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = tmp.path().join("ctx");
        std::fs::create_dir_all(&ctx).unwrap();
        std::fs::write(ctx.join("Agentfile"), "FROM scratch\n").unwrap();
        assert_eq!(locate(&ctx, None), (ctx.clone(), ctx.join("Agentfile")));
        assert_eq!(
            locate(&ctx.join("Agentfile"), None),
            (ctx.clone(), ctx.join("Agentfile"))
        );
        assert_eq!(
            locate(&ctx, Some(Path::new("Agentfile"))),
            (ctx.clone(), ctx.join("Agentfile"))
        );
        // An -f that is not inside the context.
        let outside = tmp.path().join("Other");
        std::fs::write(&outside, "FROM scratch\n").unwrap();
        assert_eq!(locate(&ctx, Some(&outside)), (ctx.clone(), outside.clone()));
    }
}
