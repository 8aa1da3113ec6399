//! `.agentignore`: `.dockerignore` syntax deciding which files a directory ADD leaves out.
//!
//! Takes: the file's text. Returns: a matcher over context-relative `/`-separated paths. Rules as
//! Docker's: `#` comments, blank lines skipped, `!` re-includes, the last matching pattern wins,
//! `*` and `?` stay within one path component, `**` spans any number, a leading `/` is ignored, and
//! a pattern that matches a directory excludes everything below it. Must never: touch the disk.

use globset::{Glob, GlobBuilder, GlobMatcher};

/// A pattern in `.agentignore` could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error(".agentignore line {line}: invalid pattern `{pattern}`: {source}; fix or remove the line")]
pub struct IgnoreError {
    pub line: usize,
    pub pattern: String,
    pub source: globset::Error,
}

/// The compiled patterns of one `.agentignore`.
#[derive(Clone, Debug, Default)]
pub struct Ignore {
    rules: Vec<(GlobMatcher, bool)>,
}

impl Ignore {
    pub fn parse(text: &str) -> Result<Self, IgnoreError> {
        let mut rules = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negate, pat) = match line.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, line),
            };
            let pat = clean(pat);
            if pat.is_empty() {
                continue;
            }
            let glob: Glob = GlobBuilder::new(&pat)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|source| IgnoreError {
                    line: i + 1,
                    // Shown in a terminal: control characters escaped.
                    pattern: line
                        .chars()
                        .map(|c| {
                            if c.is_control() {
                                c.escape_default().to_string()
                            } else {
                                c.to_string()
                            }
                        })
                        .collect(),
                    source,
                })?;
            rules.push((glob.compile_matcher(), negate));
        }
        Ok(Self { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// True when `rel` (context-relative, `/`-separated) is excluded.
    pub fn is_excluded(&self, rel: &str) -> bool {
        let mut excluded = false;
        for (glob, negate) in &self.rules {
            if *negate != excluded {
                // This rule cannot change the outcome.
                continue;
            }
            if matches_self_or_parent(glob, rel) {
                excluded = !negate;
            }
        }
        excluded
    }

    /// True when some `!` rule might re-include a path below an excluded directory, so the walk
    /// has to descend into excluded directories.
    pub fn has_exceptions(&self) -> bool {
        self.rules.iter().any(|(_, n)| *n)
    }
}

fn matches_self_or_parent(glob: &GlobMatcher, rel: &str) -> bool {
    if glob.is_match(rel) {
        return true;
    }
    rel.match_indices('/')
        .any(|(i, _)| glob.is_match(&rel[..i]))
}

/// Go's `filepath.Clean` for the shapes that matter here, minus a leading `/`.
fn clean(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_rules() {
        let ig = Ignore::parse("# c\n\n*.tmp\n/build\ndata/**/*.log\n!data/keep.log\ndocs/*/x\n")
            .unwrap();
        assert!(ig.is_excluded("a.tmp"));
        assert!(!ig.is_excluded("sub/a.tmp"));
        assert!(ig.is_excluded("build"));
        assert!(ig.is_excluded("build/out/bin"));
        assert!(ig.is_excluded("data/a/b/c.log"));
        assert!(ig.is_excluded("data/c.log"));
        assert!(!ig.is_excluded("data/keep.log"));
        assert!(ig.is_excluded("docs/v1/x"));
        assert!(!ig.is_excluded("docs/v1/v2/x"));
        assert!(!ig.is_excluded("readme.md"));
        assert!(ig.has_exceptions());
    }

    #[test]
    fn last_match_wins() {
        let ig = Ignore::parse("!a\na\n").unwrap();
        assert!(ig.is_excluded("a"));
        let ig = Ignore::parse("data\n!data/keep\n").unwrap();
        assert!(!ig.is_excluded("data/keep"));
        assert!(ig.is_excluded("data/drop"));
    }

    #[test]
    fn bad_pattern_names_its_line() {
        let err = Ignore::parse("ok\n[z-a\n").unwrap_err();
        assert_eq!(err.line, 2);
    }
}
