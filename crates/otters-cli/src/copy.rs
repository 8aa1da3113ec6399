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
    /// List what would be copied, with the referrers of each image and the destination tags it
    /// would replace or keep; move nothing
    #[arg(long)]
    pub dry_run: bool,
    /// With -r: also read pins on this registry (HOST or HOST:PORT as in the pins; repeatable).
    /// Without it, -r follows pins only on the source's registry and refuses, listing them,
    /// pins on any other: copying those would fetch them with your credentials there and
    /// republish them at the destination
    #[arg(long = "from-registry", value_name = "HOST", requires = "recursive")]
    pub from_registries: Vec<String>,
    /// With -r: move destination tags that already name other content to the pinned images.
    /// Without it, a pinned image whose tag names something else at the destination is copied by
    /// digest alone and the tag is left as it is (the image named as DST is always tagged)
    #[arg(long, requires = "recursive")]
    pub force: bool,
    #[command(flatten)]
    pub transfer: TransferFlags,
    #[command(flatten)]
    pub policy: crate::flags::PolicyFlags,
}
