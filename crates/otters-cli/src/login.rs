//! `otters login` and `otters logout`.
#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// Registry host with optional port (default: docker.io)
    pub registry: Option<String>,
    /// User name (asked for on a terminal when not given)
    #[arg(short = 'u', long = "username")]
    pub username: Option<String>,
    /// Read the password from standard input
    #[arg(long)]
    pub password_stdin: bool,
    /// Password (visible in the process list; prefer --password-stdin)
    #[arg(short = 'p', long = "password", conflicts_with = "password_stdin")]
    pub password: Option<String>,
    /// Allow plain HTTP and unverified TLS for a registry that is not on this machine
    #[arg(long)]
    pub insecure: bool,
}

#[derive(Debug, clap::Args)]
pub struct LogoutArgs {
    /// Registry host with optional port (default: docker.io)
    pub registry: Option<String>,
}
