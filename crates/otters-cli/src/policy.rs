//! `otters policy show` and `otters policy check`.
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum PolicyCommand {
    /// Print the policy in effect for a directory: every rule, and the file and line it came from
    Show(ShowArgs),
    /// Check an Agentfile (or its directory) or an image against the policy; exit 1 on a violation
    Check(CheckArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The project directory whose otters.toml narrows the policy
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub policy: super::flags::PolicyFlags,
    /// Output format
    #[arg(long, value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// An Agentfile, a directory holding one, or an image reference (the local store's, else pulled)
    pub target: String,
    #[command(flatten)]
    pub policy: super::flags::PolicyFlags,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Allow plain HTTP and unverified TLS for the image's registry
    #[arg(long)]
    pub insecure: bool,
}
