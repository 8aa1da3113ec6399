//! The image references of a document and what `Agentfile.lock` beside it pins them to.
//!
//! Reads the lock with `otters_pipeline::resolve::lockfile` (the build's own reader: same
//! format checks, same confinement of a symlinked lock); resolves nothing.

use crate::document::Document;
use otters_agentfile::diagnostic::Fix;
use otters_agentfile::Span;
use otters_pipeline::resolve::lockfile::{lock_path_for, Entry, Lockfile, Role};

/// One RUNTIME, BIN or FROM reference as the model has it (after ARG expansion).
pub struct ImageRef<'a> {
    pub role: Role,
    pub reference: &'a str,
    pub span: Span,
}

/// Every image reference of the document (FROM scratch is none).
pub fn image_refs<'a>(doc: &'a Document) -> Vec<ImageRef<'a>> {
    let a = &doc.model.agent;
    let mut out = Vec::new();
    // Items without a span were not written in this file (inherited): nothing to point at.
    let mut push = |role, reference: &'a str, span: Option<Span>| {
        if let Some(span) = span {
            out.push(ImageRef {
                role,
                reference,
                span,
            });
        }
    };
    if let Some(f) = a.from.as_ref().filter(|f| f.value != "scratch") {
        push(Role::From, &f.value, f.span);
    }
    if let Some(r) = &a.runtime {
        push(Role::Runtime, &r.value, r.span);
    }
    for b in &a.bins {
        push(Role::Bin, &b.image, b.image_span);
    }
    out
}

/// The lock beside the document's file; `None` without a file, a lock, or a readable one.
pub fn read(doc: &Document) -> Option<Lockfile> {
    Lockfile::read(&lock_path_for(doc.path.as_deref()?))
        .ok()
        .flatten()
}

/// The lock's entry for a reference.
pub fn entry<'l>(lock: &'l Lockfile, r: &ImageRef<'_>) -> Option<&'l Entry> {
    lock.get(r.role, r.reference)
}

/// Writes the locked digest into a reference that has none (`r:1` → `r:1@sha256:…`): the build
/// already uses that digest, the file then says so. Only where the reference is written as the
/// model has it (no `${ARG}` in it).
pub fn pin_fix(doc: &Document, r: &ImageRef<'_>, e: &Entry) -> Option<Fix> {
    let written = doc.text().get(r.span.start..r.span.end)?;
    if written != r.reference || r.reference.contains('@') {
        return None;
    }
    let digest = e.index.as_ref().unwrap_or(&e.digest);
    Some(Fix::replace(
        format!("Pin `{}` to {digest} (Agentfile.lock)", r.reference),
        r.span,
        format!("{}@{digest}", r.reference),
        false,
    ))
}
