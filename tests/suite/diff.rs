//! `otters diff A B` through the binary: pairs of agents that differ in exactly one way each land
//! in the expected class with no spurious escalation (whole outputs pinned); the gates' exit
//! codes; the Markdown parses as `CommonMark` (markdown-it-py of the CI venv); an Agentfile
//! directory on one side; a diff of two registry agents downloads no data blob (the registry's
//! access log) and re-pinning a RUNTIME in the same repository is a `pin`; an EGRESS destination
//! added is an escalation, and declaring EGRESS where there was none a narrowing.

use crate::support::ci_tools::venv_bin;
use crate::support::cli::{json, Env};
use crate::support::registry::Registry;
use crate::support::snap::Transcript;
use std::path::PathBuf;

const BASE: &str = "FROM scratch
MODEL anthropic/claude-sonnet
NAME helper
CONTEXT SOUL <<EOF
You help with the weather.
Answer in one sentence.
EOF
BIN jq ghcr.io/openotters/jq:1
CAPABILITY web_search
MOUNT /data ro
CONFIG units=metric
ADD notes.txt
";

/// The agent `BASE` with `from` replaced by `to` (and `notes.txt` holding `notes`), built as `tag`.
fn agent(env: &Env, tag: &str, from: &str, to: &str, notes: &str) -> PathBuf {
    assert!(BASE.contains(from), "{from}");
    let ctx = env.dir.path().join(tag.replace(':', "-"));
    crate::support::write(&ctx.join("Agentfile"), BASE.replacen(from, to, 1));
    crate::support::write(&ctx.join("notes.txt"), notes);
    env.build_unpinned(tag, &ctx);
    ctx
}

/// Runs `otters args`; (exit code, stdout).
fn code(env: &Env, args: &[&str]) -> (i32, String) {
    let out = Transcript::otters(env).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The pairs: name, the edit (`from` → `to`; `data` changes notes.txt instead), the classes the
/// diff must report, in order.
type Pair = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
);

const PAIRS: [Pair; 8] = [
    (
        "bin-added",
        "BIN jq ghcr.io/openotters/jq:1\n",
        "BIN jq ghcr.io/openotters/jq:1\nBIN curl ghcr.io/openotters/curl:1\n",
        &["escalation"],
    ),
    (
        "capability-added",
        "CAPABILITY web_search\n",
        "CAPABILITY web_search\nCAPABILITY web_fetch\n",
        &["escalation"],
    ),
    (
        "mount-rw",
        "MOUNT /data ro",
        "MOUNT /data rw",
        &["escalation"],
    ),
    (
        "provider",
        "MODEL anthropic/claude-sonnet",
        "MODEL openai/gpt-5",
        &["escalation"],
    ),
    (
        "prompt",
        "Answer in one sentence.",
        "Answer in two sentences.",
        &["behaviour"],
    ),
    (
        "config",
        "CONFIG units=metric",
        "CONFIG units=imperial",
        &["configuration"],
    ),
    ("data", "", "", &["data"]),
    ("nothing", "", "", &[]),
];

#[test]
fn each_one_way_change_lands_in_its_class_and_nothing_else() {
    let env = Env::new();
    agent(&env, "base:1", "", "", "north\n");
    let mut t = Transcript::on(&env);
    for (name, from, to, classes) in PAIRS {
        let notes = if name == "data" { "south\n" } else { "north\n" };
        let tag = format!("{name}:1");
        agent(&env, &tag, from, to, notes);
        t.run(&env, &["diff", "base:1", &tag]);
        let (status, out) = code(&env, &["diff", "base:1", &tag, "--format", "json"]);
        assert_eq!(status, 0, "{name}: {out}");
        let v = json(&out);
        let got: Vec<&str> = v["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["class"].as_str().unwrap())
            .collect();
        assert_eq!(got, classes, "{name}: {out}");
        assert_eq!(v["identical"], classes.is_empty(), "{name}");
        let escalations = u64::from(classes == ["escalation"]);
        assert_eq!(v["summary"]["escalation"], escalations, "{name}");
    }
    // Reversed, an added power is a removal: never an escalation.
    for name in ["bin-added", "capability-added", "mount-rw"] {
        let back = format!("{name}:1");
        let out = code(&env, &["diff", &back, "base:1", "--format", "json"]).1;
        assert_eq!(json(&out)["summary"]["escalation"], 0, "{name}: {out}");
    }
    t.run(&env, &["diff", "base:1", "config:1", "--show-values"]);
    t.assert("diff", "one_way_pairs");
}

/// The classes of `otters diff a b --format json`, in order.
fn classes(env: &Env, a: &str, b: &str) -> Vec<String> {
    let (status, out) = code(env, &["diff", a, b, "--format", "json"]);
    assert_eq!(status, 0, "{a} {b}: {out}");
    json(&out)["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["class"].as_str().unwrap(),
                c["what"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn an_egress_host_added_is_an_escalation_and_nothing_else() {
    let env = Env::new();
    let api = "MOUNT /data ro\nEGRESS api.open-meteo.com \"The forecast API\"\n";
    agent(&env, "base:1", "", "", "north\n");
    agent(&env, "egress:1", "MOUNT /data ro\n", api, "north\n");
    let more = format!("{api}EGRESS uploads.example.com:8443\n");
    agent(&env, "egress:2", "MOUNT /data ro\n", &more, "north\n");
    agent(
        &env,
        "none:1",
        "MOUNT /data ro\n",
        "MOUNT /data ro\nEGRESS none\n",
        "north\n",
    );
    let mut t = Transcript::on(&env);
    t.run(&env, &["diff", "egress:1", "egress:2"]);
    t.run(&env, &["diff", "egress:1", "egress:2", "--format", "json"]);
    t.run(&env, &["diff", "base:1", "egress:1"]);
    t.run(&env, &["diff", "none:1", "egress:1"]);
    t.assert("diff", "egress");
    assert_eq!(classes(&env, "egress:1", "egress:2"), ["escalation egress"]);
    // Back: the destination removed, a narrowing.
    assert_eq!(classes(&env, "egress:2", "egress:1"), ["behaviour egress"]);
    // Declaring EGRESS where there was none narrows what the agent may reach; dropping it widens.
    assert_eq!(classes(&env, "base:1", "egress:1"), ["behaviour egress"]);
    assert_eq!(classes(&env, "egress:1", "base:1"), ["escalation egress"]);
    assert_eq!(classes(&env, "none:1", "egress:1"), ["escalation egress"]);
    assert_eq!(classes(&env, "egress:1", "none:1"), ["behaviour egress"]);
    // The gate sees it.
    let (status, _) = code(
        &env,
        &["diff", "egress:1", "egress:2", "--fail-on", "escalation"],
    );
    assert_eq!(status, 1);
    let (status, _) = code(
        &env,
        &["diff", "egress:2", "egress:1", "--fail-on", "escalation"],
    );
    assert_eq!(status, 0);
}

#[test]
fn json_and_markdown_whole() {
    let env = Env::new();
    agent(&env, "base:1", "", "", "north\n");
    let ctx = agent(
        &env,
        "next:1",
        "MOUNT /data ro\n",
        "MOUNT /data rw\nMOUNT /cache ro\n",
        "south\n",
    );
    let edited = std::fs::read_to_string(ctx.join("Agentfile"))
        .unwrap()
        .replace(
            "Answer in one sentence.",
            "Answer in two sentences.\nCite the source.",
        );
    crate::support::write(&ctx.join("Agentfile"), edited);
    env.build_unpinned("next:1", &ctx);
    let mut t = Transcript::on(&env);
    t.run(&env, &["diff", "base:1", "next:1", "--format", "json"]);
    t.run(&env, &["diff", "base:1", "next:1", "--format", "markdown"]);
    t.run(&env, &["diff", "base:1", "base:1", "--format", "markdown"]);
    t.assert("diff", "json_and_markdown");
}

#[test]
fn gates_exit_as_asked() {
    let env = Env::new();
    agent(&env, "base:1", "", "", "north\n");
    let (from, to) = (PAIRS[0].1, PAIRS[0].2);
    agent(&env, "bin:1", from, to, "north\n");
    agent(
        &env,
        "prompt:1",
        "Answer in one sentence.",
        "Answer briefly.",
        "north\n",
    );
    agent(
        &env,
        "config:1",
        "CONFIG units=metric",
        "CONFIG units=imperial",
        "north\n",
    );
    let cases: [(&[&str], i32); 13] = [
        (&["base:1", "bin:1"], 0),
        (&["base:1", "bin:1", "--exit-code"], 1),
        (&["base:1", "base:1", "--exit-code"], 0),
        (&["base:1", "bin:1", "--fail-on", "escalation"], 1),
        (&["bin:1", "base:1", "--fail-on", "escalation"], 0),
        (&["base:1", "prompt:1", "--fail-on", "escalation"], 0),
        (&["base:1", "prompt:1", "--fail-on", "behaviour"], 1),
        (&["base:1", "bin:1", "--fail-on", "behaviour"], 1),
        (&["base:1", "config:1", "--fail-on", "behaviour"], 0),
        (&["base:1", "config:1", "--fail-on", "any"], 1),
        (&["base:1", "base:1", "--fail-on", "any"], 0),
        (&["base:1", "absent:1"], 2),
        (&["base:1", "./no/such/dir"], 2),
    ];
    for (args, want) in cases {
        let all = [&["diff"][..], args, &["--format", "json"]].concat();
        let (status, out) = code(&env, &all);
        assert_eq!(status, want, "otters {all:?}: {out}");
    }
    let mut t = Transcript::on(&env);
    t.run(&env, &["diff", "base:1", "absent:1"]);
    t.run(
        &env,
        &["diff", "base:1", "base:1", "--fail-on", "sometimes"],
    );
    t.assert("diff", "gate_errors");
}

#[test]
fn an_agentfile_directory_is_built_on_the_fly_and_nothing_is_stored() {
    let env = Env::new();
    agent(&env, "base:1", "", "", "north\n");
    let ctx = agent(
        &env,
        "work:1",
        "Answer in one sentence.",
        "Answer in French.",
        "north\n",
    );
    let index = || std::fs::read_to_string(env.store().join("index.json")).unwrap();
    let before = index();
    let dir = ctx.to_str().unwrap();
    let args = ["diff", "base:1", dir, "--offline", "--allow-unpinned"];
    let mut t = Transcript::on(&env);
    t.run(&env, &args);
    let (status, out) = code(&env, &[&args[..], &["--format", "json"]].concat());
    assert_eq!(status, 0, "{out}");
    let v = json(&out);
    assert_eq!(v["changes"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(v["changes"][0]["what"], "context");
    // The agent built from the directory is the one `otters build` made of it.
    let built = json(&code(&env, &["diff", "work:1", "work:1", "--format", "json"]).1);
    assert_eq!(v["b"]["digest"], built["a"]["digest"], "{out}");
    assert_eq!(index(), before, "the diff wrote to the store");
    t.assert("diff", "agentfile_directory");
}

#[test]
fn the_markdown_parses_as_commonmark() {
    let test = "the_markdown_parses_as_commonmark";
    let Some(py) = venv_bin(test, "python") else {
        return;
    };
    let env = Env::new();
    agent(&env, "base:1", "", "", "north\n");
    let agentfile = BASE
        .replace(
            "Answer in one sentence.",
            "Answer with ``` fences` and | pipes.",
        )
        .replace(
            "CAPABILITY web_search\n",
            "CAPABILITY web_search\nCAPABILITY web_fetch\n",
        );
    let ctx = env.dir.path().join("next");
    crate::support::write(&ctx.join("Agentfile"), agentfile);
    crate::support::write(&ctx.join("notes.txt"), "south\n");
    env.build_unpinned("next:1", &ctx);
    let (_, md) = code(&env, &["diff", "base:1", "next:1", "--format", "markdown"]);
    let script = r#"
import sys
from markdown_it import MarkdownIt
md = MarkdownIt("commonmark").enable("table")
tokens = md.parse(sys.stdin.read())
kinds = [t.type for t in tokens]
print("table", "table_open" in kinds)
print("rows", kinds.count("tr_open"))
print("fences", [(t.info, t.content.splitlines()[0], len(t.content.splitlines())) for t in tokens if t.type == "fence"])
print("html", [t.content.split("\n")[0] for t in tokens if t.type == "html_block"])
"#;
    let out = std::process::Command::new(py)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().unwrap().write_all(md.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("table True"), "{said}\n{md}");
    assert!(
        said.contains("rows 7"),
        "a header and six classes:\n{said}\n{md}"
    );
    assert!(
        said.contains("fences [('diff', '--- a/SOUL.md', 8)]"),
        "the prompt's diff is one fenced diff block, whole:\n{said}\n{md}"
    );
    assert!(
        said.contains("'<details open><summary>escalation (1)</summary>'"),
        "{said}\n{md}"
    );
    assert!(said.contains("'</details>'"), "{said}\n{md}");
}

/// The access log lines of `GET`s of blob `digest`.
fn blob_gets(log: &str, digest: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("\"GET ") && l.contains(&format!("/blobs/{digest}")))
        .count()
}

/// The requests the registry's access log records.
fn requests(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("\"GET ") || l.contains("\"HEAD "))
        .count()
}

#[test]
fn a_remote_diff_reads_no_data_blob_and_a_re_pinned_runtime_is_a_pin() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    // A runtime image pushed twice to the same tag: two digests in one repository.
    let runtime = format!("{a}/tools/runtime:1");
    let script = env.dir.path().join("runtime.sh");
    let pack = |text: &str| {
        crate::support::write(&script, text);
        let s = script.to_str().unwrap();
        let flags = ["--platform", "linux/amd64", "-t", &runtime, "--push"];
        env.ok(&[&["bin", "pack", "runtime", s][..], &flags].concat());
    };
    pack("#!/bin/sh\necho one\n");
    let big_a: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
    let big_b: Vec<u8> = (0..3u32 << 20).map(|i| (i % 241) as u8).collect();
    let push = |name: &str, big: &[u8]| -> String {
        let ctx = env.dir.path().join(name);
        crate::support::write(
            &ctx.join("Agentfile"),
            format!("FROM scratch\nRUNTIME {runtime}\nNAME big\nCONTEXT SOUL \"be brief\"\nADD big.bin\n"),
        );
        crate::support::write(&ctx.join("big.bin"), big);
        let r = format!("{a}/agents/big:{name}");
        env.ok(&["build", "-q", "--push", "-t", &r, ctx.to_str().unwrap()]);
        r
    };
    let ra = push("a", &big_a);
    pack("#!/bin/sh\necho two\n");
    let rb = push("b", &big_b);
    let before = reg.log().len();
    // From a fresh home: nothing is in its store, both sides are read from the registry.
    let fresh = Env::new();
    let started = std::time::Instant::now();
    let mut t = Transcript::on(&fresh);
    t.registry(&reg);
    let (ok, out, _) = t.run(&fresh, &["diff", &ra, &rb, "--remote", "--format", "json"]);
    let took = started.elapsed();
    assert!(ok, "{out}");
    let log = reg.log()[before..].to_owned();
    for big in [&big_a, &big_b] {
        let d = crate::support::sha256(big);
        assert_eq!(
            blob_gets(&log, &d),
            0,
            "the data layer {d} was read:\n{log}"
        );
    }
    let n = requests(&log);
    // 7 per agent; the re-pinned runtime's referrers are listed (`GET /v2/`, the referrers API
    // and its tag-schema fallback, per side) to look for SBOMs, and nothing else of it is read.
    assert!(n <= 20, "{n} requests:\n{log}");
    let runtime_reads: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"GET /v2/tools/runtime/"))
        .collect();
    assert!(
        runtime_reads
            .iter()
            .all(|l| l.contains("/referrers/") || l.contains("/manifests/sha256-")),
        "{log}"
    );
    let sbom_lookups = runtime_reads.len();
    // Each side's manifest is fetched once, by its tag: the bytes that resolved it are parsed.
    let manifests: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"GET /v2/agents/big/manifests/"))
        // The referrers' tag-schema fallback (`sha256-…`) is not the agent's manifest.
        .filter(|l| !l.contains("/manifests/sha256-"))
        .collect();
    assert_eq!(manifests.len(), 2, "{log}");
    assert!(
        manifests.iter().all(|l| !l.contains("/manifests/sha256:")),
        "{log}"
    );
    let classes: Vec<String> = json(&out)["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{} {}", c["class"], c["what"]))
        .collect();
    assert_eq!(
        classes,
        ["\"pin\" \"runtime\"", "\"data\" \"add\""],
        "{out}"
    );
    // What docs/performance.md reports.
    eprintln!(
        "remote diff: {n} registry requests in {took:?} ({sbom_lookups} list the runtime's referrers)"
    );
    if std::env::var_os("OTTERS_DIFF_LOG").is_some() {
        eprintln!("{log}");
    }
    let stored = fresh.store().join("index.json");
    let held = std::fs::read_to_string(stored).unwrap_or_default();
    assert!(
        !held.contains("\"digest\""),
        "the diff stored an image: {held}"
    );
    // The CI example's diff: production from the registry, the working tree built offline from
    // its Agentfile.lock. The same changes, and still no data blob read from the registry.
    let before = reg.log().len();
    let tree = env.dir.path().join("b");
    let args = [
        "diff",
        &ra,
        tree.to_str().unwrap(),
        "--offline",
        "--format",
        "json",
    ];
    let (ok, tree_out, err) = fresh.run(&args);
    assert!(ok, "{err}");
    let pairs = |out: &str| -> Vec<(String, String)> {
        let v = json(out);
        let list = v["changes"].as_array().unwrap().clone();
        list.iter()
            .map(|c| (c["class"].to_string(), c["after"].to_string()))
            .collect()
    };
    assert_eq!(pairs(&tree_out), pairs(&out), "{tree_out}");
    let log = reg.log()[before..].to_owned();
    assert_eq!(blob_gets(&log, &crate::support::sha256(&big_a)), 0, "{log}");
    t.assert("diff", "remote");
}

/// The hint of the PEM public key at `path`: standard base64 of SHA-256 of its DER.
pub(crate) fn key_hint(path: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let pem = std::fs::read_to_string(path).unwrap();
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(der))
}

#[test]
fn platforms_and_signatures_are_provenance() {
    let env = Env::new();
    let ctx = agent(&env, "one:1", "", "", "north\n");
    let dir = ctx.to_str().unwrap();
    let build = |tag: &str, platforms: &str| {
        let args = ["build", "-q", "--offline", "--allow-unpinned"];
        env.ok(&[&args[..], &["--platform", platforms, "-t", tag, dir]].concat());
    };
    build("multi:1", "linux/amd64,linux/arm64");
    build("multi:2", "linux/amd64,linux/arm64,linux/riscv64");
    let (key, public) = env.key_pair("signer");
    env.ok(&["sign", "multi:2", "--key", &key]);
    let mut t = Transcript::on(&env);
    t.run(
        &env,
        &["diff", "multi:1", "multi:2", "--platform", "linux/arm64"],
    );
    let (status, out) = code(
        &env,
        &[
            "diff",
            "multi:1",
            "multi:2",
            "--platform",
            "linux/arm64",
            "--format",
            "json",
        ],
    );
    assert_eq!(status, 0, "{out}");
    let v = json(&out);
    let got: Vec<String> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{} {} {} {}", c["class"], c["what"], c["name"], c["change"]))
        .collect();
    assert_eq!(
        got,
        [
            r#""provenance" "platform" "linux/riscv64" "added""#,
            r#""provenance" "referrer" "application/vnd.dev.sigstore.bundle.v0.3+json" "added""#,
            r#""provenance" "signer" "signature" "added""#,
        ],
        "{out}"
    );
    // The signer the bundle names: the key's hint, as `otters key generate` prints it (base64 of
    // the SHA-256 of its DER SubjectPublicKeyInfo), computed here from the public key file.
    let hint = key_hint(&public);
    assert_eq!(
        v["b"]["signers"],
        serde_json::json!([{"kind": "signature", "signer": format!("key {hint}")}]),
        "{out}"
    );
    assert_eq!(v["a"]["signers"], serde_json::json!([]), "{out}");
    t.filter(hint, "[KEY HINT]");
    assert_ne!(
        v["a"]["manifest"], v["a"]["digest"],
        "the platform's manifest is compared"
    );
    // A platform the index lacks is an error that lists what it has.
    t.run(
        &env,
        &["diff", "multi:1", "multi:2", "--platform", "linux/s390x"],
    );
    t.assert("diff", "platforms_and_signatures");
}
