//! `otters lsp`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Speak over standard input and output (the only transport; accepted because editors pass it)
    #[arg(long)]
    pub stdio: bool,
}
