//! `otters images`.
#[derive(Debug, clap::Args)]
pub struct ImagesArgs {
    /// Output format: `text`, `json`, or a template of fields, one line per image, e.g.
    /// '{{.Reference}} {{.Digest}}' (fields `Reference`, `Repository`, `Tag`, `Digest`,
    /// `ShortDigest`, `Size`, `Created`)
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Print only the image digests, one per image (for scripts: `otters images -q | …`)
    #[arg(short, long, conflicts_with = "format")]
    pub quiet: bool,
    /// Show the full digest instead of its first 12 hex digits
    #[arg(long)]
    pub digests: bool,
    /// Show only matching images: `reference=GLOB` (e.g. `meteo:*`, `*/agents/*`; several are
    /// or-ed) or `dangling=true|false` (untagged images); different keys must all match
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
}
