//! `otters images` and `otters inspect`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct ImagesArgs {}

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// Image reference
    pub reference: String,
}

pub fn run_images(_a: ImagesArgs) -> CliResult {
    miette::bail!("otters images is not built yet")
}

pub fn run_inspect(_a: InspectArgs) -> CliResult {
    miette::bail!("otters inspect is not built yet")
}
