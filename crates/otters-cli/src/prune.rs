//! `otters prune` (and `otters image prune`).
use crate::Format;
use otters_pipeline::view::prune::parse_age;
#[derive(Debug, clap::Args)]
pub struct PruneArgs {
    /// List what would be removed; remove nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Also keep unreferenced blobs written or reused less than this long ago (`0`, `90s`, `30m`,
    /// `1h`, `2d`). Blobs a running build, pull or load has not tagged yet are always kept (it
    /// holds a lease on them), so the default `0` frees everything else at once
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = parse_age)]
    pub min_age: std::time::Duration,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}
