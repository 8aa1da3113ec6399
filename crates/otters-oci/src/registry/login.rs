//! `otters login` and `logout`: which registry a host argument names, credentials checked
//! against the registry before they are stored, and a secret read from the terminal without echo.
//!
//! Takes: the host argument as written, a user name and password. Returns: the registry as a
//! [`Reference`], where the credentials went ([`Stored`]), or a [`LoginError`]. Must never:
//! store credentials the registry refused, leave the terminal without echo, or print (the
//! front end writes prompts and results).
use super::auth::{self, AuthError, Credential, Stored};
use super::client::{ClientOptions, RegistryClient};
use super::error::RegistryError;
use crate::reference::{Reference, DOCKER_HUB};
use otters_core::escape::escape;
use rustix::termios::{self, LocalModes, OptionalActions, SpecialCodeIndex, Termios};
use std::io::{BufRead as _, Read as _};

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("`{}` is not a registry host: give host[:port], e.g. ghcr.io or 127.0.0.1:5000", escape(.0))]
    NotAHost(String),
    #[error("`{}` is not a valid registry host[:port]", escape(.0))]
    BadHost(String),
    #[error(
        "`{0}` is not a registry host: write the full host name, e.g. {0}.example.com or localhost"
    )]
    ShortHost(String),
    #[error(transparent)]
    Client(Box<RegistryError>),
    #[error("login to {registry} failed: {source}")]
    Refused {
        registry: String,
        source: Box<RegistryError>,
    },
    #[error(transparent)]
    Store(#[from] AuthError),
}

/// The registry a `login`/`logout` argument names (default Docker Hub): `docker.io`,
/// `127.0.0.1:5000`, `https://ghcr.io/`; `index.docker.io` is Docker Hub.
pub fn registry_host(arg: Option<&str>) -> Result<Reference, LoginError> {
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
        return Err(LoginError::NotAHost(text.to_owned()));
    }
    // Parse `<host>/x` so the host goes through the reference grammar's domain rules.
    let probe = if host.contains(['.', ':']) || host == "localhost" {
        format!("{host}/x")
    } else {
        format!("{host}.invalid/x")
    };
    let r = Reference::parse(&probe).map_err(|_| LoginError::BadHost(text.to_owned()))?;
    if r.registry.ends_with(".invalid") {
        return Err(LoginError::ShortHost(escape(text).into_owned()));
    }
    Ok(r)
}

/// Checks `user` and `pass` against the registry `r` names, then stores them where docker's
/// `config.json` says (the file, or its credential helper).
pub fn login(r: &Reference, user: &str, pass: &str, insecure: bool) -> Result<Stored, LoginError> {
    let client = RegistryClient::new(ClientOptions {
        insecure,
        credentials: Some(Credential::Basic {
            user: user.to_owned(),
            pass: pass.to_owned(),
        }),
        ..ClientOptions::default()
    })
    .map_err(|e| LoginError::Client(Box::new(e)))?;
    client
        .check_login(r)
        .map_err(|source| LoginError::Refused {
            registry: r.registry.clone(),
            source: Box::new(source),
        })?;
    Ok(auth::save_login(
        &auth::docker_config_dir(),
        &r.registry,
        user,
        pass,
    )?)
}

/// The longest answer read (a token pasted by mistake twice is still far below this).
const MAX: usize = 4096;

/// One line (a user name), at most `MAX` (4 KiB) bytes, without its line break and outer spaces.
pub fn read_answer(input: &mut impl std::io::BufRead) -> std::io::Result<String> {
    let mut s = String::new();
    input.take(MAX as u64).read_line(&mut s)?;
    Ok(s.trim_end_matches(['\n', '\r']).trim().to_owned())
}

/// The longest password or token `--password-stdin` takes (registry tokens are a few KiB; a
/// file piped in by mistake is refused instead of read whole into memory).
pub const MAX_PIPED: u64 = 64 * 1024;

/// A password from the pipe on standard input: all of it, without the final line break; at
/// most [`MAX_PIPED`] bytes (more is an `InvalidInput` error, nothing is stored).
pub fn read_piped(input: &mut impl std::io::Read) -> std::io::Result<String> {
    let mut s = String::new();
    input.take(MAX_PIPED + 1).read_to_string(&mut s)?;
    if s.len() as u64 > MAX_PIPED {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "more than {} KiB on standard input; pipe in only the password or token",
                MAX_PIPED / 1024
            ),
        ));
    }
    Ok(s.trim_end_matches(['\n', '\r']).to_owned())
}

/// Puts the terminal back as it was, however the read ends (error, panic, ^C).
struct Restore(Termios);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &self.0);
    }
}

/// Reads a secret from the terminal on stdin with echo off (the caller writes the prompt).
///
/// The terminal is switched out of canonical mode and signal generation too, so that ^C
/// arrives as a byte and is handled here, after the terminal is restored — a SIGINT while
/// echo is off would leave the user's shell without echo. Editing keys: backspace/DEL erase
/// a character, ^U the line, ^C aborts, Enter or ^D ends.
pub fn read_secret_from_terminal() -> std::io::Result<String> {
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
    let restore = Restore(saved);
    termios::tcsetattr(&stdin, OptionalActions::Now, &quiet)?;
    let read = read_secret(&mut stdin.lock());
    drop(restore);
    read
}

/// A secret typed with echo off, byte by byte, with the editing keys of
/// [`read_secret_from_terminal`].
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
    use super::*;

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

    #[test]
    fn answers_and_piped_passwords_lose_their_line_break() {
        assert_eq!(
            read_answer(&mut &b"  alice \r\nbob\n"[..]).unwrap(),
            "alice"
        );
        assert_eq!(read_piped(&mut &b"s3cret \n"[..]).unwrap(), "s3cret ");
        assert_eq!(read_piped(&mut &b"a\nb\n\n"[..]).unwrap(), "a\nb");
        let at_most = vec![b'x'; MAX_PIPED as usize];
        assert_eq!(
            read_piped(&mut &at_most[..]).unwrap().len(),
            MAX_PIPED as usize
        );
        let more = vec![b'x'; MAX_PIPED as usize + 1];
        let e = read_piped(&mut &more[..]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_host_argument_names_one_registry() {
        let host = |t| registry_host(Some(t)).map(|r| r.registry);
        assert_eq!(registry_host(None).unwrap().registry, DOCKER_HUB);
        assert_eq!(host("https://ghcr.io/").unwrap(), "ghcr.io");
        assert_eq!(host("index.docker.io").unwrap(), DOCKER_HUB);
        assert_eq!(host("127.0.0.1:5000").unwrap(), "127.0.0.1:5000");
        assert_eq!(host("localhost").unwrap(), "localhost");
        assert!(matches!(host("ghcr.io/org"), Err(LoginError::NotAHost(_))));
        assert!(matches!(host(""), Err(LoginError::NotAHost(_))));
        assert!(matches!(host("myregistry"), Err(LoginError::ShortHost(_))));
        assert!(matches!(host("bad host:5000"), Err(LoginError::BadHost(_))));
    }
}
