//! Resolving one RUNTIME or BIN reference against its registry: digest for the target platform,
//! plus the bin annotations (both prefixes) and the image's usage document.
//!
//! Takes: a [`Registry`], a parsed reference and the role. Returns: a lock [`Entry`] or a
//! diagnostic on the reference's span. Must never: accept a RUNTIME or BIN image without a bin
//! name annotation.

// Rationale: `Diagnostic` is this stage's error value; these functions run once per reference,
// so the size of the `Err` variant costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

use super::diags;
use super::lockfile::{BinInfo, Entry, Role};
use super::registry::Registry;
use otters_agentfile::diagnostic::{Diagnostic, Span};
use otters_oci::reference::Reference;
use otters_oci::registry::RegistryError;
use otters_oci::spec::annotations;
use otters_oci::spec::descriptor::{Descriptor, ManifestDoc};
use otters_oci::Platform;
use std::collections::BTreeMap;

/// Largest usage document read into the lock.
const MAX_USAGE: u64 = 256 << 10;

/// The first annotation present among `keys`.
fn first(ann: &BTreeMap<String, String>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| ann.get(*k).filter(|v| !v.is_empty()).cloned())
}

/// Maps a registry failure to its code on `span`: AF401 (the image or one of its blobs does not
/// exist), AF402 (refused), AF410 (not reached; `hint` says whether `--offline` would help),
/// AF411 (no manifest for the platform), AF412 (any other answer otters cannot use).
pub fn registry_diagnostic(
    span: Span,
    written: &str,
    r: &Reference,
    e: &RegistryError,
    hint: diags::OfflineHint,
) -> Diagnostic {
    match e {
        RegistryError::Denied { .. } | RegistryError::Forbidden { .. } => {
            diags::registry_denied(span, written, &e.to_string(), &r.registry)
        }
        RegistryError::NotFound { .. } if hint == diags::OfflineHint::LocalParent => {
            diags::parent_only_local(span, written, &format!("{} does not exist", r.familiar()))
        }
        RegistryError::NotFound { .. } => {
            diags::image_not_found(span, written, &format!("{} does not exist", r.familiar()))
        }
        RegistryError::BlobNotFound { .. } => diags::image_not_found(span, written, &e.to_string()),
        RegistryError::Platform {
            wanted, available, ..
        } => diags::platform_unavailable(span, written, wanted, available),
        RegistryError::Unreachable { .. }
        | RegistryError::Tls { .. }
        | RegistryError::Interrupted { .. }
        | RegistryError::Client(_) => {
            diags::registry_unreachable(span, written, &e.to_string(), hint)
        }
        RegistryError::DigestMismatch { .. }
        | RegistryError::Protocol { .. }
        | RegistryError::Refused { .. }
        | RegistryError::Http { .. }
        | RegistryError::BadDocument { .. }
        | RegistryError::Store(_)
        | RegistryError::Io(_)
        | RegistryError::Auth(_)
        | RegistryError::Config(_) => diags::registry_error(span, written, &e.to_string()),
    }
}

/// Resolves `written` (already parsed as `r`) for `platform`. `hint` says what `--offline` could
/// do for this reference, for the message when its registry cannot be reached.
pub fn resolve_image(
    client: &dyn Registry,
    written: &str,
    r: &Reference,
    role: Role,
    platform: &Platform,
    span: Span,
    hint: diags::OfflineHint,
) -> Result<Entry, Diagnostic> {
    let resolved = client
        .resolve(r, platform)
        .map_err(|e| registry_diagnostic(span, written, r, &e, hint))?;
    if resolved.platform.is_none() {
        check_config_platform(
            client,
            written,
            r,
            &resolved.manifest.bytes,
            platform,
            span,
            hint,
        )?;
    }
    let top = ManifestDoc::parse(&resolved.top.bytes).unwrap_or_default();
    let manifest = ManifestDoc::parse(&resolved.manifest.bytes).unwrap_or_default();
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
    let name = first(&ann, &annotations::BIN_NAME_KEYS);
    // The RUNTIME is installed by the same contract as a BIN (spec §f): without the name
    // annotation it is not a bin image, and the run would find no binary in it.
    if matches!(role, Role::Bin | Role::Runtime) && name.is_none() {
        return Err(diags::missing_bin_annotation(span, written, role, None));
    }
    if let Some(name) = name {
        let usage_path = first(&ann, &annotations::BIN_USAGE_KEYS);
        entry.bin = Some(BinInfo {
            name,
            path: first(&ann, &annotations::BIN_PATH_KEYS),
            usage_path: usage_path.clone(),
        });
        entry.description = first(
            &ann,
            &[
                "org.opencontainers.image.description",
                annotations::BIN_DESCRIPTION_KEYS[0],
                annotations::BIN_DESCRIPTION_KEYS[1],
            ],
        );
        if let Some(up) = usage_path {
            entry.usage = usage_text(client, r, &manifest.layers, &up);
        }
    }
    Ok(entry)
}

/// Largest image config read to learn its platform.
const MAX_CONFIG: u64 = 4 << 20;

/// A single manifest (no index to choose from) must be for `platform`: its image config's `os`
/// and `architecture`, when it states them, must match; else AF411 naming what it is built for.
/// Configs of other types (artifacts, agents) say nothing about a platform and pass.
fn check_config_platform(
    client: &dyn Registry,
    written: &str,
    reference: &Reference,
    manifest: &[u8],
    platform: &Platform,
    span: Span,
    hint: diags::OfflineHint,
) -> Result<(), Diagnostic> {
    #[derive(serde::Deserialize)]
    struct ConfigPlatform {
        #[serde(default)]
        os: String,
        #[serde(default)]
        architecture: String,
        #[serde(default)]
        variant: Option<String>,
    }
    let Some(config) = ManifestDoc::parse(manifest).ok().and_then(|m| m.config) else {
        return Ok(());
    };
    // Only image configs (OCI or Docker) state the platform their binaries are for.
    if !config.media_type.is_image_config() || config.size > MAX_CONFIG {
        return Ok(());
    }
    let bytes = client
        .fetch_blob(reference, &config.digest, MAX_CONFIG)
        .map_err(|e| registry_diagnostic(span, written, reference, &e, hint))?;
    let Ok(config) = serde_json::from_slice::<ConfigPlatform>(&bytes) else {
        return Ok(());
    };
    if config.os.is_empty() || config.architecture.is_empty() {
        return Ok(());
    }
    let variant_differs = matches!(
        (&platform.variant, &config.variant),
        (Some(wanted), Some(has)) if wanted != has
    );
    if config.os == platform.os && config.architecture == platform.architecture && !variant_differs
    {
        return Ok(());
    }
    let has = Platform::new(
        &config.os,
        &config.architecture,
        config.variant.as_deref().filter(|v| !v.is_empty()),
    );
    let has = otters_oci::validate::escape_text(&has.to_string(), 60);
    Err(diags::platform_unavailable(
        span,
        written,
        &platform.to_string(),
        &has,
    ))
}

/// The usage document's text: the non-tar layer titled like the usage annotation. A missing or
/// unreadable document is skipped silently, as openotters does.
fn usage_text(
    client: &dyn Registry,
    r: &Reference,
    layers: &[Descriptor],
    usage_path: &str,
) -> Option<String> {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_owned();
    let layer = layers.iter().find(|l| {
        !l.media_type.as_str().contains("tar")
            && l.size <= MAX_USAGE
            && l.title()
                .is_some_and(|t| t == usage_path || base(t) == base(usage_path))
    })?;
    let bytes = client.fetch_blob(r, &layer.digest, MAX_USAGE).ok()?;
    String::from_utf8(bytes).ok()
}
