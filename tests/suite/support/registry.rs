//! A real OCI registry (Debian's `docker-registry`, distribution 2.8) per test, in a temp dir on a
//! free loopback port, killed on drop.
//!
//! Variants: [`Registry::start`] (no auth), [`Registry::start_basic`] (htpasswd, bcrypt) and
//! [`Registry::start_token`] (bearer tokens from a [`TokenServer`] running in the test process).

use super::token::TokenServer;
use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How the registry authenticates clients.
#[derive(Clone, Debug)]
pub enum Auth {
    None,
    /// htpasswd with one user.
    Basic {
        user: String,
        pass: String,
    },
    /// Token auth; the token server knows these users.
    Token {
        users: Vec<(String, String)>,
    },
}

/// A running registry. Dropping it kills the process and removes its storage.
pub struct Registry {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub port: u16,
    pub dir: tempfile::TempDir,
    pub auth: Auth,
    pub token: Option<TokenServer>,
    child: Option<Child>,
}

impl Registry {
    /// A registry without authentication.
    pub fn start() -> Registry {
        Self::start_with(Auth::None)
    }

    /// A registry with htpasswd basic auth for one user.
    pub fn start_basic(user: &str, pass: &str) -> Registry {
        Self::start_with(Auth::Basic {
            user: user.into(),
            pass: pass.into(),
        })
    }

    /// A registry with token auth; `users` may push, anonymous clients may pull.
    pub fn start_token(users: &[(&str, &str)]) -> Registry {
        let users = users
            .iter()
            .map(|(u, p)| ((*u).to_owned(), (*p).to_owned()))
            .collect();
        Self::start_with(Auth::Token { users })
    }

    fn start_with(auth: Auth) -> Registry {
        let dir = tempfile::tempdir().expect("temp dir");
        let token = match &auth {
            Auth::Token { users } => {
                Some(TokenServer::start(&dir.path().join("token"), users.clone()))
            }
            _ => None,
        };
        if let Auth::Basic { user, pass } = &auth {
            let out = super::run_ok(Command::new("htpasswd").args(["-Bbn", user, pass]));
            super::write(&dir.path().join("htpasswd"), out.trim());
        }
        let mut reg = Registry {
            addr: String::new(),
            port: 0,
            dir,
            auth,
            token,
            child: None,
        };
        let mut last_err = String::new();
        for _ in 0..8 {
            reg.port = free_port();
            reg.addr = format!("127.0.0.1:{}", reg.port);
            match reg.spawn() {
                Ok(()) => return reg,
                Err(e) => last_err = e,
            }
        }
        panic!("registry did not start: {last_err}");
    }

    /// Writes the config and starts the process; waits until `/v2/` answers.
    fn spawn(&mut self) -> Result<(), String> {
        self.child = Some(serve(self.dir.path(), &self.config(), &self.addr)?);
        Ok(())
    }

    fn config(&self) -> String {
        let root = self.dir.path().join("data");
        let mut cfg = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {}\n",
            root.display(),
            self.addr
        );
        match &self.auth {
            Auth::None => {}
            Auth::Basic { .. } => {
                let _ = write!(
                    cfg,
                    "auth:\n  htpasswd:\n    realm: otters-test\n    path: {}\n",
                    self.dir.path().join("htpasswd").display()
                );
            }
            Auth::Token { .. } => {
                let t = self.token.as_ref().expect("token server");
                let (realm, cert) = (t.realm(), t.cert_path());
                let _ = write!(
                    cfg,
                    "auth:\n  token:\n    realm: {realm}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                    super::token::SERVICE,
                    super::token::ISSUER,
                    cert.display()
                );
            }
        }
        cfg
    }

    /// The registry's log so far (for assertion messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// The blob upload sessions in the access log, in order: `S` where one was opened (`POST`),
    /// `E` where one finished (`PUT`); `SS` shows two uploads at once.
    pub fn upload_sessions(&self) -> String {
        self.log()
            .lines()
            .filter(|l| l.contains("/blobs/uploads/") && l.contains("HTTP/1.1\" 20"))
            .filter_map(|l| {
                if l.contains("\"POST /v2/") {
                    Some('S')
                } else if l.contains("\"PUT /v2/") {
                    Some('E')
                } else {
                    None
                }
            })
            .collect()
    }

    /// Kills the registry process (storage is kept).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the registry again on the same port with the same storage.
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.spawn() {
                Ok(()) => return,
                Err(e) if Instant::now() > deadline => panic!("registry restart failed: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// `docker/registry/v2` under the storage root.
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("data/docker/registry/v2")
    }

    /// The data file of a blob in the registry's storage.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.storage()
            .join(format!("blobs/sha256/{}/{hex}/data", &hex[..2]))
    }

    /// Digests of every blob the registry stores.
    pub fn blobs(&self) -> Vec<String> {
        let mut out = Vec::new();
        let root = self.storage().join("blobs/sha256");
        for pre in read_dir(&root) {
            for blob in read_dir(&pre) {
                if blob.join("data").is_file() {
                    if let Some(n) = blob.file_name() {
                        out.push(format!("sha256:{}", n.to_string_lossy()));
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// True while an upload of more than `min` bytes is in progress for some repository.
    pub fn upload_in_progress(&self, min: u64) -> bool {
        for repo_dir in walk(&self.storage().join("repositories")) {
            if repo_dir.file_name().is_some_and(|n| n == "_uploads") {
                for up in read_dir(&repo_dir) {
                    if std::fs::metadata(up.join("data")).is_ok_and(|m| m.len() > min) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// A `config.json` for this registry's credentials (docker's format) in `dir`.
    pub fn docker_config(&self, dir: &Path, user: &str, pass: &str) {
        use base64::Engine as _;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
        super::write(
            &dir.join("config.json"),
            format!(
                "{{\"auths\":{{\"{}\":{{\"auth\":\"{auth}\"}}}}}}",
                self.addr
            ),
        );
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// The status of a plain `GET` over HTTP/1.0, or `None` when nothing answers.
/// Starts `docker-registry serve` with the config `cfg` (written to `dir/config.yml`, its output
/// to `dir/registry.log`) and waits until it answers `/v2/` on `addr` (any status: a TLS server
/// answers plain HTTP with 400, and is listening). On an early exit or no answer in 10 s the
/// process is gone and the error holds the log.
pub fn serve(dir: &Path, cfg: &str, addr: &str) -> Result<Child, String> {
    let cfg_path = dir.join("config.yml");
    super::write(&cfg_path, cfg);
    let log_path = dir.join("registry.log");
    let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
    let log2 = log.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new("docker-registry")
        .arg("serve")
        .arg(&cfg_path)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| format!("cannot start docker-registry: {e}"))?;
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("registry exited ({status}): {}", log()));
        }
        if http_status(addr, "/v2/").is_some() {
            return Ok(child);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(format!("registry on {addr} never answered: {}", log()))
}

pub fn http_status(addr: &str, path: &str) -> Option<u16> {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).ok()?;
    let line = String::from_utf8_lossy(&buf[..n]);
    line.split_whitespace().nth(1)?.parse().ok()
}

fn read_dir(p: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(p)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

fn walk(p: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![p.to_path_buf()];
    while let Some(d) = stack.pop() {
        for c in read_dir(&d) {
            if c.is_dir() {
                out.push(c.clone());
                stack.push(c);
            }
        }
    }
    out
}
