//! openotters compatibility through the real binary (issue 9), against a real registry:
//!
//! - an image shaped exactly as openotters alpha.50 writes it (`build.Build` / `packManifest` in
//!   agentfile alpha.50: `adds[].dst`, file layers titled with the raw `dst`, the config as Go's
//!   `json.MarshalIndent`) runs with the tree alpha.50 gives it (`etc/data/` +
//!   `filepath.Base(title)`), in `--dry-run` and for real, and a child built `FROM` it runs too;
//! - `null` entries in every list of a config blob are refused with the field and the index;
//! - the required-CONFIG gate takes the last entry per key, as openotters L's
//!   `spec.RequiredConfigsProvided`;
//! - a directory ADD lands one level deep (`etc/data/<name>/…`), nested destinations too;
//! - the portability lints through `otters lint`, with `[portability] targets` and `--target`.
//!
//! The runtime is a `/bin/sh` script using builtins only: it records its environment.

use crate::support::cli::{flat, json as parse_json, Env};
use crate::support::images::{self, BinPrefix, Layout};
use crate::support::World;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

const RUNTIME: &str = "#!/bin/sh\nexport -p > env.txt\necho ran > ran.txt\n";

const AGENT_CONFIG: &str = "application/vnd.openotters.agent.config.v1+json";
const AGENTFILE_LAYER: &str = "application/vnd.openotters.agentfile";
const CONTEXT_LAYER: &str = "application/vnd.openotters.context.v1";
const OCTET: &str = "application/octet-stream";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The shared [`World`] with the test runtime pushed as `<registry>/runtime:1`.
fn world() -> World {
    let w = World::new();
    images::push_bin_index(
        &w.dir().join("rt"),
        &w.runtime(),
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        None,
    );
    w
}

/// `compat`'s steps on the shared [`World`] (a temp machine and a registry).
trait Compat {
    /// `<registry>/runtime:1`, the test runtime.
    fn runtime(&self) -> String;
    /// The agent root `<agents>/<name>`.
    fn root(&self, name: &str) -> PathBuf;
    /// `otters run REF --root <agents>/<root> EXTRA…`; (success, stdout + stderr flattened).
    fn run(&self, reference: &str, root: &str, extra: &[&str]) -> (bool, String);
    /// `otters run REF --dry-run`, which must succeed: the plan.
    fn dry_run(&self, reference: &str) -> Value;
    /// Builds the Agentfile `text` in a context holding `files`, tagged `<registry>/<name>:1`.
    fn build(&self, name: &str, text: &str, files: &[(&str, &str)]) -> String;
    /// Pushes an image written as openotters writes one (see [`go_image`]) as
    /// `<registry>/<name>:1`.
    fn push_go_image(&self, name: &str, config: &Value, layers: &[(&str, &str, &[u8])]) -> String;
}

impl Compat for World {
    fn runtime(&self) -> String {
        format!("{}/runtime:1", self.reg.addr)
    }

    fn root(&self, name: &str) -> PathBuf {
        self.env.dir.path().join("agents").join(name)
    }

    fn run(&self, reference: &str, root: &str, extra: &[&str]) -> (bool, String) {
        let root = self.root(root);
        let mut args = vec!["run", reference, "--root", root.to_str().unwrap()];
        args.extend(extra);
        let (ok, out, err) = self.env.run(&args);
        (ok, flat(&format!("{out}\n{err}")))
    }

    fn dry_run(&self, reference: &str) -> Value {
        let root = self.root("dry");
        parse_json(&self.env.ok(&[
            "run",
            reference,
            "--dry-run",
            "--root",
            root.to_str().unwrap(),
        ]))
    }

    fn build(&self, name: &str, text: &str, files: &[(&str, &str)]) -> String {
        let ctx = self.context(&format!("ctx-{name}"), text, files);
        let tag = format!("{}/{name}:1", self.reg.addr);
        self.env
            .ok(&["build", "-q", "-t", &tag, ctx.to_str().unwrap()]);
        tag
    }

    fn push_go_image(&self, name: &str, config: &Value, layers: &[(&str, &str, &[u8])]) -> String {
        let dir = self.env.dir.path().join(format!("layout-{name}"));
        let mut l = Layout::new(&dir);
        let d = go_image(&l, config, layers);
        l.tag(&d, "1");
        let tag = format!("{}/{name}:1", self.reg.addr);
        images::skopeo_push(&dir, "1", &tag, None);
        tag
    }
}

/// Writes an agent image as agentfile alpha.50's `build.Build` does: the config is
/// `json.MarshalIndent(af, "", "  ")` (`serde_json`'s pretty printer writes the same bytes for
/// these values, keys in the order given), each layer `(mediaType, title, bytes)` a blob with
/// only the title annotation, and the manifest `json.Marshal(v1.Manifest)` (field order
/// schemaVersion, mediaType, artifactType, config, layers, annotations; map keys sorted).
fn go_image(l: &Layout, config: &Value, layers: &[(&str, &str, &[u8])]) -> Value {
    let cfg = l.blob(
        AGENT_CONFIG,
        serde_json::to_string_pretty(config).unwrap().as_bytes(),
    );
    let layers: Vec<Value> = layers
        .iter()
        .map(|(mt, title, bytes)| {
            let d = l.blob(mt, bytes);
            json!({
                "mediaType": d["mediaType"], "digest": d["digest"], "size": d["size"],
                "annotations": {"org.opencontainers.image.title": title},
            })
        })
        .collect();
    let name = config["agent"]["name"].as_str().unwrap_or_default();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "artifactType": "application/vnd.openotters.agent.v1",
        "config": cfg,
        "layers": layers,
        "annotations": {
            "org.opencontainers.image.created": "2026-05-20T09:30:00Z",
            "org.opencontainers.image.title": name,
        },
    });
    l.blob(
        MANIFEST,
        serde_json::to_string(&manifest).unwrap().as_bytes(),
    )
}

const A50_AGENTFILE: &str = "FROM scratch\nNAME weather\nRUNTIME RT\nMODEL anthropic/claude-test\nCONTEXT SOUL \"rules\" <<EOF\nBe brief.\nEOF\nCONFIG units=metric \"unit system\"\nADD cities.json /data/cities.json \"city list\"\nADD sub/stations.csv /data/sub/stations.csv\nADD notes.md notes.md\nENV LOG_LEVEL=debug\nCAPABILITY note_save\n";

/// The config alpha.50 writes for [`A50_AGENTFILE`] (spec/types.go field order, omitempty).
fn a50_config(runtime: &str) -> Value {
    json!({
        "syntax": "openotters/agentfile:1",
        "agent": {
            "from": "scratch",
            "runtime": runtime,
            "model": "anthropic/claude-test",
            "name": "weather",
            "contexts": [{"name": "SOUL", "description": "rules", "content": "Be brief.\n"}],
            "configs": [{"key": "units", "value": "metric", "description": "unit system"}],
            "adds": [
                {"src": "cities.json", "dst": "/data/cities.json", "description": "city list"},
                {"src": "sub/stations.csv", "dst": "/data/sub/stations.csv"},
                {"src": "notes.md", "dst": "notes.md"},
            ],
            "envs": [{"key": "LOG_LEVEL", "value": "debug"}],
            "capabilities": ["note_save"],
        }
    })
}

const CITIES: &[u8] = b"[\"Paris\",\"Lyon\"]\n";
const STATIONS: &[u8] = b"id,name\n1,Orly\n";
const NOTES: &[u8] = b"# notes\n";

/// Pushes the alpha.50 image; returns its reference.
fn a50_image(w: &World) -> String {
    let agentfile = A50_AGENTFILE.replace("RT", &w.runtime());
    w.push_go_image(
        "a50",
        &a50_config(&w.runtime()),
        &[
            (AGENTFILE_LAYER, "Agentfile", agentfile.as_bytes()),
            (CONTEXT_LAYER, "SOUL.md", b"Be brief.\n"),
            (OCTET, "/data/cities.json", CITIES),
            (OCTET, "/data/sub/stations.csv", STATIONS),
            (OCTET, "notes.md", NOTES),
        ],
    )
}

/// Every path below `dir`, relative, directories with a trailing `/`, sorted.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// The paths of the plan's tree entries below `etc/data/`, with whether each is unpacked.
fn planned_data(plan: &Value) -> Vec<(String, bool)> {
    let mut v: Vec<(String, bool)> = plan["tree"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "layer")
        .filter_map(|e| {
            let p = e["path"].as_str()?.strip_prefix("etc/data/")?.to_owned();
            Some((p, e["unpack"].as_bool().unwrap_or(false)))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn an_alpha50_image_runs_with_the_tree_alpha50_gives_it() {
    let w = world();
    let image = a50_image(&w);
    // --dry-run: `/data/cities.json` → etc/data/cities.json, and alpha.50 flattens
    // `/data/sub/stations.csv` to its base name.
    let plan = w.dry_run(&image);
    assert_eq!(
        planned_data(&plan),
        [
            ("cities.json".to_owned(), false),
            ("notes.md".to_owned(), false),
            ("stations.csv".to_owned(), false),
        ],
        "{plan}"
    );
    // For real: exactly these files, with their bytes.
    let (ok, out) = w.run(&image, "a50", &[]);
    assert!(ok, "{out}");
    let root = w.root("a50");
    assert_eq!(
        walk(&root.join("etc/data")),
        ["cities.json", "notes.md", "stations.csv"]
    );
    assert_eq!(fs::read(root.join("etc/data/cities.json")).unwrap(), CITIES);
    assert_eq!(
        fs::read(root.join("etc/data/stations.csv")).unwrap(),
        STATIONS
    );
    assert_eq!(fs::read(root.join("etc/data/notes.md")).unwrap(), NOTES);
    assert_eq!(
        fs::read_to_string(root.join("etc/context/SOUL.md")).unwrap(),
        "Be brief.\n"
    );
    let agent_md = fs::read_to_string(root.join("etc/context/AGENT.md")).unwrap();
    assert!(
        agent_md.contains("| cities.json | city list |"),
        "{agent_md}"
    );
    assert!(agent_md.contains("| stations.csv | - |"), "{agent_md}");
    let env = fs::read_to_string(root.join("workspace/env.txt")).unwrap();
    assert!(env.contains("RUNTIME_UNITS='metric'"), "{env}");
    assert!(env.contains("LOG_LEVEL='debug'"), "{env}");
}

#[test]
fn a_child_built_from_an_alpha50_image_builds_and_runs() {
    let w = world();
    let parent = a50_image(&w);
    let child = w.build(
        "child",
        &format!(
            "FROM {parent}\nNAME child\nADD extra.txt extra.txt \"more\"\nCONFIG units=imperial\n"
        ),
        &[("extra.txt", "extra\n")],
    );
    // The child carries the parent's files under the names both openotters versions read:
    // `name` and `dst` equal to the layer title.
    let v = parse_json(&w.env.ok(&["inspect", &child, "--format", "json"]));
    let adds = v["config"]["agent"]["adds"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = adds
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["dst"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("cities.json", "cities.json"),
            ("stations.csv", "stations.csv"),
            ("notes.md", "notes.md"),
            ("extra.txt", "extra.txt"),
        ]
    );
    let titles: Vec<&str> = v["manifest"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["mediaType"] == OCTET)
        .map(|l| {
            l["annotations"]["org.opencontainers.image.title"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(
        titles,
        ["cities.json", "stations.csv", "notes.md", "extra.txt"]
    );
    let (ok, out) = w.run(&child, "child", &[]);
    assert!(ok, "{out}");
    let root = w.root("child");
    assert_eq!(
        walk(&root.join("etc/data")),
        ["cities.json", "extra.txt", "notes.md", "stations.csv"]
    );
    assert_eq!(fs::read(root.join("etc/data/cities.json")).unwrap(), CITIES);
    assert_eq!(
        fs::read(root.join("etc/data/stations.csv")).unwrap(),
        STATIONS
    );
    let env = fs::read_to_string(root.join("workspace/env.txt")).unwrap();
    assert!(env.contains("RUNTIME_UNITS='imperial'"), "{env}");
}

#[test]
fn unsafe_alpha50_titles_are_refused_by_name() {
    let w = world();
    for (case, dst) in [
        ("dotdot", "/data/.."),
        ("root", "/"),
        ("hidden", "/data/.x"),
    ] {
        let mut config = a50_config(&w.runtime());
        config["agent"]["adds"] = json!([{"src": "x", "dst": dst}]);
        let image = w.push_go_image(
            &format!("bad-{case}"),
            &config,
            &[(OCTET, dst, b"x".as_slice())],
        );
        let (ok, out) = w.run(&image, case, &["--dry-run"]);
        assert!(!ok, "{case}: {out}");
        assert!(
            out.contains("invalid artifact: adds[0] name"),
            "{case}: {out}"
        );
        assert!(!w.root(case).exists(), "{case}: a tree was written");
    }
    // A title alpha.50 would write outside etc/data, when no ADD names it: refused at the layer.
    let mut config = a50_config(&w.runtime());
    config["agent"]["adds"] = json!([]);
    let image = w.push_go_image(
        "bad-layer",
        &config,
        &[(OCTET, "/data/..", b"x".as_slice())],
    );
    let (ok, out) = w.run(&image, "layer", &["--dry-run"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("invalid artifact: layers[0] title \"/data/..\" is not a safe file name"),
        "{out}"
    );
}

#[test]
fn two_alpha50_layers_with_one_base_name_keep_the_later_as_alpha50_does() {
    let w = world();
    let mut config = a50_config(&w.runtime());
    config["agent"]["adds"] = json!([
        {"src": "a/x.json", "dst": "/data/a/x.json"},
        {"src": "b/x.json", "dst": "/data/b/x.json"},
    ]);
    let image = w.push_go_image(
        "same-base",
        &config,
        &[
            (OCTET, "/data/a/x.json", b"first".as_slice()),
            (OCTET, "/data/b/x.json", b"second".as_slice()),
        ],
    );
    let plan = w.dry_run(&image);
    assert_eq!(planned_data(&plan), [("x.json".to_owned(), false)]);
    let warnings = plan["warnings"].to_string();
    assert!(
        warnings.contains("layers[0] and layers[1] both write etc/data/x.json"),
        "{warnings}"
    );
    let (ok, out) = w.run(&image, "same", &[]);
    assert!(ok, "{out}");
    assert_eq!(
        fs::read(w.root("same").join("etc/data/x.json")).unwrap(),
        b"second"
    );
}

#[test]
fn null_list_entries_are_refused_with_field_and_index() {
    let w = world();
    let cases: &[(&str, Value, &str)] = &[
        (
            "contexts",
            json!([{"name": "SOUL", "content": "x"}, null]),
            "contexts[1] is null",
        ),
        ("configs", json!([null]), "configs[0] is null"),
        (
            "bins",
            json!([{"name": "jq", "image": "jq:1"}, null]),
            "bins[1] is null",
        ),
        (
            "adds",
            json!([{"src": "a", "dst": "/data/a"}, null]),
            "adds[1] is null",
        ),
        ("envs", json!([null]), "envs[0] is null"),
        (
            "capabilities",
            json!(["note_save", null]),
            "capabilities[1] is null",
        ),
        ("exec", json!(["serve", null]), "exec[1] is null"),
        (
            "mounts",
            json!([{"target": "/d"}, null]),
            "mounts[1] is null",
        ),
    ];
    for (field, list, want) in cases {
        let mut config = a50_config(&w.runtime());
        config["agent"][field] = list.clone();
        let image = w.push_go_image(&format!("null-{field}"), &config, &[]);
        let (ok, out) = w.run(&image, field, &["--dry-run"]);
        assert!(!ok, "{field}: {out}");
        assert!(
            out.contains(&format!("{image}: invalid artifact: {want}")),
            "{field}: {out}"
        );
        assert!(!w.root(field).exists());
    }
}

#[test]
fn a_required_config_unset_by_a_later_entry_refuses_to_start() {
    let w = world();
    let image = w.build(
        "gate",
        &format!(
            "FROM scratch\nNAME gate\nRUNTIME {}\nMODEL m\nCONFIG webhook-url=http://old\nCONFIG webhook-url! \"where to post\"\nCONFIG units=metric\nCONFIG units\n",
            w.runtime()
        ),
        &[],
    );
    let (ok, out) = w.run(&image, "gate", &[]);
    assert!(!ok, "{out}");
    // miette may wrap the message at a `-`: compare without whitespace.
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    assert!(
        squash(&out).contains(&squash("required config(s) have no value: webhook-url (webhook-url had a value, but a later CONFIG entry for the same key has none and the last entry wins, as in openotters)"))
            && squash(&out).contains(&squash("help: pass --config webhook-url=VALUE")),
        "{out}"
    );
    assert!(!w.root("gate").exists(), "a tree was written");
    // Given at run time, it starts; the optional key keeps its last value (openotters L's
    // configsFromSpec skips valueless entries).
    let (ok, out) = w.run(&image, "gate", &["--config", "webhook-url=http://new"]);
    assert!(ok, "{out}");
    let env = fs::read_to_string(w.root("gate").join("workspace/env.txt")).unwrap();
    assert!(env.contains("RUNTIME_WEBHOOK_URL='http://new'"), "{env}");
    assert!(env.contains("RUNTIME_UNITS='metric'"), "{env}");
}

#[test]
fn a_directory_add_lands_one_level_deep_nested_destinations_too() {
    let w = world();
    let image = w.build(
        "dirs",
        &format!(
            "FROM scratch\nNAME dirs\nRUNTIME {}\nMODEL m\nADD data/regions regions \"regional notes\"\nADD data/regions geo/areas\nADD notes.txt docs/notes.txt\n",
            w.runtime()
        ),
        &[
            ("data/regions/north.md", "north\n"),
            ("data/regions/south/cape.md", "cape\n"),
            // A directory named like the ADD: its own level must stay.
            ("data/regions/regions/inner.md", "inner\n"),
            ("notes.txt", "notes\n"),
        ],
    );
    let plan = w.dry_run(&image);
    assert_eq!(
        planned_data(&plan),
        [
            ("docs/notes.txt".to_owned(), false),
            ("geo/areas".to_owned(), true),
            ("regions".to_owned(), true),
        ]
    );
    let (ok, out) = w.run(&image, "dirs", &[]);
    assert!(ok, "{out}");
    let root = w.root("dirs");
    assert_eq!(
        walk(&root.join("etc/data")),
        [
            "docs/",
            "docs/notes.txt",
            "geo/",
            "geo/areas/",
            "geo/areas/north.md",
            "geo/areas/regions/",
            "geo/areas/regions/inner.md",
            "geo/areas/south/",
            "geo/areas/south/cape.md",
            "regions/",
            "regions/north.md",
            "regions/regions/",
            "regions/regions/inner.md",
            "regions/south/",
            "regions/south/cape.md",
        ]
    );
    assert_eq!(
        fs::read_to_string(root.join("etc/data/regions/south/cape.md")).unwrap(),
        "cape\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("etc/data/geo/areas/regions/inner.md")).unwrap(),
        "inner\n"
    );
    // What the agent is told matches the tree.
    let ws = fs::read_to_string(root.join("etc/context/WORKSPACE.md")).unwrap();
    assert!(ws.contains("etc/data/` — data files"), "{ws}");
    assert!(ws.contains("  - `regions` — regional notes"), "{ws}");
    assert!(ws.contains("  - `geo/areas`"), "{ws}");
}

#[test]
fn lint_reports_portability_for_the_targeted_versions() {
    let env = Env::new();
    let dir = env.dir.path().join("p");
    crate::support::write(&dir.join("data/regions/north.md"), "n");
    crate::support::write(
        &dir.join("Agentfile"),
        "FROM scratch\nNAME p\nRUNTIME r@sha256:0000000000000000000000000000000000000000000000000000000000000000\nMODEL m\nADD data/regions regions\nADD data/regions/north.md docs/north.md\nCAPABILITY note_save\nMOUNT /in ro\nADD data/regions/north.md\n",
    );
    let lint = |extra: &[&str]| {
        let mut args = vec!["lint", "--format", "concise", dir.to_str().unwrap()];
        args.extend(extra);
        let (ok, out, err) = env.run(&args);
        assert!(ok, "warnings only: {out}{err}");
        out
    };
    let codes = |out: &str| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.split_once("warning[")?.1.split_once(']'))
            .map(|(c, _)| c.to_owned())
            .collect()
    };
    // Default: alpha.50 and L.
    let out = lint(&[]);
    assert_eq!(
        codes(&out),
        ["AF230", "AF231", "AF232", "AF233", "AF235"],
        "{out}"
    );
    assert!(out.contains("Agentfile:5:5: warning[AF230] ADD of the directory `data/regions`: in openotters alpha.50 and L, the tar layer is never extracted"), "{out}");
    assert!(
        out.contains("in openotters L, the whole image is refused"),
        "{out}"
    );
    // otters.toml narrows the targets; --target overrides the file; none turns them off.
    crate::support::write(
        &dir.join("otters.toml"),
        "[portability]\ntargets = [\"L\"]\n",
    );
    assert_eq!(codes(&lint(&[])), ["AF230", "AF231", "AF232", "AF233"]);
    assert_eq!(
        codes(&lint(&["--target", "alpha.50"])),
        ["AF230", "AF231", "AF233", "AF235"]
    );
    assert_eq!(codes(&lint(&["--target", "none"])), Vec::<String>::new());
    crate::support::write(&dir.join("otters.toml"), "[portability]\ntargets = []\n");
    assert_eq!(codes(&lint(&[])), Vec::<String>::new());
    // Mistakes are named.
    crate::support::write(
        &dir.join("otters.toml"),
        "[portability]\ntargets = [\"alpha.49\"]\n",
    );
    let (ok, _, err) = env.run(&["lint", dir.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains(
            "[portability] targets: \"alpha.49\" is not an openotters version otters knows"
        ),
        "{err}"
    );
    let (ok, _, err) = env.run(&["lint", "--target", "beta", dir.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("target \"beta\" is not an openotters version"),
        "{err}"
    );
    // The build does not report them (it reads no otters.toml), though it shows other lints.
    let b = env.dir.path().join("b");
    crate::support::write(&b.join("north.md"), "n");
    crate::support::write(
        &b.join("Agentfile"),
        "FROM scratch\nNAME b\nMODEL m\nMOUNT /in ro\nADD north.md\n",
    );
    let (ok, out, err) = env.run(&["build", "-t", "b:1", b.to_str().unwrap()]);
    let all = format!("{out}{err}");
    assert!(ok, "{all}");
    assert!(all.contains("AF209"), "{all}");
    assert!(!all.contains("AF23"), "{all}");
    let (_, out, _) = env.run(&["lint", "--format", "concise", b.to_str().unwrap()]);
    assert_eq!(codes(&out), ["AF209", "AF233", "AF235"], "{out}");
}
