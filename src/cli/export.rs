//! `otters export REF --as runnable|tree`: the agent as an ordinary OCI image, or its tree alone
//! as an image to mount as a volume (see docs/kubernetes.md).
//!
//! stdout carries the image's (or index's) digest as its last line, as `build` does; what was
//! made goes to stderr.
use super::{fail, fail_in, CliResult};
use crate::view::status;
use otters_cli::export::{Args, As};
use otters_core::escape::escape;
use otters_oci::reference::Reference;
use otters_oci::{Descriptor, Digest, Platform, Store};
use otters_pipeline::target::Target;
use otters_pipeline::trust::signing;
use otters_run::export::{self, push::push_export};
use otters_run::extract::Limits;
use otters_run::fetch::RegistryFetcher;
use otters_run::prepare::Pull;
use otters_run::source::{Fetcher, LocalOnly};
use std::process::ExitCode;

pub fn run(a: Args) -> CliResult {
    let what = match a.as_ {
        As::Runnable => export::As::Runnable,
        As::Tree => export::As::Tree,
    };
    let key = a.sign_key.as_deref().map(signing::key_signer).transpose();
    let key = key.map_err(|e| fail_in("--sign-key", e))?;
    let platform = a
        .platform
        .as_deref()
        .map(Platform::parse)
        .transpose()
        .map_err(fail)?;
    // It may pull the agent, its runtime and BINs, and writes the export: leased, so a
    // concurrent `prune` keeps what it wrote before it is reachable.
    let store = super::common::open_store_leased()?;
    let registry = RegistryFetcher::new(super::common::client_options(a.insecure));
    let pull = Pull::missing_unless(a.offline);
    // Held to the gate `run` has (`--verify-key`, `[verify]`) before anything is exported.
    let policy = a.gate.policy.load().map_err(fail)?;
    let gate = a.gate.gate(a.insecure, !a.offline);
    let (fetched, _) = otters_run::gate::fetch(
        &gate,
        &policy,
        &store,
        &registry,
        &a.reference,
        pull,
        "export",
    )
    .map_err(fail)?;
    let source: &dyn Fetcher = if a.offline { &LocalOnly } else { &registry };
    let exported = export::export_as(
        &store,
        source,
        &a.reference,
        &fetched.digest,
        platform.as_ref(),
        &Limits::default(),
        what,
    )
    .map_err(|e| fail_in(format!("cannot export {}", a.reference), e))?;
    if !a.quiet {
        let images = exported.images.iter();
        let images = images.map(|i| (i.platform.to_string(), &i.manifest.digest, i.layers.len()));
        eprint!("{}", crate::view::status::exported(&a.reference, images));
    }
    if a.push {
        push(&a, &store, &fetched.digest, &exported.descriptor)?;
    }
    if let Some(mut sign) = key {
        // What the cluster pulls, signed where it now is: the store and the agent's repository.
        let d = &exported.descriptor;
        let repository = Reference::parse(&a.reference).map(|r| r.name());
        let name = format!("{}@{}", repository.map_err(fail)?, d.digest);
        let subject = Descriptor::new(d.media_type.clone(), d.digest.clone(), d.size);
        let target = Target::Local(store.clone(), subject);
        let signed = signing::sign_image(&target, &name, &mut *sign, false, a.insecure);
        let (_, shared) = signed.map_err(fail)?;
        if !a.quiet {
            eprint!("{}", status::signed(&name, &d.digest, &shared));
        }
    }
    outln!("{}", exported.descriptor.digest);
    Ok(ExitCode::SUCCESS)
}

/// Pushes the export into the agent's repository, as a referrer of the agent.
fn push(a: &Args, store: &Store, agent: &Digest, d: &Descriptor) -> miette::Result<()> {
    let dest = Reference::parse(&a.reference).map_err(|e| {
        let what =
            "--push needs the agent's registry reference (e.g. registry.example.com/team/agent:1)";
        fail_in(what, e)
    })?;
    let client = super::common::client(a.insecure)?;
    push_export(&client, store, agent, d, &dest)
        .map_err(|e| fail_in(format!("cannot push the export to {}", dest.familiar()), e))?;
    if !a.quiet {
        eprintln!("pushed {}@{}", escape(&dest.name()), d.digest);
    }
    Ok(())
}
