//! `otters pull`.
use crate::flags::TransferFlags;
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The image to download (e.g. ghcr.io/org/agent:1, or name@sha256:…), or an OCI layout or
    /// archive another tool wrote: `oci:DIR[:tag]`, `oci-archive:FILE[:tag]`
    pub reference: String,
    /// Local tag to give the image (default: REFERENCE as written)
    #[arg(short = 't', long = "tag")]
    pub tag: Option<String>,
    /// Pull only this platform's manifest of an index (e.g. linux/arm64)
    #[arg(long)]
    pub platform: Option<String>,
    /// Also pull the image's referrers (signatures, SBOMs, attestations)
    #[arg(long)]
    pub referrers: bool,
    #[command(flatten)]
    pub flags: TransferFlags,
}
