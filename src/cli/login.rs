//! `otters login` and `logout`.
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    pub registry: String,
}
#[derive(Debug, clap::Args)]
pub struct LogoutArgs {
    pub registry: String,
}

pub fn run_login(_a: LoginArgs) -> CliResult {
    miette::bail!("not built yet")
}
pub fn run_logout(_a: LogoutArgs) -> CliResult {
    miette::bail!("not built yet")
}
