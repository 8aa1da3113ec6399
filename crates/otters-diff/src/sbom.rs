//! The component delta of a re-pinned image: when a RUNTIME, BIN or FROM moves to another digest
//! of the same repository and both digests have an SBOM referrer (`CycloneDX` or SPDX JSON, as a
//! plain document or inside a Sigstore bundle), which components were added, removed or changed
//! version, as the `detail` of the `pin` change.
//!
//! Takes: the classified changes and an [`Open`] that gives the `Target` of an `image@digest`
//! (the local store, or its registry). Returns: nothing; each re-pin gets its `detail`. Must
//! never: read more than [`MAX_SBOM`] bytes of one SBOM or list more than [`MAX_LISTED`]
//! components, fail the diff (an SBOM that cannot be read says so in the detail), or verify
//! anything (an SBOM inside a bundle is read, not checked).
use crate::change::{Change, Class};
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::spec::media_type::MANIFEST_V1;
use otters_oci::{Descriptor, Digest, Store};
use otters_pipeline::target::{names_registry, Place, Target};
use otters_supply::bundle::BUNDLE_V03;
use otters_supply::verify::{ANN_BUNDLE_PREDICATE, MAX_BUNDLE_MANIFEST};
use serde_json::Value as J;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The largest SBOM (or bundle holding one) a diff reads.
pub const MAX_SBOM: u64 = 8 << 20;
/// The most components one delta names; the rest are counted.
pub const MAX_LISTED: usize = 20;
/// The most components read of one SBOM (nested ones included).
pub const MAX_COMPONENTS: usize = 100_000;
/// The most SBOM referrers of one image tried before giving up.
pub(crate) const MAX_TRIED: usize = 4;

pub(crate) const CYCLONEDX: &str = "application/vnd.cyclonedx+json";
const SPDX: &str = "application/spdx+json";
const SBOM_PREDICATES: [&str; 2] = ["https://cyclonedx.org/bom", "https://spdx.dev/Document"];

/// Gives the `Target` of an image named `image` (a reference, maybe with `@digest`) at `digest`,
/// or why it cannot be read.
pub type Open<'a> = dyn Fn(&str, &Digest) -> Result<Target, String> + 'a;

/// The [`Open`] of `otters diff`: an image the store `store` holds (its manifest blob is there)
/// is read there unless `place` is `Remote`; else, unless `place` is `Local`, from the registry
/// its reference names, with no request made until its referrers are listed.
pub fn opener(
    store: Store,
    place: Place,
    insecure: bool,
) -> impl Fn(&str, &Digest) -> Result<Target, String> {
    move |image: &str, digest: &Digest| {
        let here = Target::Local(
            store.clone(),
            Descriptor::new(MANIFEST_V1, digest.clone(), 0),
        );
        if place != Place::Remote && store.blob_path(digest).is_file() {
            return Ok(here);
        }
        let remote = names_registry(image).filter(|_| place != Place::Local);
        let Some(r) = remote else {
            return Err("not in the local store".to_owned());
        };
        here.in_registry(&r, insecure).map_err(|e| e.to_string())
    }
}

/// Each component's name and its versions (a name may appear at several versions).
pub type Components = BTreeMap<String, BTreeSet<String>>;

/// Adds the component delta to each `pin` change of an image whose old and new values are both
/// pinned (`image@sha256:…`).
pub fn compare_pins(changes: &mut [Change], open: &Open<'_>) {
    for c in changes.iter_mut().filter(|c| c.class == Class::Pin) {
        let (Some(before), Some(after)) = (c.before.as_deref(), c.after.as_deref()) else {
            continue;
        };
        let (Some(old), Some(new)) = (split(before), split(after)) else {
            continue;
        };
        let read = |(image, digest): (&str, Digest)| {
            open(image, &digest).and_then(|t| of_image(&t, &digest))
        };
        c.detail = Some(describe(read(old), read(new)));
    }
}

/// `image@sha256:hex` as (the image, the digest).
fn split(pinned: &str) -> Option<(&str, Digest)> {
    let (image, digest) = pinned.rsplit_once('@')?;
    Some((image, Digest::parse(digest).ok()?))
}

/// The delta's text: `SBOM: +name@v, -name@v, ~name v1 → v2` (at most [`MAX_LISTED`], then how
/// many more), `SBOM: no component changed`, or why there is nothing to compare.
pub fn describe(
    old: Result<Option<Components>, String>,
    new: Result<Option<Components>, String>,
) -> String {
    let (old, new) = match (old, new) {
        (Err(why), _) => return format!("SBOM not compared: the old image: {why}"),
        (_, Err(why)) => return format!("SBOM not compared: the new image: {why}"),
        (Ok(None), Ok(None)) => return "no SBOM to compare (neither image has one)".to_owned(),
        (Ok(None), Ok(Some(_))) => return "no SBOM to compare (the old image has none)".to_owned(),
        (Ok(Some(_)), Ok(None)) => return "no SBOM to compare (the new image has none)".to_owned(),
        (Ok(Some(a)), Ok(Some(b))) => (a, b),
    };
    let versions = |v: &BTreeSet<String>| v.iter().cloned().collect::<Vec<_>>().join(",");
    let at = |name: &str, v: &BTreeSet<String>| match versions(v) {
        s if s.is_empty() => name.to_owned(),
        s => format!("{name}@{s}"),
    };
    let mut listed = Vec::new();
    for name in old.keys().chain(new.keys()).collect::<BTreeSet<_>>() {
        match (old.get(name), new.get(name)) {
            (None, Some(v)) => listed.push(format!("+{}", at(name, v))),
            (Some(v), None) => listed.push(format!("-{}", at(name, v))),
            (Some(x), Some(y)) if x != y => {
                listed.push(format!("~{name} {} → {}", versions(x), versions(y)));
            }
            _ => {}
        }
    }
    if listed.is_empty() {
        return "SBOM: no component changed".to_owned();
    }
    let more = listed.len().saturating_sub(MAX_LISTED);
    listed.truncate(MAX_LISTED);
    let mut text = format!("SBOM: {}", listed.join(", "));
    if more > 0 {
        let _ = write!(text, ", … {more} more");
    }
    text
}

/// The components of the first SBOM referrer of `digest` that reads, `None` when it has none.
///
/// # Errors
/// The referrers cannot be listed, or every SBOM referrer failed to read (the last reason).
pub fn of_image(target: &Target, digest: &Digest) -> Result<Option<Components>, String> {
    let listed = target
        .referrers(digest, None)
        .map_err(|e| format!("cannot list its referrers: {e}"))?;
    let sboms = listed.iter().filter(|d| is_sbom(d)).take(MAX_TRIED);
    let mut last = None;
    for d in sboms {
        match read_one(target, d) {
            Ok(c) => return Ok(Some(c)),
            Err(why) => last = Some(why),
        }
    }
    last.map_or(Ok(None), Err)
}

fn is_sbom(d: &Descriptor) -> bool {
    match d.artifact_type.as_deref() {
        Some(CYCLONEDX | SPDX) => true,
        Some(BUNDLE_V03) => d
            .annotations
            .get(ANN_BUNDLE_PREDICATE)
            .is_some_and(|p| SBOM_PREDICATES.contains(&p.as_str())),
        _ => false,
    }
}

/// One SBOM referrer's components.
fn read_one(target: &Target, d: &Descriptor) -> Result<Components, String> {
    let v = read_document(target, d)?;
    components(&v).ok_or_else(|| "the SBOM is neither CycloneDX nor SPDX JSON".to_owned())
}

/// One document referrer (an SBOM, provenance): its manifest (at most [`MAX_BUNDLE_MANIFEST`]),
/// its first layer (at most [`MAX_SBOM`]), and the document in it: the layer's JSON, or a
/// bundle's DSSE statement's predicate (read, not verified).
pub(crate) fn read_document(target: &Target, d: &Descriptor) -> Result<J, String> {
    if d.size > MAX_BUNDLE_MANIFEST {
        return Err(format!(
            "its manifest is {} bytes, more than {MAX_BUNDLE_MANIFEST}",
            d.size
        ));
    }
    let bytes = target.manifest(d).map_err(|e| e.to_string())?;
    let doc: ManifestDoc =
        serde_json::from_slice(&bytes).map_err(|e| format!("its manifest is not JSON: {e}"))?;
    let layer = doc.layers.first().ok_or("the referrer has no layer")?;
    let blob = target.blob(layer, MAX_SBOM).map_err(|e| e.to_string())?;
    let v: J =
        serde_json::from_slice(&blob).map_err(|e| format!("the document is not JSON: {e}"))?;
    if d.artifact_type.as_deref() == Some(BUNDLE_V03) {
        return predicate(&v).ok_or_else(|| "the bundle holds no readable statement".to_owned());
    }
    Ok(v)
}

/// The predicate of a bundle's DSSE statement (read, not verified).
fn predicate(bundle: &J) -> Option<J> {
    use base64::Engine as _;
    let payload = bundle.pointer("/dsseEnvelope/payload")?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()?;
    let statement: J = serde_json::from_slice(&bytes).ok()?;
    statement.get("predicate").cloned()
}

/// The components of a `CycloneDX` document (`components`, nested ones too; `group/name`) or an
/// SPDX one (`packages`: `name`, `versionInfo`), at most [`MAX_COMPONENTS`].
pub fn components(doc: &J) -> Option<Components> {
    let mut out = Components::new();
    let add = |name: &str, version: Option<&str>, out: &mut Components| {
        if !name.is_empty() {
            let versions = out.entry(name.to_owned()).or_default();
            versions.extend(version.filter(|v| !v.is_empty()).map(str::to_owned));
        }
    };
    if doc.get("bomFormat").and_then(J::as_str) == Some("CycloneDX") {
        let mut stack: Vec<&J> = doc.get("components")?.as_array()?.iter().collect();
        let mut seen = 0usize;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > MAX_COMPONENTS {
                break;
            }
            let name = c.get("name").and_then(J::as_str).unwrap_or_default();
            let name = match c.get("group").and_then(J::as_str) {
                Some(g) if !g.is_empty() => format!("{g}/{name}"),
                _ => name.to_owned(),
            };
            add(&name, c.get("version").and_then(J::as_str), &mut out);
            if let Some(inner) = c.get("components").and_then(J::as_array) {
                stack.extend(inner.iter().take(MAX_COMPONENTS));
            }
        }
        return Some(out);
    }
    if doc.get("spdxVersion").is_some() {
        for p in doc.get("packages")?.as_array()?.iter().take(MAX_COMPONENTS) {
            let name = p.get("name").and_then(J::as_str).unwrap_or_default();
            add(name, p.get("versionInfo").and_then(J::as_str), &mut out);
        }
        return Some(out);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cdx(list: &[(&str, &str)]) -> Components {
        let c: Vec<J> = list
            .iter()
            .map(|(n, v)| json!({"type": "library", "name": n, "version": v}))
            .collect();
        components(&json!({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": c}))
            .unwrap()
    }

    #[test]
    fn cyclonedx_and_spdx_components_are_read_and_anything_else_is_not() {
        let nested = json!({"bomFormat": "CycloneDX", "components": [
            {"name": "app", "version": "1", "group": "acme", "components": [{"name": "zlib", "version": "1.3"}]}
        ]});
        let got = components(&nested).unwrap();
        assert_eq!(got.keys().collect::<Vec<_>>(), ["acme/app", "zlib"]);
        let spdx = json!({"spdxVersion": "SPDX-2.3", "packages": [
            {"name": "openssl", "versionInfo": "3.0.2"}, {"name": "openssl", "versionInfo": "1.1.1"}
        ]});
        assert_eq!(
            components(&spdx).unwrap()["openssl"]
                .iter()
                .collect::<Vec<_>>(),
            ["1.1.1", "3.0.2"]
        );
        assert!(components(&json!({"hello": 1})).is_none());
        assert!(components(&json!({"bomFormat": "CycloneDX", "components": 3})).is_none());
    }

    #[test]
    fn an_sbom_is_found_as_a_document_or_inside_a_bundle_in_the_store() {
        use otters_core::json::Value;
        use otters_supply::statement::{Statement, Subject};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store")).unwrap();
        let (digest, size) = store.put_blob_bytes(b"{}").unwrap();
        let subject = Descriptor::new(MANIFEST_V1, digest.clone(), size);
        let open = opener(store.clone(), Place::Local, false);
        let t = open("reg.test/tools/rt:1", &digest).unwrap();
        assert_eq!(of_image(&t, &digest).unwrap(), None);
        // A signed CycloneDX attestation, annotated as `otters build --sbom --sign-key` does.
        let mut st = Statement::signature(Subject {
            name: "rt".into(),
            digest: digest.clone(),
        });
        st.predicate_type = SBOM_PREDICATES[0].to_owned();
        let c = Value::object()
            .with("name", "musl")
            .with("version", "1.2.4");
        st.predicate = Value::object()
            .with("bomFormat", "CycloneDX")
            .with("components", vec![c]);
        let key = otters_supply::keys::KeyPair::generate();
        let bundle = otters_supply::bundle::sign(&st, &key);
        let (b, n) = store.put_blob_bytes(&bundle).unwrap();
        let notes = BTreeMap::from([(
            ANN_BUNDLE_PREDICATE.to_owned(),
            SBOM_PREDICATES[0].to_owned(),
        )]);
        let layer = Descriptor::new(BUNDLE_V03, b, n);
        store
            .attach(&subject, BUNDLE_V03, &[layer], &notes)
            .unwrap();
        let got = of_image(&t, &digest).unwrap().unwrap();
        assert_eq!(got["musl"].iter().collect::<Vec<_>>(), ["1.2.4"]);
        // An image the store lacks, with --local: why, not a failure of the diff.
        let other = Digest::of(b"elsewhere");
        assert_eq!(
            open("reg.test/tools/rt:1", &other).err().unwrap(),
            "not in the local store"
        );
    }

    #[test]
    fn the_delta_names_what_was_added_removed_and_changed_and_counts_the_rest() {
        let old = cdx(&[("busybox", "1.36"), ("musl", "1.2.4"), ("gone", "0.1")]);
        let new = cdx(&[("busybox", "1.37"), ("musl", "1.2.4"), ("curl", "8.5")]);
        assert_eq!(
            describe(Ok(Some(old.clone())), Ok(Some(new))),
            "SBOM: ~busybox 1.36 → 1.37, +curl@8.5, -gone@0.1"
        );
        assert_eq!(
            describe(Ok(Some(old.clone())), Ok(Some(old.clone()))),
            "SBOM: no component changed"
        );
        assert_eq!(
            describe(Ok(Some(old.clone())), Ok(None)),
            "no SBOM to compare (the new image has none)"
        );
        assert_eq!(
            describe(Err("cannot list its referrers: x".into()), Ok(None)),
            "SBOM not compared: the old image: cannot list its referrers: x"
        );
        let many: Vec<(String, String)> =
            (0..25).map(|i| (format!("p{i:02}"), "1".into())).collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let text = describe(Ok(Some(Components::new())), Ok(Some(cdx(&many))));
        assert!(text.starts_with("SBOM: +p00@1, +p01@1,"), "{text}");
        assert!(text.ends_with("+p19@1, … 5 more"), "{text}");
    }
}
