//! `otters login` and `logout`: credentials in docker's `config.json` (`$DOCKER_CONFIG` or
//! `~/.docker`) or the credential helper it names, verified against the registry before they are
//! written. Without `-p`/`--password-stdin`, the user name and password are asked for on the
//! terminal (the password without echo).
//! The host rule, the check and the store are `otters_oci::registry::login`.
use super::{fail, fail_in, CliResult};
use crate::view::status;
use miette::miette;
use otters_cli::login::{LoginArgs, LogoutArgs};
use otters_oci::registry::auth;
use otters_oci::registry::login::{self, registry_host};
use std::process::ExitCode;

pub fn run_login(a: LoginArgs) -> CliResult {
    let r = registry_host(a.registry.as_deref()).map_err(fail)?;
    let tty = rustix::termios::isatty(std::io::stdin());
    let interactive = a.password.is_none() && !a.password_stdin;
    let user = match (&a.username, interactive && tty) {
        (Some(u), _) => u.clone(),
        (None, true) => {
            prompt(&format!("Username for {}: ", r.registry));
            login::read_answer(&mut std::io::stdin().lock())
                .map_err(|e| fail_in("cannot read the user name", e))?
        }
        (None, false) => {
            return Err(miette!(
                "no user name given: pass -u USER (otters asks for it only on a terminal)"
            ))
        }
    };
    if user.is_empty() {
        return Err(miette!("the user name is empty"));
    }
    let pass = match (&a.password, a.password_stdin) {
        (Some(p), _) => p.clone(),
        (None, true) => login::read_piped(&mut std::io::stdin().lock())
            .map_err(|e| fail_in("cannot read the password from standard input", e))?,
        (None, false) if tty => {
            prompt("Password: ");
            let read = login::read_secret_from_terminal();
            eprintln!();
            read.map_err(|e| fail_in("cannot read the password", e))?
        }
        (None, false) => {
            return Err(miette!(
                "no password given: pipe it in with --password-stdin (otters asks for it only on a terminal)"
            ))
        }
    };
    if pass.is_empty() {
        return Err(miette!("the password is empty"));
    }
    let stored = login::login(&r, &user, &pass, a.insecure).map_err(fail)?;
    eprint!("{}", status::logged_in(&r.registry, &stored));
    Ok(ExitCode::SUCCESS)
}

/// A question on stderr, before its answer is read from the terminal.
fn prompt(text: &str) {
    use std::io::Write as _;
    eprint!("{text}");
    let _ = std::io::stderr().flush();
}

pub fn run_logout(a: LogoutArgs) -> CliResult {
    let r = registry_host(a.registry.as_deref()).map_err(fail)?;
    let dir = auth::docker_config_dir();
    let removed = auth::logout(&dir, &r.registry).map_err(fail)?;
    eprint!("{}", status::logged_out(&r.registry, removed, &dir));
    Ok(ExitCode::SUCCESS)
}
