//! `otters kube REF`: the Kubernetes objects that run an agent's runnable export (see
//! docs/kubernetes.md). The YAML goes to stdout, or to `-o FILE`.
use super::{fail, fail_in, CliResult};
use otters_cli::kube::{Args, FormatArg};
use otters_oci::Platform;
use otters_run::export;
use otters_run::fetch::RegistryFetcher;
use otters_run::kube::agent::{agent_objects, Fetch};
use otters_run::kube::{kustomize, Kind, Warning};
use otters_run::prepare::Pull;
use std::process::ExitCode;

pub fn run(a: Args) -> CliResult {
    let platform = match &a.platform {
        Some(p) => Platform::parse(p).map_err(fail)?,
        None => export::linux_host(),
    };
    let opts = a.options().map_err(fail)?;
    refuse_unused_flags(&a, opts.kind)?;
    let base_dir = match (a.format, &a.output) {
        (FormatArg::Kustomize, Some(dir)) => Some(dir.clone()),
        (FormatArg::Kustomize, None) => {
            return Err(miette::miette!(
                help = "pass -o DIR, the directory of the base",
                "a Kustomize base is a directory: --format kustomize needs -o DIR"
            ))
        }
        (FormatArg::Yaml, _) => None,
    };
    let (kind, namespace) = (opts.kind, opts.namespace.clone());
    // It may pull the agent, its runtime and BINs, and writes the export: leased, so a
    // concurrent `prune` keeps what it wrote before it is reachable.
    let store = super::common::open_store_leased()?;
    let fetch = Fetch {
        offline: a.offline,
        client: super::common::client_options(a.insecure),
    };
    // Held to the gate `run` has (`--verify-key`, `[verify]`) before anything is made of it.
    let policy = a.gate.policy.load().map_err(fail)?;
    let gate = a.gate.gate(a.insecure, !a.offline);
    let registry = RegistryFetcher::new(fetch.client.clone());
    let pull = Pull::missing_unless(a.offline);
    otters_run::gate::fetch(
        &gate,
        &policy,
        &store,
        &registry,
        &a.reference,
        pull,
        "deploy",
    )
    .map_err(fail)?;
    let image = a.image.as_deref();
    let made = agent_objects(&store, &a.reference, &platform, &fetch, image, opts).map_err(fail)?;
    for w in &made.warnings {
        let fix = match w {
            Warning::HostPath(_) => "back each with --mount TARGET=pvc:NAME or TARGET=emptydir to keep \"restricted\"",
            Warning::ServingJob(_) => "use --kind deployment (the default) for a server, or give the agent an EXEC that finishes",
        };
        eprintln!("warning: {w}; {fix}");
    }
    if let Some(dir) = base_dir {
        let files = kustomize::base(&made.objects, kind, namespace.as_deref()).map_err(fail)?;
        kustomize::write_base(&dir, &files, a.force).map_err(fail)?;
        return Ok(ExitCode::SUCCESS);
    }
    match &a.output {
        Some(path) => otters_oci::archive::write_output(path, made.yaml.as_bytes())
            .map_err(|e| fail_in(format!("cannot write {}", path.display()), e))?,
        None => out!("{}", made.yaml),
    }
    Ok(ExitCode::SUCCESS)
}

/// Flags that only one kind or format reads are refused elsewhere rather than silently dropped.
fn refuse_unused_flags(a: &Args, kind: Kind) -> miette::Result<()> {
    if let Some(n) = a.replicas {
        if kind != Kind::Deployment {
            return Err(miette::miette!(
                help = "pass --kind deployment for several replicas, or leave out --replicas",
                "--replicas is a Deployment's: a {} runs one pod",
                kind.api_kind()
            ));
        }
        if n < 0 {
            return Err(miette::miette!(
                help = "give 0 or more (0 scales the Deployment down to no pod)",
                "--replicas {n}: a Deployment cannot have fewer than 0 replicas"
            ));
        }
    }
    if a.force && a.format != FormatArg::Kustomize {
        return Err(miette::miette!(
            help = "--force is for --format kustomize -o DIR; -o FILE is replaced as it is",
            "--force only lets a Kustomize base be written into a directory with other files"
        ));
    }
    Ok(())
}
