//! `otters copy`.
use crate::flags::TransferFlags;
#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    /// What to copy: a registry reference (by tag or digest), `oci:DIR[:name]` or
    /// `oci-archive:FILE[:name]`
    pub source: String,
    /// Where to: a registry reference (without a tag: the source's tag), `oci:DIR[:name]` or
    /// `oci-archive:FILE[:name]`
    pub destination: String,
    /// Also copy everything the agent pins: RUNTIME, each BIN and the FROM parent (recursively),
    /// each as the whole index it was pinned from, with their referrers
    #[arg(short, long)]
    pub recursive: bool,
    /// List what would be copied; move nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub transfer: TransferFlags,
}
