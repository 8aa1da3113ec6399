//! `otters run`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Image reference, or a path to an Agentfile / build context to build first
    pub reference: String,
}

pub fn run(_a: Args) -> CliResult {
    miette::bail!("otters run is not built yet")
}
