//! `otters run`: materialise an agent from an image (or an Agentfile, built first) and exec its
//! runtime on the host or through a docker-compatible CLI.
use super::{fail, fail_in, CliResult};
use crate::view::status;
use miette::miette;
use otters_cli::run::Args;
use otters_oci::Store;
use otters_run::egress::EgressPlan;
use otters_run::extract::Limits;
use otters_run::fetch::RegistryFetcher;
use otters_run::plan::{self, Launcher, Warning};
use otters_run::prepare::{self, Pull, Target};
use otters_run::request::{self, BuildFirst, BuildFirstError};
use otters_run::source::{Fetcher, LocalOnly};
use otters_run::{exec, materialise, mounts};
use std::path::Path;
use std::process::ExitCode;

pub fn run(a: Args) -> CliResult {
    let pull = if a.pins.offline { Pull::Never } else { a.pull };
    let executor = a.executor;
    let (overrides, user_mounts) =
        request::overrides(a.model.clone(), &a.envs, &a.configs, &a.mounts).map_err(fail)?;
    let platform = super::common::platform(a.platform.as_deref())?;
    let platform = platform.unwrap_or_else(|| prepare::default_platform(executor));
    let home = super::otters_home();
    let store = super::common::open_store_leased()?;
    let registry = RegistryFetcher::new(super::common::client_options(a.insecure));
    let reference = reference(&a, pull, &store)?;
    // What `run PATH` just built is the image: never asked of a registry, even with --pull always.
    let built = reference != a.reference;
    let image_pull = if built { Pull::Missing } else { pull };
    // Held to the gate before anything of the image is read for the run, let alone extracted.
    let policy = a.gate.policy.load().map_err(fail)?;
    let gate = a.gate.gate(a.insecure, pull != Pull::Never);
    let gated = otters_run::gate::fetch(
        &gate, &policy, &store, &registry, &reference, image_pull, "run",
    );
    let (image, who) = gated.map_err(fail)?;
    if a.dry_run {
        eprint!("{}", status::pulled_to_plan(&reference, &image));
    }
    let req = prepare::Request {
        name: a.name.clone(),
        root: a.root.clone(),
        cwd: std::env::current_dir().map_err(fail)?,
        agents: home.join("agents"),
        executor,
        docker: a.docker.clone(),
        base_image: a.base_image.clone(),
        overrides,
        mounts: user_mounts,
        // A dry run shows the whole plan, missing mounts listed, and says what a run would do.
        allow_missing_mounts: a.allow_missing_mounts || a.dry_run,
        platform,
        // The signature covers the manifest and what it pins; nothing else may run.
        require_pins: who.is_some(),
        providers: a.providers.clone(),
    };
    let prepared = prepare::prepare(&store, &reference, &image.digest, req).map_err(fail)?;
    let host_env = |k: &str| std::env::var(k).ok();
    let plan = plan::plan(&prepared.image, &prepared.options, &host_env).map_err(fail)?;
    if let Some(owner) = prepared.owner {
        mounts::check_container_writes(&plan.mounts, owner).map_err(fail)?;
    }
    let unenforced = a.egress == Some(otters_cli::run::EgressArg::Unenforced);
    if let Err(e) = otters_run::egress::check_executor(&plan, unenforced) {
        if !a.dry_run {
            return Err(fail(e));
        }
        eprintln!("warning: {e}; a run would stop here");
    }
    let refused = request::refused(&plan, a.dry_run, a.allow_missing_mounts);
    let model = a.model.as_deref();
    for w in request::warnings(&prepared, &plan, model, &a.providers, refused) {
        match &w {
            Warning::UnknownProvider { provider: p, .. } => {
                eprintln!("warning: {w}; if {p} is your model provider, pass --provider {p}");
            }
            w => eprintln!("warning: {w}"),
        }
    }
    if a.dry_run {
        let shown = otters_schema::outputs::WithSchema::new("run-plan", &plan);
        outln!("{}", serde_json::to_string_pretty(&shown).map_err(fail)?);
        if refused {
            eprint!("{}", status::run_would_stop(&plan.missing_mounts));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let fetcher: &dyn Fetcher = match pull {
        Pull::Never => &LocalOnly,
        Pull::Missing | Pull::Always => &registry,
    };
    materialise::materialise(&plan, &store, fetcher, &Limits::default(), prepared.owner)
        .map_err(fail)?;
    if let (Some(EgressPlan::Proxy { .. }), Launcher::Docker { .. }) =
        (&plan.egress, &plan.executor)
    {
        let name = plan.name.clone();
        let report: otters_run::egress::proxy::Report =
            std::sync::Arc::new(move |e| eprintln!("{}", status::egress_refused(&name, &e)));
        let ended = otters_run::egress::launch::run(&plan, report).map_err(fail)?;
        return Ok(status::exit_code(ended));
    }
    Err(fail(exec::exec(&plan)))
}

/// The image to run: REFERENCE, or the tag an Agentfile REFERENCE names was built into (built
/// into the local store first; warnings on stderr, nothing on stdout, so `--dry-run` output
/// stays one JSON document).
fn reference(a: &Args, pull: Pull, store: &Store) -> miette::Result<String> {
    match Target::of(&a.reference) {
        Target::Path => {
            let how = BuildFirst {
                platform: a.platform.clone(),
                insecure: a.insecure,
                offline: pull == Pull::Never,
                allow_unpinned: a.pins.allow_unpinned,
                locked: a.pins.locked,
                hash_cache: Some(super::otters_home().join("cache/blobs.json")),
                source_date_epoch: std::env::var("SOURCE_DATE_EPOCH").ok(),
                policy: a.gate.policy.load().map_err(fail)?,
            };
            let built = request::build_first(store, Path::new(&a.reference), &how).map_err(|e| {
                let BuildFirstError::Build(e) = e else {
                    return fail(e);
                };
                let what = format!("building {} failed; nothing was run", a.reference);
                fail_in(what, super::common::build_failure(*e))
            })?;
            super::common::print_diagnostics(&built.file, &built.warnings);
            Ok(built.tag)
        }
        Target::MissingPath => Err(miette!(
            help = "give an existing Agentfile or build-context directory, or an image reference such as registry.example/agents/name:tag",
            "{}: no such file or directory (nothing to build or run)",
            a.reference
        )),
        Target::Image => Ok(a.reference.clone()),
    }
}
