//! `otters sign` and `otters verify`: a Sigstore bundle over an image's
//! manifest digest, key-based or keyless, attached as an OCI 1.1 referrer (artifactType
//! `application/vnd.dev.sigstore.bundle.v0.3+json`, as cosign 3 stores bundles), and its
//! verification against the digest the reference names now. Dispatch and printing only: the walk is
//! `otters_supply::verify`, the signing `otters_pipeline::trust::signing::sign_image`.
//!
//! Takes: an image (local store, or `--remote` its registry) and a key or a keyless identity.
//! Returns: the signature referrer's digest; "Verified OK" and exit 0, or why not and exit 1. Must
//! never: accept a bundle about another digest than the one the reference resolves to at
//! verification time, or one whose signature does not verify for the given signer.
use super::common::{esc, target, target_for_read};
use super::{fail, CliResult};
use crate::view::{self, status};
use otters_cli::sign::{SignArgs, VerifyArgs};
use otters_pipeline::trust::{signing, verify as trust};
use std::process::ExitCode;

pub fn run_sign(a: SignArgs) -> CliResult {
    let key = a.key.as_deref().map(signing::key_signer).transpose();
    let key = key.map_err(fail)?;
    let target = target(&a.reference, &a.place)?;
    let mut sign = match key {
        Some(k) => k,
        None => super::attest::keyless_signer(&a.services)?,
    };
    let (reference, local, insecure) = (&a.reference, a.place.local, a.place.insecure);
    let signed = signing::sign_image(&target, reference, &mut *sign, local, insecure);
    let (d, shared) = signed.map_err(fail)?;
    let digest = &target.descriptor().digest;
    eprint!("{}", status::signed(reference, digest, &shared));
    outln!("{}", d.digest);
    Ok(ExitCode::SUCCESS)
}

pub fn run_verify(a: VerifyArgs) -> CliResult {
    let signer = trust::verifier(
        a.key.as_deref(),
        &a.identity.identity(),
        a.predicate_type.as_deref(),
    )
    .map_err(fail)?;
    let target = target_for_read(&a.reference, &a.place)?;
    let digest = target.descriptor().digest.clone();
    let verified = trust::verify_image(
        &target,
        &a.reference,
        &signer,
        a.predicate_type.as_deref(),
        a.place.local,
        a.place.insecure,
        &mut |registry| {
            eprintln!(
                "note: no signature of {} in the local store; checking {} (pass --local to check only the store)",
                esc(&a.reference),
                esc(registry)
            );
        },
    )
    .map_err(fail)?;
    let image = view::pinned(&a.reference, &digest);
    let what = esc(&verified.predicate_type);
    outln!("Verified OK: {} signs {image} ({what})", verified.by);
    let checked = status::verified_copy(&a.reference, &digest, &verified.checked);
    eprint!("{checked}");
    Ok(ExitCode::SUCCESS)
}
