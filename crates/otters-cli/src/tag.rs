//! `otters rm` and `otters tag`.
#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Images to remove: a tag (removes that tag), or a digest, `name@digest` or a unique digest
    /// prefix (removes the image's entry, untagged `<none>` ones included). Blobs stay in the
    /// store until `otters prune`
    #[arg(required = true)]
    pub references: Vec<String>,
    /// Remove an image named by digest even when several tags name it (all of them go)
    #[arg(short, long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct TagArgs {
    /// Existing image: tag, digest or digest prefix
    pub source: String,
    /// New tag
    pub target: String,
}
