//! Diagnostic constructors for the resolve stage (AF401–AF412).
//!
//! Takes: spans and the facts of one failure. Returns: [`Diagnostic`] values with a help line.
//! Must never: build diagnostic text anywhere else in `resolve`.

use otters_agentfile::check::ImageRole;
use otters_agentfile::diagnostic::{Code, Diagnostic, Span};

pub fn image_not_found(span: Span, reference: &str, why: &str) -> Diagnostic {
    Diagnostic::new(Code::ImageNotFound, span, format!("cannot resolve image `{reference}`: {why}"))
        .with_label("this image")
        .with_help("check the name and tag (`otters inspect --remote REF` shows what the registry has), or push the image first")
}

/// AF401 for a FROM parent the registry does not have but the local store does.
pub fn parent_only_local(span: Span, reference: &str, why: &str) -> Diagnostic {
    image_not_found(span, reference, why).with_help(format!(
        "the local store has `{reference}`: build with --offline to use it without asking a registry, or push it first (`otters push {reference}`)"
    ))
}

/// What an offline build could do instead, when the registry cannot be asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OfflineHint {
    /// `Agentfile.lock` pins this reference: `--offline` would build from it.
    Pinned,
    /// A FROM parent with this tag is in the local store: `--offline` would use it.
    LocalParent,
    /// Nothing offline would help.
    None,
}

/// AF410: the registry could not be reached (or no HTTP client could be set up).
pub fn registry_unreachable(
    span: Span,
    reference: &str,
    why: &str,
    hint: OfflineHint,
) -> Diagnostic {
    let help = match hint {
        OfflineHint::Pinned => "check the host name, the network and any proxy; Agentfile.lock pins this image, so `otters build --offline` builds from the lock without a registry".to_owned(),
        OfflineHint::LocalParent => "check the host name, the network and any proxy; this parent is in the local store, so `otters build --offline` builds from it without a registry".to_owned(),
        OfflineHint::None => "check the host name, the network and any proxy, then build again (Agentfile.lock has no pin for this image, so an --offline build cannot help yet)".to_owned(),
    };
    Diagnostic::new(
        Code::RegistryUnreachable,
        span,
        format!("cannot resolve image `{reference}`: {why}"),
    )
    .with_label("registry not reached")
    .with_help(help)
}

/// AF410 for every reference, when no HTTP client can be set up at all. `has_lock`: an
/// `Agentfile.lock` exists, so `--offline` may help.
pub fn client_failed(span: Span, why: &str, has_lock: bool) -> Diagnostic {
    let help = if has_lock {
        "fix the setting the message names (e.g. OTTERS_REGISTRY_TIMEOUT); when Agentfile.lock pins every image, `otters build --offline` builds without a registry"
    } else {
        "fix the setting the message names (e.g. OTTERS_REGISTRY_TIMEOUT), then build again"
    };
    Diagnostic::new(
        Code::RegistryUnreachable,
        span,
        format!("cannot contact any registry: {why}"),
    )
    .with_label("nothing was resolved")
    .with_help(help)
}

/// AF411: the image has no manifest for the target platform. `available` lists the platforms it
/// has (comma-separated), or is `none`.
pub fn platform_unavailable(
    span: Span,
    reference: &str,
    wanted: &str,
    available: &str,
) -> Diagnostic {
    let (has, help) = if available.is_empty() || available == "none" {
        (
            "its index names no platform at all".to_owned(),
            format!("use an image published for {wanted}"),
        )
    } else {
        (
            format!("it is built for {available}"),
            format!(
                "build for a platform the image has (`--platform {}`), or use an image published for {wanted}",
                suggest_platform(available)
            ),
        )
    };
    Diagnostic::new(
        Code::PlatformUnavailable,
        span,
        format!("image `{reference}` has no image for {wanted}: {has}"),
    )
    .with_label(format!("no {wanted} image"))
    .with_help(help)
}

/// The platform to suggest from a list: this machine's when the image has it, else the first.
fn suggest_platform(available: &str) -> String {
    let host = otters_oci::Platform::host().to_string();
    let mut all = available.split(", ");
    if available.split(", ").any(|p| p == host) {
        host
    } else {
        all.next().unwrap_or(available).to_owned()
    }
}

/// AF412: the registry answered with an error, or content that does not verify.
pub fn registry_error(span: Span, reference: &str, why: &str) -> Diagnostic {
    Diagnostic::new(
        Code::RegistryError,
        span,
        format!("cannot resolve image `{reference}`: {why}"),
    )
    .with_label("registry error")
    .with_help(
        "try again later; if it persists, push the image again or ask the registry's operator",
    )
}

/// AF409: `Agentfile.lock` cannot be read or parsed.
pub fn lock_unreadable(span: Span, why: &str) -> Diagnostic {
    Diagnostic::new(Code::LockUnreadable, span, why.to_owned())
        .with_label("Agentfile.lock is needed to resolve this")
        .with_help(
            "fix Agentfile.lock, or delete it and run `otters lock` with the registries in reach",
        )
}

pub fn registry_denied(span: Span, reference: &str, why: &str, registry: &str) -> Diagnostic {
    Diagnostic::new(
        Code::RegistryDenied,
        span,
        format!("registry refused access to `{reference}`: {why}"),
    )
    .with_label("pull denied")
    .with_help(format!(
        "run `otters login {registry}` with an account that may pull this image"
    ))
}

/// AF403: a RUNTIME or BIN image without the bin name annotation (spec §f.1), as the registry
/// (or, offline, `Agentfile.lock`) says; the one message `otters lint` gives too.
pub fn missing_bin_annotation(
    span: Span,
    reference: &str,
    role: super::lockfile::Role,
    seen: Option<&str>,
) -> Diagnostic {
    let role = if role == super::lockfile::Role::Runtime {
        ImageRole::Runtime
    } else {
        ImageRole::Bin
    };
    otters_agentfile::check::missing_bin_annotation(span, reference, role, seen)
}

pub fn malformed_reference(span: Span, why: &str) -> Diagnostic {
    Diagnostic::new(Code::MalformedReference, span, why.to_owned())
        .with_label("malformed reference")
}

pub fn unpinned_offline(span: Span, reference: &str) -> Diagnostic {
    Diagnostic::new(Code::UnpinnedOffline, span, format!("--offline, but Agentfile.lock has no pin for `{reference}`"))
        .with_label("no pin in the lock")
        .with_help("run `otters lock` (or a build without --offline) once with network access, or pass --allow-unpinned")
}

/// AF405 for a FROM parent under `--offline`: neither the lock nor the local store has it.
/// `--allow-unpinned` cannot help a parent (its content is merged), so the help never offers it.
pub fn parent_not_local(span: Span, reference: &str, allow_unpinned: bool) -> Diagnostic {
    let also = if allow_unpinned {
        " (--allow-unpinned cannot stand in for a parent: its contents are merged into this agent)"
    } else {
        ""
    };
    Diagnostic::new(
        Code::UnpinnedOffline,
        span,
        format!("--offline, but the parent `{reference}` is neither pinned in Agentfile.lock nor in the local store{also}"),
    )
    .with_label("parent not available offline")
    .with_help(format!(
        "with network access, run `otters pull {reference}` (or `otters lock`); or build the parent here with `otters build -t {reference}`"
    ))
}

/// AF405: the lock was made for another platform than the offline build targets.
pub fn lock_platform_offline(span: Span, lock_platform: &str, wanted: &str) -> Diagnostic {
    Diagnostic::new(
        Code::UnpinnedOffline,
        span,
        format!("--offline, but Agentfile.lock pins images for {lock_platform}, not {wanted}"),
    )
    .with_label("no pins for this platform")
    .with_help(format!(
        "with network access, run `otters lock --platform {wanted}`; or build for {lock_platform}"
    ))
}

/// With `--allow-unpinned`: the reference is built without a digest.
pub fn built_unpinned(span: Span, reference: &str) -> Diagnostic {
    Diagnostic::new(
        Code::UnpinnedImageReference,
        span,
        format!("`{reference}` is built without a digest (--offline --allow-unpinned)"),
    )
    .with_label("unpinned")
    .with_help("run `otters lock` with network access to pin it")
}

pub fn lock_out_of_date(span: Span, reference: &str, old: Option<&str>, new: &str) -> Diagnostic {
    let msg = match old {
        Some(o) => format!(
            "--locked, but `{reference}` now resolves to {new}, not {o} as Agentfile.lock says"
        ),
        None => format!("--locked, but Agentfile.lock has no entry for `{reference}`"),
    };
    Diagnostic::new(Code::LockOutOfDate, span, msg)
        .with_label("lock would change")
        .with_help("run `otters lock` to update Agentfile.lock, then review and commit it")
}

pub fn lock_has_extra(span: Span, reference: &str) -> Diagnostic {
    Diagnostic::new(
        Code::LockOutOfDate,
        span,
        format!(
            "--locked, but Agentfile.lock pins `{reference}`, which the Agentfile no longer uses"
        ),
    )
    .with_help("run `otters lock` to update Agentfile.lock, then review and commit it")
}

pub fn inheritance_cycle(span: Span, chain: &[String]) -> Diagnostic {
    Diagnostic::new(
        Code::InheritanceCycle,
        span,
        format!("inheritance cycle: {}", chain.join(" -> ")),
    )
    .with_label("starts a cycle")
    .with_help("an agent cannot inherit from itself; point FROM at another image")
}

pub fn inheritance_too_deep(span: Span, chain: &[String]) -> Diagnostic {
    Diagnostic::new(
        Code::InheritanceTooDeep,
        span,
        format!("FROM inheritance depth exceeds 10: {}", chain.join(" -> ")),
    )
    .with_label("too many levels")
    .with_help("flatten the chain: build an intermediate image FROM scratch")
}

/// A parent image that cannot be used as a FROM parent (not an agent, missing layers).
pub fn bad_parent(span: Span, reference: &str, why: &str) -> Diagnostic {
    Diagnostic::new(
        Code::ImageNotFound,
        span,
        format!("`{reference}` cannot be used as a parent agent: {why}"),
    )
    .with_label("parent image")
    .with_help("FROM takes an agent image built by otters or openotters, or `scratch`")
}
