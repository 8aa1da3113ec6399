//! `otters build`.
use crate::flags::ProgressMode;
use crate::Format;
use std::path::PathBuf;
// Rationale: the flags mirror `docker build`; a bool per switch is what clap parses them into.
#[allow(clippy::struct_excessive_bools, clippy::struct_field_names)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Build context directory, an Agentfile, or `-` to read the Agentfile from standard input
    #[arg(default_value = ".")]
    pub context: String,
    /// The Agentfile, relative to the context (default: <CONTEXT>/Agentfile)
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// Tag the image (repeatable); default <NAME>:latest, or agent:latest without NAME
    #[arg(short = 't', long = "tag")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub build_args: super::flags::BuildArgFlags,
    /// Also write the image to `type=oci,dest=FILE` (a tarball), or build it into
    /// `type=oci,tar=false,dest=DIR` / `type=oci-layout,dest=DIR` (a directory)
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    /// Print only the digest
    #[arg(short, long)]
    pub quiet: bool,
    /// Progress output on stderr: `auto` (bars on a terminal, nothing elsewhere), `plain` (one
    /// line per large input written and per blob pushed, with size and time, then one per layer:
    /// for CI logs), `tty` (bars even when stderr is not a terminal), `quiet` (same as `-q`)
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub pins: super::flags::PinFlags,
    /// Push the tags to their registries after building
    #[arg(long)]
    pub push: bool,
    #[command(flatten)]
    pub attest: crate::flags::AttestFlags,
    #[command(flatten)]
    pub policy: crate::flags::PolicyFlags,
    /// Platform to resolve RUNTIME and BIN images for (e.g. linux/amd64); several, separated by
    /// commas (linux/amd64,linux/arm64), build an image index with one manifest per platform
    #[arg(long)]
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Re-read and re-hash every input, ignoring the file-hash cache
    #[arg(long)]
    pub no_cache: bool,
    /// Add a label, as a LABEL line would (config and manifest annotations; repeatable)
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// Add a manifest annotation (repeatable; overrides LABELs of the same key)
    #[arg(long = "annotation", value_name = "K=V")]
    pub annotations: Vec<String>,
    /// Annotate the image (and a multi-platform index) with org.opencontainers.image.source,
    /// .revision and .url from GitHub Actions' or GitLab CI's variables
    #[arg(long)]
    pub annotations_from_ci: bool,
    /// The time stamped into the image (created, file mtimes), overriding `SOURCE_DATE_EPOCH`:
    /// seconds since 1970, or `git` for the committer time of the last commit of the context's
    /// git work tree (uncommitted changes do not count)
    #[arg(long, value_name = "SECONDS|git")]
    pub source_date_epoch: Option<String>,
    /// Write the image digest to FILE (removed first, so a failed build leaves none)
    #[arg(long, value_name = "FILE")]
    pub iidfile: Option<PathBuf>,
    /// Write build results as JSON to FILE (buildx's keys, plus otters.*)
    #[arg(long, value_name = "FILE")]
    pub metadata_file: Option<PathBuf>,
}
