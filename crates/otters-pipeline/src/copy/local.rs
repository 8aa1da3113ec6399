//! The OCI layouts and archives of a copy: a source loaded into the store and the image picked
//! from it, and the names a pinned image keeps in a layout or archive destination.
//!
//! Takes: the store and a layout or archive place (`oci:DIR[:NAME]`, `oci-archive:FILE[:NAME]`).
//! Returns: its images, each with its name, and the closure node a copy starts from. Must never:
//! guess between several images when none is named ([`CopyError::Several`]).

use super::closure::{Node, PinnedBy, Role};
use super::CopyError;
use otters_oci::archive;
use otters_oci::archive::local::{load_layout, LocalSource};
use otters_oci::reference::Reference;
use otters_oci::Descriptor;
use otters_oci::Store;

/// The name a pinned image keeps in a layout or archive: its reference as written when its tag
/// still names it, none when it was taken by digest.
pub(super) fn names_of(node: &Node) -> Vec<String> {
    if node.source.tag.is_some() && !node.written.contains('@') {
        vec![node.written.clone()]
    } else {
        Vec::new()
    }
}

/// Every image of a layout or archive, loaded into the store (referrers recorded as such).
pub(super) fn load_local(
    store: &Store,
    l: &LocalSource,
) -> Result<Vec<(String, Descriptor)>, CopyError> {
    Ok(if l.is_archive {
        archive::load(store, &l.path)?
    } else {
        load_layout(store, &l.path)?
    }
    .images)
}

/// The `org.opencontainers.image.ref.name` a layout or archive entry carries, as written.
fn raw_name(d: &Descriptor) -> Option<&str> {
    d.annotations
        .get(otters_oci::spec::descriptor::ANN_REF_NAME)
        .map(String::as_str)
}

/// The image of a layout or archive a copy starts from: the one named, or the only one.
pub(super) fn local_root(
    l: &LocalSource,
    entries: &[(String, Descriptor)],
) -> Result<Node, CopyError> {
    let holds = || {
        entries
            .iter()
            .map(|(n, d)| match (n.is_empty(), raw_name(d)) {
                (false, _) => n.as_str(),
                (true, Some(raw)) => raw,
                (true, None) => "<none>",
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let picked: Vec<&(String, Descriptor)> = match &l.want {
        // The layout's own ref name counts too: a bare tag (`child`, as skopeo names images)
        // loads untagged, but `oci:DIR:child` still selects it.
        Some(w) => entries
            .iter()
            .filter(|(n, d)| n == w || raw_name(d) == Some(w.as_str()))
            .collect(),
        None => entries.iter().collect(),
    };
    let (name, d) = match (picked.as_slice(), &l.want) {
        ([one], _) => (*one).clone(),
        ([], Some(w)) => {
            return Err(CopyError::NoSuchImage {
                path: l.path.clone(),
                want: w.clone(),
                holds: holds(),
            })
        }
        _ => {
            return Err(CopyError::Several {
                path: l.path.clone(),
                count: picked.len(),
                holds: holds(),
            })
        }
    };
    // A bare tag (as skopeo names images) is not a reference: the image is named by digest.
    let source = Reference::parse(&name)
        .ok()
        .filter(|r| r.digest.is_none())
        .unwrap_or_else(|| Reference {
            registry: "localhost".into(),
            repository: "image".into(),
            tag: None,
            digest: None,
        })
        .with_digest(&d.digest);
    Ok(node_of(Role::Image, name, source, d, None))
}

/// The closure node of an image known by its descriptor, without the descriptor's
/// `org.opencontainers.image.ref.name` annotation.
pub(super) fn node_of(
    role: Role,
    written: String,
    source: Reference,
    d: Descriptor,
    by: Option<PinnedBy>,
) -> Node {
    let mut descriptor = d;
    descriptor
        .annotations
        .remove(otters_oci::spec::descriptor::ANN_REF_NAME);
    Node {
        role,
        written,
        source,
        platforms: Vec::new(),
        descriptor,
        by,
    }
}
