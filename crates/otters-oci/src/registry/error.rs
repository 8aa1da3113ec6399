//! The registry client's errors: what failed, at which registry and repository, and what to do;
//! with the reading of a registry's error answers into them (bounded, escaped).

use crate::registry::auth::AuthError;
use crate::registry::config::RegistryConfigError;
use crate::spec::digest::Digest;
use crate::validate::{escape_text, MAX_ERROR_BODY, MAX_ERROR_TEXT};
use reqwest::StatusCode;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The client cannot be built: its runtime, TLS setup, base URL or timeout setting.
    #[error("cannot set up the HTTP client: {0}")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("{}", unreachable_message(registry, reason))]
    Unreachable { registry: String, reason: String },
    #[error("TLS with registry {registry} failed: {reason}; if its certificate comes from a private CA, trust that CA for it (`ca = \"FILE\"` under [registry.\"{registry}\"] in $OTTERS_HOME/config.toml, or certs.d/{registry}/ca.crt); if it uses a self-signed certificate or plain HTTP, set `insecure = true` there")]
    Tls { registry: String, reason: String },
    #[error("{}", denied_message(registry, user.as_deref()))]
    Denied {
        registry: String,
        user: Option<String>,
        what: String,
    },
    #[error("{registry} denied {action} access to repository {repository}{}: check the repository name, or ask its owner for access", user.as_ref().map(|u| format!(" for user {u}")).unwrap_or_default())]
    Forbidden {
        registry: String,
        repository: String,
        user: Option<String>,
        action: &'static str,
    },
    #[error("image {reference} not found: check the name and tag, or push it first")]
    NotFound { reference: String },
    #[error("blob {digest} of {reference} not found in the registry: the image is incomplete; push it again")]
    BlobNotFound { reference: String, digest: Digest },
    #[error("digest mismatch: {what} {expected} from {registry} has digest {actual}; the registry sent corrupt or different content and nothing was stored")]
    DigestMismatch {
        registry: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("image {reference} has no manifest for platform {wanted} (available: {available})")]
    Platform {
        reference: String,
        wanted: String,
        available: String,
    },
    #[error("registry {registry} sent {what}")]
    Protocol { registry: String, what: String },
    /// A URL the transport rule refuses (`http::url_allowed`): `what` says where it came from.
    #[error("registry {registry} sent {what}")]
    Refused {
        registry: String,
        what: String,
        refusal: UrlRefusal,
    },
    #[error("{registry} answered {status} to {action}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Http {
        registry: String,
        action: String,
        status: u16,
        body: String,
    },
    #[error("{reference}: {reason}")]
    BadDocument { reference: String, reason: String },
    #[error(transparent)]
    Store(#[from] crate::store::layout::StoreError),
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIoError),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Config(#[from] RegistryConfigError),
    #[error("connection to {registry} lost while transferring blob {digest}: {reason}; run the command again to transfer only what is missing")]
    Interrupted {
        registry: String,
        digest: Digest,
        reason: String,
    },
}

/// Why a registry cannot be reached, and what to check: `insecure` only for a registry that is
/// not on this machine (a loopback registry is already asked over plain HTTP).
fn unreachable_message(registry: &str, reason: &str) -> String {
    let advice = if is_on_this_machine(registry) {
        ""
    } else {
        " (a plain-HTTP registry that is not on this machine needs `insecure = true` for it in $OTTERS_HOME/config.toml)"
    };
    format!("cannot reach registry {registry}: {reason}; check that it is running and the address is right{advice}")
}

/// Whether the registry an [`RegistryError::Unreachable`] names (`HOST[:PORT]`, perhaps followed
/// by ` (token service URL)`) is on loopback, which otters already asks over plain HTTP.
pub fn is_on_this_machine(registry: &str) -> bool {
    let host = registry.split(' ').next().unwrap_or(registry);
    crate::reference::is_loopback_host(host)
}

fn denied_message(registry: &str, user: Option<&str>) -> String {
    match user {
        Some(u) => format!("{registry} refused credentials for user {u}: run `otters login {registry}` with the right password"),
        None => format!("{registry} requires credentials and none are stored: run `otters login {registry}`"),
    }
}

/// Why a URL may not be contacted for a registry. The texts name values; a front end adds how
/// to allow plain HTTP (`otters --insecure`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    /// Plain HTTP to another machine, without `insecure` (the host, escaped).
    #[error("plain HTTP to {0}, which is not this machine; if you trust it, set `insecure = true` for the registry in $OTTERS_HOME/config.toml")]
    PlainHttp(String),
    /// Neither `https` nor `http` (the scheme, escaped).
    #[error("a {0} URL")]
    Scheme(String),
    /// A loopback host named by a registry that is not itself on loopback (the host, escaped).
    #[error("a URL on this machine ({0}) from a registry that is not on it")]
    LoopbackFromRemote(String),
}

/// The first [`MAX_ERROR_BODY`] bytes of an error answer, as text.
pub(super) async fn error_body(resp: reqwest::Response) -> String {
    let mut resp = resp;
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = MAX_ERROR_BODY.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) async fn http_error(
    registry: &str,
    action: &str,
    status: StatusCode,
    resp: reqwest::Response,
) -> RegistryError {
    let body = error_body(resp).await;
    RegistryError::Http {
        registry: registry.to_owned(),
        action: action.to_owned(),
        status: status.as_u16(),
        body: summarize(&body),
    }
}

/// The registry's error message (the `errors[0]` code and message of a distribution error body),
/// or the start of the body: at most [`MAX_ERROR_TEXT`] characters, control characters escaped.
pub(super) fn summarize(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        if let Some(e) = v.get("errors").and_then(|e| e.get(0)) {
            let code = e.get("code").and_then(|c| c.as_str()).unwrap_or_default();
            let msg = e
                .get("message")
                .and_then(|c| c.as_str())
                .unwrap_or_default();
            let text = format!("{code} {msg}").trim().to_lowercase();
            return escape_text(&text, MAX_ERROR_TEXT);
        }
    }
    escape_text(body.trim(), MAX_ERROR_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_escaped_and_bounded() {
        let long = "x".repeat(5000);
        assert_eq!(summarize(&long).chars().count(), MAX_ERROR_TEXT + 1);
        assert_eq!(summarize("bad\x1b[2J\nthing"), "bad\\u{1b}[2J\\nthing");
        let json = format!(r#"{{"errors":[{{"code":"DENIED","message":"no\u001b{long}"}}]}}"#);
        let s = summarize(&json);
        assert!(s.starts_with("denied no\\u{1b}xx"), "{s}");
        assert!(s.chars().count() <= MAX_ERROR_TEXT + 1);
    }

    #[test]
    fn only_a_registry_off_this_machine_is_told_about_insecure() {
        let e = |registry: &str| {
            RegistryError::Unreachable {
                registry: registry.to_owned(),
                reason: "connection refused".to_owned(),
            }
            .to_string()
        };
        for local in [
            "127.0.0.1:5000",
            "localhost:5000",
            "[::1]:5000",
            "127.0.0.1:1 (token service http://127.0.0.1:2/t)",
        ] {
            assert!(!e(local).contains("insecure"), "{}", e(local));
            assert!(
                e(local).contains("check that it is running"),
                "{}",
                e(local)
            );
        }
        assert!(e("registry.example:5000").contains("needs `insecure = true`"));
    }
}
