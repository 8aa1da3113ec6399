//! `otters attach` and `otters discover`.
use crate::flags::WhereFlags;
use crate::Format;
use std::path::PathBuf;
#[derive(Debug, clap::Args)]
pub struct AttachArgs {
    /// The image to attach to: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// The artifact type of the new referrer (a media type, e.g. application/vnd.example.report+json)
    #[arg(long, value_name = "TYPE")]
    pub artifact_type: String,
    /// Files to attach, one layer each (media type application/octet-stream, named by title)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Media type of the attached files' layers
    #[arg(long, value_name = "TYPE", default_value = otters_spec::media_type::FILE_LAYER)]
    pub layer_media_type: String,
    /// Annotation of the referrer manifest (repeatable)
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,
    #[command(flatten)]
    pub place: WhereFlags,
}

#[derive(Debug, clap::Args)]
pub struct DiscoverArgs {
    /// The image whose referrers to list: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// Only referrers of this artifact type (at the first level)
    #[arg(long, value_name = "TYPE")]
    pub artifact_type: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// With --remote: stop listing after this many registry requests (the output says it was cut)
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_requests: usize,
    #[command(flatten)]
    pub place: WhereFlags,
}
