//! `otters inspect`.
use crate::flags::WhereFlags;
use crate::Format;
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// Image reference: a tag, a digest or a digest prefix, or a registry reference (read from
    /// its registry, with a note, when the local store does not hold it)
    pub reference: String,
    /// Show this platform's manifest of an index read from a registry (e.g. linux/arm64)
    #[arg(long, conflicts_with = "local")]
    pub platform: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub place: WhereFlags,
}
