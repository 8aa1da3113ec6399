//! `otters bin pack`.
#[derive(Debug, clap::Subcommand)]
pub enum BinCommand {
    /// Pack static binaries into a bin image (a RUNTIME or BIN): one image per platform under an index
    ///
    /// The image follows the bin contract otters and openotters read: the annotations
    /// `io.openotters.bin.name` (NAME), `io.openotters.bin.path` (`/`), `io.openotters.bin.usage`
    /// (`/USAGE.md`, with --usage) and `org.opencontainers.image.description`; one tar+gzip layer
    /// holding the file as NAME (mode 0755, owner 0, mtime 0); artifact type
    /// `application/vnd.openotters.bin.v1`. The same files give the same digest anywhere:
    /// `org.opencontainers.image.created` is set only from `SOURCE_DATE_EPOCH`. For a RUNTIME, name
    /// it `runtime` (the docker executor runs `/runtime`). See docs/bins.md.
    Pack(PackArgs),
}

#[derive(Debug, clap::Args)]
pub struct PackArgs {
    /// The binary's name in the image (a BIN's name in the Agentfile; `runtime` for a RUNTIME)
    pub name: String,
    /// The files, one per platform (each an ELF executable whose platform otters reads from its
    /// header, or one --platform per file, in the same order)
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
    /// Tag of the image in the local store (e.g. 127.0.0.1:5000/tools/jq:1.7)
    #[arg(short = 't', long = "tag", value_name = "REF")]
    pub tag: String,
    /// A Markdown usage document, stored as `/USAGE.md` (what the model reads about the tool)
    #[arg(long, value_name = "FILE")]
    pub usage: Option<std::path::PathBuf>,
    /// A one-line description (`org.opencontainers.image.description`)
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
    /// The platform of each file, in order (repeatable; default: read from each ELF header)
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Vec<String>,
    /// Also push the image to its registry (the tag's), as `otters push REF` does
    #[arg(long)]
    pub push: bool,
    #[command(flatten)]
    pub flags: crate::flags::TransferFlags,
}

impl PackArgs {
    /// What to pack, from the flags and `SOURCE_DATE_EPOCH`'s value (which sets the time).
    pub fn request(
        &self,
        source_date_epoch: Option<&str>,
    ) -> Result<otters_pipeline::binpack::Request, otters_pipeline::binpack::PackError> {
        otters_pipeline::binpack::Request::new(
            &self.name,
            &self.files,
            &self.platform,
            self.usage.clone(),
            self.description.clone(),
            source_date_epoch,
        )
    }

    /// `otters push REF` of the packed image (it has no referrers yet).
    pub fn push_args(self) -> crate::push::PushArgs {
        crate::push::PushArgs {
            reference: self.tag,
            destination: None,
            no_referrers: true,
            flags: self.flags,
        }
    }
}
