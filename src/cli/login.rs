//! `otters login` and `logout`: credentials in docker's `config.json` (`$DOCKER_CONFIG` or
//! `~/.docker`), verified against the registry before they are written.
use super::CliResult;
use crate::oci::auth::{self, Credential};
use crate::oci::registry::{ClientOptions, RegistryClient};
use crate::reference::{Reference, DOCKER_HUB};
use miette::miette;
use std::io::Read as _;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// Registry host with optional port (default: docker.io)
    pub registry: Option<String>,
    /// User name
    #[arg(short = 'u', long = "username")]
    pub username: String,
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

/// Normalises a registry argument (`docker.io`, `127.0.0.1:5000`, `https://ghcr.io/`).
fn registry_of(arg: Option<&str>) -> miette::Result<Reference> {
    let text = arg.unwrap_or(DOCKER_HUB);
    let host = text
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let host = if host == "index.docker.io" || host == "index.docker.io/v1" {
        DOCKER_HUB
    } else {
        host
    };
    if host.contains('/') || host.is_empty() {
        return Err(miette!(
            "`{text}` is not a registry host: give host[:port], e.g. ghcr.io or 127.0.0.1:5000"
        ));
    }
    // Parse `<host>/x` so the host goes through the reference grammar's domain rules.
    let probe = if host.contains(['.', ':']) || host == "localhost" {
        format!("{host}/x")
    } else {
        format!("{host}.invalid/x")
    };
    let r = Reference::parse(&probe)
        .map_err(|_| miette!("`{text}` is not a valid registry host[:port]"))?;
    if r.registry.ends_with(".invalid") {
        return Err(miette!("`{text}` is not a registry host: write the full host name, e.g. {text}.example.com or localhost"));
    }
    Ok(r)
}

pub fn run_login(a: LoginArgs) -> CliResult {
    let r = registry_of(a.registry.as_deref())?;
    let pass = match (&a.password, a.password_stdin) {
        (Some(p), _) => p.clone(),
        (None, true) => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| miette!("cannot read the password from standard input: {e}"))?;
            s.trim_end_matches(['\n', '\r']).to_owned()
        }
        (None, false) => {
            return Err(miette!(
                "no password given: pipe it in with --password-stdin"
            ))
        }
    };
    if pass.is_empty() {
        return Err(miette!("the password is empty"));
    }
    let cred = Credential::Basic {
        user: a.username.clone(),
        pass: pass.clone(),
    };
    let client = RegistryClient::new(ClientOptions {
        insecure: a.insecure,
        credentials: Some(cred),
        ..ClientOptions::default()
    })
    .map_err(|e| miette!("{e}"))?;
    client
        .check_login(&r)
        .map_err(|e| miette!("login to {} failed: {e}", r.registry))?;
    let dir = auth::docker_config_dir();
    let path =
        auth::store_login(&dir, &r.registry, &a.username, &pass).map_err(|e| miette!("{e}"))?;
    eprintln!(
        "login succeeded: credentials for {} stored in {}",
        r.registry,
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn run_logout(a: LogoutArgs) -> CliResult {
    let r = registry_of(a.registry.as_deref())?;
    let dir = auth::docker_config_dir();
    if auth::remove_login(&dir, &r.registry).map_err(|e| miette!("{e}"))? {
        eprintln!("removed credentials for {}", r.registry);
    } else {
        eprintln!(
            "no stored credentials for {} in {}",
            r.registry,
            dir.join("config.json").display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
