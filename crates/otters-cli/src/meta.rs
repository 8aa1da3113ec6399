//! `otters completion`, `otters version` and the hidden `otters manpages`.
use crate::Format;
use std::path::PathBuf;
#[derive(Debug, clap::Args)]
pub struct CompletionArgs {
    /// The shell to write a completion script for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct VersionArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, clap::Args)]
pub struct ManpagesArgs {
    /// Directory to write the pages into (created when missing)
    pub dir: PathBuf,
}
