//! `otters login` and `logout`: credentials in docker's `config.json` (`$DOCKER_CONFIG` or
//! `~/.docker`) or the credential helper it names, verified against the registry before they are
//! written. Without `-p`/`--password-stdin`, the user name and password are asked for on the
//! terminal (the password without echo).
use super::{fail, fail_in, CliResult};
use miette::miette;
use otters_oci::reference::{Reference, DOCKER_HUB};
use otters_oci::registry::auth::{self, Credential, Stored};
use otters_oci::registry::{ClientOptions, RegistryClient};
use std::io::Read as _;
use std::process::ExitCode;

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
    let tty = rustix::termios::isatty(std::io::stdin());
    let interactive = a.password.is_none() && !a.password_stdin;
    let user = match (&a.username, interactive && tty) {
        (Some(u), _) => u.clone(),
        (None, true) => prompt::line(&format!("Username for {}: ", r.registry))
            .map_err(|e| miette!("cannot read the user name: {e}"))?,
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
        (None, true) => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| miette!("cannot read the password from standard input: {e}"))?;
            s.trim_end_matches(['\n', '\r']).to_owned()
        }
        (None, false) if tty => prompt::secret("Password: ")
            .map_err(|e| miette!("cannot read the password: {e}"))?,
        (None, false) => {
            return Err(miette!(
                "no password given: pipe it in with --password-stdin (otters asks for it only on a terminal)"
            ))
        }
    };
    if pass.is_empty() {
        return Err(miette!("the password is empty"));
    }
    let cred = Credential::Basic {
        user: user.clone(),
        pass: pass.clone(),
    };
    let client = RegistryClient::new(ClientOptions {
        insecure: a.insecure,
        credentials: Some(cred),
        ..ClientOptions::default()
    })
    .map_err(fail)?;
    client
        .check_login(&r)
        .map_err(|e| fail_in(format!("login to {} failed", r.registry), e))?;
    let dir = auth::docker_config_dir();
    match auth::save_login(&dir, &r.registry, &user, &pass).map_err(fail)? {
        Stored::File(path) => eprintln!(
            "login succeeded: credentials for {} stored in {}",
            r.registry,
            path.display()
        ),
        Stored::Helper { helper, config } => eprintln!(
            "login succeeded: credentials for {} stored by docker-credential-{helper} (the credential store {} names)",
            r.registry,
            config.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_logout(a: LogoutArgs) -> CliResult {
    let r = registry_of(a.registry.as_deref())?;
    let dir = auth::docker_config_dir();
    if auth::logout(&dir, &r.registry).map_err(fail)? {
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

/// Reading from the terminal on standard input: a line with echo, and a secret without.
mod prompt {
    use rustix::termios::{self, LocalModes, OptionalActions, SpecialCodeIndex, Termios};
    use std::io::{BufRead as _, Read as _, Write as _};

    /// The longest answer read (a token pasted by mistake twice is still far below this).
    const MAX: usize = 4096;

    /// Writes `prompt` to stderr and reads one line (echoed) from stdin.
    pub fn line(prompt: &str) -> std::io::Result<String> {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let mut s = String::new();
        std::io::stdin().lock().take(MAX as u64).read_line(&mut s)?;
        Ok(s.trim_end_matches(['\n', '\r']).trim().to_owned())
    }

    /// Puts the terminal back as it was, however the read ends (error, panic, ^C).
    struct Restore(Termios);

    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &self.0);
        }
    }

    /// Writes `prompt` to stderr and reads a secret from the terminal on stdin with echo off.
    ///
    /// The terminal is switched out of canonical mode and signal generation too, so that ^C
    /// arrives as a byte and is handled here, after the terminal is restored — a SIGINT while
    /// echo is off would leave the user's shell without echo. Editing keys: backspace/DEL erase
    /// a character, ^U the line, ^C aborts, Enter or ^D ends.
    pub fn secret(prompt: &str) -> std::io::Result<String> {
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(&stdin)?;
        let mut quiet = saved.clone();
        quiet.local_modes &= !(LocalModes::ECHO
            | LocalModes::ECHONL
            | LocalModes::ICANON
            | LocalModes::ISIG
            | LocalModes::IEXTEN);
        quiet.special_codes[SpecialCodeIndex::VMIN] = 1;
        quiet.special_codes[SpecialCodeIndex::VTIME] = 0;
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let restore = Restore(saved);
        termios::tcsetattr(&stdin, OptionalActions::Now, &quiet)?;
        let read = read_secret(&mut stdin.lock());
        drop(restore);
        eprintln!();
        read
    }

    fn read_secret(input: &mut impl std::io::Read) -> std::io::Result<String> {
        let mut buf: Vec<u8> = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            if input.read(&mut byte)? == 0 {
                break;
            }
            match byte[0] {
                b'\n' | b'\r' | 0x04 => break,
                0x03 => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::Interrupted,
                        "interrupted (^C); nothing was stored",
                    ))
                }
                0x7f | 0x08 => {
                    // Erase one character, not one byte.
                    while let Some(b) = buf.pop() {
                        if b & 0xC0 != 0x80 {
                            break;
                        }
                    }
                }
                0x15 => buf.clear(),
                b if b < 0x20 => {}
                b => {
                    if buf.len() >= MAX {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            format!("longer than {MAX} bytes"),
                        ));
                    }
                    buf.push(b);
                }
            }
        }
        String::from_utf8(buf).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "the password is not UTF-8")
        })
    }

    #[cfg(test)]
    mod tests {
        use super::read_secret;

        fn read(bytes: &[u8]) -> std::io::Result<String> {
            read_secret(&mut &bytes[..])
        }

        #[test]
        fn editing_keys_and_endings() {
            assert_eq!(read(b"hunter2\n").unwrap(), "hunter2");
            assert_eq!(read(b"hunter2\r").unwrap(), "hunter2");
            assert_eq!(read(b"hunter2").unwrap(), "hunter2");
            assert_eq!(read(b"huntx\x7fer2\n").unwrap(), "hunter2");
            assert_eq!(read(b"wrong\x15right\x04ignored").unwrap(), "right");
            assert_eq!(read("p\u{e9}\x7fe\n".as_bytes()).unwrap(), "pe");
            assert_eq!(read(b"a\x1bb\tc\n").unwrap(), "abc");
            assert_eq!(
                read(b"sec\x03ret\n").unwrap_err().kind(),
                std::io::ErrorKind::Interrupted
            );
            assert!(read(&vec![b'x'; 5000]).is_err());
            assert!(read(b"\xff\n").is_err());
        }
    }
}
