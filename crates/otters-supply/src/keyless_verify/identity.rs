//! The identity a keyless certificate must name: its SAN exactly, or a regular expression that
//! must match the whole SAN.
//!
//! Takes: the identity as given (a flag's or a config file's value). Returns: an [`Identity`], or
//! a [`PatternError`] naming the expression and why. Must never: match a prefix or a substring of
//! the SAN, or let an expression close the group that anchors it.

/// The identity a certificate must name.
#[derive(Clone, Debug)]
pub enum Identity<'a> {
    /// The SAN, exactly.
    Exact(&'a str),
    /// A regular expression the whole SAN must match: see [`Identity::regexp`].
    Regexp(Pattern),
}

/// A certificate identity pattern: the expression as given, and the same anchored at both ends.
#[derive(Clone, Debug)]
pub struct Pattern {
    given: String,
    whole: regex::Regex,
}

/// A certificate identity pattern that is not one regular expression on its own. Names the
/// value, not where it was given (a flag, or `[verify]` in config.toml): the front end says that.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the certificate identity pattern `{pattern}` is not a regular expression on its own ({why}); give one expression, its parentheses balanced, for the whole certificate identity: it must match from the first character to the last")]
pub struct PatternError {
    /// The expression as given.
    pub pattern: String,
    /// The last line of the parser's report (`unopened group`).
    pub why: String,
}

impl Identity<'_> {
    /// A pattern (`RE`, from a flag or from `[verify]` in config.toml), which must match the
    /// whole SAN.
    ///
    /// The expression is compiled on its own first, so it is one well-formed expression: wrapped
    /// in `\A(?:…)\z`, it can close no group but its own (`…/agents/.*)|(.*`, which escaped
    /// `^(?:RE)$` into "or anything", is refused as the unbalanced expression it is).
    ///
    /// # Errors
    /// `re` is not a regular expression on its own: the expression, and why.
    pub fn regexp(re: &str) -> Result<Identity<'static>, PatternError> {
        let bad = |e: regex::Error| {
            // The parser's report draws a caret under the expression; its last line says why.
            let text = e.to_string();
            let why = text.lines().last().unwrap_or_default();
            PatternError {
                pattern: re.to_owned(),
                why: why.trim().trim_start_matches("error: ").to_owned(),
            }
        };
        regex::Regex::new(re).map_err(bad)?;
        let whole = regex::Regex::new(&format!("\\A(?:{re})\\z")).map_err(bad)?;
        Ok(Identity::Regexp(Pattern {
            given: re.to_owned(),
            whole,
        }))
    }

    pub(super) fn matches(&self, san: &str) -> bool {
        match self {
            Identity::Exact(id) => san == *id,
            // The match must span the SAN from its first byte to its last.
            Identity::Regexp(p) => p
                .whole
                .find(san)
                .is_some_and(|m| m.start() == 0 && m.end() == san.len()),
        }
    }

    /// The identity as a report names it: the SAN, or `/RE/` (as given).
    pub fn describe(&self) -> String {
        match self {
            Identity::Exact(id) => (*id).to_owned(),
            Identity::Regexp(p) => format!("/{}/", p.given),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_regexp_is_anchored() {
        let re = Identity::regexp("https://github\\.com/acme/.*@refs/tags/v[0-9.]+").unwrap();
        assert!(re.matches("https://github.com/acme/a/.github/workflows/r.yml@refs/tags/v1.2"));
        assert!(
            !re.matches("https://github.com/acme/a/.github/workflows/r.yml@refs/tags/v1.2-evil")
        );
        assert!(!re.matches("xhttps://github.com/acme/a@refs/tags/v1"));
        assert!(
            Identity::Exact("a@b.c").matches("a@b.c")
                && !Identity::Exact("a@b.c").matches("a@b.co")
        );
        assert!(Identity::regexp("(").is_err());
        assert_eq!(
            re.describe(),
            "/https://github\\.com/acme/.*@refs/tags/v[0-9.]+/"
        );
    }

    #[test]
    fn identity_regexp_cannot_close_its_anchoring_group() {
        // Wrapped as `^(?:RE)$`, this was `^(?:…/agents/.*)|(.*)$`: any SAN at all.
        let escape = r"https://github\.com/acme/agents/.*)|(.*";
        let e = Identity::regexp(escape).unwrap_err();
        // The pattern and why, and no flag: the pattern may come from config.toml.
        assert_eq!(
            e.to_string(),
            "the certificate identity pattern `https://github\\.com/acme/agents/.*)|(.*` is not a regular expression on its own (unopened group); give one expression, its parentheses balanced, for the whole certificate identity: it must match from the first character to the last"
        );
        assert_eq!(
            e,
            PatternError {
                pattern: escape.to_owned(),
                why: "unopened group".to_owned()
            }
        );
        for re in [r"a)|(b", r"a)(?:b", r"(?x)a #"] {
            if let Ok(id) = Identity::regexp(re) {
                assert!(!id.matches("zzz"), "{re} matched anything");
            }
        }
        // Alternatives are whole-SAN too: the first alternative does not win a partial match.
        let alt = Identity::regexp("a|ab").unwrap();
        assert!(alt.matches("ab") && alt.matches("a") && !alt.matches("abc"));
        // A newline does not end the SAN (`$` could match before a final newline in some
        // engines; `\z` cannot).
        let id = Identity::regexp("https://x/.*").unwrap();
        assert!(!id.matches("https://x/y\nhttps://evil/"));
        assert!(id.matches("https://x/y"));
    }
}
