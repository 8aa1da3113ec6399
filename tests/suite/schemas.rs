//! The published JSON Schemas (`schemas/v1/`, `otters schema`) against a second reader: each is a
//! valid draft-07 schema (`check-jsonschema --check-metaschema`), a real document of each kind,
//! written (or, for the TOML files, accepted) by the `otters` binary, validates
//! (`check-jsonschema`; TOML converted with Python's `tomllib`), and a broken twin of each (an
//! unknown top-level field, a wrong type) does not. `otters schema NAME` prints the committed file.

use crate::support::ci_tools::venv_bin;
use crate::support::cli::{self, json, ok};
use crate::support::repo;
use crate::support::runnable::StaticWorld;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const NAMES: [&str; 11] = [
    "agentfile-lock",
    "agent-yaml",
    "agent-config",
    "otters-toml",
    "config-toml",
    "lint",
    "inspect",
    "run-plan",
    "diff",
    "copy",
    "policy-check",
];

fn schema_file(name: &str) -> PathBuf {
    repo().join("schemas/v1").join(format!("{name}.json"))
}

/// `check-jsonschema` over `doc`: whether it validated, and what it said.
fn validates(check: &Path, name: &str, doc: &Path) -> (bool, String) {
    let out = Command::new(check)
        .arg("--schemafile")
        .arg(schema_file(name))
        .arg(doc)
        .output()
        .expect("run check-jsonschema");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[test]
fn otters_schema_prints_the_committed_files_and_lists_every_name() {
    let env = cli::Env::new();
    let list = env.ok(&["schema", "--list"]);
    let listed: Vec<&str> = list
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(listed, NAMES, "{list}");
    for name in NAMES {
        let printed = env.ok(&["schema", name]);
        assert_eq!(
            printed,
            fs::read_to_string(schema_file(name)).unwrap(),
            "{name}"
        );
    }
    let (ok, _, err) = env.run(&["schema", "agentfile.lock"]);
    assert!(!ok);
    assert!(
        err.contains("no schema is named `agentfile.lock`") && err.contains("agentfile-lock"),
        "{err}"
    );
}

#[test]
fn every_schema_is_a_valid_draft_07_schema() {
    let test = "every_schema_is_a_valid_draft_07_schema";
    let Some(check) = venv_bin(test, "check-jsonschema") else {
        return;
    };
    let mut cmd = Command::new(check);
    cmd.arg("--check-metaschema");
    for name in NAMES {
        cmd.arg(schema_file(name));
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A TOML file as JSON, through Python's `tomllib`.
fn toml_to_json(python: &Path, toml: &Path, out: &Path) {
    let status = Command::new(python)
        .args([
            "-c",
            "import json,sys,tomllib; json.dump(tomllib.load(open(sys.argv[1],'rb')), open(sys.argv[2],'w'))",
        ])
        .arg(toml)
        .arg(out)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "tomllib could not read {}",
        toml.display()
    );
}

/// The twins of `doc`: an unknown top-level field, and its first field (after `$schema`) of the
/// wrong type (for an array, the first item's).
fn broken_twins(doc: &Value) -> Vec<(&'static str, Value)> {
    let wrong = |v: &Value| match v {
        Value::String(_) => Value::from(12345),
        _ => Value::from("not this type"),
    };
    let mut unknown = doc.clone();
    let mut retyped = doc.clone();
    match (&mut unknown, &mut retyped) {
        (Value::Object(u), Value::Object(r)) => {
            u.insert("otters-unknown-field".into(), Value::from(1));
            let first = r
                .keys()
                .find(|k| *k != "$schema")
                .cloned()
                .expect("a field");
            let v = wrong(&r[&first]);
            r.insert(first, v);
        }
        (Value::Array(u), Value::Array(r)) => {
            let u = u[0].as_object_mut().unwrap();
            u.insert("otters-unknown-field".into(), Value::from(1));
            let r = r[0].as_object_mut().unwrap();
            let first = r.keys().next().cloned().expect("a field");
            let v = wrong(&r[&first]);
            r.insert(first, v);
        }
        _ => panic!("neither an object nor an array: {doc}"),
    }
    vec![("an unknown field", unknown), ("a wrong type", retyped)]
}

/// Every document of the real agent of `StaticWorld`, by schema name, as JSON.
fn documents(w: &StaticWorld, python: &Path) -> Vec<(&'static str, Value)> {
    let agent = w.agent("schemas", "schemas/agent");
    let ctx = w.tmp.path().join("ctx-schemas/agent");
    let home = &w.home;
    let mut docs = Vec::new();
    let lock = fs::read_to_string(ctx.join("Agentfile.lock")).expect("the build wrote the lock");
    docs.push(("agentfile-lock", json(&lock)));

    let inspect = json(&ok(
        cli::otters(home).args(["inspect", "--format", "json", &agent])
    ));
    let yaml_layer = inspect["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["title"] == "agent.yaml")
        .expect("an agent.yaml layer");
    let digest = yaml_layer["digest"].as_str().unwrap();
    let blob = home.join("store/blobs/sha256").join(&digest[7..]);
    let yaml: Value = serde_yaml_ng::from_slice(&fs::read(blob).unwrap()).unwrap();
    docs.push(("agent-yaml", yaml));
    docs.push(("agent-config", inspect["config"].clone()));
    docs.push(("inspect", inspect));

    // The complete agent.yaml `otters run` writes (with `id` and `image`).
    let root = w.tmp.path().join("agent-root");
    let run = cli::otters(home)
        .args(["run", &agent, "--root"])
        .arg(&root)
        .args(["--config", "webhook=http://hook", "-v"])
        .arg(format!("{}:/data:ro", w.tmp.path().display()))
        .arg("--allow-missing-mounts")
        .env("ANTHROPIC_API_KEY", "sk-test")
        .output()
        .unwrap();
    let written = root.join("etc/agent.yaml");
    assert!(
        written.is_file(),
        "otters run wrote no agent.yaml: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let yaml: Value = serde_yaml_ng::from_slice(&fs::read(written).unwrap()).unwrap();
    assert!(
        yaml.get("id").is_some() && yaml.get("image").is_some(),
        "{yaml}"
    );
    docs.push(("agent-yaml", yaml));

    let plan = ok(cli::otters(home)
        .args([
            "run",
            &agent,
            "--dry-run",
            "--config",
            "webhook=http://hook",
        ])
        .env("ANTHROPIC_API_KEY", "sk-test"));
    docs.push(("run-plan", json(&plan)));

    let layout = w.tmp.path().join("layout");
    let copy = ok(cli::otters(home).args([
        "copy",
        "-r",
        "--format",
        "json",
        &agent,
        &format!("oci:{}:agent", layout.display()),
    ]));
    docs.push(("copy", json(&copy)));

    // The agent against its own context with one more LABEL and CONFIG default: a diff with
    // changes, the directory side built offline from the lock.
    let changed = w.tmp.path().join("ctx-changed");
    copy_dir(&ctx, &changed);
    let mut text = fs::read_to_string(changed.join("Agentfile")).unwrap();
    text.push_str("LABEL team=platform\n");
    fs::write(changed.join("Agentfile"), text).unwrap();
    let out = cli::otters(home)
        .args(["diff", "--format", "json", "--offline", &agent])
        .arg(&changed)
        .output()
        .unwrap();
    let diff = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(diff["identical"], false, "{diff}");
    docs.push(("diff", diff));

    docs.push(("policy-check", policy_check(w)));

    // A finding of every severity the file gives.
    let bad = w.tmp.path().join("bad/Agentfile");
    fs::create_dir_all(bad.parent().unwrap()).unwrap();
    fs::write(&bad, "FROM scratch\nARG unused=1\nNAME a b\nRUNTIME x\n").unwrap();
    let out = cli::otters(home)
        .args(["lint", "--format", "json"])
        .arg(&bad)
        .output()
        .unwrap();
    let findings = json(&String::from_utf8_lossy(&out.stdout));
    assert!(!findings.as_array().unwrap().is_empty(), "{findings}");
    docs.push(("lint", findings));

    // The TOML files otters reads: each accepted by otters, then converted by tomllib.
    let project = ctx.join("otters.toml");
    fs::write(
        &project,
        "[lint]\nfail-on = \"warning\"\n[lint.severity]\nAF201 = \"off\"\n[portability]\ntargets = []\n",
    )
    .unwrap();
    // Read: its `fail-on` would fail on the portability warnings its `targets` turn off.
    ok(cli::otters(home).args(["lint"]).arg(ctx.join("Agentfile")));
    let config = home.join("config.toml");
    fs::write(
        &config,
        format!(
            "[registry.\"{}\"]\ninsecure = true\nmirrors = []\n[registry.\"docker.io\"]\nmirrors = [\"mirror.internal:5000\"]\n",
            w.reg.addr
        ),
    )
    .unwrap();
    ok(cli::otters(home).args(["pull", "-q", &agent]));
    for (name, file) in [("otters-toml", &project), ("config-toml", &config)] {
        let out = w.tmp.path().join(format!("{name}.json"));
        toml_to_json(python, file, &out);
        docs.push((name, json(&fs::read_to_string(out).unwrap())));
    }
    docs
}

#[test]
fn real_documents_validate_and_their_broken_twins_do_not() {
    let test = "real_documents_validate_and_their_broken_twins_do_not";
    let Some(check) = venv_bin(test, "check-jsonschema") else {
        return;
    };
    let Some(python) = venv_bin(test, "python") else {
        return;
    };
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let docs = documents(&w, &python);
    let kinds: std::collections::BTreeSet<&str> = docs.iter().map(|(n, _)| *n).collect();
    assert_eq!(kinds.len(), NAMES.len(), "a kind has no real document");
    let dir = w.tmp.path().join("docs");
    fs::create_dir_all(&dir).unwrap();
    for (i, (name, doc)) in docs.iter().enumerate() {
        let file = dir.join(format!("{i}-{name}.json"));
        fs::write(&file, doc.to_string()).unwrap();
        if ["inspect", "run-plan", "copy", "diff", "policy-check"].contains(name) {
            let id =
                format!("https://github.com/openotters/otters/raw/main/schemas/v1/{name}.json");
            assert_eq!(
                doc["$schema"],
                id.as_str(),
                "{name} does not name its schema"
            );
        }
        let (valid, said) = validates(&check, name, &file);
        assert!(
            valid,
            "{name}: otters' own document does not validate:\n{said}\n{doc:#}"
        );
        for (how, twin) in broken_twins(doc) {
            let file = dir.join(format!("{i}-{name}-twin.json"));
            fs::write(&file, twin.to_string()).unwrap();
            let (valid, _) = validates(&check, name, &file);
            assert!(!valid, "{name} with {how} validates:\n{twin:#}");
        }
    }
}

/// `otters policy check --format json` of an Agentfile breaking three rules of a policy, the
/// EGRESS one among them.
fn policy_check(w: &StaticWorld) -> Value {
    let ruled = w.tmp.path().join("ruled");
    fs::create_dir_all(&ruled).unwrap();
    fs::write(
        ruled.join("Agentfile"),
        "FROM scratch\nNAME ruled\nRUNTIME example.com/runtime:1\nMODEL openai/gpt-4o\nBIN jq example.com/jq:1\nEGRESS uploads.example.org\n",
    )
    .unwrap();
    let policy = w.tmp.path().join("policy.toml");
    fs::write(
        &policy,
        "[policy]\nproviders = [\"anthropic\"]\nbins = [\"curl\"]\negress = [\"api.example.com:443\"]\n",
    )
    .unwrap();
    let out = cli::otters(&w.home)
        .args(["policy", "check", "--format", "json", "--policy"])
        .arg(&policy)
        .arg(&ruled)
        .output()
        .unwrap();
    let checked = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        checked["violations"].as_array().map(Vec::len),
        Some(3),
        "{checked}"
    );
    checked
}

/// A copy of the directory tree `from` at `to` (files and directories only).
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}
