//! `otters push`.
use crate::flags::TransferFlags;
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The local image to push, named by its registry reference (e.g. 127.0.0.1:5000/team/agent:1)
    pub reference: String,
    /// Push to this reference instead of REFERENCE
    pub destination: Option<String>,
    /// Push the image only, not its referrers (signatures, SBOMs, attestations), which go by default
    #[arg(long)]
    pub no_referrers: bool,
    #[command(flatten)]
    pub flags: TransferFlags,
}
