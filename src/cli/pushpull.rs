//! `otters push`, `pull`, `lock`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    pub reference: String,
}
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    pub reference: String,
}
#[derive(Debug, clap::Args)]
pub struct LockArgs {}

pub fn run_push(_a: PushArgs) -> CliResult {
    miette::bail!("not built yet")
}
pub fn run_pull(_a: PullArgs) -> CliResult {
    miette::bail!("not built yet")
}
pub fn run_lock(_a: LockArgs) -> CliResult {
    miette::bail!("not built yet")
}
