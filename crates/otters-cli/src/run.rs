//! `otters run`.
use otters_run::plan::DEFAULT_BASE_IMAGE;
use std::path::PathBuf;
// Rationale: the flags mirror `otters run`'s command-line switches one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("offline", |a| a.help("Never contact a registry (same as `--pull never`); when REFERENCE is a path, build from Agentfile.lock and the local store only, as `otters build --offline` does")),
    mut_arg("allow_unpinned", |a| a.help("When REFERENCE is a path: build even when an image cannot be pinned to a digest")),
    mut_arg("locked", |a| a.help("When REFERENCE is a path: fail if Agentfile.lock is missing or out of date"))
)]
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
    pub executor: otters_pipeline::lower::agent_yaml::Executor,
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
    /// `unenforced`: run an agent that declares EGRESS with the system executor, which cannot
    /// confine its network
    #[arg(long, value_enum, value_name = "MODE")]
    pub egress: Option<EgressArg>,
    /// Platform of the runtime and BIN binaries (default: this host)
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Pull missing images from their registry; always (ask the registry what the reference
    /// names now, and pull when its digest is not the local one); or never contact one
    #[arg(long, value_enum, default_value = "missing")]
    pub pull: otters_run::prepare::Pull,
    #[command(flatten)]
    pub pins: super::flags::PinFlags,
    #[command(flatten)]
    pub gate: crate::flags::GateFlags,
}

/// `--egress`, as a flag value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EgressArg {
    // Accept that the system executor does not hold the agent to its EGRESS (no doc comment: clap
    // would switch the whole help to its long layout to show it).
    Unenforced,
}
