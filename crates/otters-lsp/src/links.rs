//! Document links and inlay hints: what a name written in the file leads to or stands for.
//!
//! Links: a CONTEXT `file://` path or an ADD source to its file (only where the build would read
//! it: [`crate::Project::source`]), and an image reference to its registry page where the
//! registry has one at a known address (Docker Hub, Quay). Hints: the value of each `${NAME}` on
//! an instruction line, and the digest `Agentfile.lock` pins a reference without one to.

use crate::document::Document;
use crate::lock;
use crate::Project;
use otters_agentfile::syntax::Args;
use otters_agentfile::Span;

/// A link of the document: the span written and where it leads.
pub struct Link {
    pub span: Span,
    pub target: Target,
}

pub enum Target {
    File(std::path::PathBuf),
    /// A web page, with what it is (the tooltip).
    Page(String, &'static str),
}

pub fn links(doc: &Document, project: &dyn Project) -> Vec<Link> {
    let mut out = Vec::new();
    if let Some(dir) = doc.dir() {
        for ins in doc.ast().instructions() {
            let source = match &ins.args {
                Args::Context { file: Some(f), .. } => f,
                Args::Add { src, .. } => src,
                _ => continue,
            };
            if let Some(path) = project.source(&dir, &source.text) {
                out.push(Link {
                    span: source.span,
                    target: Target::File(path),
                });
            }
        }
    }
    for r in lock::image_refs(doc) {
        // Only a reference written as the model has it (no `${ARG}` in the span).
        if doc.text().get(r.span.start..r.span.end) != Some(r.reference) {
            continue;
        }
        if let Some((url, what)) = registry_page(r.reference) {
            out.push(Link {
                span: r.span,
                target: Target::Page(url, what),
            });
        }
    }
    out.sort_by_key(|l| l.span.start);
    out
}

/// The registry's web page of an image reference, for the registries whose page addresses are
/// known from the name alone.
pub fn registry_page(reference: &str) -> Option<(String, &'static str)> {
    let name = reference.split('@').next()?;
    let name = match (name.rfind(':'), name.rfind('/')) {
        (Some(c), slash) if slash.is_none_or(|s| c > s) => &name[..c],
        _ => name,
    };
    let (host, path) = match name.split_once('/') {
        Some((h, p)) if h.contains(['.', ':']) || h == "localhost" => (h, p),
        _ => ("docker.io", name),
    };
    let fits = |p: &str| {
        !p.is_empty()
            && p.split('/').all(|c| !c.is_empty())
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/".contains(&b))
    };
    if !fits(path) {
        return None;
    }
    match host {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => {
            let official = path.strip_prefix("library/").unwrap_or(path);
            Some(if official.contains('/') {
                (format!("https://hub.docker.com/r/{path}"), "Docker Hub")
            } else {
                (format!("https://hub.docker.com/_/{official}"), "Docker Hub")
            })
        }
        "quay.io" => Some((format!("https://quay.io/repository/{path}"), "Quay")),
        _ => None,
    }
}

/// One inlay hint: shown right after `at`, with its label and tooltip.
pub struct Hint {
    pub at: usize,
    pub label: String,
    pub tooltip: String,
}

/// The hints whose place is in `from..=to`.
pub fn hints(doc: &Document, project: &dyn Project, from: usize, to: usize) -> Vec<Hint> {
    let mut out = Vec::new();
    let args = &doc.model.agent.args;
    for ins in doc.ast().instructions() {
        if ins.span.end < from || ins.span.start > to {
            continue;
        }
        // Heredoc bodies are never expanded: only the instruction line.
        for (span, name) in crate::navigate::arg_uses(doc.text(), ins.span) {
            if let Some(v) = args.get(name).filter(|_| (from..=to).contains(&span.end)) {
                out.push(Hint {
                    at: span.end,
                    label: format!("= {}", crate::outline::clip(&v.value)),
                    tooltip: format!("ARG {name} = {}", v.value),
                });
            }
        }
    }
    let refs = lock::image_refs(doc);
    let unpinned: Vec<_> = refs
        .iter()
        .filter(|r| !r.reference.contains('@') && (from..=to).contains(&r.span.end))
        .collect();
    if !unpinned.is_empty() {
        if let Some(l) = lock::read(doc, project) {
            for r in unpinned {
                if let Some(p) = lock::entry(&l, r) {
                    let short: String = p.digest.chars().take("sha256:".len() + 12).collect();
                    out.push(Hint {
                        at: r.span.end,
                        label: format!("@{short}…"),
                        tooltip: format!("pinned in Agentfile.lock to {}", p.digest),
                    });
                }
            }
        }
    }
    out.sort_by_key(|h| h.at);
    out
}

#[cfg(test)]
mod tests {
    use super::registry_page;

    #[test]
    fn registry_pages_are_given_only_where_known() {
        let page = |r| registry_page(r).map(|(u, _)| u);
        assert_eq!(
            page("alpine:3.20").as_deref(),
            Some("https://hub.docker.com/_/alpine")
        );
        assert_eq!(
            page("docker.io/library/alpine@sha256:ab").as_deref(),
            Some("https://hub.docker.com/_/alpine")
        );
        assert_eq!(
            page("bitnami/kubectl:1.30").as_deref(),
            Some("https://hub.docker.com/r/bitnami/kubectl")
        );
        assert_eq!(
            page("quay.io/o/tool:v1").as_deref(),
            Some("https://quay.io/repository/o/tool")
        );
        assert_eq!(page("ghcr.io/o/runtime:latest"), None);
        assert_eq!(page("localhost:5000/a:1"), None);
        assert_eq!(page("Bad Name"), None);
        assert_eq!(page("a//b"), None);
    }
}
