//! Installing a runtime or BIN binary from its image by the bin contract (spec §f.3).
//!
//! Takes: the store, a platform-resolved [`BinImage`], the name the Agentfile gives the binary and
//! an output path. Returns: nothing, or why no binary could be installed. Must never: write
//! anything but the one output file (and the usage doc), or read past the size limits.

use super::extract::{self, Budget, ExtractError, Limits};
use super::source::BinImage;
use super::tree::Tree;
use otters_agentfile::ir::names::basename;
use otters_oci::store::verify::with_verified;
use otters_oci::{Digest, Store, StoreError};
use std::io::Read;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum BinError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Extract(#[from] ExtractError),
    #[error(
        "{reference}@{digest}: no binary found in layers (looked for {target:?}); the image needs a `{prefix}name` annotation and the binary in a tar layer or a layer titled with its name",
        prefix = otters_oci::spec::annotations::BIN_PREFIX
    )]
    NotFound {
        reference: String,
        digest: Digest,
        target: String,
    },
}

/// Read a bin annotation under either prefix (`io.openotters.bin.*`, then `vnd.openotters.bin.*`).
pub fn annotation<'a>(img: &'a BinImage, key: &str) -> Option<&'a str> {
    use otters_oci::spec::annotations::{BIN_PREFIX, LEGACY_BIN_PREFIX};
    img.annotations
        .get(&format!("{BIN_PREFIX}{key}"))
        .or_else(|| img.annotations.get(&format!("{LEGACY_BIN_PREFIX}{key}")))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// Locate the binary (pass 1: tar layers; pass 2: titled raw layers) and write it to `out` in
/// `tree`, 0755. Every layer read is checked against its digest before the binary counts.
pub fn install(
    store: &Store,
    img: &BinImage,
    agentfile_name: &str,
    tree: &Tree,
    out: &Path,
    limits: &Limits,
    budget: &mut Budget,
) -> Result<(), BinError> {
    let name = annotation(img, "name").unwrap_or(agentfile_name);
    let dir = annotation(img, "path").unwrap_or("/");
    let target = format!("{}/{}", dir.trim_end_matches('/'), name);
    let layer_id = |d: &Digest| format!("{}@{d}", img.reference);
    for l in img
        .layers
        .iter()
        .filter(|l| extract::is_tar(l.media_type.as_str()))
    {
        let found = with_verified(store, &l.digest, |blob| {
            let layer = layer_id(&l.digest);
            let r = extract::decoder(&layer, l.media_type.as_str(), Box::new(blob))?;
            extract::find_binary(&layer, r, &target, tree, out, limits, budget)
                .map_err(BinError::from)
        })?;
        if found {
            return Ok(());
        }
    }
    let want = extract::normalise_name(&target);
    for l in img
        .layers
        .iter()
        .filter(|l| !extract::is_tar(l.media_type.as_str()))
    {
        let Some(title) = l.title() else { continue };
        if title == name || extract::normalise_name(title) == want || basename(title) == name {
            with_verified(store, &l.digest, |blob| {
                budget.charge(&layer_id(&l.digest), 1, blob.size())?;
                tree.write_file(out, blob, 0o755, limits.max_file)
                    .map_err(|source| ExtractError::Tree {
                        layer: layer_id(&l.digest),
                        source,
                    })?;
                Ok::<_, BinError>(())
            })?;
            return Ok(());
        }
    }
    Err(BinError::NotFound {
        reference: img.reference.clone(),
        digest: img.digest.clone(),
        target,
    })
}

/// Where [`install`] finds the binary in the image: its path in the tar layers (no leading `/`),
/// or `None` when it is only in a raw titled layer (nothing a volume can mount) or nowhere.
pub fn locate(
    store: &Store,
    img: &BinImage,
    agentfile_name: &str,
    limits: &Limits,
) -> Result<Option<String>, BinError> {
    let name = annotation(img, "name").unwrap_or(agentfile_name);
    let dir = annotation(img, "path").unwrap_or("/");
    let target = format!("{}/{}", dir.trim_end_matches('/'), name);
    let mut budget = Budget::new(limits);
    for l in img
        .layers
        .iter()
        .filter(|l| extract::is_tar(l.media_type.as_str()))
    {
        let found = with_verified(store, &l.digest, |blob| {
            let layer = format!("{}@{}", img.reference, l.digest);
            let r = extract::decoder(&layer, l.media_type.as_str(), Box::new(blob))?;
            extract::locate_binary(&layer, r, &target, limits, &mut budget).map_err(BinError::from)
        })?;
        if let Some(p) = found {
            return Ok(Some(p.to_string_lossy().into_owned()));
        }
    }
    Ok(None)
}

/// The image's usage doc (`io.openotters.bin.usage`, default `/USAGE.md`), when a layer carries
/// it; at most 1 MiB. The layer is checked against its digest.
pub fn usage(store: &Store, img: &BinImage) -> Result<Option<Vec<u8>>, BinError> {
    let wanted = annotation(img, "usage").unwrap_or("/USAGE.md");
    let Some(l) = img.layers.iter().find(|l| {
        l.title()
            .is_some_and(|t| t == wanted || basename(t) == basename(wanted))
    }) else {
        return Ok(None);
    };
    if !store.has_blob(&l.digest) {
        // As before: an image fetched without its usage doc falls back to the Agentfile's.
        return Ok(None);
    }
    with_verified(store, &l.digest, |blob| {
        let mut bytes = Vec::new();
        blob.take(1 << 20)
            .read_to_end(&mut bytes)
            .map_err(|e| ExtractError::Write {
                path: format!("{}@{} (usage doc)", img.reference, l.digest),
                source: e,
            })?;
        Ok(Some(bytes))
    })
}
