//! Resolving one RUNTIME or BIN reference against its registry: digest for the target platform,
//! plus the bin annotations (both prefixes) and the image's usage document.
//!
//! Takes: a client, a parsed reference and the role. Returns: a lock [`Entry`] or a diagnostic on
//! the reference's span. Must never: accept a BIN image without a bin name annotation.

// Rationale: `Diagnostic` is this stage's error value; these functions run once per reference,
// so the size of the `Err` variant costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

use super::diags;
use super::lockfile::{BinInfo, Entry, Role};
use crate::diagnostic::{Diagnostic, Span};
use crate::oci::descriptor::Descriptor;
use crate::oci::registry::{RegistryClient, RegistryError, TargetPlatform};
use crate::reference::Reference;
use std::collections::BTreeMap;

/// Largest usage document read into the lock.
const MAX_USAGE: u64 = 256 << 10;

#[derive(serde::Deserialize, Default)]
struct Doc {
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

/// The first annotation present among `keys`.
fn first(ann: &BTreeMap<String, String>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| ann.get(*k).filter(|v| !v.is_empty()).cloned())
}

/// Maps a registry failure to AF401/AF402 on `span`.
pub fn registry_diagnostic(
    span: Span,
    written: &str,
    r: &Reference,
    e: &RegistryError,
) -> Diagnostic {
    match e {
        RegistryError::Denied { .. } | RegistryError::Forbidden { .. } => {
            diags::registry_denied(span, written, &e.to_string(), &r.registry)
        }
        RegistryError::NotFound { .. } => {
            diags::image_not_found(span, written, &format!("{} does not exist", r.familiar()))
        }
        _ => diags::image_not_found(span, written, &e.to_string()),
    }
}

/// Resolves `written` (already parsed as `r`) for `platform`.
pub fn resolve_image(
    client: &RegistryClient,
    written: &str,
    r: &Reference,
    role: Role,
    platform: &TargetPlatform,
    span: Span,
) -> Result<Entry, Diagnostic> {
    let resolved = client
        .resolve(r, platform)
        .map_err(|e| registry_diagnostic(span, written, r, &e))?;
    let top: Doc = serde_json::from_slice(&resolved.top.bytes).unwrap_or_default();
    let manifest: Doc = serde_json::from_slice(&resolved.manifest.bytes).unwrap_or_default();
    // The bin builder mirrors annotations onto the index; the manifest's own win.
    let mut ann = top.annotations.clone();
    ann.extend(manifest.annotations.clone());
    let from_index = resolved.platform.is_some();
    let mut entry = Entry {
        role,
        reference: written.to_owned(),
        digest: resolved.manifest.digest.clone(),
        index: from_index.then(|| resolved.top.digest.clone()),
        platform: resolved.platform.as_ref().map(ToString::to_string),
        bin: None,
        description: None,
        usage: None,
    };
    let name = first(&ann, &["io.openotters.bin.name", "vnd.openotters.bin.name"]);
    if role == Role::Bin && name.is_none() {
        return Err(diags::missing_bin_annotation(span, written));
    }
    if let Some(name) = name {
        let usage_path = first(
            &ann,
            &["io.openotters.bin.usage", "vnd.openotters.bin.usage"],
        );
        entry.bin = Some(BinInfo {
            name,
            path: first(&ann, &["io.openotters.bin.path", "vnd.openotters.bin.path"]),
            usage_path: usage_path.clone(),
        });
        entry.description = first(
            &ann,
            &[
                "org.opencontainers.image.description",
                "io.openotters.bin.description",
                "vnd.openotters.bin.description",
            ],
        );
        if let Some(up) = usage_path {
            entry.usage = usage_text(client, r, &manifest.layers, &up);
        }
    }
    Ok(entry)
}

/// The usage document's text: the non-tar layer titled like the usage annotation. A missing or
/// unreadable document is skipped silently, as openotters does.
fn usage_text(
    client: &RegistryClient,
    r: &Reference,
    layers: &[Descriptor],
    usage_path: &str,
) -> Option<String> {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_owned();
    let layer = layers.iter().find(|l| {
        !l.media_type.contains("tar")
            && l.size <= MAX_USAGE
            && l.title()
                .is_some_and(|t| t == usage_path || base(t) == base(usage_path))
    })?;
    let bytes = client.fetch_blob(r, &layer.digest, MAX_USAGE).ok()?;
    String::from_utf8(bytes).ok()
}
