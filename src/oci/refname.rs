//! Local tag names: what `-t`, `otters tag` and `otters rm` accept, and how they are stored.
//!
//! Takes: a user's reference string. Returns: the string stored in `index.json`'s
//! `org.opencontainers.image.ref.name` — exactly the user's text, with `:latest` added when it has
//! no tag (spec §e.6: the tag is the text after the last `:` that follows the last `/`). Must
//! never: rewrite registries or repositories (no `docker.io/library/` expansion).

/// The reference cannot be a local tag.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RefNameError {
    #[error("empty image reference; give a name such as `meteo:1.0`")]
    Empty,
    #[error("image reference `{0}` contains a space or control character; use letters, digits, `.`, `_`, `-`, `/` and `:`")]
    BadChar(String),
    #[error("`{0}` names a digest; a tag needs a name such as `meteo:1.0`")]
    Digest(String),
    #[error("image reference `{0}` has an empty name or tag")]
    EmptyPart(String),
}

/// The stored tag name for `reference`: the reference itself, plus `:latest` when untagged.
pub fn tag_name(reference: &str) -> Result<String, RefNameError> {
    if reference.is_empty() {
        return Err(RefNameError::Empty);
    }
    if reference
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(RefNameError::BadChar(reference.to_owned()));
    }
    if reference.contains('@') || reference.starts_with("sha256:") {
        return Err(RefNameError::Digest(reference.to_owned()));
    }
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match reference[last_slash..].rfind(':') {
        Some(i) => (
            &reference[..last_slash + i],
            Some(&reference[last_slash + i + 1..]),
        ),
        None => (reference, None),
    };
    if name.is_empty() || name.ends_with('/') || tag == Some("") {
        return Err(RefNameError::EmptyPart(reference.to_owned()));
    }
    Ok(match tag {
        Some(_) => reference.to_owned(),
        None => format!("{reference}:latest"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_latest_only_when_untagged() {
        assert_eq!(tag_name("meteo").unwrap(), "meteo:latest");
        assert_eq!(tag_name("meteo:1.0").unwrap(), "meteo:1.0");
        assert_eq!(
            tag_name("localhost:5000/meteo").unwrap(),
            "localhost:5000/meteo:latest"
        );
        assert_eq!(
            tag_name("127.0.0.1:5000/a/b:v1").unwrap(),
            "127.0.0.1:5000/a/b:v1"
        );
    }

    #[test]
    fn rejects_digests_and_blanks() {
        assert!(tag_name("").is_err());
        assert!(tag_name("a b").is_err());
        assert!(tag_name("meteo@sha256:00").is_err());
        assert!(tag_name("meteo:").is_err());
        assert!(tag_name(":x").is_err());
    }
}
