//! `otters run`: materialise an agent from an image (or an Agentfile, built first) and exec its
//! runtime on the host or through a docker-compatible CLI.
use super::CliResult;
use miette::{miette, IntoDiagnostic};
use otters_oci::registry::ClientOptions;
use otters_oci::Store;
use otters_pipeline::run::env::parse_override;
use otters_pipeline::run::extract::Limits;
use otters_pipeline::run::fetch::RegistryFetcher;
use otters_pipeline::run::mounts::{self, RealHost};
use otters_pipeline::run::overrides::{parse_config, Overrides};
use otters_pipeline::run::plan::{
    self, is_path_safe, Executor, RunOptions, CONTAINER_USER, DEFAULT_BASE_IMAGE,
};
use otters_pipeline::run::source::{self, Fetcher, LocalOnly, Platform};
use otters_pipeline::run::{exec, materialise};
use std::os::unix::fs::MetadataExt;
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
    #[arg(long, value_parser = ["system", "docker"], default_value = "system")]
    pub executor: String,
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
    #[arg(long, value_parser = ["never", "missing"], default_value = "missing")]
    pub pull: String,
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
}

/// True when the user wrote a path, not an image reference: `./x`, `../x`, `/x`, `~/x`, `.`, `..`.
/// Such an argument is never parsed as a reference, so a typo reads as a missing path.
fn written_as_path(s: &str) -> bool {
    s == "." || s == ".." || ["./", "../", "/", "~/"].iter().any(|p| s.starts_with(p))
}

pub fn run(mut a: Args) -> CliResult {
    if a.offline {
        a.pull = "never".into();
    }
    let envs: Vec<(String, String)> = a
        .envs
        .iter()
        .map(|e| parse_override(e))
        .collect::<Result<_, _>>()
        .map_err(|e| miette!("{e}"))?;
    let configs: Vec<(String, String)> = a
        .configs
        .iter()
        .map(|c| parse_config(c))
        .collect::<Result<_, _>>()
        .map_err(|e| miette!("{e}"))?;
    let user_mounts = mounts::parse_all(&a.mounts, &RealHost).map_err(|e| miette!("{e}"))?;
    let platform = match &a.platform {
        Some(p) => Platform::parse(p).map_err(|e| miette!("--platform: {e}"))?,
        None if a.executor == "docker" => Platform {
            os: "linux".into(),
            ..Platform::host()
        },
        None => Platform::host(),
    };

    let home = super::otters_home();
    let store = Store::open(home.join("store")).into_diagnostic()?;
    let registry = RegistryFetcher::new(ClientOptions {
        insecure: a.insecure,
        ..ClientOptions::default()
    });
    let fetcher: &dyn Fetcher = if a.pull == "never" {
        &LocalOnly
    } else {
        &registry
    };

    let reference = if Path::new(&a.reference).exists() {
        build_first(&a.reference, &a, &store)?
    } else if written_as_path(&a.reference) {
        return Err(miette!(
            help = "give an existing Agentfile or build-context directory, or an image reference such as registry.example/agents/name:tag",
            "{}: no such file or directory (nothing to build or run)",
            a.reference
        ));
    } else {
        a.reference.clone()
    };
    let digest = match store.resolve(&reference).into_diagnostic()? {
        Some(d) => d.digest,
        None if a.pull == "never" => {
            return Err(miette!("{}", source::SourceError::NotLocal { reference }))
        }
        None => {
            let d = registry
                .pull(&store, &reference, None)
                .map_err(|e| miette!("{e}"))?;
            if let Some(desc) = store.resolve(d.as_str()).into_diagnostic()? {
                store.tag(&reference, &desc).into_diagnostic()?;
            }
            if a.dry_run {
                // Planning needs the image's config and agent.yaml, so a dry run pulls like a run
                // (manifests and layers, verified); say so, since "do nothing" suggests otherwise.
                eprintln!(
                    "note: {reference} was pulled into the local store to plan the run (`otters rm {reference}` removes the tag)"
                );
            }
            d
        }
    };
    let image = source::load_agent(&store, &reference, &digest).map_err(|e| miette!("{e}"))?;

    let name = a
        .name
        .clone()
        .or_else(|| {
            image
                .model
                .agent
                .name_str()
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "agent".into());
    if !is_path_safe(&name) {
        return Err(miette!(
            "agent name {name:?} must match [A-Za-z0-9][A-Za-z0-9._-]{{0,62}}; pass --name"
        ));
    }
    let cwd = std::env::current_dir().into_diagnostic()?;
    let root = a
        .root
        .clone()
        .map_or_else(|| home.join("agents").join(&name), |r| cwd.join(r));
    let id = previous_id(&root).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());

    let (executor, owner) = if a.executor == "docker" {
        let (uid, gid) = std::fs::metadata("/proc/self").map_or((0, 0), |m| (m.uid(), m.gid()));
        let (user, owner) = if uid == 0 {
            (CONTAINER_USER.to_owned(), Some((65532, 65532)))
        } else {
            (format!("{uid}:{gid}"), None)
        };
        (
            Executor::Docker {
                cli: a.docker.clone(),
                base_image: a.base_image.clone(),
                user,
            },
            owner,
        )
    } else {
        (Executor::System, None)
    };
    let opts = RunOptions {
        root,
        name,
        id,
        executor,
        overrides: Overrides {
            model: a.model.clone(),
            envs,
            configs,
        },
        mounts: user_mounts,
        // A dry run shows the whole plan, missing mounts listed, and says what a run would do.
        allow_missing_mounts: a.allow_missing_mounts || a.dry_run,
        platform,
    };
    let host_env = |k: &str| std::env::var(k).ok();
    let plan = plan::plan(&image, &opts, &host_env).map_err(|e| miette!("{e}"))?;
    // A dry run that a real run would refuse says so once, below, instead of "left unmounted".
    let refused_mounts = a.dry_run && !a.allow_missing_mounts && !plan.missing_mounts.is_empty();
    for w in &plan.warnings {
        if refused_mounts && w.starts_with("declared mount(s) left unmounted") {
            continue;
        }
        eprintln!("warning: {w}");
    }
    let model = a
        .model
        .as_deref()
        .or(image.model.agent.model.as_ref().map(|m| m.value.as_str()));
    if let Some(w) = missing_provider_key(model, &plan.env) {
        eprintln!("warning: {w}");
    }
    if a.dry_run {
        outln!("{}", serde_json::to_string_pretty(&plan).into_diagnostic()?);
        if refused_mounts {
            eprintln!(
                "warning: a run would stop here: declared mount(s) missing: {}; supply them with -v HOST:TARGET or pass --allow-missing-mounts",
                plan.missing_mounts.join(", ")
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    materialise::materialise(&plan, &store, fetcher, &Limits::default(), owner)
        .map_err(|e| miette!("{e}"))?;
    Err(miette!("{}", exec::exec(&plan)))
}

/// Providers whose models run locally and need no API key.
const KEYLESS_PROVIDERS: [&str; 5] = ["ollama", "lmstudio", "llamacpp", "vllm", "local"];

/// A warning when MODEL's provider key (`anthropic/…` → `ANTHROPIC_API_KEY`) is not among the
/// variables the runtime gets, i.e. unset or empty where otters runs: the agent would start and
/// fail on its first model call.
fn missing_provider_key(
    model: Option<&str>,
    env: &[otters_pipeline::run::env::EnvEntry],
) -> Option<String> {
    let model = model.filter(|m| !m.is_empty())?;
    let provider = model.split_once('/')?.0;
    if KEYLESS_PROVIDERS.contains(&provider.to_ascii_lowercase().as_str()) {
        return None;
    }
    let key = format!(
        "{}_API_KEY",
        otters_pipeline::run::env::provider_prefix(model)?
    );
    if env.iter().any(|e| e.key == key) {
        return None;
    }
    // MODEL comes from the image: shown escaped and bounded.
    let model = otters_oci::validate::escape_text(model, 120);
    let key = otters_oci::validate::escape_text(&key, 80);
    Some(format!(
        "MODEL {model} needs {key}, which is not set in this environment: the runtime starts without it and its first model call will fail; export {key} before `otters run`"
    ))
}

/// The id recorded by a previous run of the same agent, so it keeps its identity.
fn previous_id(root: &Path) -> Option<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // The old tree is the agent's: a runtime may have replaced the file with a link, a FIFO or a
    // huge file. Read at most 64 KiB of a regular file, never through a final symlink.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(
            (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK)
                .bits()
                .cast_signed(),
        )
        .open(root.join("etc/agent.yaml"))
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(64 << 10).read_to_string(&mut text).ok()?;
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).ok()?;
    let id = doc.get("id")?.as_str()?;
    uuid::Uuid::parse_str(id).ok().map(|u| u.to_string())
}

/// `otters run PATH`: build the Agentfile into the local store under a tag derived from its path.
/// Prints nothing on stdout (so `--dry-run` output stays one JSON document); warnings and errors
/// go to stderr.
fn build_first(path: &str, a: &Args, store: &Store) -> miette::Result<String> {
    use otters_pipeline::build::{self as lib, AgentfileSource, BuildOptions, NoProgress};
    use sha2::Digest as _;
    let abs = std::fs::canonicalize(path).into_diagnostic()?;
    let slug = hex::encode(&sha2::Sha256::digest(abs.as_os_str().as_encoded_bytes())[..6]);
    let tag = format!("localhost/otters-run/{slug}:latest");
    let (context, agentfile) = lib::locate(Path::new(path), None);
    let opts = BuildOptions {
        tags: vec![tag.clone()],
        platform: a.platform.clone(),
        insecure: a.insecure,
        offline: a.pull == "never",
        allow_unpinned: a.allow_unpinned,
        locked: a.locked,
        hash_cache: Some(super::otters_home().join("cache/blobs.json")),
        source_date_epoch: otters_pipeline::lower::epoch::parse(
            std::env::var("SOURCE_DATE_EPOCH").ok().as_deref(),
        )
        .into_diagnostic()?,
        ..BuildOptions::new(context, AgentfileSource::Path(agentfile))
    };
    let out = lib::build(&opts, store, &mut NoProgress).map_err(|e| {
        let report = super::build::failure(&e);
        miette!("building {path} failed; nothing was run: {report}")
    })?;
    let warnings: Vec<_> = out
        .diagnostics
        .into_iter()
        .filter(|d| d.severity >= otters_agentfile::diagnostic::Severity::Warning)
        .collect();
    super::build::print_diagnostics(&out.file, &warnings);
    Ok(tag)
}
