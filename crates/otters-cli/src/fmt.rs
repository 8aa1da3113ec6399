//! `otters fmt`.
use std::path::PathBuf;
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agentfiles, directories (every Agentfile below them) or `-` (standard input to standard output)
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Write nothing; show the diff and exit 1 when a file is not in the canonical layout
    #[arg(long)]
    pub check: bool,
    /// Write nothing; show the diff of what formatting would change
    #[arg(long)]
    pub diff: bool,
}
