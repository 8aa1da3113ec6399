//! Small JSON web services that are not registries: Sigstore's Fulcio, Rekor and timestamp
//! authority, and a CI's OIDC token endpoint. One synchronous call per request, on the same
//! reqwest stack and transport rule as the registry client.
//!
//! Takes: a URL, a body, optional bearer credentials. Returns: the status and the body (capped).
//! Must never: send anything over plain HTTP to a host that is not this machine, follow a
//! redirect, or read more than [`MAX_ANSWER`] bytes of an answer.

use crate::reference::is_loopback_host;
use crate::validate::{escape_text, read_capped};
use reqwest::Url;
use std::time::Duration;

/// Largest answer read (a Fulcio chain, a Rekor entry, a timestamp: a few KiB each).
pub const MAX_ANSWER: usize = 4 << 20;

/// Why a call did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("{url} is not a URL otters calls: {why}")]
    Url { url: String, why: String },
    #[error("cannot reach {url}: {why}")]
    Reach { url: String, why: String },
    #[error("{url} answered more than {MAX_ANSWER} bytes")]
    TooLarge { url: String },
}

/// An answer: the HTTP status and the body.
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as a short, terminal-safe text for an error message.
    pub fn excerpt(&self) -> String {
        escape_text(String::from_utf8_lossy(&self.body).trim(), 300)
    }
}

/// A request: `POST` with a body, or `GET` without one.
pub struct Request<'a> {
    pub url: &'a str,
    pub body: Option<(&'a str, Vec<u8>)>,
    pub bearer: Option<&'a str>,
    pub accept: &'a str,
}

/// Checks `url`: HTTPS, or plain HTTP to a loopback host.
pub fn check_url(url: &str) -> Result<Url, WebError> {
    let bad = |why: String| WebError::Url {
        url: escape_text(url, 200),
        why,
    };
    let parsed = Url::parse(url).map_err(|e| bad(e.to_string()))?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if is_loopback_host(parsed.host_str().unwrap_or_default()) => Ok(parsed),
        "http" => Err(bad(
            "plain HTTP to a host that is not this machine; use https".to_owned(),
        )),
        other => Err(bad(format!("a {} URL", escape_text(other, 20)))),
    }
}

/// Sends `req` and waits (at most `timeout` per step) for the whole answer.
pub fn call(req: &Request<'_>, timeout: Duration) -> Result<Answer, WebError> {
    let url = check_url(req.url)?;
    let shown = escape_text(req.url, 200);
    let reach = |e: &dyn std::fmt::Display| WebError::Reach {
        url: shown.clone(),
        why: e.to_string(),
    };
    // A timeout reads as what it is, not as reqwest's "error decoding response body".
    let http = |e: reqwest::Error| {
        if e.is_timeout() {
            reach(&format_args!(
                "no complete answer within {} s (timed out)",
                timeout.as_secs()
            ))
        } else {
            reach(&e)
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| reach(&e))?;
    let client = reqwest::Client::builder()
        .user_agent(concat!("otters/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(timeout)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| reach(&e))?;
    rt.block_on(async {
        let mut rb = match &req.body {
            Some((content_type, body)) => client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, *content_type)
                .body(body.clone()),
            None => client.get(url),
        };
        rb = rb.header(reqwest::header::ACCEPT, req.accept);
        if let Some(token) = req.bearer {
            rb = rb.bearer_auth(token);
        }
        let resp = rb.send().await.map_err(http)?;
        let status = resp.status().as_u16();
        let body = read_capped(resp, MAX_ANSWER)
            .await
            .map_err(http)?
            .ok_or(WebError::TooLarge { url: shown.clone() })?;
        Ok(Answer { status, body })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_rule() {
        assert!(check_url("https://fulcio.sigstore.dev").is_ok());
        assert!(check_url("http://127.0.0.1:3000/api").is_ok());
        assert!(check_url("http://localhost:3000").is_ok());
        let e = check_url("http://fulcio.example").unwrap_err().to_string();
        assert!(e.contains("plain HTTP"), "{e}");
        assert!(check_url("file:///etc/passwd").is_err());
        assert!(check_url("not a url").is_err());
    }
}
