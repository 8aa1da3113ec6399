//! `otters rm`, `tag`, `save`, `load`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Image references to remove
    pub references: Vec<String>,
}
#[derive(Debug, clap::Args)]
pub struct TagArgs {
    pub source: String,
    pub target: String,
}
#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    pub reference: String,
}
#[derive(Debug, clap::Args)]
pub struct LoadArgs {}

pub fn run_rm(_a: RmArgs) -> CliResult {
    miette::bail!("not built yet")
}
pub fn run_tag(_a: TagArgs) -> CliResult {
    miette::bail!("not built yet")
}
pub fn run_save(_a: SaveArgs) -> CliResult {
    miette::bail!("not built yet")
}
pub fn run_load(_a: LoadArgs) -> CliResult {
    miette::bail!("not built yet")
}
