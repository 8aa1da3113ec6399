//! `export` against a temporary store and a FAKE [`Fetcher`] (an in-memory registry that hands
//! over the images it holds, by digest, and logs every call): what an export holds and records,
//! that it is reproducible, and what it refuses. The registry path is covered by the export
//! suite against a running `docker-registry`.
//!
//! Takes: an agent image and bin images a test builds. Returns: nothing (tests). Must never: be
//! used outside tests.

use super::*;
use crate::materialise::MaterialiseError;
use otters_agentfile::ir::{Agent, Agentfile, Bin, Node};
use otters_oci::spec::descriptor::{AGENTFILE_LAYER, AGENT_CONFIG, AGENT_YAML_LAYER, ANN_TITLE};
use otters_oci::spec::media_type::FILE_LAYER;
use otters_pipeline::lower::agent_yaml;
use otters_pipeline::lower::{Pin, Pins as AgentPins};
use std::cell::RefCell;

/// An image the fake registry holds: its manifest's bytes and its blobs.
struct Held {
    manifest: Vec<u8>,
    blobs: Vec<Vec<u8>>,
}

/// A registry in memory: images by manifest digest, answered only by digest.
#[derive(Default)]
struct FakeFetcher {
    images: BTreeMap<Digest, Held>,
    asked: RefCell<Vec<String>>,
}

impl Fetcher for FakeFetcher {
    fn ensure(
        &self,
        store: &Store,
        reference: &str,
        digest: Option<&Digest>,
        _: &Platform,
    ) -> Result<Digest, SourceError> {
        let asked = digest.map_or_else(|| reference.to_owned(), |d| format!("{reference}@{d}"));
        self.asked.borrow_mut().push(asked);
        let fail = |message: &str| SourceError::Fetch {
            reference: reference.to_owned(),
            message: message.to_owned(),
        };
        let d = digest.ok_or_else(|| fail("the fake answers digests only"))?;
        let held = self.images.get(d).ok_or_else(|| fail("manifest unknown"))?;
        for b in &held.blobs {
            store.put_blob_bytes(b)?;
        }
        Ok(store.put_manifest(&held.manifest, MANIFEST_V1)?.digest)
    }
}

fn manifest(config: &Descriptor, layers: &[Descriptor]) -> Vec<u8> {
    let doc = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", MANIFEST_V1)
        .with("config", config.to_json())
        .with(
            "layers",
            Value::Array(layers.iter().map(Descriptor::to_json).collect()),
        );
    to_compact(&doc).unwrap()
}

fn blob(media_type: &str, bytes: &[u8]) -> Descriptor {
    Descriptor::new(media_type, Digest::of(bytes), bytes.len() as u64)
}

impl FakeFetcher {
    /// A bin image whose one layer is the program `name` (ORAS-style: a titled file layer).
    fn bin(&mut self, name: &str, program: &[u8]) -> Digest {
        let config = b"{}".to_vec();
        let mut layer = blob(FILE_LAYER, program);
        layer.annotations.insert(ANN_TITLE.into(), name.into());
        let bytes = manifest(&blob(CONFIG_V1, &config), &[layer]);
        let digest = Digest::of(&bytes);
        let held = Held {
            manifest: bytes,
            blobs: vec![config, program.to_vec()],
        };
        self.images.insert(digest.clone(), held);
        digest
    }
}

const RUNTIME: &str = "reg.example/rt:1";
const JQ: &str = "reg.example/tools/jq:1";

/// Stores an agent (NAME meteo, RUNTIME and BIN jq pinned to `rt` and `jq`) in `store`.
fn agent(store: &Store, rt: &Digest, jq: &Digest) -> Digest {
    let n = |s: &str| Node::new(s.to_owned(), None);
    let model = Agentfile {
        syntax: otters_agentfile::ir::DEFAULT_SYNTAX.to_owned(),
        agent: Agent {
            from: Some(n("scratch")),
            runtime: Some(n(RUNTIME)),
            model: Some(n("ollama/llama3")),
            name: Some(n("meteo")),
            bins: vec![Bin {
                name: "jq".into(),
                image: JQ.into(),
                description: Some("json".into()),
                usage: None,
                span: None,
                name_span: None,
                image_span: None,
            }],
            ..Agent::default()
        },
    };
    let pin = |reference: &str, digest: &Digest| Pin {
        reference: reference.into(),
        digest: digest.clone(),
    };
    let pins = AgentPins {
        runtime: Some(pin(RUNTIME, rt)),
        bins: [("jq".to_owned(), pin(JQ, jq))].into(),
    };
    let agentfile =
        format!("FROM scratch\nNAME meteo\nMODEL ollama/llama3\nRUNTIME {RUNTIME}\nBIN jq {JQ}\n");
    let yaml = agent_yaml::render(&model, &pins, &agent_yaml::Options::default());
    let config = otters_agentfile::ir::config_blob(&model).unwrap();
    let mut layers = Vec::new();
    for (media_type, title, bytes) in [
        (AGENTFILE_LAYER, "Agentfile", agentfile.as_bytes()),
        (AGENT_YAML_LAYER, "agent.yaml", yaml.as_bytes()),
    ] {
        store.put_blob_bytes(bytes).unwrap();
        let mut d = blob(media_type, bytes);
        d.annotations.insert(ANN_TITLE.into(), title.into());
        layers.push(d);
    }
    store.put_blob_bytes(&config).unwrap();
    let bytes = manifest(&blob(AGENT_CONFIG, &config), &layers);
    store.put_manifest(&bytes, MANIFEST_V1).unwrap().digest
}

fn amd64() -> Platform {
    Platform::parse("linux/amd64").unwrap()
}

/// A fetcher holding a static runtime and BIN (no `#!`, no ELF loader), and their digests.
fn registry() -> (FakeFetcher, Digest, Digest) {
    let mut f = FakeFetcher::default();
    let rt = f.bin("runtime", b"static runtime");
    let jq = f.bin("jq", b"static jq");
    (f, rt, jq)
}

#[test]
fn an_export_holds_the_runtime_each_bin_and_the_agent_and_is_its_referrer() {
    let (fetcher, rt, jq) = registry();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let top = agent(&store, &rt, &jq);
    let limits = Limits::default();
    let out = export(
        &store,
        &fetcher,
        "reg.example/meteo:1",
        &top,
        Some(&amd64()),
        &limits,
    )
    .unwrap();
    // Only the pins, each by digest: never a tag.
    assert_eq!(
        *fetcher.asked.borrow(),
        [format!("{RUNTIME}@{rt}"), format!("{JQ}@{jq}")]
    );
    assert_eq!(out.images.len(), 1);
    let image = &out.images[0];
    assert_eq!(
        (image.agent.clone(), image.platform.clone()),
        (top.clone(), amd64())
    );
    assert_eq!(image.layers.len(), 3, "runtime, bin/jq, agent");
    assert_eq!(
        out.descriptor.annotations.get(EXPORT).map(String::as_str),
        Some(RUNNABLE)
    );
    assert_eq!(
        out.descriptor
            .annotations
            .get(EXPORT_PLATFORM)
            .map(String::as_str),
        Some("linux/amd64")
    );
    let doc: ManifestDoc =
        serde_json::from_slice(&store.read_blob(&out.descriptor.digest).unwrap()).unwrap();
    assert_eq!(doc.subject.map(|s| s.digest), Some(top.clone()));
    assert_eq!(
        exports_of(&store, &top).unwrap(),
        std::slice::from_ref(&out.descriptor)
    );
    assert_eq!(
        pick_export(std::slice::from_ref(&out.descriptor), &amd64()),
        Some(out.descriptor.digest.clone())
    );

    // Same agent, another store: the same digest; `derive` records no referrer.
    let other = tempfile::tempdir().unwrap();
    let other = Store::open(other.path()).unwrap();
    let again = agent(&other, &rt, &jq);
    let derived = derive(
        &other,
        &fetcher,
        "reg.example/meteo:1",
        &again,
        Some(&amd64()),
        &limits,
    )
    .unwrap();
    assert_eq!(derived.descriptor.digest, out.descriptor.digest);
    assert!(exports_of(&other, &again).unwrap().is_empty());
}

#[test]
fn a_script_runtime_whose_interpreter_is_not_in_the_image_is_refused() {
    let mut fetcher = FakeFetcher::default();
    let rt = fetcher.bin("runtime", b"#!/bin/sh\necho hi\n");
    let jq = fetcher.bin("jq", b"static jq");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let top = agent(&store, &rt, &jq);
    let e = export(
        &store,
        &fetcher,
        "reg.example/meteo:1",
        &top,
        Some(&amd64()),
        &Limits::default(),
    )
    .unwrap_err();
    match &e {
        ExportError::MissingLoader {
            what,
            kind,
            needed,
            at,
            ..
        } => {
            assert_eq!(what, &format!("RUNTIME {RUNTIME}"));
            assert_eq!(
                (*kind, needed.as_str(), at.as_str()),
                ("a script", "/bin/sh", CONTAINER_RUNTIME)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        exports_of(&store, &top).unwrap().is_empty(),
        "nothing recorded"
    );
}

#[test]
fn a_pin_the_registry_no_longer_has_is_refused_naming_it() {
    let (mut fetcher, rt, jq) = registry();
    fetcher.images.remove(&jq);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let top = agent(&store, &rt, &jq);
    let e = export(
        &store,
        &fetcher,
        "reg.example/meteo:1",
        &top,
        Some(&amd64()),
        &Limits::default(),
    )
    .unwrap_err();
    match &e {
        ExportError::Materialise(MaterialiseError::Pinned {
            what,
            image,
            registry,
            ..
        }) => {
            assert_eq!(what, "BIN jq");
            assert_eq!(image, &format!("{JQ}@{jq}"));
            assert_eq!(registry, "reg.example");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        format!("cannot fetch {JQ}@{jq}, the agent's pinned BIN jq")
    );
}

#[test]
fn an_index_without_the_platform_asked_for_is_refused_listing_what_it_has() {
    let (fetcher, rt, jq) = registry();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let top = agent(&store, &rt, &jq);
    let size = store.read_blob(&top).unwrap().len() as u64;
    let mut entry = Descriptor::new(MANIFEST_V1, top, size);
    entry.platform = Some(amd64());
    let index = Value::object()
        .with("schemaVersion", 2i64)
        .with("mediaType", INDEX_V1)
        .with("manifests", Value::Array(vec![entry.to_json()]));
    let index = store
        .put_manifest(&to_compact(&index).unwrap(), INDEX_V1)
        .unwrap()
        .digest;
    let s390x = Platform::parse("linux/s390x").unwrap();
    let e = export(
        &store,
        &fetcher,
        "reg.example/meteo:1",
        &index,
        Some(&s390x),
        &Limits::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ExportError::NoPlatform { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "reg.example/meteo:1: the index has no image for linux/s390x (it has: linux/amd64)"
    );
    assert!(fetcher.asked.borrow().is_empty(), "nothing fetched");
    // Without a platform, every one it has, as an index that is the agent index's referrer.
    let all = export(
        &store,
        &fetcher,
        "reg.example/meteo:1",
        &index,
        None,
        &Limits::default(),
    )
    .unwrap();
    assert!(all.descriptor.media_type.is_index());
    assert_eq!(all.images.len(), 1);
    assert_eq!(all.images[0].manifest.platform, Some(amd64()));
    assert_eq!(
        exports_of(&store, &index).unwrap(),
        std::slice::from_ref(&all.descriptor)
    );
}
