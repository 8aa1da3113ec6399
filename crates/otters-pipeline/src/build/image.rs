//! From the checked model to the image in the store: resolution, `--label`s, lowering to a plan,
//! `.agentignore`, and writing the plan's blobs and manifest.

use super::hash_cache::HashCache;
use super::ignore::Ignore;
use super::inputs::FsInputs;
use super::write::{write_plan, WriteError, WriteOptions};
use super::{AgentfileText, BuildOptions, ErrorKind, Failed, Progress};
use crate::lower::{self, plan, Pins};
use crate::resolve;
use otters_agentfile::diagnostic::{Code, Diagnostic};
use otters_agentfile::ir::Agentfile;
use otters_oci::spec::descriptor::Descriptor;
use otters_oci::{Platform, Store};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// Resolution: the FROM parent, RUNTIME and BIN pins; `None` when there is nothing to resolve.
pub(super) fn resolve_images(
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
pub(super) fn with_resolve_options<T>(
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
pub(super) fn with_labels<'m>(
    model: &'m Agentfile,
    labels: &BTreeMap<String, String>,
) -> Cow<'m, Agentfile> {
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
pub(super) fn lower_plan(
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
pub(super) fn read_ignore(inputs: &FsInputs) -> Result<Ignore, ErrorKind> {
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
pub(super) fn write_image(
    opts: &BuildOptions,
    store: &Store,
    plan: &plan::Plan,
    ignore: &Ignore,
    progress: Progress<'_>,
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
#[cfg(test)]
mod tests {
    use super::*;

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
}
