//! `otters lint`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agentfiles or directories to check (`-` reads standard input)
    #[arg(default_value = ".")]
    pub paths: Vec<std::path::PathBuf>,
}

pub fn run(_a: Args) -> CliResult {
    miette::bail!("otters lint is not built yet")
}
