//! Writes a lowered [`Plan`] into a [`Store`]: every blob streamed and hashed once while it is
//! stored, then the manifest.
//!
//! Takes: a plan, a store, `.agentignore` rules, an optional `HashCache` and a [`Progress`]
//! sink (large inputs are reported as `Event::Input*`). Returns: the manifest's descriptor. Must never: read a whole input file into memory, hash
//! an input twice, or write anything before every directory layer has been walked and checked
//! (so an unsafe or unreadable input leaves the store untouched). Layers whose source is a blob
//! already in the store (a FROM parent's ADDs) are checked to be there and reused by digest.

use crate::build::hash_cache::{CachedBlob, HashCache, Stamp};
use crate::build::ignore::Ignore;
use crate::build::nofollow;
use crate::build::pgzip::GZIP_LEVEL;
use crate::build::tarball::{self, Checked, Entry, TarError};
use crate::lower::{Layer, Plan, Source};
use otters_agentfile::diagnostic::Span;
use otters_core::json::{to_compact, Value};
use otters_oci::progress::{Event, Progress};
use otters_oci::spec::descriptor::{
    string_map, Descriptor, AGENT_ARTIFACT, AGENT_CONFIG, MANIFEST_V1,
};
use otters_oci::store::layout::{Store, StoreError};
use otters_oci::Digest;
use sha2::Digest as _;
use std::io;
use std::path::Path;

/// Inputs at least this large get a progress bar.
pub const PROGRESS_THRESHOLD: u64 = 32 << 20;

/// What went wrong with one layer's input.
#[derive(Debug, thiserror::Error)]
pub enum InputFailure {
    #[error(transparent)]
    Tar(#[from] TarError),
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path} changed while being read; build again when the context is stable")]
    Changed { path: String },
}

/// Why writing failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// An input failed; `span` points at its ADD or `file://` in the Agentfile.
    #[error("layer `{title}`: {failure}")]
    Input {
        title: String,
        span: Option<Span>,
        failure: InputFailure,
    },
    /// A layer reused by digest (a FROM parent's ADD) is not in the store.
    #[error(
        "layer `{title}` reuses blob {digest}, which is not in the store (or has the wrong size)"
    )]
    MissingBlob { title: String, digest: Digest },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Json(#[from] otters_core::json::UnsupportedFloat),
    /// A layer title that would not be a safe path at run time (a FROM parent's ADD layer).
    #[error("invalid artifact: layers[{index}] title {} is not a safe file name; the parent image's layer cannot be reused", otters_agentfile::ir::names::shown(.title))]
    BadTitle { index: usize, title: String },
}

impl WriteError {
    /// True when the input leads outside the build context (AF302), false when unreadable (AF303).
    pub fn is_escape(&self) -> bool {
        matches!(self, WriteError::Input { failure: InputFailure::Tar(t), .. } if t.is_escape())
    }
}

/// Options of one write.
pub struct WriteOptions<'a> {
    pub ignore: &'a Ignore,
    pub cache: Option<&'a mut HashCache>,
    pub progress: Progress<'a>,
}

/// A layer's input after the checking pass: what the storing pass will write, carrying the
/// source it came from, so the storing pass needs nothing else from the layer's [`Source`].
enum Prepared<'p> {
    Bytes(&'p [u8]),
    /// A blob already in the store, checked to be there with its size.
    Stored(Digest, u64),
    /// A regular file, with the stamp it was checked with.
    File(&'p Path, Stamp),
    /// A directory, walked and checked.
    Dir(Vec<Entry>),
}

/// Stores every blob of `plan` and its manifest; returns the manifest descriptor (not yet tagged).
pub fn write_plan(
    store: &Store,
    plan: &Plan,
    opts: WriteOptions<'_>,
) -> Result<Descriptor, WriteError> {
    let WriteOptions {
        ignore,
        mut cache,
        progress,
    } = opts;
    check_titles(plan)?;
    // Every input is checked before anything is written (see the module docs): a directory the
    // hash cache does not answer has each of its files opened and checked here.
    let prepared = plan
        .layers
        .iter()
        .map(|layer| prepare_layer(store, layer, ignore))
        .collect::<Result<Vec<_>, _>>()?;
    for (layer, prep) in plan.layers.iter().zip(&prepared) {
        if let Prepared::Dir(entries) = prep {
            let key = tree_key(entries, plan.mtime);
            if cached(cache.as_deref(), store, &key).is_none() {
                tarball::check_readable(entries)
                    .map_err(|e| input_error(layer, &title_of(layer), e.into()))?;
            }
        }
    }
    let config = store_config(store, plan)?;
    let mut layers = Vec::with_capacity(plan.layers.len());
    for (layer, prep) in plan.layers.iter().zip(prepared) {
        let (digest, size) = store_layer(store, plan, layer, prep, cache.as_deref_mut(), progress)?;
        let mut d = Descriptor::new(layer.media_type.clone(), digest, size);
        d.annotations.clone_from(&layer.annotations);
        layers.push(d);
    }
    store_manifest(store, &config, &layers, plan)
}

/// The checking pass over one layer: a reused blob must be in the store with its size, a file
/// must open without following links, a directory must walk cleanly. Writes nothing.
fn prepare_layer<'p>(
    store: &Store,
    layer: &'p Layer,
    ignore: &Ignore,
) -> Result<Prepared<'p>, WriteError> {
    let title = title_of(layer);
    let fail = |failure| input_error(layer, &title, failure);
    Ok(match &layer.source {
        Source::Bytes(bytes) => Prepared::Bytes(bytes),
        Source::Stored { digest, size } => {
            let missing = || WriteError::MissingBlob {
                title: title.clone(),
                digest: digest.clone(),
            };
            match store.stored_size(digest) {
                Some(n) if n == *size => Prepared::Stored(digest.clone(), *size),
                _ => return Err(missing()),
            }
        }
        Source::File(path) => {
            let (_, meta) = nofollow::open_file(path).map_err(|source| {
                fail(InputFailure::Read {
                    path: path.display().to_string(),
                    source,
                })
            })?;
            Prepared::File(path, Stamp::of(&meta))
        }
        Source::Dir { path, rel } => {
            Prepared::Dir(tarball::walk(path, rel, &title, ignore).map_err(|e| fail(e.into()))?)
        }
    })
}

/// Stores the config blob; returns its descriptor.
fn store_config(store: &Store, plan: &Plan) -> Result<Descriptor, WriteError> {
    let (config_digest, config_size) = store.put_blob_bytes(&plan.config)?;
    Ok(Descriptor::new(AGENT_CONFIG, config_digest, config_size))
}

/// The storing pass over one checked layer: its blob from the hash cache when the cache knows it
/// and the store still holds it, else streamed into the store (and remembered when settled).
fn store_layer(
    store: &Store,
    plan: &Plan,
    layer: &Layer,
    prep: Prepared<'_>,
    cache: Option<&mut HashCache>,
    progress: Progress<'_>,
) -> Result<(Digest, u64), WriteError> {
    let title = title_of(layer);
    // `store_file` and `store_dir` name no layer; name it here.
    let named = |e| match e {
        WriteError::Input { failure, .. } => input_error(layer, &title, failure),
        other => other,
    };
    match prep {
        Prepared::Bytes(bytes) => Ok(store.put_blob_bytes(bytes)?),
        Prepared::Stored(digest, size) => Ok((digest, size)),
        Prepared::File(path, stamp) => {
            let key = HashCache::file_key(path, &stamp);
            if let Some(hit) = cached(cache.as_deref(), store, &key) {
                return Ok(hit);
            }
            let (digest, size) = store_file(store, path, &title, stamp, progress).map_err(named)?;
            if let Some(c) = cache {
                if c.settled(&stamp) {
                    remember(c, key, &digest, size);
                }
            }
            Ok((digest, size))
        }
        Prepared::Dir(entries) => {
            let key = tree_key(&entries, plan.mtime);
            if let Some(hit) = cached(cache.as_deref(), store, &key) {
                return Ok(hit);
            }
            let (digest, size) =
                store_dir(store, &entries, plan.mtime, &title, progress).map_err(named)?;
            if let Some(c) = cache {
                let mut stamps = entries.iter().filter_map(|e| e.stamp.as_ref());
                if stamps.all(|s| c.settled(s)) {
                    remember(c, key, &digest, size);
                }
            }
            Ok((digest, size))
        }
    }
}

/// Records a stored blob in the hash cache under `key`.
fn remember(cache: &mut HashCache, key: String, digest: &Digest, size: u64) {
    let blob = CachedBlob {
        digest: digest.clone(),
        size,
    };
    cache.insert(key, blob);
}

/// Writes the manifest over the stored config and layers; returns its descriptor.
fn store_manifest(
    store: &Store,
    config: &Descriptor,
    layers: &[Descriptor],
    plan: &Plan,
) -> Result<Descriptor, WriteError> {
    let manifest = manifest_json(config, layers, &plan.annotations);
    let bytes = to_compact(&manifest)?;
    Ok(store.put_manifest(&bytes, MANIFEST_V1)?)
}

/// Every titled layer must have a title `otters run` can use as a path: this catches what a
/// FROM parent's ADD layers carry over (the layers built here are titled from checked names).
fn check_titles(plan: &Plan) -> Result<(), WriteError> {
    use otters_agentfile::ir::names::{is_context_title, is_safe_rel};
    for (index, layer) in plan.layers.iter().enumerate() {
        let title = title_of(layer);
        let ok = match layer.media_type {
            _ if title.is_empty() => true,
            otters_oci::MediaType::Context => is_context_title(&title),
            _ => is_safe_rel(&title),
        };
        if !ok {
            return Err(WriteError::BadTitle { index, title });
        }
    }
    Ok(())
}

/// The layer's title annotation (empty when it has none).
fn title_of(layer: &Layer) -> String {
    layer
        .annotations
        .get(otters_oci::spec::descriptor::ANN_TITLE)
        .cloned()
        .unwrap_or_default()
}

/// An input failure, named by the layer it happened in.
fn input_error(layer: &Layer, title: &str, failure: InputFailure) -> WriteError {
    WriteError::Input {
        title: title.to_owned(),
        span: layer.span,
        failure,
    }
}

fn input_err(failure: InputFailure) -> WriteError {
    WriteError::Input {
        title: String::new(),
        span: None,
        failure,
    }
}

/// Streams one regular file into the store; returns its digest and size. The file is opened
/// without following links and must still have the `stamp` it was checked with, before and after
/// it is read; otherwise nothing is stored and the input "changed while being read".
fn store_file(
    store: &Store,
    path: &Path,
    title: &str,
    stamp: Stamp,
    progress: Progress<'_>,
) -> Result<(Digest, u64), WriteError> {
    let shown = path.display().to_string();
    let changed_err = || {
        input_err(InputFailure::Changed {
            path: shown.clone(),
        })
    };
    let (file, meta) = nofollow::open_file(path).map_err(|source| {
        input_err(InputFailure::Read {
            path: shown.clone(),
            source,
        })
    })?;
    let changed = std::cell::Cell::new(false);
    let Some(reader) = Checked::new(file, &meta, stamp, &changed) else {
        return Err(changed_err());
    };
    let big = stamp.size >= PROGRESS_THRESHOLD;
    if big {
        progress(Event::InputStarted {
            title,
            size: stamp.size,
        });
    }
    let result = store.put_blob_from_reader(reader, &mut |n| {
        if big {
            progress(Event::InputAdvanced { title, n });
        }
    });
    if big {
        progress(Event::InputDone { title });
    }
    if changed.get() {
        return Err(changed_err());
    }
    Ok(result?)
}

/// Writes one directory layer (tar+gzip) into the store.
fn store_dir(
    store: &Store,
    entries: &[Entry],
    mtime: u64,
    title: &str,
    progress: Progress<'_>,
) -> Result<(Digest, u64), WriteError> {
    let total: u64 = entries
        .iter()
        .map(|e| match e.kind {
            tarball::EntryKind::File { size, .. } => size,
            _ => 0,
        })
        .sum();
    let big = total >= PROGRESS_THRESHOLD;
    if big {
        progress(Event::InputStarted { title, size: total });
    }
    let w = store.blob_writer()?;
    let result = tarball::write_tar_gz(entries, mtime, w, &mut |n| {
        if big {
            progress(Event::InputAdvanced { title, n });
        }
    });
    if big {
        progress(Event::InputDone { title });
    }
    Ok(result.map_err(|e| input_err(e.into()))?.commit()?)
}

fn cached(cache: Option<&HashCache>, store: &Store, key: &str) -> Option<(Digest, u64)> {
    let hit = cache?.get(key)?;
    let on_disk = store.stored_size(&hit.digest)?;
    (on_disk == hit.size).then_some((hit.digest.clone(), hit.size))
}

/// A directory layer's cache key: every entry's name, kind and stamp, the mtime stamped into the
/// tar and the gzip format (level of one-block layers, block size, level of the blocks).
fn tree_key(entries: &[Entry], mtime: u64) -> String {
    use crate::build::pgzip::{BLOCK, BLOCK_LEVEL};
    use crate::build::tarball::EntryKind;
    let mut h = sha2::Sha256::new();
    // `tree2`: each entry as bytes (its name, a NUL, a kind tag, fixed-width numbers, a
    // length-prefixed link target), not as formatted text; the old keys are never matched again.
    h.update(format!("tree2:tar:{mtime}:{GZIP_LEVEL}:{BLOCK}:{BLOCK_LEVEL}\0").as_bytes());
    for e in entries {
        h.update(&e.name);
        match &e.kind {
            EntryKind::Dir => h.update([0, b'd']),
            EntryKind::File { size, exec } => {
                h.update([0, b'f', u8::from(*exec)]);
                h.update(size.to_le_bytes());
            }
            EntryKind::Symlink(target) => {
                h.update([0, b'l']);
                h.update((target.len() as u64).to_le_bytes());
                h.update(target);
            }
        }
        match &e.stamp {
            Some(stamp) => {
                h.update([1]);
                stamp.feed(&mut h);
            }
            None => h.update([0]),
        }
    }
    format!("tree:{}", hex::encode(h.finalize()))
}

/// The manifest document (spec §e.1): compact canonical JSON in Go's field order.
pub fn manifest_json(
    config: &Descriptor,
    layers: &[Descriptor],
    annotations: &std::collections::BTreeMap<String, String>,
) -> Value {
    let mut m = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", MANIFEST_V1)
        .with("artifactType", AGENT_ARTIFACT)
        .with("config", config.to_json())
        .with(
            "layers",
            Value::Array(layers.iter().map(Descriptor::to_json).collect()),
        );
    if !annotations.is_empty() {
        m.push("annotations", string_map(annotations));
    }
    m
}
