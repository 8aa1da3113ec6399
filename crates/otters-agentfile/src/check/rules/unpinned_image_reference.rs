//! AF201 unpinned-image-reference: FROM (not scratch), RUNTIME and BIN images without a digest
//! whose tag is `latest` or missing.

use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

/// `Some(tag)` when the reference has a tag, `None` when it has none; digests are handled by the
/// caller.
fn tag(reference: &str) -> Option<&str> {
    let last = reference.rsplit('/').next().unwrap_or(reference);
    last.split_once(':').map(|(_, t)| t)
}

/// Why a reference moves, or `None` when it is pinned or has a specific tag.
pub fn moving(reference: &str) -> Option<&'static str> {
    if reference.contains('@') {
        return None;
    }
    match tag(reference) {
        None => Some("has no tag, so it means `latest`"),
        Some("latest") => Some("uses the moving tag `latest`"),
        Some(_) => None,
    }
}

pub fn unpinned_image_reference(
    span: Option<Span>,
    kind: &str,
    reference: &str,
    why: &str,
) -> Diagnostic {
    let repo = reference
        .rsplit_once(':')
        .filter(|(_, t)| !t.contains('/'))
        .map_or(reference, |(r, _)| r);
    Diagnostic::new(Code::UnpinnedImageReference, span, format!("{kind} image `{reference}` {why}"))
        .with_label("not pinned to a digest")
        .with_help(format!(
            "pin a version and digest, e.g. `{repo}:<version>@sha256:<digest>` (`otters lock` shows the digests it resolves)"
        ))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let a = &cx.model.agent;
    let mut refs: Vec<(&str, &str, Option<Span>)> = Vec::new();
    if let Some(f) = a.from.as_ref().filter(|f| f.value != "scratch") {
        refs.push(("FROM", &f.value, f.span));
    }
    if let Some(r) = &a.runtime {
        refs.push(("RUNTIME", &r.value, r.span));
    }
    for b in &a.bins {
        refs.push(("BIN", &b.image, b.image_span));
    }
    for (kind, reference, span) in refs {
        if cx.opts.locked.contains(reference) {
            continue;
        }
        if let Some(why) = moving(reference) {
            out.push(unpinned_image_reference(span, kind, reference, why));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::UnpinnedImageReference,
            &[
                ("RUNTIME ghcr.io/o/runtime:latest", &[2]),
                ("RUNTIME ghcr.io/o/runtime", &[2]),
                ("RUNTIME localhost:5000/runtime", &[2]),
                ("RUNTIME localhost:5000/runtime:v1", &[]),
                ("RUNTIME ghcr.io/o/runtime:v1", &[]),
                ("RUNTIME ghcr.io/o/runtime@sha256:abc", &[]),
                ("RUNTIME ghcr.io/o/runtime:latest@sha256:abc", &[]),
                ("BIN jq ghcr.io/o/jq:latest\nBIN yq ghcr.io/o/yq:4", &[2]),
            ],
        );
        assert_eq!(
            super::super::lines_of(
                Code::UnpinnedImageReference,
                "FROM base-agent\n",
                &crate::check::Options::default()
            ),
            [1]
        );
        assert!(moving("scratch").is_some());
    }
}
