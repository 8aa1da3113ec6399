//! The committed schemas are the generated ones; every field is described; every object whose
//! reader or writer knows all its fields refuses others.
use super::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

/// Compares `path` with `want`; with `UPDATE_SCHEMAS=1`, rewrites it instead.
fn check_file(path: &std::path::Path, want: &str, stale: &mut Vec<String>) {
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, want).unwrap();
        return;
    }
    if std::fs::read_to_string(path).ok().as_deref() != Some(want) {
        stale.push(path.display().to_string());
    }
}

#[test]
fn committed_schemas_are_the_generated_ones() {
    let dir = schemas_dir();
    let mut stale = Vec::new();
    for e in SCHEMAS {
        check_file(
            &dir.join(VERSION).join(format!("{}.json", e.name)),
            &e.text(),
            &mut stale,
        );
    }
    check_file(&dir.join("catalog.json"), &catalog(), &mut stale);
    assert!(
        stale.is_empty(),
        "not what the types generate: {stale:?}; run `UPDATE_SCHEMAS=1 cargo test -p otters-schema` and review the diff"
    );
    if std::env::var_os("UPDATE_SCHEMAS").is_none() {
        let mut on_disk: Vec<String> = std::fs::read_dir(dir.join(VERSION))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut named: Vec<String> = SCHEMAS.iter().map(|e| format!("{}.json", e.name)).collect();
        named.sort();
        assert_eq!(
            on_disk, named,
            "schemas/{VERSION}/ holds a file no entry generates"
        );
    }
}

/// Every object schema under `v` (properties, definitions, items…), with its JSON pointer.
fn objects<'v>(v: &'v Value, at: &str, out: &mut Vec<(String, &'v Map<String, Value>)>) {
    match v {
        Value::Object(o) => {
            if o.contains_key("properties") {
                out.push((at.to_owned(), o));
            }
            for (k, child) in o {
                objects(child, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                objects(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_field_is_described_and_no_object_takes_unknown_fields() {
    for e in SCHEMAS {
        let v: Value = serde_json::from_str(&e.text()).unwrap();
        assert_eq!(v["$schema"], DRAFT_07, "{}", e.name);
        let mut found = Vec::new();
        objects(&v, "", &mut found);
        assert!(!found.is_empty(), "{}: no object", e.name);
        for (at, o) in found {
            assert_eq!(
                o.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{}{at}: takes unknown fields",
                e.name
            );
            for (field, s) in o["properties"].as_object().unwrap() {
                let described = s.get("description").and_then(Value::as_str);
                assert!(
                    described.is_some_and(|d| !d.is_empty()),
                    "{}{at}/properties/{field}: no description",
                    e.name
                );
            }
        }
    }
}

#[test]
fn names_are_unique_and_ids_are_versioned_under_the_repository() {
    for (i, e) in SCHEMAS.iter().enumerate() {
        assert!(
            SCHEMAS[..i].iter().all(|o| o.name != e.name),
            "{} twice",
            e.name
        );
        assert!(e.id().starts_with("https://github.com/"), "{}", e.id());
        assert!(
            e.id().contains(&format!("/schemas/{VERSION}/")),
            "{}",
            e.id()
        );
        assert_eq!(find(e.name).map(|f| f.title), Some(e.title));
    }
    assert!(find("nope").is_none());
}

/// An Agentfile with every instruction and every optional part of each.
const EVERYTHING: &str = "# syntax=openotters/agentfile:1
FROM scratch
ARG V=1
RUNTIME example.com/rt:${V}
MODEL anthropic/claude-test
NAME probe
LABEL description=\"Probes\"
CONTEXT SOUL \"Core rules\" <<EOF
Be brief.
EOF
CONTEXT IDENTITY \"Who\" file://identity.md
CONTEXT EMPTY \"nothing yet\"
CONFIG max-tokens=256 \"Short answers\"
CONFIG temperature=0.5
CONFIG mode=fast
CONFIG verbose=false
CONFIG webhook! \"Where to post\"
ENV LOG_LEVEL=debug \"How chatty\"
BIN tool example.com/tool:1 \"A tool\" <<USAGE
tool --help
USAGE
BIN other example.com/other:1
ADD data/hosts.json hosts.json \"Hosts\"
EXEC [\"serve\", \"--verbose\"]
CAPABILITY note_save note_list
MOUNT /data ro \"Input\"
MOUNT /out
";

fn everything() -> otters_agentfile::ir::Agentfile {
    let file = otters_agentfile::diagnostic::SourceFile::new("Agentfile", EVERYTHING);
    let analysis =
        otters_agentfile::check::analyze(&file, &otters_agentfile::check::Options::default());
    assert!(!analysis.has_errors(), "{:?}", analysis.diagnostics);
    analysis.model
}

#[test]
fn the_config_blob_writer_writes_only_what_the_model_names() {
    let blob = otters_agentfile::ir::config_blob(&everything()).unwrap();
    let read: Result<documents::AgentConfig, _> = serde_json::from_slice(&blob);
    assert!(
        read.is_ok(),
        "the config blob has a field documents::AgentConfig does not name ({:?}):\n{}",
        read.err(),
        String::from_utf8_lossy(&blob)
    );
}

#[test]
fn the_agent_yaml_writer_writes_only_what_the_model_names() {
    use otters_pipeline::lower::agent_yaml::{render, Executor, ImageRef, Options};
    use otters_pipeline::lower::{Pin, Pins};
    let model = everything();
    let digest = otters_oci::Digest::parse(&format!("sha256:{}", "a".repeat(64))).unwrap();
    let pin = |r: &str| Pin {
        reference: r.to_owned(),
        digest: digest.clone(),
    };
    let pins = Pins {
        runtime: Some(pin("example.com/rt:1")),
        bins: [("tool".to_owned(), pin("example.com/tool:1"))].into(),
    };
    let image = ImageRef {
        reference: "example.com/agent:1".to_owned(),
        digest: Some(digest.clone()),
    };
    let described: BTreeMap<String, String> = [("note_save".to_owned(), "Saves".to_owned())].into();
    for executor in [Executor::System, Executor::Docker] {
        for run_time in [false, true] {
            let opts = Options {
                id: run_time.then_some("probe-1"),
                image: run_time.then_some(&image),
                executor,
                capability_descriptions: run_time.then_some(&described),
            };
            let yaml = render(&model, &pins, &opts);
            let read: Result<documents::AgentYaml, _> = serde_yaml_ng::from_str(&yaml);
            assert!(
                read.is_ok(),
                "agent.yaml has a field documents::AgentYaml does not name ({:?}):\n{yaml}",
                read.err()
            );
        }
    }
}
