//! `otters schema`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A schema name such as agentfile-lock or run-plan (see --list)
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// List every schema: its name, what it describes, and its $id
    #[arg(long, conflicts_with = "name")]
    pub list: bool,
}
