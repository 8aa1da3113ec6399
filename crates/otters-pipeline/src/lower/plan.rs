//! Model + pins → artifact plan: the config blob, the layers in DESIGN §3 order with their media
//! types and titles, and the manifest annotations.
//!
//! Takes: the model, the Agentfile's bytes, pins, an `Inputs` resolver and the build options.
//! Returns: a [`Plan`] whose file and directory sources are paths for the `oci` stage to stream
//! (and whose inherited ADDs are blobs already in the store, reused by digest), or every input
//! diagnostic at once. Must never: read file contents, or let anything but its inputs (no clock,
//! no environment) reach the plan.
//!
//! Paths: ADD sources are relative to the build context; `CONTEXT … file://` paths are relative to
//! the Agentfile's directory ([`Options::agentfile_dir`]) and must still lead into the context.

use super::agent_yaml::{self, Executor};
use super::epoch::rfc3339;
use super::inputs::{InputError, InputKind, Inputs, Use};
use super::pins::Pins;
use otters_agentfile::diagnostic::{Diagnostic, Span};
use otters_agentfile::ir::config_blob;
use otters_agentfile::ir::Agentfile;
use otters_oci::spec::descriptor::Descriptor;
use otters_oci::spec::descriptor::{
    AGENTFILE_LAYER, AGENT_YAML_LAYER, ANN_CREATED, ANN_TITLE, ANN_UNPACK, CONTEXT_LAYER,
    FILE_LAYER, TAR_GZIP_LAYER,
};
use otters_oci::{Digest, MediaType};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a layer's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Bytes(Vec<u8>),
    /// A regular file, stored as a raw blob.
    File(PathBuf),
    /// A directory, stored as a deterministic tar+gzip; `rel` is its context-relative path.
    Dir {
        path: PathBuf,
        rel: String,
    },
    /// A blob already in the target store (a FROM parent's ADD layer), reused by digest.
    Stored {
        digest: Digest,
        size: u64,
    },
}

/// One layer to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    pub media_type: MediaType,
    pub annotations: BTreeMap<String, String>,
    pub source: Source,
    /// The Agentfile span of the ADD / `file://` source, for errors found while streaming.
    pub span: Option<Span>,
}

/// Everything the `oci` stage needs to write the artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub config: Vec<u8>,
    pub layers: Vec<Layer>,
    pub annotations: BTreeMap<String, String>,
    /// Tar entry mtimes for directory layers (0 when `SOURCE_DATE_EPOCH` is unset).
    pub mtime: u64,
}

/// Build options that reach the artifact.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub source_date_epoch: Option<u64>,
    /// The Agentfile's directory relative to the build context, `/`-separated (`""` when the
    /// Agentfile sits at the context root or comes from stdin; may start with `..` when it lives
    /// outside the context). `CONTEXT … file://` paths are resolved from here.
    pub agentfile_dir: String,
    /// The FROM parent's ADD layers, one per leading entry of `model.agent.adds` (see
    /// `resolve::Resolution::inherited_adds`): reused as they are, never re-read.
    pub inherited_adds: Vec<Descriptor>,
}

/// Why lowering failed.
#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    #[error("build inputs are missing or unsafe")]
    Inputs(Vec<Diagnostic>),
    #[error(transparent)]
    Config(#[from] otters_core::json::UnsupportedFloat),
}

fn titled(media_type: &str, title: &str, source: Source) -> Layer {
    Layer {
        media_type: media_type.into(),
        annotations: BTreeMap::from([(ANN_TITLE.to_owned(), title.to_owned())]),
        source,
        span: None,
    }
}

/// The context-relative path of a `file://` CONTEXT source written in an Agentfile that lives in
/// `agentfile_dir`: joined and normalised lexically; a path that climbs above the context root is
/// refused (AF302). Absolute paths are passed on unchanged (the resolver refuses them).
pub fn context_file_path(agentfile_dir: &str, file: &str) -> Result<String, InputError> {
    let written = file.strip_prefix("file://").unwrap_or(file);
    if written.starts_with('/') {
        return Ok(written.to_owned());
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in agentfile_dir.split('/').chain(written.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(InputError::Escapes {
                        src: file.to_owned(),
                        why: "leads outside the build context; CONTEXT files are relative to the Agentfile's directory and must stay inside the context".into(),
                    });
                }
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(InputError::NotFound {
            src: file.to_owned(),
            context: ".".into(),
        });
    }
    Ok(parts.join("/"))
}

/// Lowers a checked model into a plan.
pub fn lower(
    model: &Agentfile,
    agentfile: &[u8],
    pins: &Pins,
    inputs: &dyn Inputs,
    opts: &Options,
) -> Result<Plan, LowerError> {
    let a = &model.agent;
    let mut diags = Vec::new();
    let mut layers = vec![titled(
        AGENTFILE_LAYER,
        "Agentfile",
        Source::Bytes(agentfile.to_vec()),
    )];
    for c in &a.contexts {
        let title = format!("{}.md", c.name);
        let source = match (&c.content, &c.file) {
            (Some(content), _) => Source::Bytes(content.clone().into_bytes()),
            (None, Some(file)) => {
                let span = c.file_span.or(c.span);
                let found = context_file_path(&opts.agentfile_dir, file)
                    .and_then(|p| inputs.resolve(&p))
                    .map_err(|e| e.named_as_written(file));
                match found {
                    Ok(r) if r.kind == InputKind::File => {
                        let mut layer = titled(CONTEXT_LAYER, &title, Source::File(r.path));
                        layer.span = span;
                        layers.push(layer);
                        continue;
                    }
                    Ok(_) => {
                        let e = super::inputs::InputError::Unreadable {
                            src: file.clone(),
                            why: "it is a directory; a CONTEXT file must be a single file".into(),
                        };
                        diags.push(e.to_diagnostic(span, Use::ContextFile));
                        continue;
                    }
                    Err(e) => {
                        diags.push(e.to_diagnostic(span, Use::ContextFile));
                        continue;
                    }
                }
            }
            (None, None) => Source::Bytes(Vec::new()),
        };
        layers.push(titled(CONTEXT_LAYER, &title, source));
    }
    for (i, add) in a.adds.iter().enumerate() {
        if let Some(d) = opts.inherited_adds.get(i) {
            layers.push(Layer {
                media_type: d.media_type.clone(),
                annotations: d.annotations.clone(),
                source: Source::Stored {
                    digest: d.digest.clone(),
                    size: d.size,
                },
                span: None,
            });
            continue;
        }
        match inputs.resolve(&add.src) {
            Ok(r) if r.kind == InputKind::File => {
                let mut layer = titled(FILE_LAYER, &add.name, Source::File(r.path));
                layer.span = add.src_span;
                layers.push(layer);
            }
            Ok(r) => {
                let mut layer = titled(
                    TAR_GZIP_LAYER,
                    &add.name,
                    Source::Dir {
                        path: r.path,
                        rel: r.rel,
                    },
                );
                layer
                    .annotations
                    .insert(ANN_UNPACK.to_owned(), "true".to_owned());
                layer.span = add.src_span;
                layers.push(layer);
            }
            Err(e) => diags.push(e.to_diagnostic(add.src_span, Use::Add)),
        }
    }
    if !diags.is_empty() {
        diags.sort_by_key(Diagnostic::start);
        return Err(LowerError::Inputs(diags));
    }
    let yaml = agent_yaml::render(
        model,
        pins,
        &agent_yaml::Options {
            executor: Executor::System,
            ..agent_yaml::Options::default()
        },
    );
    layers.push(titled(
        AGENT_YAML_LAYER,
        "agent.yaml",
        Source::Bytes(yaml.into_bytes()),
    ));

    let mut annotations: BTreeMap<String, String> = a
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect();
    if let Some(name) = a.name_str().filter(|n| !n.is_empty()) {
        annotations.insert(ANN_TITLE.to_owned(), name.to_owned());
    }
    if let Some(epoch) = opts.source_date_epoch {
        annotations
            .entry(ANN_CREATED.to_owned())
            .or_insert_with(|| rfc3339(epoch));
    }
    Ok(Plan {
        config: config_blob(model)?,
        layers,
        annotations,
        mtime: opts.source_date_epoch.unwrap_or(0),
    })
}
