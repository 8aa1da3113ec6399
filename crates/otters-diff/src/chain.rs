//! The flattened FROM chain of one side: the agent's parent (level 1), the parent's parent
//! (level 2), …, each by the reference its FROM names and the digest it was built from.
//!
//! An agent's image records its FROM reference (the config blob) but not the parent's digest:
//! that is in `Agentfile.lock` (an Agentfile directory) and in the SBOM or SLSA provenance
//! `otters build --sbom/--provenance` attaches (the `parent` component or resolved dependency).
//! Takes: the side, the `Target` it was read from, the parent's digest when the caller knows it
//! (the lock), and an [`Open`]. Returns: the levels, and where the walk stopped short (a parent
//! whose digest is not recorded, or that cannot be read). Must never: follow more than
//! [`MAX_DEPTH`] levels, read a data layer, or take a tag's current digest for the one built
//! from (a level whose digest is not recorded ends the chain).
use crate::sbom::{read_document, Open, CYCLONEDX, MAX_TRIED};
use crate::side::{Chain, Level, Side, MAX_TEXT};
use otters_agentfile::ir;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::spec::media_type::MANIFEST_V1;
use otters_oci::{Descriptor, Digest, MediaType};
use otters_pipeline::target::Target;
use otters_supply::bundle::BUNDLE_V03;
use otters_supply::statement::PAYLOAD_TYPE;
use otters_supply::verify::ANN_BUNDLE_PREDICATE;
use serde_json::Value as J;

/// The most levels followed.
pub const MAX_DEPTH: usize = 8;

const PARENT_PREDICATES: [&str; 2] = [
    "https://cyclonedx.org/bom",
    "https://slsa.dev/provenance/v1",
];

/// What a level is called: `level 1 (the parent)`, `level 2 (the grandparent)`, `level N`.
pub fn level_name(level: usize) -> String {
    match level {
        1 => "level 1 (the parent)".to_owned(),
        2 => "level 2 (the grandparent)".to_owned(),
        n => format!("level {n}"),
    }
}

fn non_scratch(from: Option<&str>) -> Option<String> {
    from.filter(|f| !f.is_empty() && *f != "scratch")
        .map(str::to_owned)
}

/// The chain of `side`, read from `target` and the images `open` gives; `parent` is the digest of
/// level 1 when the caller knows it (an Agentfile directory's lock).
pub fn follow(target: &Target, side: &Side, parent: Option<Digest>, open: &Open<'_>) -> Chain {
    let mut chain = Chain::default();
    let Some(mut reference) = non_scratch(side.model.agent.from_ref()) else {
        return chain;
    };
    let mut digest = parent.or_else(|| {
        parent_pin(target, &side.manifest).or_else(|| {
            (side.digest != side.manifest)
                .then(|| parent_pin(target, &side.digest))
                .flatten()
        })
    });
    loop {
        chain.levels.push(Level {
            reference: reference.clone(),
            digest: digest.clone(),
        });
        let Some(d) = digest else {
            chain.cut = Some(format!(
                "the digest of {reference} its child was built from is not recorded (no Agentfile.lock, SBOM or provenance names it)"
            ));
            return chain;
        };
        if chain.levels.len() >= MAX_DEPTH {
            chain.cut = Some(format!("at most {MAX_DEPTH} levels are followed"));
            return chain;
        }
        let next = open(&reference, &d).and_then(|t| {
            let from = from_of(&t, &d)?;
            Ok((from, t))
        });
        match next {
            Ok((None, _)) => return chain,
            Ok((Some(from), t)) => {
                digest = parent_pin(&t, &d);
                reference = from;
            }
            Err(why) => {
                chain.cut = Some(format!(
                    "cannot read {}: {why}",
                    level_name(chain.levels.len())
                ));
                return chain;
            }
        }
    }
}

/// The FROM reference of the agent manifest `digest` in `target` (`None` for scratch).
fn from_of(target: &Target, digest: &Digest) -> Result<Option<String>, String> {
    let bytes = target
        .manifest(&Descriptor::new(MANIFEST_V1, digest.clone(), 0))
        .map_err(|e| e.to_string())?;
    let doc: ManifestDoc =
        serde_json::from_slice(&bytes).map_err(|e| format!("not a manifest: {e}"))?;
    let config = doc
        .config
        .filter(|c| c.media_type == MediaType::AgentConfig)
        .ok_or("not an agent manifest")?;
    let blob = target.blob(&config, MAX_TEXT).map_err(|e| e.to_string())?;
    let model = ir::from_config_blob(&blob).map_err(|e| e.to_string())?;
    Ok(non_scratch(model.agent.from_ref()))
}

/// The parent digest the SBOM or provenance referrers of `digest` record, if any does.
fn parent_pin(target: &Target, digest: &Digest) -> Option<Digest> {
    let listed = target.referrers(digest, None).ok()?;
    let documents = listed
        .iter()
        .filter(|d| match d.artifact_type.as_deref() {
            Some(CYCLONEDX | PAYLOAD_TYPE) => true,
            Some(BUNDLE_V03) => d
                .annotations
                .get(ANN_BUNDLE_PREDICATE)
                .is_some_and(|p| PARENT_PREDICATES.contains(&p.as_str())),
            _ => false,
        })
        .take(MAX_TRIED);
    documents
        .filter_map(|d| read_document(target, d).ok())
        .find_map(|v| parent_in(&v))
}

/// The parent digest in an otters SBOM (the component `bom-ref: parent`) or SLSA provenance (the
/// resolved dependency `name: parent`; a whole statement or its predicate).
pub fn parent_in(doc: &J) -> Option<Digest> {
    let sha = |hex: &str| Digest::parse(&format!("sha256:{hex}")).ok();
    if let Some(list) = doc.get("components").and_then(J::as_array) {
        let c = list.iter().find(|c| c["bom-ref"] == "parent")?;
        let hashes = c.get("hashes")?.as_array()?;
        let h = hashes.iter().find(|h| h["alg"] == "SHA-256")?;
        return sha(h.get("content")?.as_str()?);
    }
    let predicate = doc.get("predicate").unwrap_or(doc);
    let deps = predicate
        .pointer("/buildDefinition/resolvedDependencies")?
        .as_array()?;
    let d = deps.iter().find(|d| d["name"] == "parent")?;
    sha(d.pointer("/digest/sha256")?.as_str()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_parent_digest_is_read_from_an_otters_sbom_or_provenance() {
        let hex = "a".repeat(64);
        let sbom = json!({"bomFormat": "CycloneDX", "components": [
            {"bom-ref": "runtime", "hashes": [{"alg": "SHA-256", "content": "b".repeat(64)}]},
            {"bom-ref": "parent", "hashes": [{"alg": "SHA-256", "content": hex}]}
        ]});
        let want = Digest::parse(&format!("sha256:{hex}")).ok();
        assert_eq!(parent_in(&sbom), want);
        let provenance = json!({"predicate": {"buildDefinition": {"resolvedDependencies": [
            {"name": "parent", "digest": {"sha256": hex}}
        ]}}});
        assert_eq!(parent_in(&provenance), want);
        assert_eq!(parent_in(&provenance["predicate"]), want);
        assert_eq!(parent_in(&json!({"components": []})), None);
        let bad = json!({"components": [{"bom-ref": "parent", "hashes": [{"alg": "SHA-256", "content": "zz"}]}]});
        assert_eq!(parent_in(&bad), None);
    }

    /// An agent manifest whose config names `from`, stored in `store`.
    fn agent(store: &otters_oci::Store, from: &str) -> Descriptor {
        use otters_oci::spec::media_type::AGENT_CONFIG;
        let blob = format!(r#"{{"agent":{{"from":"{from}","name":"x"}}}}"#);
        let (config, size) = store.put_blob_bytes(blob.as_bytes()).unwrap();
        let doc = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_V1}","config":{{"mediaType":"{AGENT_CONFIG}","digest":"{config}","size":{size}}},"layers":[]}}"#
        );
        let (digest, size) = store.put_blob_bytes(doc.as_bytes()).unwrap();
        Descriptor::new(MANIFEST_V1, digest, size)
    }

    #[test]
    fn the_chain_is_followed_by_recorded_digests_and_stops_where_none_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = otters_oci::Store::open(dir.path().join("store")).unwrap();
        let grandparent = agent(&store, "scratch");
        let parent = agent(&store, "reg.test/g:1");
        let child = agent(&store, "reg.test/p:1");
        let target = Target::Local(store.clone(), child);
        let side = crate::side::read(&target, "child", &otters_oci::Platform::host()).unwrap();
        let open = crate::sbom::opener(store.clone(), otters_pipeline::target::Place::Local, false);
        // The parent's digest known (a lock), the grandparent's recorded nowhere: the walk reads
        // the parent's FROM and ends there, saying why.
        let chain = follow(&target, &side, Some(parent.digest.clone()), &open);
        assert_eq!(
            chain.levels,
            [
                Level {
                    reference: "reg.test/p:1".into(),
                    digest: Some(parent.digest.clone())
                },
                Level {
                    reference: "reg.test/g:1".into(),
                    digest: None
                },
            ]
        );
        assert!(chain.cut.unwrap().contains("is not recorded"));
        // A parent digest the store does not hold, with --local: the walk says it cannot read it.
        let chain = follow(&target, &side, Some(Digest::of(b"gone")), &open);
        assert_eq!(chain.levels.len(), 1);
        assert_eq!(
            chain.cut.as_deref(),
            Some("cannot read level 1 (the parent): not in the local store")
        );
        // An agent FROM scratch has no chain.
        let root = Target::Local(store, grandparent);
        let side = crate::side::read(&root, "gp", &otters_oci::Platform::host()).unwrap();
        assert_eq!(follow(&root, &side, None, &open), Chain::default());
    }

    #[test]
    fn levels_are_named_and_described() {
        assert_eq!(level_name(1), "level 1 (the parent)");
        assert_eq!(level_name(3), "level 3");
        let d = Digest::of(b"p");
        let l = Level {
            reference: "reg/p:1".into(),
            digest: Some(d.clone()),
        };
        assert_eq!(l.describe(), format!("reg/p:1@{d}"));
        let unknown = Level {
            reference: "reg/p:1".into(),
            digest: None,
        };
        assert_eq!(unknown.describe(), "reg/p:1 (digest not recorded)");
    }
}
