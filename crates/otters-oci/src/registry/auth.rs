//! Registry credentials: docker's `config.json` (read through `docker_credential`, so `auths`,
//! `credsStore` and `credHelpers` all work), `otters login`/`logout` writes (through the
//! configured credential helper, as docker does, else into `auths`), and parsing of
//! `WWW-Authenticate` challenges.
//!
//! Takes: a registry host (`127.0.0.1:5000`, `docker.io`). Returns: credentials, or nothing for
//! anonymous access. Must never: print, log or put a password in an error message, or write
//! `config.json` in place (temp file + fsync + rename, mode 0600).

use crate::path_io::{io_err, PathIoError};
use crate::reference::{DOCKER_HUB, DOCKER_HUB_AUTH_KEY};
use base64::Engine as _;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What a client presents to a registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// Username and password (or a personal access token as password).
    Basic { user: String, pass: String },
    /// An `OAuth2` refresh token (the `identitytoken` field of `config.json`).
    IdentityToken(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Basic { user, .. } => write!(f, "Basic({user}, ***)"),
            Credential::IdentityToken(_) => f.write_str("IdentityToken(***)"),
        }
    }
}

impl Credential {
    /// The user name, for error messages (`<token>` for identity tokens).
    pub fn user(&self) -> &str {
        match self {
            Credential::Basic { user, .. } => user,
            Credential::IdentityToken(_) => "<token>",
        }
    }

    /// The `Authorization: Basic …` value, when this is a username/password.
    pub fn basic_header(&self) -> Option<String> {
        match self {
            Credential::Basic { user, pass } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
            )),
            Credential::IdentityToken(_) => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("cannot read registry credentials for {registry} from {}: {source}; fix the file or run `otters login {registry}`", path.display())]
    Config {
        registry: String,
        path: PathBuf,
        source: docker_credential::CredentialRetrievalError,
    },
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error("{} is not a JSON object; move it away and run `otters login` again", path.display())]
    NotAnObject { path: PathBuf },
    #[error("{} names the credential helper {name:?}, which is not a helper name (letters, digits, `.`, `_`, `-`); fix credsStore or credHelpers", path.display())]
    BadHelper { path: PathBuf, name: String },
    #[error("credential helper {program} could not {action} the credentials: {reason}")]
    Helper {
        program: String,
        action: String,
        reason: String,
    },
}

/// The directory docker's client config lives in: `$DOCKER_CONFIG`, else `~/.docker`.
pub fn docker_config_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return d.into();
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".docker")
}

/// The key a registry's credentials are stored under (Docker Hub has a historical URL key).
pub fn config_key(registry: &str) -> String {
    if registry == DOCKER_HUB {
        DOCKER_HUB_AUTH_KEY.to_owned()
    } else {
        registry.to_owned()
    }
}

/// Looks up credentials for `registry` in `dir/config.json`. `Ok(None)` means anonymous.
pub fn credentials_in(dir: &Path, registry: &str) -> Result<Option<Credential>, AuthError> {
    use docker_credential::{CredentialRetrievalError as E, DockerCredential};
    let path = dir.join("config.json");
    let Ok(file) = std::fs::File::open(&path) else {
        return Ok(None);
    };
    // The crate below runs `docker-credential-<name>`: check every name it could run first, so a
    // config naming a path (`"credsStore": "../../tmp/x"`) never executes anything.
    check_runnable_helpers(dir, registry)?;
    let key = config_key(registry);
    match docker_credential::get_credential_from_reader(std::io::BufReader::new(file), &key) {
        Ok(DockerCredential::UsernamePassword(user, pass)) => {
            Ok(Some(Credential::Basic { user, pass }))
        }
        Ok(DockerCredential::IdentityToken(t)) => Ok(Some(Credential::IdentityToken(t))),
        Err(E::NoCredentialConfigured | E::ConfigNotFound) => Ok(None),
        // A helper that simply has no entry for this registry means anonymous access.
        Err(E::HelperFailure { stdout, .. }) if stdout.contains("credentials not found") => {
            Ok(None)
        }
        Err(source) => Err(AuthError::Config {
            registry: registry.to_owned(),
            path,
            source,
        }),
    }
}

/// Stores `user:pass` for `registry` under `auths` in `dir/config.json`, keeping every other key.
pub fn store_login(
    dir: &Path,
    registry: &str,
    user: &str,
    pass: &str,
) -> Result<PathBuf, AuthError> {
    let path = dir.join("config.json");
    let mut doc = read_config_doc(&path)?;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    let Some(obj) = doc.as_object_mut() else {
        return Err(AuthError::NotAnObject { path });
    };
    let auths = obj.entry("auths").or_insert_with(|| serde_json::json!({}));
    if !auths.is_object() {
        *auths = serde_json::json!({});
    }
    if let Some(a) = auths.as_object_mut() {
        a.insert(config_key(registry), serde_json::json!({ "auth": auth }));
    }
    write_config_doc(dir, &path, &doc)?;
    Ok(path)
}

/// Where `otters login` put the credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Under `auths` in this `config.json`.
    File(PathBuf),
    /// In the credential helper `docker-credential-<helper>`; `config.json` (this path) records
    /// only that the registry has a login.
    Helper { helper: String, config: PathBuf },
}

/// The credential helper `config.json` in `dir` names for `registry`: its `credHelpers` entry,
/// else its `credsStore`, as docker chooses. `Ok(None)` when neither is set (or they are empty).
pub fn helper_for(dir: &Path, registry: &str) -> Result<Option<String>, AuthError> {
    let path = dir.join("config.json");
    let doc = read_config_doc(&path)?;
    let key = config_key(registry);
    let named = doc
        .get("credHelpers")
        .and_then(|h| h.get(&key))
        .and_then(serde_json::Value::as_str)
        .or_else(|| doc.get("credsStore").and_then(serde_json::Value::as_str))
        .filter(|h| !h.is_empty());
    match named {
        None => Ok(None),
        Some(h) if is_helper_name(h) => Ok(Some(h.to_owned())),
        Some(h) => Err(AuthError::BadHelper {
            path,
            name: crate::validate::escape_text(h, 80),
        }),
    }
}

/// Checks every helper name `config.json` in `dir` could make the credential crate run for
/// `registry`: its `credHelpers` entry and `credsStore`, whichever is set. (The crate skips an
/// empty `credHelpers` entry and falls back to `credsStore`, so checking only the name docker
/// would choose is not enough.)
fn check_runnable_helpers(dir: &Path, registry: &str) -> Result<(), AuthError> {
    let path = dir.join("config.json");
    let doc = read_config_doc(&path)?;
    let key = config_key(registry);
    let named = [
        doc.get("credHelpers").and_then(|h| h.get(&key)),
        doc.get("credsStore"),
    ];
    for name in named
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
    {
        if !name.is_empty() && !is_helper_name(name) {
            return Err(AuthError::BadHelper {
                path,
                name: crate::validate::escape_text(name, 80),
            });
        }
    }
    Ok(())
}

/// A helper name becomes part of a program name (`docker-credential-<name>`) looked up on
/// `PATH`: letters, digits, `.`, `_` and `-` only, so it can never name a path.
fn is_helper_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Stores a login the way docker does: through the credential helper `config.json` names for
/// `registry` (`credHelpers`, else `credsStore`), leaving `auths` with an empty entry for it (so a
/// stale inline `auth` can no longer shadow the helper); else under `auths` as
/// [`store_login`] does.
pub fn save_login(dir: &Path, registry: &str, user: &str, pass: &str) -> Result<Stored, AuthError> {
    let Some(helper) = helper_for(dir, registry)? else {
        return store_login(dir, registry, user, pass).map(Stored::File);
    };
    let key = config_key(registry);
    let input = serde_json::json!({"ServerURL": key, "Username": user, "Secret": pass});
    run_helper(&helper, "store", input.to_string().as_bytes())?;
    let path = dir.join("config.json");
    let mut doc = read_config_doc(&path)?;
    let Some(obj) = doc.as_object_mut() else {
        return Err(AuthError::NotAnObject { path });
    };
    let auths = obj.entry("auths").or_insert_with(|| serde_json::json!({}));
    if !auths.is_object() {
        *auths = serde_json::json!({});
    }
    if let Some(a) = auths.as_object_mut() {
        a.insert(key, serde_json::json!({}));
    }
    write_config_doc(dir, &path, &doc)?;
    Ok(Stored::Helper {
        helper,
        config: path,
    })
}

/// Most bytes of a helper's output kept for an error message.
const HELPER_OUTPUT: usize = 300;

/// Runs `docker-credential-<helper> <action>` with `input` on stdin (the credential-helper
/// protocol). Its output is never shown on success; on failure a bounded, escaped excerpt is.
fn run_helper(helper: &str, action: &str, input: &[u8]) -> Result<Vec<u8>, AuthError> {
    use std::process::{Command, Stdio};
    let program = format!("docker-credential-{helper}");
    let fail = |reason: String| AuthError::Helper {
        program: program.clone(),
        action: action.to_owned(),
        reason,
    };
    let mut child = Command::new(&program)
        .arg(action)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            fail(if e.kind() == std::io::ErrorKind::NotFound {
                "it is not on PATH; install it, or remove credsStore/credHelpers from config.json"
                    .to_owned()
            } else {
                e.to_string()
            })
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that exits without reading gives EPIPE here; its exit status tells why.
        let _ = stdin.write_all(input);
    }
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let said = String::from_utf8_lossy(if out.stderr.is_empty() {
        &out.stdout
    } else {
        &out.stderr
    })
    .trim()
    .to_owned();
    Err(fail(format!(
        "it failed ({}){}",
        out.status,
        if said.is_empty() {
            String::new()
        } else {
            format!(": {}", crate::validate::escape_text(&said, HELPER_OUTPUT))
        }
    )))
}

/// Removes `registry`'s login: its `auths` entry, and through the credential helper when one is
/// configured for it (a helper that has no entry is not an error). Returns false when there was
/// nothing to remove anywhere.
pub fn logout(dir: &Path, registry: &str) -> Result<bool, AuthError> {
    let mut removed = false;
    if let Some(helper) = helper_for(dir, registry)? {
        match run_helper(&helper, "erase", config_key(registry).as_bytes()) {
            Ok(_) => removed = true,
            Err(AuthError::Helper { reason, .. }) if reason.contains("credentials not found") => {}
            Err(e) => return Err(e),
        }
    }
    Ok(remove_login(dir, registry)? || removed)
}

/// Removes `registry` from `auths`. Returns false when there was nothing to remove.
pub fn remove_login(dir: &Path, registry: &str) -> Result<bool, AuthError> {
    let path = dir.join("config.json");
    if !path.exists() {
        return Ok(false);
    }
    let mut doc = read_config_doc(&path)?;
    let removed = doc
        .get_mut("auths")
        .and_then(serde_json::Value::as_object_mut)
        .is_some_and(|a| a.remove(&config_key(registry)).is_some());
    if removed {
        write_config_doc(dir, &path, &doc)?;
    }
    Ok(removed)
}

fn read_config_doc(path: &Path) -> Result<serde_json::Value, AuthError> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(serde_json::json!({})),
        Ok(bytes) => {
            let v: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|_| AuthError::NotAnObject {
                    path: path.to_owned(),
                })?;
            if v.is_object() {
                Ok(v)
            } else {
                Err(AuthError::NotAnObject {
                    path: path.to_owned(),
                })
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::json!({})),
        Err(source) => Err(io_err("read", path)(source).into()),
    }
}

fn write_config_doc(dir: &Path, path: &Path, doc: &serde_json::Value) -> Result<(), AuthError> {
    std::fs::create_dir_all(dir).map_err(io_err("create directory", dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".config.json.")
        .tempfile_in(dir)
        .map_err(io_err("create a temporary file in", dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(io_err("set permissions on", tmp.path()))?;
    }
    let mut bytes = serde_json::to_vec_pretty(doc).unwrap_or_default();
    bytes.push(b'\n');
    tmp.write_all(&bytes).map_err(io_err("write", path))?;
    tmp.as_file().sync_all().map_err(io_err("sync", path))?;
    tmp.persist(path)
        .map_err(|e| io_err("replace", path)(e.error))?;
    Ok(())
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// Lower-cased scheme: `basic` or `bearer`.
    pub scheme: String,
    /// Parameters (`realm`, `service`, `scope`, `error`), keys lower-cased.
    pub params: BTreeMap<String, String>,
}

impl Challenge {
    /// Parses `Bearer realm="…",service="…",scope="…"` (quoted or token values).
    pub fn parse(header: &str) -> Option<Challenge> {
        let header = header.trim();
        let (scheme, rest) = header
            .split_once(char::is_whitespace)
            .unwrap_or((header, ""));
        if scheme.is_empty() {
            return None;
        }
        let mut params = BTreeMap::new();
        let mut s = rest.trim_start();
        while !s.is_empty() {
            let Some(eq) = s.find('=') else { break };
            let key = s[..eq]
                .trim()
                .trim_start_matches(',')
                .trim()
                .to_ascii_lowercase();
            s = &s[eq + 1..];
            let value;
            if let Some(q) = s.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = q.char_indices();
                let mut end = q.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                out.push(n);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => out.push(c),
                    }
                }
                value = out;
                s = &q[end.min(q.len())..];
            } else {
                let end = s.find(',').unwrap_or(s.len());
                value = s[..end].trim().to_owned();
                s = &s[end..];
            }
            params.insert(key, value);
            s = s.trim_start().trim_start_matches(',').trim_start();
        }
        Some(Challenge {
            scheme: scheme.to_ascii_lowercase(),
            params,
        })
    }

    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bearer_and_basic_challenges() {
        let c = Challenge::parse(
            r#"Bearer realm="http://127.0.0.1:1/token",service="reg",scope="repository:a/b:pull,push""#,
        )
        .unwrap_or_else(|| panic!("no parse"));
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.param("realm"), Some("http://127.0.0.1:1/token"));
        assert_eq!(c.param("scope"), Some("repository:a/b:pull,push"));
        let b =
            Challenge::parse(r#"Basic realm="otters-test""#).unwrap_or_else(|| panic!("no parse"));
        assert_eq!(b.scheme, "basic");
        assert_eq!(b.param("realm"), Some("otters-test"));
        let t = Challenge::parse("Bearer realm=x, error=invalid_token")
            .unwrap_or_else(|| panic!("no parse"));
        assert_eq!(t.param("error"), Some("invalid_token"));
        assert!(Challenge::parse("").is_none());
    }

    #[test]
    fn login_writes_and_logout_removes_keeping_other_keys() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("config.json"), r#"{"other":{"x":1}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        store_login(dir.path(), "127.0.0.1:5000", "alice", "pw:with:colons")
            .unwrap_or_else(|e| panic!("{e}"));
        let c = credentials_in(dir.path(), "127.0.0.1:5000").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            c,
            Some(Credential::Basic {
                user: "alice".into(),
                pass: "pw:with:colons".into()
            })
        );
        assert_eq!(
            credentials_in(dir.path(), "other:1").unwrap_or_else(|e| panic!("{e}")),
            None
        );
        let text = std::fs::read_to_string(dir.path().join("config.json")).unwrap_or_default();
        assert!(text.contains("\"other\""));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode =
                std::fs::metadata(dir.path().join("config.json")).map(|m| m.permissions().mode());
            assert_eq!(mode.unwrap_or(0) & 0o777, 0o600);
        }
        assert!(remove_login(dir.path(), "127.0.0.1:5000").unwrap_or(false));
        assert!(!remove_login(dir.path(), "127.0.0.1:5000").unwrap_or(true));
        assert_eq!(
            credentials_in(dir.path(), "127.0.0.1:5000").unwrap_or_else(|e| panic!("{e}")),
            None
        );
    }

    proptest::proptest! {
        /// A registry picks the `WWW-Authenticate` value: no input may panic or loop.
        #[test]
        fn challenge_parsing_survives_any_header(h in "\\PC{0,300}") {
            let _ = Challenge::parse(&h);
        }

        #[test]
        fn challenge_parsing_survives_quote_and_comma_soup(h in "[Bb]earer [a-z=\",\\\\ ]{0,200}") {
            if let Some(c) = Challenge::parse(&h) {
                proptest::prop_assert_eq!(c.scheme, "bearer");
            }
        }
    }

    #[test]
    fn docker_hub_uses_the_index_key() {
        assert_eq!(config_key("docker.io"), "https://index.docker.io/v1/");
        assert_eq!(config_key("ghcr.io"), "ghcr.io");
    }
}
