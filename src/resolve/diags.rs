//! Diagnostic constructors for the resolve stage (AF401–AF408).
//!
//! Takes: spans and the facts of one failure. Returns: [`Diagnostic`] values with a help line.
//! Must never: build diagnostic text anywhere else in `resolve`.

use crate::diagnostic::{Diagnostic, Span};

pub fn image_not_found(span: Span, reference: &str, why: &str) -> Diagnostic {
    Diagnostic::error("AF401", span, format!("cannot resolve image `{reference}`: {why}"))
        .with_label("this image")
        .with_help("check the name and tag, that the registry is reachable, or build from Agentfile.lock with --offline")
}

pub fn registry_denied(span: Span, reference: &str, why: &str, registry: &str) -> Diagnostic {
    Diagnostic::error(
        "AF402",
        span,
        format!("registry refused access to `{reference}`: {why}"),
    )
    .with_label("pull denied")
    .with_help(format!(
        "run `otters login {registry}` with an account that may pull this image"
    ))
}

pub fn missing_bin_annotation(span: Span, reference: &str) -> Diagnostic {
    Diagnostic::error(
        "AF403",
        span,
        format!("image `{reference}` is not a bin: it has no io.openotters.bin.name (or vnd.openotters.bin.name) annotation"),
    )
    .with_label("not a bin image")
    .with_help("use an image built as an openotters bin, or add the annotation when building it")
}

pub fn malformed_reference(span: Span, why: &str) -> Diagnostic {
    Diagnostic::error("AF404", span, why.to_owned()).with_label("malformed reference")
}

pub fn unpinned_offline(span: Span, reference: &str) -> Diagnostic {
    Diagnostic::error("AF405", span, format!("--offline, but Agentfile.lock has no pin for `{reference}`"))
        .with_label("no pin in the lock")
        .with_help("run `otters lock` (or a build without --offline) once with network access, or pass --allow-unpinned")
}

/// With `--allow-unpinned`: the reference is built without a digest.
pub fn built_unpinned(span: Span, reference: &str) -> Diagnostic {
    Diagnostic::warning(
        "AF201",
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
    Diagnostic::error("AF406", span, msg)
        .with_label("lock would change")
        .with_help("run `otters lock` to update Agentfile.lock, then review and commit it")
}

pub fn lock_has_extra(span: Span, reference: &str) -> Diagnostic {
    Diagnostic::error(
        "AF406",
        span,
        format!(
            "--locked, but Agentfile.lock pins `{reference}`, which the Agentfile no longer uses"
        ),
    )
    .with_help("run `otters lock` to update Agentfile.lock, then review and commit it")
}

pub fn inheritance_cycle(span: Span, chain: &[String]) -> Diagnostic {
    Diagnostic::error(
        "AF407",
        span,
        format!("inheritance cycle: {}", chain.join(" -> ")),
    )
    .with_label("starts a cycle")
    .with_help("an agent cannot inherit from itself; point FROM at another image")
}

pub fn inheritance_too_deep(span: Span, chain: &[String]) -> Diagnostic {
    Diagnostic::error(
        "AF408",
        span,
        format!("FROM inheritance depth exceeds 10: {}", chain.join(" -> ")),
    )
    .with_label("too many levels")
    .with_help("flatten the chain: build an intermediate image FROM scratch")
}

/// A parent image that cannot be used as a FROM parent (not an agent, missing layers).
pub fn bad_parent(span: Span, reference: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        "AF401",
        span,
        format!("`{reference}` cannot be used as a parent agent: {why}"),
    )
    .with_label("parent image")
    .with_help("FROM takes an agent image built by otters or openotters, or `scratch`")
}
