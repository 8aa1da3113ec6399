//! The Agentfile of a build: read (confined to the context), parsed and checked.

use super::{AgentfileSource, BuildOptions, ErrorKind};
use crate::resolve;
use otters_agentfile::check;
use otters_agentfile::diagnostic::{Diagnostic, SourceFile};
use otters_agentfile::ir::Agentfile;
use otters_core::files::{self, ReadError};
use std::path::{Path, PathBuf};

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
pub(super) struct AgentfileText {
    pub(super) name: String,
    pub(super) bytes: Vec<u8>,
    pub(super) path: Option<PathBuf>,
}

/// The Agentfile's bytes, from standard input or read from disk (see [`read_agentfile`]).
pub(super) fn read_source(opts: &BuildOptions) -> Result<AgentfileText, ErrorKind> {
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
pub(super) fn analyze(
    opts: &BuildOptions,
    agentfile: &AgentfileText,
) -> Result<(SourceFile, check::Analysis), otters_policy::PolicyError> {
    // The policy is narrowed by the otters.toml nearest the Agentfile (else the context).
    let dir = agentfile
        .path
        .as_deref()
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(&opts.context);
    let policy = opts.policy.for_project(dir)?;
    let check_opts = check::Options {
        build_args: opts.build_args.clone(),
        // As in `otters lint`: a moving tag the lock pins is not reported (AF201). An unreadable
        // lock is reported by resolution (AF409).
        locked: agentfile
            .path
            .as_deref()
            .map(resolve::lockfile::pinned_beside)
            .unwrap_or_default(),
        // The portability lints (AF230–AF236) belong to `otters lint`, which reads their
        // targets from otters.toml; the build reads no otters.toml, so it leaves them out.
        portability: Some(Vec::new()),
        model_checks: (!policy.is_empty())
            .then(|| std::sync::Arc::new(policy) as std::sync::Arc<dyn check::ModelCheck>),
        ..check::Options::default()
    };
    Ok(check::analyze_bytes(
        &agentfile.name,
        &agentfile.bytes,
        &check_opts,
    ))
}

/// The `build_args` keys no ARG declares (a declared one is recorded among the ARGs, the
/// override winning).
pub(super) fn unused_build_args(opts: &BuildOptions, model: &Agentfile) -> Vec<String> {
    crate::lint::unused_build_args(&opts.build_args, |k| model.agent.args.contains_key(k))
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
