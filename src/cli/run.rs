//! `otters run`: materialise an agent from an image (or an Agentfile, built first) and exec its
//! runtime on the host or through a docker-compatible CLI.
use super::{fail, fail_in, CliResult};
use miette::miette;
use otters_oci::registry::ClientOptions;
use otters_oci::Store;
use otters_pipeline::lower::agent_yaml::Executor as ExecutorKind;
use otters_pipeline::run::env::parse_override;
use otters_pipeline::run::extract::Limits;
use otters_pipeline::run::fetch::RegistryFetcher;
use otters_pipeline::run::mounts::{self, RealHost, UserMount};
use otters_pipeline::run::overrides::{parse_config, Overrides};
use otters_pipeline::run::plan::{self, RunPlan, DEFAULT_BASE_IMAGE};
use otters_pipeline::run::prepare::{self, Prepared, Pull, Target};
use otters_pipeline::run::source::{Fetcher, LocalOnly, Platform};
use otters_pipeline::run::{exec, materialise};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// Rationale: the flags mirror `otters run`'s command-line switches one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Image reference, or a path to an Agentfile / build context to build first
    pub reference: String,
    /// Agent directory (default `$OTTERS_HOME/agents/<name>`)
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Agent name (default: the image's NAME, else `agent`)
    #[arg(long)]
    pub name: Option<String>,
    /// Where the runtime runs: on this host, or in a container
    #[arg(long, value_enum, default_value = "system")]
    pub executor: ExecutorArg,
    /// Docker-compatible CLI for --executor docker (e.g. podman)
    #[arg(long, value_name = "PATH", default_value = "docker")]
    pub docker: PathBuf,
    /// Base image of the container (--executor docker)
    #[arg(long, value_name = "IMG", default_value = DEFAULT_BASE_IMAGE)]
    pub base_image: String,
    /// Set an environment variable for the runtime (repeatable)
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub envs: Vec<String>,
    /// Set a CONFIG value (repeatable)
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub configs: Vec<String>,
    /// Mount a host path: HOST:TARGET[:DESC][:ro|:rw] (repeatable)
    #[arg(short = 'v', long = "mount", value_name = "SPEC")]
    pub mounts: Vec<String>,
    /// Override the image's MODEL
    #[arg(long)]
    pub model: Option<String>,
    /// Pass `NAME_API_KEY` and `NAME_API_BASE` to the runtime when MODEL's provider is NAME, for a
    /// provider otters does not know (repeatable)
    #[arg(long = "provider", value_name = "NAME")]
    pub providers: Vec<String>,
    /// Start even when a MOUNT the agent declares is not supplied
    #[arg(long)]
    pub allow_missing_mounts: bool,
    /// Print the plan as JSON and do nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Platform of the runtime and BIN binaries (default: this host)
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Pull missing images from their registry, or never contact one
    #[arg(long, value_enum, default_value = "missing")]
    pub pull: PullArg,
    /// Never contact a registry (same as `--pull never`); when REFERENCE is a path, build from
    /// Agentfile.lock and the local store only, as `otters build --offline` does
    #[arg(long)]
    pub offline: bool,
    /// When REFERENCE is a path: build even when an image cannot be pinned to a digest
    #[arg(long)]
    pub allow_unpinned: bool,
    /// When REFERENCE is a path: fail if Agentfile.lock is missing or out of date
    #[arg(long)]
    pub locked: bool,
    /// Refuse the image unless a signature by this public key covers its digest (default: `key`
    /// under `[verify]` in `$OTTERS_HOME/config.toml`)
    #[arg(long, value_name = "PUB", conflicts_with = "identity")]
    pub verify_key: Option<PathBuf>,
    /// Refuse the image unless a keyless signature by this identity covers its digest (with
    /// --certificate-oidc-issuer and --trusted-root; defaults: the same keys under `[verify]`)
    #[command(flatten)]
    pub identity: super::trust::IdentityFlags,
}

/// `--executor`: the pipeline's executor kind as a flag value.
#[derive(Clone, Copy, Debug)]
pub struct ExecutorArg(ExecutorKind);

impl clap::ValueEnum for ExecutorArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            ExecutorArg(ExecutorKind::System),
            ExecutorArg(ExecutorKind::Docker),
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self.0 {
            ExecutorKind::System => "system",
            ExecutorKind::Docker => "docker",
        }))
    }
}

/// `--pull`: the pipeline's pull policy as a flag value.
#[derive(Clone, Copy, Debug)]
pub struct PullArg(Pull);

impl clap::ValueEnum for PullArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[PullArg(Pull::Never), PullArg(Pull::Missing)]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self.0 {
            Pull::Never => "never",
            Pull::Missing => "missing",
        }))
    }
}

pub fn run(a: Args) -> CliResult {
    let pull = if a.offline { Pull::Never } else { a.pull.0 };
    let (overrides, user_mounts) = overrides(&a)?;
    let platform = platform(&a)?;
    let home = super::otters_home();
    let store = Store::open(home.join("store"))
        .and_then(|s| s.leased())
        .map_err(fail)?;
    let registry = RegistryFetcher::new(ClientOptions {
        insecure: a.insecure,
        ..ClientOptions::default()
    });
    let reference = reference(&a, pull, &store)?;
    let image = prepare::fetch_image(&store, &registry, &reference, pull).map_err(fail)?;
    // Before anything of the image is read for the run, let alone extracted.
    let who = verifier(&a)?;
    if let Some(who) = &who {
        super::trust::verify_for_run(
            &store,
            &reference,
            &image.digest,
            who,
            a.insecure,
            pull != Pull::Never,
        )?;
    }
    if image.pulled && a.dry_run {
        // Planning needs the image's config and agent.yaml, so a dry run pulls like a run
        // (manifests and layers, verified); say so, since "do nothing" suggests otherwise.
        match &image.tag {
            Some(tag) => eprintln!(
                "note: {reference} was pulled into the local store to plan the run (`otters rm {tag}` removes the tag)"
            ),
            None => eprintln!(
                "note: {reference} was pulled into the local store to plan the run, untagged (a digest reference names no tag)"
            ),
        }
    }
    let request = prepare::Request {
        name: a.name.clone(),
        root: a.root.clone(),
        cwd: std::env::current_dir().map_err(fail)?,
        agents: home.join("agents"),
        executor: a.executor.0,
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
    let prepared = prepare::prepare(&store, &reference, &image.digest, request).map_err(fail)?;
    let host_env = |k: &str| std::env::var(k).ok();
    let plan = plan::plan(&prepared.image, &prepared.options, &host_env).map_err(fail)?;
    if let Some(owner) = prepared.owner {
        mounts::check_container_writes(&plan.mounts, owner).map_err(fail)?;
    }
    warn(&a, &prepared, &plan);
    if a.dry_run {
        return dry_run(&a, &plan);
    }
    let fetcher: &dyn Fetcher = match pull {
        Pull::Never => &LocalOnly,
        Pull::Missing => &registry,
    };
    materialise::materialise(&plan, &store, fetcher, &Limits::default(), prepared.owner)
        .map_err(fail)?;
    Err(fail(exec::exec(&plan)))
}

/// Who must have signed the image: `--verify-key` or `--certificate-identity[-regexp]` (with
/// the issuer and trusted root from the flags, else from `[verify]`), else `[verify]` of
/// `$OTTERS_HOME/config.toml` (`key`, or the keyless keys).
fn verifier(a: &Args) -> miette::Result<Option<otters_supply::signer::Who>> {
    let path = otters_oci::registry::config::RegistryConfig::default_path();
    let config = otters_oci::registry::config::RegistryConfig::load(&path).map_err(fail)?;
    let v = config.verify_settings();
    let flags = &a.identity;
    let named = flags.certificate_identity.is_some() || flags.certificate_identity_regexp.is_some();
    let in_config = |e: miette::Report| e.wrap_err(format!("[verify] in {}", path.display()));
    if a.verify_key.is_some() || named {
        let merged = super::trust::IdentityFlags {
            certificate_identity: flags.certificate_identity.clone(),
            certificate_identity_regexp: flags.certificate_identity_regexp.clone(),
            certificate_oidc_issuer: flags
                .certificate_oidc_issuer
                .clone()
                .or(v.certificate_oidc_issuer),
            trusted_root: flags.trusted_root.clone().or(v.trusted_root),
        };
        return super::trust::who(a.verify_key.as_deref(), &merged);
    }
    let from_config = super::trust::IdentityFlags {
        certificate_identity: v.certificate_identity,
        certificate_identity_regexp: v.certificate_identity_regexp,
        certificate_oidc_issuer: v.certificate_oidc_issuer,
        trusted_root: v.trusted_root,
    };
    super::trust::who(v.key.as_deref(), &from_config).map_err(in_config)
}

/// `-e`, `--config`, `--model` and `-v`, checked before anything is read.
fn overrides(a: &Args) -> miette::Result<(Overrides, Vec<UserMount>)> {
    let envs = a
        .envs
        .iter()
        .map(|e| parse_override(e))
        .collect::<Result<_, _>>()
        .map_err(fail)?;
    let configs = a
        .configs
        .iter()
        .map(|c| parse_config(c))
        .collect::<Result<_, _>>()
        .map_err(fail)?;
    let user_mounts = mounts::parse_all(&a.mounts, &RealHost).map_err(fail)?;
    let overrides = Overrides {
        model: a.model.clone(),
        envs,
        configs,
    };
    Ok((overrides, user_mounts))
}

fn platform(a: &Args) -> miette::Result<Platform> {
    match &a.platform {
        Some(p) => Platform::parse(p).map_err(|e| miette!("--platform: {e}")),
        None => Ok(prepare::default_platform(a.executor.0)),
    }
}

/// The image to run: REFERENCE, or the tag an Agentfile REFERENCE names was built into.
fn reference(a: &Args, pull: Pull, store: &Store) -> miette::Result<String> {
    match Target::of(&a.reference) {
        Target::Path => build_first(&a.reference, a, pull, store),
        Target::MissingPath => Err(miette!(
            help = "give an existing Agentfile or build-context directory, or an image reference such as registry.example/agents/name:tag",
            "{}: no such file or directory (nothing to build or run)",
            a.reference
        )),
        Target::Image => Ok(a.reference.clone()),
    }
}

/// The plan's warnings, and one when MODEL's provider key is missing. A dry run that a real run
/// would refuse says so once (see [`dry_run`]) instead of "left unmounted".
fn warn(a: &Args, prepared: &Prepared, plan: &RunPlan) {
    let refused_mounts = refused_mounts(a, plan);
    for w in &plan.warnings {
        if refused_mounts && w.starts_with("declared mount(s) left unmounted") {
            continue;
        }
        eprintln!("warning: {w}");
    }
    let model = a.model.as_deref().or(prepared
        .image
        .model
        .agent
        .model
        .as_ref()
        .map(|m| m.value.as_str()));
    if let Some(w) = prepare::missing_provider_key(model, &a.providers, &plan.env) {
        eprintln!("warning: {w}");
    }
}

fn refused_mounts(a: &Args, plan: &RunPlan) -> bool {
    a.dry_run && !a.allow_missing_mounts && !plan.missing_mounts.is_empty()
}

/// `--dry-run`: the plan as JSON on stdout.
fn dry_run(a: &Args, plan: &RunPlan) -> CliResult {
    outln!("{}", serde_json::to_string_pretty(plan).map_err(fail)?);
    if refused_mounts(a, plan) {
        eprintln!(
            "warning: a run would stop here: declared mount(s) missing: {}; supply them with -v HOST:TARGET or pass --allow-missing-mounts",
            plan.missing_mounts.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `otters run PATH`: build the Agentfile into the local store under a tag derived from its path.
/// Prints nothing on stdout (so `--dry-run` output stays one JSON document); warnings and errors
/// go to stderr.
fn build_first(path: &str, a: &Args, pull: Pull, store: &Store) -> miette::Result<String> {
    use otters_pipeline::build::{self as lib, AgentfileSource, BuildOptions};
    let tag = prepare::build_tag(Path::new(path)).map_err(fail)?;
    let (context, agentfile) = lib::locate(Path::new(path), None);
    let opts = BuildOptions {
        tags: vec![tag.clone()],
        platform: a.platform.clone(),
        insecure: a.insecure,
        offline: pull == Pull::Never,
        allow_unpinned: a.allow_unpinned,
        locked: a.locked,
        hash_cache: Some(super::otters_home().join("cache/blobs.json")),
        source_date_epoch: otters_pipeline::lower::epoch::parse(
            std::env::var("SOURCE_DATE_EPOCH").ok().as_deref(),
        )
        .map_err(fail)?,
        ..BuildOptions::new(context, AgentfileSource::Path(agentfile))
    };
    let out = lib::build(&opts, store, &mut |_| {}).map_err(|e| {
        let kind = super::common::build_failure(e);
        fail_in(format!("building {path} failed; nothing was run"), kind)
    })?;
    let warnings: Vec<_> = out
        .diagnostics
        .into_iter()
        .filter(|d| d.severity >= otters_agentfile::diagnostic::Severity::Warning)
        .collect();
    super::common::print_diagnostics(&out.file, &warnings);
    Ok(tag)
}
