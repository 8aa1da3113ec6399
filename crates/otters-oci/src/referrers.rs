//! OCI 1.1 referrers: artifact manifests that name a `subject`, and the referrers index that lists
//! them (the answer of `GET /v2/<name>/referrers/<digest>`, the tag schema's `sha256-<hex>` index,
//! and the local store's per-subject file).
//!
//! Takes: descriptors and bytes, some from a registry (untrusted). Returns: canonical artifact
//! manifests, referrer descriptors, and validated lists of referrers. Must never: accept a
//! referrers index that is not an image index, is larger than [`MAX_MANIFEST`], lists more than
//! [`MAX_REFERRERS`] entries, or carries an `artifactType` that is not a plain media-type string.

use crate::spec::descriptor::{
    string_map, Descriptor, ManifestDoc, EMPTY_CONFIG, INDEX_V1, MANIFEST_V1,
};
use crate::spec::digest::Digest;
use crate::spec::media_type::MediaType;
use crate::validate::{escape_text, validate_manifest, Kind, MAX_MANIFEST};
use otters_core::json::{to_compact, Value};
use std::collections::BTreeMap;

/// Most referrers one subject may have (in a registry's answer or the store's file).
pub const MAX_REFERRERS: usize = 1024;
/// Deepest chain of referrers followed (a signature of an SBOM of an image is 2).
pub const MAX_DEPTH: usize = 3;
/// The bytes of the empty config blob.
pub const EMPTY_JSON: &[u8] = b"{}";

/// The tag the referrers tag schema uses for `subject`: `sha256-<hex>`.
pub fn tag_schema(subject: &Digest) -> String {
    format!("sha256-{}", subject.hex())
}

/// The descriptor of the empty config `{}`.
pub fn empty_config() -> Descriptor {
    Descriptor::new(
        EMPTY_CONFIG,
        Digest::of(EMPTY_JSON),
        EMPTY_JSON.len() as u64,
    )
}

/// An artifact manifest (canonical JSON) of type `artifact_type` with `layers`, referring to
/// `subject`. No time and no random value: the same inputs give the same bytes.
pub fn artifact_manifest(
    subject: &Descriptor,
    artifact_type: &str,
    layers: &[Descriptor],
    annotations: &BTreeMap<String, String>,
) -> Vec<u8> {
    let subject = Descriptor::new(
        subject.media_type.clone(),
        subject.digest.clone(),
        subject.size,
    );
    let mut v = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", MANIFEST_V1)
        .with("artifactType", artifact_type)
        .with("config", empty_config().to_json())
        .with(
            "layers",
            Value::Array(layers.iter().map(Descriptor::to_json).collect()),
        )
        .with("subject", subject.to_json());
    if !annotations.is_empty() {
        v.push("annotations", string_map(annotations));
    }
    to_compact(&v).unwrap_or_default()
}

/// The referrers-index entry for a manifest: its media type, digest and size, its `artifactType`
/// (or, without one, its config's media type, as the spec says) and its annotations.
pub fn descriptor_of(bytes: &[u8], media_type: &MediaType) -> Descriptor {
    let doc: ManifestDoc = serde_json::from_slice(bytes).unwrap_or_default();
    let mut d = Descriptor::new(media_type.clone(), Digest::of(bytes), bytes.len() as u64);
    d.artifact_type = doc
        .artifact_type
        .or_else(|| doc.config.map(|c| c.media_type.as_str().to_owned()));
    d.annotations = doc.annotations;
    d
}

/// The subject a manifest names, if any.
pub fn subject_of(bytes: &[u8]) -> Option<Descriptor> {
    serde_json::from_slice::<ManifestDoc>(bytes).ok()?.subject
}

/// A referrers index (canonical JSON) listing `entries`.
pub fn index_bytes(entries: &[Descriptor]) -> Vec<u8> {
    let v = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", INDEX_V1)
        .with(
            "manifests",
            Value::Array(entries.iter().map(Descriptor::to_json).collect()),
        );
    to_compact(&v).unwrap_or_default()
}

/// Whether `s` is a media type as a referrer may carry it: `type/subtype` of the characters RFC
/// 6838 allows, at most 255 of them.
pub fn plain_media_type(s: &str) -> bool {
    let ok = |b: u8| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b);
    s.len() <= 255
        && s.split_once('/').is_some_and(|(t, st)| {
            !t.is_empty() && !st.is_empty() && t.bytes().all(ok) && st.bytes().all(ok)
        })
}

/// Reads a referrers index (from a registry, an archive or the store): at most [`MAX_MANIFEST`]
/// bytes, an image index by [`validate_manifest`], at most [`MAX_REFERRERS`] entries, each a
/// manifest or index whose `artifactType` (if any) is a plain media type.
pub fn parse_index(bytes: &[u8], header: Option<&str>) -> Result<Vec<Descriptor>, String> {
    if bytes.len() > MAX_MANIFEST {
        return Err(format!(
            "the referrers index is more than {MAX_MANIFEST} bytes"
        ));
    }
    validate_manifest(bytes, header, Some(Kind::Index))
        .map_err(|why| format!("the referrers index is refused: {why}"))?;
    let doc: ManifestDoc = serde_json::from_slice(bytes)
        .map_err(|e| format!("the referrers index is refused: {e}"))?;
    if doc.manifests.len() > MAX_REFERRERS {
        return Err(format!(
            "the referrers index lists {} entries, more than the limit of {MAX_REFERRERS}",
            doc.manifests.len()
        ));
    }
    for d in &doc.manifests {
        if Kind::of(&d.media_type).is_none() {
            return Err(format!(
                "referrer {} has media type \"{}\", which is not a manifest",
                d.digest,
                escape_text(d.media_type.as_str(), 80)
            ));
        }
        if let Some(at) = d.artifact_type.as_deref().filter(|a| !plain_media_type(a)) {
            return Err(format!(
                "referrer {} has artifactType \"{}\", which is not a media type",
                d.digest,
                escape_text(at, 80)
            ));
        }
    }
    Ok(doc.manifests)
}

/// Adds the entries of `add` that `list` lacks (by digest); keeps `list` sorted by digest so the
/// bytes do not depend on the order entries arrived in. Returns whether anything was added.
pub fn merge(list: &mut Vec<Descriptor>, add: &[Descriptor]) -> bool {
    let before = list.len();
    for d in add {
        if !list.iter().any(|e| e.digest == d.digest) {
            list.push(d.clone());
        }
    }
    list.sort_by(|a, b| a.digest.cmp(&b.digest));
    list.len() != before
}

/// The entries of `list` whose `artifactType` is `wanted` (all when `None`).
pub fn filter(list: Vec<Descriptor>, wanted: Option<&str>) -> Vec<Descriptor> {
    match wanted {
        None => list,
        Some(w) => list
            .into_iter()
            .filter(|d| d.artifact_type.as_deref() == Some(w))
            .collect(),
    }
}

/// One referrer in a discovered tree, with its own referrers.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub descriptor: Descriptor,
    pub referrers: Vec<Node>,
}

/// The referrers of a subject, [`MAX_DEPTH`] deep, as far as the request budget reached.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tree {
    pub referrers: Vec<Node>,
    /// Requests the listings took.
    pub requests: usize,
    /// Set when the budget stopped the walk: some referrers were not listed below.
    pub cut: bool,
}

/// The nodes `at` of the arena `flat`, with their children.
fn nest(flat: &[(Descriptor, Vec<usize>)], at: &[usize]) -> Vec<Node> {
    at.iter()
        .map(|&i| Node {
            descriptor: flat[i].0.clone(),
            referrers: nest(flat, &flat[i].1),
        })
        .collect()
}

/// How [`walk`] lists a subject's referrers: the referrers (of the type, when given) and the
/// requests that cost.
pub type Lister<'a, E> =
    dyn FnMut(&Digest, Option<&str>) -> Result<(Vec<Descriptor>, usize), E> + 'a;

/// Walks the referrers of `subject` breadth first (so a budget cut leaves whole upper levels),
/// [`MAX_DEPTH`] deep; `artifact_type` filters the first level only. `list` returns a subject's
/// referrers and the requests that cost; no listing starts once `max_requests` were made.
///
/// # Errors
/// The first error `list` returns.
pub fn walk<E>(
    subject: &Digest,
    artifact_type: Option<&str>,
    max_requests: usize,
    list: &mut Lister<'_, E>,
) -> Result<Tree, E> {
    // Flat arena: (descriptor, children); `None` parent = the subject.
    let mut flat: Vec<(Descriptor, Vec<usize>)> = Vec::new();
    let mut roots = Vec::new();
    let mut queue: std::collections::VecDeque<(Option<usize>, Digest, usize)> =
        std::collections::VecDeque::from([(None, subject.clone(), 0)]);
    let mut tree = Tree::default();
    while let Some((parent, digest, depth)) = queue.pop_front() {
        if tree.requests >= max_requests {
            tree.cut = true;
            break;
        }
        let filter = if depth == 0 { artifact_type } else { None };
        let (found, cost) = list(&digest, filter)?;
        tree.requests += cost;
        for d in found {
            let at = flat.len();
            let next = d.digest.clone();
            flat.push((d, Vec::new()));
            match parent {
                None => roots.push(at),
                Some(p) => flat[p].1.push(at),
            }
            if depth + 1 < MAX_DEPTH {
                queue.push_back((Some(at), next, depth + 1));
            }
        }
    }
    tree.referrers = nest(&flat, &roots);
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Descriptor {
        Descriptor::new(MANIFEST_V1, Digest::of(b"image"), 5).with_annotation("x", "dropped")
    }

    #[test]
    fn artifact_manifests_are_canonical_valid_and_name_their_subject() {
        let layer = Descriptor::new("text/plain", Digest::of(b"hi"), 2);
        let bytes = artifact_manifest(&subject(), "application/x.test", &[layer], &BTreeMap::new());
        assert_eq!(
            validate_manifest(&bytes, None, None),
            Ok(MANIFEST_V1.to_owned())
        );
        let s = subject_of(&bytes).unwrap();
        assert_eq!(s.digest, Digest::of(b"image"));
        assert!(s.annotations.is_empty(), "the subject descriptor is bare");
        let d = descriptor_of(&bytes, &MediaType::parse(MANIFEST_V1));
        assert_eq!(d.artifact_type.as_deref(), Some("application/x.test"));
        assert_eq!(d.digest, Digest::of(&bytes));
        let again = artifact_manifest(
            &subject(),
            "application/x.test",
            &[Descriptor::new("text/plain", Digest::of(b"hi"), 2)],
            &BTreeMap::new(),
        );
        assert_eq!(bytes, again);
    }

    #[test]
    fn indexes_round_trip_merge_and_filter() {
        let mut a = Descriptor::new(MANIFEST_V1, Digest::of(b"a"), 1);
        a.artifact_type = Some("application/a".into());
        let b = Descriptor::new(MANIFEST_V1, Digest::of(b"b"), 1);
        let mut list = vec![a.clone()];
        assert!(merge(&mut list, &[b.clone(), a.clone()]));
        assert!(!merge(&mut list, std::slice::from_ref(&b)));
        assert_eq!(list.len(), 2);
        let back = parse_index(&index_bytes(&list), None).unwrap();
        assert_eq!(back, list);
        assert_eq!(filter(back, Some("application/a")), vec![a]);
    }

    #[test]
    fn hostile_indexes_are_refused() {
        let entry = |mt: &str, at: &str| {
            format!(
                r#"{{"mediaType":"{mt}","digest":"sha256:{}","size":1,"artifactType":"{at}"}}"#,
                "a".repeat(64)
            )
        };
        let index = |entries: &str| {
            format!(r#"{{"schemaVersion":2,"mediaType":"{INDEX_V1}","manifests":[{entries}]}}"#)
        };
        let many = vec![entry(MANIFEST_V1, "a/b"); MAX_REFERRERS + 1].join(",");
        assert!(parse_index(index(&many).as_bytes(), None)
            .unwrap_err()
            .contains("limit"));
        let esc = entry(MANIFEST_V1, "a/\\u001b[31m");
        assert!(parse_index(index(&esc).as_bytes(), None)
            .unwrap_err()
            .contains("not a media type"));
        let blob = entry("text/plain", "a/b");
        assert!(parse_index(index(&blob).as_bytes(), None)
            .unwrap_err()
            .contains("not a manifest"));
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{},"layers":[]}}"#,
            entry(MANIFEST_V1, "a/b")
        );
        assert!(parse_index(manifest.as_bytes(), None).is_err());
        assert!(parse_index(&vec![b' '; MAX_MANIFEST + 1], None).is_err());
        assert!(plain_media_type(
            "application/vnd.dev.sigstore.bundle.v0.3+json"
        ));
        assert!(!plain_media_type("nope"));
    }

    #[test]
    fn the_walk_stops_at_its_budget_and_says_so() {
        // Every digest has three referrers: 3 + 9 + 27 below the subject, 13 listings in all.
        let mut n = 0u8;
        let mut list = |_: &Digest, _: Option<&str>| -> Result<(Vec<Descriptor>, usize), ()> {
            let v = (0..3)
                .map(|_| {
                    n = n.wrapping_add(1);
                    Descriptor::new(MANIFEST_V1, Digest::of(&[n]), 1)
                })
                .collect();
            Ok((v, 1))
        };
        let all = walk(&Digest::of(b"s"), None, 100, &mut list).unwrap_or_default();
        assert_eq!((all.requests, all.cut), (13, false));
        assert_eq!(all.referrers[2].referrers[2].referrers.len(), 3);
        let cut = walk(&Digest::of(b"s"), None, 4, &mut list).unwrap_or_default();
        assert_eq!((cut.requests, cut.cut), (4, true));
        // Breadth first: the second level is whole, the third was not listed.
        assert!(cut.referrers.iter().all(|n| n.referrers.len() == 3));
        assert_eq!(cut.referrers[0].referrers[0].referrers.len(), 0);
    }
}
