//! `otters build`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Build context directory, an Agentfile, or `-` for standard input
    #[arg(default_value = ".")]
    pub context: std::path::PathBuf,
}

pub fn run(_a: Args) -> CliResult {
    miette::bail!("otters build is not built yet")
}
