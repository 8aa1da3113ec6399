//! `otters export`.
/// What to export the agent as.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum As {
    /// An OCI image any container runtime runs: the agent tree, the runtime and its BINs
    Runnable,
    /// The agent's etc/ tree alone, as an image (tar+gzip layer) to mount as an image volume
    /// (`otters kube --tree image`)
    Tree,
}

// Rationale: the flags are independent switches, as `otters run`'s are.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent: a local tag or digest, or a registry reference (pulled when missing)
    pub reference: String,
    /// What to export it as
    #[arg(long = "as", value_enum)]
    pub as_: As,
    /// Platform of the image (default: linux on this machine's architecture; for an agent built
    /// as an index, every platform it has, as an index)
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Also push the image to the agent's repository (by digest, as a referrer of the agent)
    #[arg(long)]
    pub push: bool,
    /// With --push: sign the pushed image with this private key (what a cluster pulls); the
    /// signature is stored and pushed beside it, as `otters sign REPO@sha256:…` would
    #[arg(long, value_name = "KEY", requires = "push")]
    pub sign_key: Option<std::path::PathBuf>,
    /// Use only the local store (no pull of the agent, its runtime or BINs)
    #[arg(long)]
    pub offline: bool,
    /// Allow plain HTTP and unverified TLS for a registry that is not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Print only the digest
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub gate: crate::flags::GateFlags,
}
