//! `otters build --annotations-from-ci`: the OCI annotations a CI system's variables give
//! (`org.opencontainers.image.source`, `.revision`, `.url`), for GitHub Actions and GitLab CI.
//!
//! Takes: a variable lookup (the caller passes the environment; tests pass a map). Returns: the
//! annotations, or which variables are missing. Must never: read the environment itself, or
//! invent a value (an annotation is there only when its variables are).

use std::collections::BTreeMap;

pub const ANN_SOURCE: &str = "org.opencontainers.image.source";
pub const ANN_REVISION: &str = "org.opencontainers.image.revision";
pub const ANN_URL: &str = "org.opencontainers.image.url";

/// No CI system's variables were found.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("no CI variables to take the image's source and revision from: otters reads GitHub Actions' GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_SHA, or GitLab's CI_PROJECT_URL and CI_COMMIT_SHA; set them")]
pub struct NoCi;

/// The source, revision and URL annotations from GitHub Actions' or GitLab CI's variables
/// (GitHub first, when both are set).
pub fn annotations(var: impl Fn(&str) -> Option<String>) -> Result<BTreeMap<String, String>, NoCi> {
    let var = |k: &str| {
        var(k)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let mut out = BTreeMap::new();
    let (project, sha) = if let Some(repo) = var("GITHUB_REPOSITORY") {
        let server = var("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".to_owned());
        (
            format!("{}/{repo}", server.trim_end_matches('/')),
            var("GITHUB_SHA"),
        )
    } else if let Some(url) = var("CI_PROJECT_URL") {
        (url, var("CI_COMMIT_SHA"))
    } else {
        return Err(NoCi);
    };
    out.insert(ANN_SOURCE.to_owned(), project.clone());
    out.insert(ANN_URL.to_owned(), project);
    if let Some(sha) = sha {
        out.insert(ANN_REVISION.to_owned(), sha);
    }
    Ok(out)
}

/// The Markdown `otters build` appends to GitHub's job summary (`$GITHUB_STEP_SUMMARY`): the
/// digest, the tags and what was pushed, each in a code span (backticks in a tag cannot occur:
/// tags are checked before the build).
pub fn summary(digest: &otters_oci::Digest, tags: &[String], pushed: &[String]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("### otters build\n\n| | |\n|---|---|\n| digest | `{digest}` |\n");
    for t in tags {
        let _ = writeln!(out, "| tag | `{t}` |");
    }
    for p in pushed {
        let _ = writeln!(out, "| pushed | `{p}` |");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pairs: &[(&str, &str)]) -> Result<BTreeMap<String, String>, NoCi> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        annotations(|k| map.get(k).cloned())
    }

    #[test]
    fn github_gitlab_and_neither() {
        let gh = from(&[
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "acme/agents"),
            ("GITHUB_SHA", "abc123"),
        ])
        .unwrap();
        assert_eq!(gh[ANN_SOURCE], "https://github.com/acme/agents");
        assert_eq!(gh[ANN_URL], "https://github.com/acme/agents");
        assert_eq!(gh[ANN_REVISION], "abc123");
        let gl = from(&[
            ("CI_PROJECT_URL", "https://gitlab.example/g/p"),
            ("CI_COMMIT_SHA", "def"),
        ])
        .unwrap();
        assert_eq!(gl[ANN_SOURCE], "https://gitlab.example/g/p");
        assert_eq!(gl[ANN_REVISION], "def");
        assert_eq!(from(&[("CI", "true")]), Err(NoCi));
        assert!(!from(&[("CI_PROJECT_URL", "u")])
            .unwrap()
            .contains_key(ANN_REVISION));
    }

    #[test]
    fn the_summary_is_a_table_of_the_digest_tags_and_pushes() {
        let d = otters_oci::Digest::of(b"");
        let got = summary(&d, &["a:1".to_owned()], &["r/a:1".to_owned()]);
        assert_eq!(
            got,
            format!("### otters build\n\n| | |\n|---|---|\n| digest | `{d}` |\n| tag | `a:1` |\n| pushed | `r/a:1` |\n\n")
        );
    }
}
