//! `otters explain CODE`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A diagnostic code such as AF101
    pub code: String,
}

pub fn run(_a: Args) -> CliResult {
    miette::bail!("otters explain is not built yet")
}
