//! Local tag names: what `-t`, `otters tag` and `otters rm` accept, and how they are stored.
//!
//! Takes: a user's reference string. Returns: the string stored in `index.json`'s
//! `org.opencontainers.image.ref.name` — exactly the user's text, with `:latest` added when it has
//! no tag (spec §e.6: the tag is the text after the last `:` that follows the last `/`). Must
//! never: rewrite registries or repositories (no `docker.io/library/` expansion).
//!
//! A tag a user asks to create ([`new_tag_name`]: `build -t`, `otters tag`) must also follow the
//! distribution reference grammar ([`crate::reference`]), so that it can later be pushed; a bad
//! one is refused with the rule it breaks and, when one exists, a corrected spelling.

use crate::reference::{Reference, ReferenceError};

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
    #[error("{source}{}", suggestion_text(source, suggestion.as_deref()))]
    Invalid {
        source: ReferenceError,
        suggestion: Option<String>,
    },
}

fn suggestion_text(source: &ReferenceError, suggestion: Option<&str>) -> String {
    match (source, suggestion) {
        // The upper-case message already says "try `…`".
        (ReferenceError::Uppercase { .. }, _) | (_, None) => String::new(),
        (_, Some(s)) => format!("; did you mean `{s}`?"),
    }
}

/// The stored tag name for a tag the user asks to create: [`tag_name`], and the whole reference
/// must follow the distribution grammar (lower-case repository, valid tag) so a registry would
/// accept it.
pub fn new_tag_name(reference: &str) -> Result<String, RefNameError> {
    let name = tag_name(reference)?;
    Reference::parse(reference).map_err(|source| RefNameError::Invalid {
        source,
        suggestion: suggest(reference),
    })?;
    Ok(name)
}

/// A valid spelling close to `text`: the repository lower-cased with disallowed characters turned
/// into `-`, the tag stripped of disallowed characters and of leading `.`/`-` (`meteo::1` and
/// `meteo:-1` → `meteo:1`, `Meteo:1.0` → `meteo:1.0`). `None` when nothing valid comes out.
fn suggest(text: &str) -> Option<String> {
    let last_slash = text.rfind('/').map_or(0, |i| i + 1);
    let (dir, last) = text.split_at(last_slash);
    let (repo_last, tag) = match last.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (last, None),
    };
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    parts.push(repo_last);
    let domain = parts
        .first()
        .filter(|f| parts.len() > 1 && (f.contains(['.', ':']) || **f == "localhost"))
        .map(|f| (*f).to_owned());
    let skip = usize::from(domain.is_some());
    let mut out: Vec<String> = domain.into_iter().collect();
    out.extend(
        parts[skip..]
            .iter()
            .map(|c| clean_component(c))
            .filter(|c| !c.is_empty()),
    );
    if out.len() == skip {
        return None;
    }
    let mut s = out.join("/");
    if let Some(tag) = tag {
        let tag: String = tag
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            .skip_while(|c| matches!(c, '.' | '-'))
            .take(128)
            .collect();
        if !tag.is_empty() {
            s.push(':');
            s.push_str(&tag);
        }
    }
    (s != text && Reference::parse(&s).is_ok()).then_some(s)
}

/// A path component lower-cased, with each run of separators the grammar does not allow turned
/// into `-` and separators trimmed from both ends.
fn clean_component(c: &str) -> String {
    let lower = c.to_ascii_lowercase();
    let alnum = |x: char| x.is_ascii_lowercase() || x.is_ascii_digit();
    let mut out = String::new();
    let mut run = String::new();
    for ch in lower.chars() {
        if alnum(ch) {
            if !out.is_empty() && !run.is_empty() {
                let ok = run == "." || run == "_" || run == "__" || run.chars().all(|x| x == '-');
                out.push_str(if ok { &run } else { "-" });
            }
            run.clear();
            out.push(ch);
        } else {
            run.push(ch);
        }
    }
    out
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

    #[test]
    fn new_tags_follow_the_grammar_with_a_suggestion() {
        let cases = [
            ("Meteo:1.0", "must be lowercase", "meteo:1.0"),
            ("meteo::1", "path component `meteo:`", "meteo:1"),
            ("meteo:-1", "tag `-1` starts with", "meteo:1"),
            ("Org/Meteo", "must be lowercase", "org/meteo"),
            ("localhost:5000/My App:.v1", "space", ""),
            (
                "localhost:5000/My_App:.v1",
                "starts with",
                "localhost:5000/my_app:v1",
            ),
            ("a$b:1", "not allowed", "a-b:1"),
        ];
        for (input, why, fix) in cases {
            let e = new_tag_name(input).expect_err(input).to_string();
            assert!(e.contains(why), "{input}: {e}");
            if fix.is_empty() {
                assert!(!e.contains("did you mean"), "{input}: {e}");
            } else {
                assert!(e.contains(&format!("`{fix}`")), "{input}: {e}");
                assert!(new_tag_name(fix).is_ok(), "suggestion {fix} is invalid");
            }
        }
        assert_eq!(new_tag_name("meteo").unwrap(), "meteo:latest");
        assert_eq!(
            new_tag_name("127.0.0.1:5000/a/b:v1").unwrap(),
            "127.0.0.1:5000/a/b:v1"
        );
        assert!(matches!(
            new_tag_name("x@sha256:00"),
            Err(RefNameError::Digest(_))
        ));
    }
}
