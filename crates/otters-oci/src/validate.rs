//! What the registry client accepts from a registry: size limits, bounded body reads, manifest and
//! index validation, and the escaping of registry text that goes into error messages.
//!
//! Takes: response bodies and manifest bytes from a registry (untrusted). Returns: bytes no larger
//! than a limit, a validated document kind, or a reason the document is refused. Must never: read
//! a body without a bound, accept a manifest whose media type contradicts itself or whose
//! descriptors could name a path or an absurd size, or put raw registry text in an error.

use crate::spec::descriptor::{INDEX_V1, MANIFEST_V1};
use crate::spec::digest::Digest;
use crate::spec::media_type::MediaType;

/// Largest manifest or index accepted (distribution's and containerd's own limit is 4 MiB).
pub const MAX_MANIFEST: usize = 4 << 20;
/// Largest token-service answer read.
pub const MAX_TOKEN_BODY: usize = 1 << 20;
/// Largest error body read from a registry (only its first characters reach a message).
pub const MAX_ERROR_BODY: usize = 64 << 10;
/// Longest registry-supplied text put into an error message, in characters.
pub const MAX_ERROR_TEXT: usize = 200;
/// Largest blob size a descriptor may declare (1 TiB).
pub const MAX_BLOB_SIZE: u64 = 1 << 40;
/// Most layers in a manifest, and most entries in an index.
pub const MAX_DESCRIPTORS: usize = 4096;

pub use crate::spec::media_type::{DOCKER_MANIFEST_LIST, DOCKER_MANIFEST_V2};

/// An image manifest or an image index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Manifest,
    Index,
}

impl Kind {
    /// The kind a manifest media type names; `None` for anything otters does not pull.
    pub fn of(media_type: &MediaType) -> Option<Kind> {
        if media_type.is_manifest() {
            Some(Kind::Manifest)
        } else if media_type.is_index() {
            Some(Kind::Index)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Manifest => "an image manifest",
            Kind::Index => "an image index",
        }
    }
}

/// Reads a response body, refusing more than `max` bytes (whatever `Content-Length` says).
/// `Ok(None)` means the body was larger than `max`; reading stops there.
pub async fn read_capped(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Ok(None);
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() + chunk.len() > max {
            return Ok(None);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Some(out))
}

/// Registry text made safe for a message: control and bidi characters escaped (`\u{1b}`), at
/// most `max` characters of output (then `…`).
pub fn escape_text(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    for c in s.chars() {
        // Every control (line breaks too: a message is one line), the bidi controls the
        // terminal renderers escape, and the zero-width characters that hide in a one-line text.
        let hostile = c.is_control()
            || otters_core::escape::is_bidi_control(c)
            || matches!(c, '\u{200b}'..='\u{200d}');
        let piece: String = if hostile {
            c.escape_default().collect()
        } else {
            c.to_string()
        };
        let len = piece.chars().count();
        if n + len > max {
            out.push('…');
            break;
        }
        n += len;
        out.push_str(&piece);
    }
    out
}

/// An error and its causes on one line, each cause once (a cause an error already quotes is not
/// repeated); escaped and cut to 400 characters, since URLs and texts in it may come from a
/// registry. The one way the crate puts an error's causes into a message.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    escape_text(&error_chain_whole(e), 400)
}

/// [`error_chain`]'s join, neither escaped nor cut: for the pipeline's verification reasons and
/// status lines (`otters_pipeline::target`), which have always quoted the whole chain as it is.
/// The one other way to put an error's causes into a message; use [`error_chain`] where the text
/// may come from a registry and is not escaped where it is shown.
pub fn error_chain_whole(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

/// A well-formed descriptor: `mediaType` a string, `digest` a sha256 digest, `size` a whole
/// number not above [`MAX_BLOB_SIZE`].
fn check_descriptor(v: &serde_json::Value, what: &str) -> Result<(), String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{what} is not a descriptor object"))?;
    match obj.get("mediaType") {
        Some(serde_json::Value::String(m)) if !m.is_empty() && m.len() <= 255 => {}
        _ => return Err(format!("{what} has no valid mediaType")),
    }
    let digest = obj
        .get("digest")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| format!("{what} has no digest"))?;
    Digest::parse(digest).map_err(|_| {
        format!(
            "{what} has digest \"{}\", which is not a sha256 digest (`sha256:` and 64 lower-case hex digits)",
            escape_text(digest, 80)
        )
    })?;
    let size = obj
        .get("size")
        .ok_or_else(|| format!("{what} has no size"))?;
    match size.as_u64() {
        Some(n) if n <= MAX_BLOB_SIZE => Ok(()),
        Some(n) => Err(format!(
            "{what} declares {n} bytes, more than the {MAX_BLOB_SIZE}-byte limit"
        )),
        None => Err(format!(
            "{what} has size {}, which is not a non-negative whole number",
            escape_text(&size.to_string(), 40)
        )),
    }
}

/// Checks a manifest or index as a registry sent it and returns its media type.
///
/// `header` is the response's `Content-Type` (without parameters); `expected`, the kind the
/// referring index entry declared. The body must be a JSON object; its `mediaType` (or, without
/// one, the `Content-Type`, or its shape) must be a manifest or index type otters asked for, the
/// header must not name the other kind, the shape must match (a manifest has a `config`
/// descriptor and a `layers` array, an index a `manifests` array), and every descriptor must be
/// well formed, within [`MAX_DESCRIPTORS`].
pub fn validate_manifest(
    bytes: &[u8],
    header: Option<&str>,
    expected: Option<Kind>,
) -> Result<String, String> {
    let doc: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("it is not valid JSON: {e}"))?;
    let obj = doc
        .as_object()
        .ok_or_else(|| "it is not a JSON object".to_owned())?;
    if let Some(v) = obj.get("schemaVersion") {
        if v.as_i64() != Some(2) {
            return Err(format!(
                "it has schemaVersion {}; only version 2 manifests are supported",
                escape_text(&v.to_string(), 20)
            ));
        }
    }
    let header_kind = header.and_then(|h| Kind::of(&MediaType::parse(h)));
    let (media_type, kind) = match obj.get("mediaType") {
        Some(serde_json::Value::String(m)) => match Kind::of(&MediaType::parse(m)) {
            Some(k) => (m.clone(), k),
            None => {
                return Err(format!(
                    "its mediaType is \"{}\", which is not an image manifest or index",
                    escape_text(m, 80)
                ))
            }
        },
        Some(_) => return Err("its mediaType is not a string".into()),
        None => match (header, header_kind) {
            (Some(h), Some(k)) => (h.to_owned(), k),
            _ if obj.contains_key("manifests") => (INDEX_V1.to_owned(), Kind::Index),
            _ => (MANIFEST_V1.to_owned(), Kind::Manifest),
        },
    };
    if let Some(h) = header_kind.filter(|h| *h != kind) {
        return Err(format!(
            "its Content-Type says {} but the document is {} ({media_type})",
            h.name(),
            kind.name()
        ));
    }
    if let Some(e) = expected.filter(|e| *e != kind) {
        return Err(format!(
            "the index entry says {} but the document is {} ({media_type})",
            e.name(),
            kind.name()
        ));
    }
    // OCI 1.1: any manifest or index may name the manifest it refers to.
    if let Some(subject) = obj.get("subject") {
        check_descriptor(subject, "the subject")?;
    }
    match obj.get("artifactType") {
        None | Some(serde_json::Value::String(_)) => {}
        Some(_) => return Err("its artifactType is not a string".into()),
    }
    match kind {
        Kind::Manifest => {
            if obj.contains_key("manifests") {
                return Err(format!(
                    "it is {media_type} but has a `manifests` list, like an index"
                ));
            }
            let config = obj
                .get("config")
                .ok_or_else(|| "the manifest has no config descriptor".to_owned())?;
            check_descriptor(config, "the config")?;
            let layers = match obj.get("layers") {
                None => &Vec::new(),
                Some(serde_json::Value::Array(a)) => a,
                Some(_) => return Err("its `layers` is not a list".into()),
            };
            if layers.len() > MAX_DESCRIPTORS {
                return Err(format!(
                    "it has {} layers, more than the limit of {MAX_DESCRIPTORS}",
                    layers.len()
                ));
            }
            for (i, l) in layers.iter().enumerate() {
                check_descriptor(l, &format!("layer {i}"))?;
            }
        }
        Kind::Index => {
            if obj.contains_key("config") || obj.contains_key("layers") {
                return Err(format!(
                    "it is {media_type} but has a config or layers, like a manifest"
                ));
            }
            let Some(serde_json::Value::Array(list)) = obj.get("manifests") else {
                return Err("the index has no `manifests` list".into());
            };
            if list.len() > MAX_DESCRIPTORS {
                return Err(format!(
                    "it lists {} manifests, more than the limit of {MAX_DESCRIPTORS}",
                    list.len()
                ));
            }
            for (i, m) in list.iter().enumerate() {
                check_descriptor(m, &format!("index entry {i}"))?;
            }
        }
    }
    Ok(media_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(size: &str) -> String {
        format!(
            r#"{{"mediaType":"application/x","digest":"sha256:{}","size":{size}}}"#,
            "a".repeat(64)
        )
    }

    fn manifest(mt: &str, layers: &str) -> Vec<u8> {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"{mt}","config":{},"layers":[{layers}]}}"#,
            d("2")
        )
        .into_bytes()
    }

    #[test]
    fn accepts_manifests_and_indexes() {
        assert_eq!(
            validate_manifest(&manifest(MANIFEST_V1, &d("3")), Some(MANIFEST_V1), None),
            Ok(MANIFEST_V1.to_owned())
        );
        let idx = format!(
            r#"{{"schemaVersion":2,"mediaType":"{INDEX_V1}","manifests":[{}]}}"#,
            d("5")
        );
        assert_eq!(
            validate_manifest(idx.as_bytes(), None, Some(Kind::Index)),
            Ok(INDEX_V1.to_owned())
        );
        // No mediaType field: the Content-Type decides, else the shape.
        let bare = format!(r#"{{"schemaVersion":2,"config":{},"layers":[]}}"#, d("1"));
        assert_eq!(
            validate_manifest(bare.as_bytes(), Some(DOCKER_MANIFEST_V2), None),
            Ok(DOCKER_MANIFEST_V2.to_owned())
        );
        assert_eq!(
            validate_manifest(bare.as_bytes(), Some("application/json"), None),
            Ok(MANIFEST_V1.to_owned())
        );
    }

    #[test]
    fn refuses_lies_and_bad_descriptors() {
        let err = |b: &[u8], h: Option<&str>, e: Option<Kind>| {
            validate_manifest(b, h, e).expect_err("should be refused")
        };
        assert!(err(&manifest(MANIFEST_V1, ""), Some(INDEX_V1), None).contains("Content-Type"));
        assert!(
            err(&manifest(MANIFEST_V1, ""), None, Some(Kind::Index)).contains("index entry says")
        );
        assert!(err(&manifest("text/plain", ""), None, None).contains("not an image manifest"));
        assert!(err(&manifest(MANIFEST_V1, &d("-1")), None, None).contains("non-negative"));
        assert!(err(&manifest(MANIFEST_V1, &d("1e30")), None, None).contains("non-negative"));
        assert!(err(&manifest(MANIFEST_V1, &d("99999999999999999")), None, None).contains("limit"));
        let bad_digest = manifest(
            MANIFEST_V1,
            r#"{"mediaType":"x","digest":"sha256:../../etc/passwd","size":1}"#,
        );
        assert!(err(&bad_digest, None, None).contains("not a sha256 digest"));
        let many = vec![d("1"); MAX_DESCRIPTORS + 1].join(",");
        assert!(err(&manifest(MANIFEST_V1, &many), None, None).contains("4096"));
        let idx_as_manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{INDEX_V1}","config":{},"manifests":[]}}"#,
            d("1")
        );
        assert!(err(idx_as_manifest.as_bytes(), None, None).contains("like a manifest"));
        assert!(err(b"[1,2]", None, None).contains("not a JSON object"));
        assert!(err(b"{", None, None).contains("not valid JSON"));
        assert!(err(br#"{"schemaVersion":1}"#, None, None).contains("schemaVersion"));
        assert!(err(br#"{"schemaVersion":2,"layers":[]}"#, None, None).contains("no config"));
        let bad_subject = format!(
            r#"{{"schemaVersion":2,"config":{},"layers":[],"subject":{{"digest":"md5:x"}}}}"#,
            d("1")
        );
        assert!(err(bad_subject.as_bytes(), None, None).contains("the subject"));
        let subject = format!(
            r#"{{"schemaVersion":2,"artifactType":"a/b","config":{},"layers":[],"subject":{}}}"#,
            d("1"),
            d("9")
        );
        assert!(validate_manifest(subject.as_bytes(), None, None).is_ok());
    }

    #[test]
    fn escapes_and_truncates() {
        assert_eq!(escape_text("a\x1b[31mb\nc", 100), "a\\u{1b}[31mb\\nc");
        assert_eq!(escape_text("abcdef", 3), "abc…");
        assert_eq!(escape_text("x\u{202e}y", 10), "x\\u{202e}y");
    }

    /// An error whose text and cause come from outside: each cause said once, escaped, cut.
    #[derive(Debug)]
    struct Caused(String, Option<Box<Caused>>);

    impl std::fmt::Display for Caused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Caused {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|c| c as _)
        }
    }

    #[test]
    fn an_error_chain_says_each_cause_once_escaped_and_cut() {
        let chain = |texts: &[&str]| {
            let e = texts.iter().rev().fold(None, |cause, t| {
                Some(Caused(t.to_string(), cause.map(Box::new)))
            });
            error_chain(&e.unwrap())
        };
        assert_eq!(chain(&["send failed"]), "send failed");
        assert_eq!(
            chain(&["send failed", "connection refused"]),
            "send failed: connection refused"
        );
        // A cause its error already quotes is not repeated.
        assert_eq!(
            chain(&[
                "send failed: connection refused",
                "connection refused",
                "os error 111"
            ]),
            "send failed: connection refused: os error 111"
        );
        assert_eq!(
            chain(&["bad\x1b[2J", "line\nbreak"]),
            "bad\\u{1b}[2J: line\\nbreak"
        );
        let long = "x".repeat(1000);
        assert_eq!(chain(&["a", &long]).chars().count(), 401);
    }

    #[test]
    fn the_whole_chain_is_the_same_join_neither_escaped_nor_cut() {
        let e = Caused(
            "send failed: connection refused".into(),
            Some(Box::new(Caused(
                "connection refused".into(),
                Some(Box::new(Caused("bad\x1b[2J".into(), None))),
            ))),
        );
        assert_eq!(
            error_chain_whole(&e),
            "send failed: connection refused: bad\x1b[2J"
        );
        assert_eq!(
            error_chain(&e),
            "send failed: connection refused: bad\\u{1b}[2J"
        );
        let long = Caused("a".into(), Some(Box::new(Caused("x".repeat(1000), None))));
        assert_eq!(error_chain_whole(&long), format!("a: {}", "x".repeat(1000)));
    }
}
