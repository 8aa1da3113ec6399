//! `otters lock`.
#[derive(Debug, clap::Args)]
#[command(mut_arg("build_args", |a| a.help("Set a build argument (repeatable); a bare KEY takes its value from the environment, as `otters build --build-arg` does")))]
pub struct LockArgs {
    /// Build context directory or Agentfile
    #[arg(default_value = ".")]
    pub path: std::path::PathBuf,
    /// The Agentfile, relative to the context (default: <PATH>/Agentfile)
    #[arg(short = 'f', long = "file")]
    pub file: Option<std::path::PathBuf>,
    /// Platform to resolve images for (default: this machine)
    #[arg(long)]
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine
    #[arg(long)]
    pub insecure: bool,
    #[command(flatten)]
    pub build_args: super::flags::BuildArgFlags,
}
