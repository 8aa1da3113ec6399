//! What several commands present the same way: the local store and a registry client opened
//! with one error message, `--platform` parsed, text from images made safe for the terminal,
//! Agentfile diagnostics, JSON and transfer reports printed, and the image a `WhereFlags` names.
//!
//! Takes: values the commands already hold. Returns: library handles or display text. Must
//! never: hold a command's logic (that lives in the library crates) or use a command's module.
use super::Format;
use super::{fail, fail_in};
use miette::miette;
use otters_agentfile::diagnostic::render::human;
use otters_agentfile::diagnostic::{codes, Diagnostic, SourceFile};
use otters_cli::flags::WhereFlags;
use otters_oci::registry::transfer::TransferReport;
use otters_oci::registry::{ClientOptions, RegistryClient};
use otters_oci::{Platform, Store};
use otters_pipeline::build::{BuildError, ErrorKind};
use otters_pipeline::target::{Place, Target, TargetError};

/// The local store under `$OTTERS_HOME/store`, for reading and for writes that tag at once.
pub(super) fn open_store() -> miette::Result<Store> {
    let root = super::otters_home().join("store");
    Store::open(&root)
        .map_err(|e| fail_in(format!("cannot open the local store {}", root.display()), e))
}

/// The local store with a lease: what this process writes is kept by a concurrent `prune` until
/// it is tagged (pulls, loads, builds).
pub(super) fn open_store_leased() -> miette::Result<Store> {
    let root = super::otters_home().join("store");
    Store::open(&root)
        .and_then(|s| s.leased())
        .map_err(|e| fail_in(format!("cannot open the local store {}", root.display()), e))
}

/// A registry client; `insecure` is `--insecure`.
pub(super) fn client(insecure: bool) -> miette::Result<RegistryClient> {
    RegistryClient::new(client_options(insecure)).map_err(fail)
}

/// The registry options of `--insecure`.
pub(super) fn client_options(insecure: bool) -> ClientOptions {
    ClientOptions {
        insecure,
        ..ClientOptions::default()
    }
}

/// `--platform`'s value, parsed.
pub(super) fn platform(p: Option<&str>) -> miette::Result<Option<Platform>> {
    p.map(Platform::parse)
        .transpose()
        .map_err(|e| fail_in("--platform", e))
}

/// A JSON value on one line on stdout (`--format json` of `build` and `version`).
pub(super) fn print_compact(v: &otters_core::json::Value) {
    let line = otters_core::json::to_compact(v).unwrap_or_default();
    outln!("{}", String::from_utf8_lossy(&line));
}

/// Text from an image, a registry or a file name, made safe for a terminal (controls and bidi
/// overrides shown escaped).
pub(super) fn esc(s: &str) -> String {
    otters_core::escape::escape(s).into_owned()
}

/// An Agentfile's diagnostics on stderr, as `otters lint` shows them.
pub(super) fn print_diagnostics(file: &SourceFile, diags: &[Diagnostic]) {
    if !diags.is_empty() {
        eprint!(
            "{}",
            human(
                &[(file.clone(), diags.to_vec())],
                codes::RULES,
                super::stderr_colour()
            )
        );
    }
}

/// Shows a failed build's diagnostics on stderr and returns what failed, to report.
pub(super) fn build_failure(e: BuildError) -> ErrorKind {
    if let Some(file) = &e.file {
        print_diagnostics(file, &e.diagnostics);
    }
    e.kind
}

/// What failed in a build, as a report that names the flags where the library speaks of values
/// (`-t`, `--platform`, `--sbom`…).
pub(super) fn build_error(kind: ErrorKind) -> miette::Report {
    match kind {
        ErrorKind::Tag { tag, source } => fail_in(format!("-t {tag}"), source),
        ErrorKind::Platform(e) => fail_in("--platform", e),
        ErrorKind::SupplyMultiPlatform => miette!("--sbom, --provenance and --sign-key attach to one platform's image; a build for several platforms cannot take them yet: build for one --platform at a time to attach them"),
        kind => fail(kind),
    }
}

/// The note of a read that goes to a registry because the store does not hold the image.
pub(super) fn note_remote(reference: &str, registry: &str) {
    eprintln!(
        "note: {} is not in the local store; reading it from {} (pass --local to use only the store)",
        esc(reference),
        esc(registry)
    );
}

/// A value as pretty JSON on stdout (`--format json`).
pub(super) fn print_json(v: &impl serde::Serialize) -> miette::Result<()> {
    let text =
        serde_json::to_string_pretty(v).map_err(|e| fail_in("cannot write the report", e))?;
    outln!("{text}");
    Ok(())
}

/// A push's or pull's report: the digest on stdout (or the JSON report), the summary on stderr.
pub(super) fn print_report(
    report: &TransferReport,
    format: Format,
    quiet: bool,
    verb: &str,
) -> miette::Result<()> {
    if format == Format::Json {
        return print_json(report);
    }
    if !quiet {
        eprint!("{}", crate::view::transfer::summary(report, verb));
    }
    outln!("{}", report.digest);
    Ok(())
}

/// An image the local store does not hold, with where to look.
pub(super) fn not_found(reference: &str) -> miette::Report {
    miette!(
        help = "list local images with `otters images`",
        "image `{reference}` is not in the local store"
    )
}

/// The image `reference` names for a command that adds a referrer (`attach`, `sign`): in the
/// local store, or with `--remote` in its registry.
pub(super) fn target(reference: &str, place: &WhereFlags) -> miette::Result<Target> {
    let p = place.for_write();
    Target::resolve(open_store_leased()?, reference, p, place.insecure).map_err(target_error)
}

/// The image `reference` names for a read (`verify`, `discover`): with neither `--local` nor
/// `--remote`, a registry reference the local store does not hold is read from its registry,
/// with a note on stderr.
pub(super) fn target_for_read(reference: &str, place: &WhereFlags) -> miette::Result<Target> {
    Ok(target_and_manifest_for_read(reference, place)?.0)
}

/// [`target_for_read`], and for a registry image the manifest bytes read to resolve it.
pub(super) fn target_and_manifest_for_read(
    reference: &str,
    place: &WhereFlags,
) -> miette::Result<(Target, Option<Vec<u8>>)> {
    let p = place.for_read();
    let (target, bytes) = Target::resolve_read(open_store_leased()?, reference, p, place.insecure)
        .map_err(target_error)?;
    if let (Place::Auto, Some(r)) = (p, target.registry_reference()) {
        note_remote(reference, &r.registry);
    }
    Ok((target, bytes))
}

/// A [`Target`] error as a report; an image the store lacks says which flag reads its registry.
pub(super) fn target_error(e: TargetError) -> miette::Report {
    match e {
        TargetError::NotInStore(reference) => miette!(
            "no image {} in the local store: build or pull it, or pass --remote to use its registry",
            esc(&reference)
        ),
        e => fail(e),
    }
}
