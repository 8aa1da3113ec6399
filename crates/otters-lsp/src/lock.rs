//! The image references of a document and what `Agentfile.lock` beside it pins them to.
//!
//! The lock is read by the [`crate::Project`] (the binary uses the build's own reader: same
//! format checks, same confinement of a symlinked lock); this module resolves nothing.

use crate::document::Document;
use crate::Project;
use otters_agentfile::diagnostic::Fix;
use otters_agentfile::Span;

/// Which instruction a reference comes from (a lock pins each role's references apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    From,
    Runtime,
    Bin,
}

/// What the lock pins one reference to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub role: Role,
    /// The reference as written in the Agentfile.
    pub reference: String,
    /// The image manifest's digest (`sha256:…`).
    pub digest: String,
    /// The index the reference named, when it named one.
    pub index: Option<String>,
    /// The platform picked from that index.
    pub platform: Option<String>,
    pub description: Option<String>,
}

/// The pins of one `Agentfile.lock`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lock {
    pub pins: Vec<Pin>,
}

impl Lock {
    /// The pin of `reference` written in a `role` instruction.
    pub fn get(&self, role: Role, reference: &str) -> Option<&Pin> {
        self.pins
            .iter()
            .find(|p| p.role == role && p.reference == reference)
    }
}

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
pub fn read(doc: &Document, project: &dyn Project) -> Option<Lock> {
    project.lock(doc.path.as_deref()?)
}

/// The lock's pin of a reference.
pub fn entry<'l>(lock: &'l Lock, r: &ImageRef<'_>) -> Option<&'l Pin> {
    lock.get(r.role, r.reference)
}

/// Writes the locked digest into a reference that has none (`r:1` → `r:1@sha256:…`): the build
/// already uses that digest, the file then says so. Only where the reference is written as the
/// model has it (no `${ARG}` in it).
pub fn pin_fix(doc: &Document, r: &ImageRef<'_>, e: &Pin) -> Option<Fix> {
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
