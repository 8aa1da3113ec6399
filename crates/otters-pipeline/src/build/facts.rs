//! The build's inputs as `otters-supply` describes them ([`BuildInputs`]): what the SBOM and the
//! provenance of `otters build --sbom/--provenance` are written from.
//!
//! Takes: the resolved model, its pins and parent, the lowered plan, the build context and the
//! built manifest's digest. Returns: [`BuildInputs`], with paths relative to the build context
//! (so two builds of the same inputs in different directories give the same documents). Must
//! never: read the wall clock (the time is the image's own `created`), or follow a symlink out of
//! a directory ADD (only regular files are listed, as the layer holds them).

use crate::lower::pins::Pins;
use crate::lower::plan::{Plan, Source};
use crate::resolve::lockfile::Entry;
use otters_agentfile::ir::Agentfile;
use otters_oci::reference::Reference;
use otters_oci::spec::descriptor::{ANN_CREATED, ANN_TITLE, CONTEXT_LAYER};
use otters_oci::spec::digest::{Digest, HashingWriter};
use otters_oci::Platform;
use otters_supply::inputs::{Agent, BinInput, BuildInputs, ContextInput, FileInput, ImageInput};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Everything [`collect`] reads.
pub struct Facts<'a> {
    pub model: &'a Agentfile,
    pub pins: &'a Pins,
    pub parent: Option<&'a Entry>,
    pub plan: &'a Plan,
    /// The build context's root (canonical).
    pub root: &'a Path,
    /// The Agentfile's path (as given) and bytes; `None` path for stdin.
    pub agentfile: (Option<&'a Path>, &'a [u8]),
    pub tags: &'a [String],
    pub build_args: &'a BTreeMap<String, String>,
    /// The `build_args` read from the environment, and whether their values may be recorded.
    pub env_build_args: (&'a BTreeSet<String>, bool),
    pub platform: &'a Platform,
    pub manifest: &'a Digest,
}

/// The [`BuildInputs`] of one build.
pub fn collect(f: &Facts<'_>) -> std::io::Result<BuildInputs> {
    let a = &f.model.agent;
    let (repository, tag) = match f.tags.first() {
        Some(t) => {
            let (r, t) = otters_oci::store::query::repository_and_tag(t);
            (Some(r), Some(t).filter(|t| t != "<none>"))
        }
        None => (None, None),
    };
    let agent = Agent {
        name: a.name_str().unwrap_or("agent").to_owned(),
        repository,
        tag,
        manifest_digest: f.manifest.clone(),
    };
    let agentfile = FileInput {
        path: f
            .agentfile
            .0
            .map_or_else(|| "<stdin>".to_owned(), |p| relative(f.root, p)),
        digest: Digest::of(f.agentfile.1),
    };
    let runtime = f
        .pins
        .runtime
        .as_ref()
        .map(|p| image(&p.reference, &p.digest));
    let bins = a
        .bins
        .iter()
        .filter_map(|b| {
            let pin = f.pins.bins.get(&b.name)?;
            Some(BinInput {
                name: b.name.clone(),
                image: image(&pin.reference, &pin.digest),
            })
        })
        .collect();
    let parent = f.parent.map(|e| image(&e.reference, &e.digest));
    let mut adds = Vec::new();
    let mut contexts = Vec::new();
    for layer in &f.plan.layers {
        let title = layer
            .annotations
            .get(ANN_TITLE)
            .cloned()
            .unwrap_or_default();
        if layer.media_type.as_str() == CONTEXT_LAYER {
            let (source, digest) = match &layer.source {
                Source::Bytes(b) => (None, Digest::of(b)),
                Source::File(p) => (Some(relative(f.root, p)), hash_file(p)?),
                Source::Dir { .. } | Source::Stored { .. } => continue,
            };
            contexts.push(ContextInput {
                name: title.strip_suffix(".md").unwrap_or(&title).to_owned(),
                source,
                digest,
            });
            continue;
        }
        match &layer.source {
            Source::File(p) => adds.push(FileInput {
                path: relative(f.root, p),
                digest: hash_file(p)?,
            }),
            Source::Dir { path, rel } => list_dir(path, rel, &mut adds)?,
            // The Agentfile and agent.yaml layers, and the parent's ADDs (the parent is listed).
            Source::Bytes(_) | Source::Stored { .. } => {}
        }
    }
    let recorded = recorded_build_args(f.build_args, |k| a.args.contains_key(k), f.env_build_args);
    Ok(BuildInputs {
        agent,
        agentfile,
        runtime,
        bins,
        parent,
        adds,
        contexts,
        model: a.model.as_ref().map(|m| m.value.clone()),
        build_args: recorded.0,
        env_build_args: recorded.1,
        platform: f.platform.to_string(),
        created: f.plan.annotations.get(ANN_CREATED).cloned(),
        otters_version: env!("CARGO_PKG_VERSION").to_owned(),
        egress: egress_inputs(a),
    })
}

/// The declared EGRESS as the SBOM lists it.
fn egress_inputs(
    a: &otters_agentfile::ir::Agent,
) -> Option<Vec<otters_supply::inputs::EgressInput>> {
    use otters_agentfile::ir::egress::Policy;
    match a.egress_policy() {
        Policy::Undeclared => None,
        Policy::Nothing => Some(Vec::new()),
        Policy::Allow(list) => Some(
            list.into_iter()
                .map(|e| otters_supply::inputs::EgressInput {
                    host: e.dest.host.to_string(),
                    port: e.dest.port,
                    description: e.description,
                })
                .collect(),
        ),
    }
}

/// What the provenance records of `--build-arg`: only the arguments an ARG declares (another is
/// not a parameter of this build: a bare `--build-arg GH_TOKEN` that no ARG uses is a secret
/// passed by habit), each with its value, except those read from the environment, which are
/// recorded by name only unless the user asked for their values. Returns (name → value, names).
fn recorded_build_args(
    build_args: &BTreeMap<String, String>,
    declared: impl Fn(&str) -> bool,
    (from_env, record_env): (&BTreeSet<String>, bool),
) -> (Vec<(String, String)>, Vec<String>) {
    let mut values = Vec::new();
    let mut names = Vec::new();
    for (k, v) in build_args.iter().filter(|(k, _)| declared(k)) {
        if from_env.contains(k) && !record_env {
            names.push(k.clone());
        } else {
            values.push((k.clone(), v.clone()));
        }
    }
    (values, names)
}

/// A pinned reference as an [`ImageInput`].
fn image(reference: &str, digest: &Digest) -> ImageInput {
    match Reference::parse(reference) {
        Ok(r) => ImageInput {
            repository: r.name(),
            tag: r.tag.clone(),
            digest: digest.clone(),
        },
        Err(_) => ImageInput {
            repository: reference.to_owned(),
            tag: None,
            digest: digest.clone(),
        },
    }
}

/// `path` relative to the context root, `/`-separated (its file name when outside).
fn relative(root: &Path, path: &Path) -> String {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let rel = canonical
        .strip_prefix(root)
        .or_else(|_| path.strip_prefix(root))
        .map_or_else(
            |_| {
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            },
            |r| r.to_string_lossy().into_owned(),
        );
    rel.replace('\\', "/")
}

fn hash_file(path: &Path) -> std::io::Result<Digest> {
    let mut f = std::fs::File::open(path)?;
    let mut w = HashingWriter::new(std::io::sink());
    std::io::copy(&mut f, &mut w)?;
    Ok(w.finish().0)
}

/// Every regular file under `dir`, as `rel/…`, in name order (symlinks and others are skipped).
fn list_dir(dir: &Path, rel: &str, out: &mut Vec<FileInput>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let kind = e.file_type()?;
        let name = e.file_name().to_string_lossy().into_owned();
        let sub = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if kind.is_dir() {
            list_dir(&e.path(), &sub, out)?;
        } else if kind.is_file() {
            out.push(FileInput {
                path: sub,
                digest: hash_file(&e.path())?,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_records_declared_build_args_and_only_the_names_of_environment_ones() {
        let args: BTreeMap<String, String> = [
            ("REGION", "us"),
            ("GH_TOKEN", "ghp_secret"),
            ("TIER", "gold"),
            ("UNUSED", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let from_env: BTreeSet<String> = ["GH_TOKEN".to_owned(), "TIER".to_owned()].into();
        let declared = |k: &str| k == "REGION" || k == "TIER";
        let (values, names) = recorded_build_args(&args, declared, (&from_env, false));
        assert_eq!(values, [("REGION".to_owned(), "us".to_owned())]);
        assert_eq!(names, ["TIER"]);
        // Asked for: the environment's values of declared arguments; an undeclared one never.
        let (values, names) = recorded_build_args(&args, declared, (&from_env, true));
        assert_eq!(
            values,
            [
                ("REGION".to_owned(), "us".to_owned()),
                ("TIER".to_owned(), "gold".to_owned())
            ]
        );
        assert!(names.is_empty());
    }
}
