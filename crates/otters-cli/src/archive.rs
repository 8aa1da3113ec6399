//! `otters save` and `otters load`.
use std::path::PathBuf;
#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    /// Images to save, all into one archive: tag, digest or digest prefix
    #[arg(required = true, value_name = "IMAGE")]
    pub references: Vec<String>,
    /// The oci-archive file to write (default, or `-`: standard output, which must not be a
    /// terminal)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also save everything the images pin (RUNTIME, BINs, FROM parents, recursively, with their
    /// referrers), fetching what the store lacks; `otters load` names each as it was pinned
    #[arg(long)]
    pub with_deps: bool,
    /// With --with-deps: allow plain HTTP and unverified TLS for registries not on this machine
    #[arg(long, requires = "with_deps")]
    pub insecure: bool,
    /// With --with-deps: also read pins on this registry (HOST or HOST:PORT as in the pins;
    /// repeatable). Without it, pins are followed only on the registries of the images named and
    /// any other pin is refused, listed
    #[arg(long = "from-registry", value_name = "HOST", requires = "with_deps")]
    pub from_registries: Vec<String>,
    /// With --with-deps: also hold each image to the `[policy]` of this file before anything is
    /// fetched (repeatable; on top of config.toml's and `OTTERS_POLICY`'s; see docs/policy.md)
    #[arg(long = "policy", value_name = "FILE", requires = "with_deps")]
    pub policy: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The oci-archive file (or OCI layout directory) to read (default, or `-`: standard input)
    #[arg(short, long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Move local tags that already name other images to the loaded ones (without it, `load`
    /// refuses and changes no tag)
    #[arg(long)]
    pub force: bool,
}
