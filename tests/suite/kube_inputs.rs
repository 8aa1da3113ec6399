//! `otters kube` through the real binary, without a cluster or a registry: what the YAML says to a
//! YAML 1.1 reader (kubectl's), and what the user is told. ENV keys YAML 1.1 reads as booleans or
//! null (`ON`, `NO`, `NULL`) and values with characters YAML readers refuse (U+FFFE) come back
//! unchanged from `PyYAML`; every missing input is named in one error; a `hostPath` mount and a
//! Job of a server are warned about; and `--platform` for a single-platform agent says to
//! rebuild. Each output is pinned whole (`snapshots/kube`).

use crate::support::cli::Env;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

/// An image reference by digest for `--image`: nothing is pulled, so no export is needed.
pub(crate) fn image() -> String {
    format!("127.0.0.1:5000/agents/keys@sha256:{}", "0".repeat(64))
}

/// `env` with the agent `tag` built offline from `agentfile`.
pub(crate) fn agent(tag: &str, agentfile: &str) -> Env {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(&ctx.join("Agentfile"), agentfile);
    env.build_unpinned(tag, &ctx);
    env
}

/// `text` with every `sha256:` digest written `sha256:[DIGEST]`, and the version label (a
/// digest's first 12 hex digits here) `[VERSION]`.
pub(crate) fn redacted(text: &str) -> String {
    let label = "app.kubernetes.io/version: \"";
    let text = text
        .lines()
        .map(|l| match l.find(label) {
            Some(i) => format!("{}[VERSION]\"\n", &l[..i + label.len()]),
            None => format!("{l}\n"),
        })
        .collect::<String>();
    let mut rest = text.as_str();
    let mut out = String::new();
    while let Some(i) = rest.find("sha256:") {
        out.push_str(&rest[..i + 7]);
        out.push_str("[DIGEST]");
        rest = rest[i + 7..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

fn snapshot(name: &str, text: &str) {
    crate::support::snap::assert("kube", name, text);
}

/// A Python with `PyYAML` (a YAML 1.1 reader, as kubectl's `yaml.v2` is): the venv `.ci/install`
/// makes for kubernetes-validate (which needs it), else `python3` when it has it.
fn pyyaml() -> Option<PathBuf> {
    let venv = std::env::var_os("OTTERS_K8S_VENV")
        .map_or_else(|| PathBuf::from("/tmp/otters-k8s-venv"), PathBuf::from);
    [venv.join("bin/python"), PathBuf::from("python3")]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .args(["-c", "import yaml"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

const KEYS: &str = "FROM scratch\nNAME keys\nMODEL anthropic/x\nRUNTIME example.test/rt:1\nENV ON=1\nENV Y=2\nENV NO=3\nENV OFF=4\nENV TRUE=5\nENV NULL=6\nENV ONE=7\nCONFIG note\n";

/// ENV keys that YAML 1.1 reads as booleans or null are quoted, so `PyYAML` (YAML 1.1) reads every
/// `ConfigMap` key back as the string it is (before: `ON` became `True`, `NULL` became `None`);
/// a value holding U+FFFE (which YAML readers refuse raw) and U+2028 is escaped and read back
/// unchanged. The whole YAML is pinned: its volumes are named after the object.
#[test]
fn kube_keys_and_values_survive_a_yaml_1_1_reader() {
    let test = "kube_keys_and_values_survive_a_yaml_1_1_reader";
    let env = agent("keys:1", KEYS);
    let (ok, yaml, err) = env.run(&[
        "kube",
        "keys:1",
        "--offline",
        "--image",
        &image(),
        "--config",
        "note=a\u{fffe}b\u{2028}c",
    ]);
    assert!(ok, "{err}");
    assert!(err.is_empty(), "{err}");
    snapshot("keys_yaml", &redacted(&yaml));

    let Some(python) = pyyaml() else {
        crate::support::tools::skip(test, "no Python with PyYAML; run .ci/install");
        return;
    };
    let file = env.dir.path().join("keys.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let script = "import json, sys, yaml\n\
                  docs = list(yaml.safe_load_all(open(sys.argv[1], encoding='utf-8')))\n\
                  data = docs[0]['data']\n\
                  print(json.dumps([[repr(k), v] for k, v in data.items()]))\n";
    let out = Command::new(python)
        .args(["-c", script])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "PyYAML cannot read the objects: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data: Vec<(String, String)> = serde_json::from_slice(&out.stdout).unwrap();
    let want: Vec<(String, String)> = [
        ("NO", "3"),
        ("NULL", "6"),
        ("OFF", "4"),
        ("ON", "1"),
        ("ONE", "7"),
        ("RUNTIME_NOTE", "a\u{fffe}b\u{2028}c"),
        ("TRUE", "5"),
        ("Y", "2"),
    ]
    .iter()
    .map(|(k, v)| (format!("'{k}'"), (*v).to_owned()))
    .collect();
    assert_eq!(data, want);
}

const INPUTS: &str = "FROM scratch\nNAME inputs\nMODEL anthropic/x\nRUNTIME example.test/rt:1\nCONFIG webhook! \"where to post\"\nCONFIG token!\nMOUNT /data ro\nMOUNT /out rw\n";

/// Every missing input in one error: the required CONFIGs and the unmapped MOUNTs, each with the
/// flags that fix it (before: the CONFIGs only, the MOUNTs after the next try).
#[test]
fn kube_names_every_missing_input_at_once() {
    let env = agent("inputs:1", INPUTS);
    let (ok, out, err) = env.run(&["kube", "inputs:1", "--offline", "--image", &image()]);
    assert!(!ok && out.is_empty(), "{out}");
    snapshot("missing_inputs", &err);
}

/// A `hostPath` mount forfeits Pod Security "baseline" and "restricted", and a Job of an agent
/// whose EXEC serves never completes: both said on stderr, the objects still written.
#[test]
fn kube_warns_about_host_paths_and_a_job_that_never_ends() {
    let env = agent("inputs:1", INPUTS);
    let (ok, out, err) = env.run(&[
        "kube",
        "inputs:1",
        "--offline",
        "--image",
        &image(),
        "--kind",
        "job",
        "--config",
        "webhook=x",
        "--config",
        "token=t",
        "--mount",
        "/data=hostpath:/srv/data",
        "--mount",
        "/out=emptydir",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("kind: \"Job\""), "{out}");
    snapshot("warnings", &err);
}

/// `--platform` other than this machine's, for an agent built for one platform: the plain
/// `otters export` the message used to suggest exports for this machine and can never make the
/// export asked for, so the error says to export for that platform or rebuild for it.
#[test]
fn kube_platform_of_a_single_platform_agent_says_to_rebuild() {
    let env = agent("inputs:1", INPUTS);
    // s390x: a platform no test machine is.
    let err = env
        .run(&["kube", "inputs:1", "--offline", "--platform", "linux/s390x"])
        .2;
    snapshot("platform_hint", &err);
}

/// `--uid auto` (a platform such as `OpenShift` assigns the UID): no `runAsUser`, `runAsGroup` or
/// `fsGroup` anywhere, `runAsNonRoot` kept in the pod's and the container's context; the objects
/// validate and pass checkov's checks but `CKV_K8S_40` (a fixed high UID, which the platform
/// gives). The whole output pinned.
#[test]
fn kube_uid_auto_fixes_no_uid_and_keeps_run_as_non_root() {
    let test = "kube_uid_auto_fixes_no_uid_and_keeps_run_as_non_root";
    let env = agent("keys:1", KEYS);
    let (ok, yaml, err) = env.run(&[
        "kube",
        "keys:1",
        "--offline",
        "--image",
        &image(),
        "--uid",
        "auto",
        "-n",
        "agents",
    ]);
    assert!(ok && err.is_empty(), "{err}");
    snapshot("uid_auto", &redacted(&yaml));
    for gone in ["runAsUser", "runAsGroup", "fsGroup"] {
        assert!(!yaml.contains(gone), "{gone} in {yaml}");
    }
    assert_eq!(yaml.matches("runAsNonRoot: true").count(), 2, "{yaml}");
    let file = env.dir.path().join("auto.yaml");
    std::fs::write(&file, &yaml).unwrap();
    crate::kube::validate_except(test, &file, &["CKV_K8S_40"]);
}

/// A flag only one kind or format reads is refused, not silently dropped: `--replicas` on a Pod,
/// a Job or a Sandbox, a negative `--replicas`, and `--force` without `--format kustomize`.
/// Nothing is written; a Deployment takes `--replicas 3`.
#[test]
fn kube_refuses_flags_its_kind_or_format_would_ignore() {
    let env = agent("keys:1", KEYS);
    let image = image();
    let mut said = String::new();
    for args in [
        &["--kind", "pod", "--replicas", "3"][..],
        &["--kind", "job", "--replicas", "2"],
        &["--kind", "sandbox", "--replicas", "2"],
        &["--kind", "deployment", "--replicas=-1"],
        &["--force"],
    ] {
        let all = [
            &["kube", "keys:1", "--offline", "--image", &image][..],
            args,
        ]
        .concat();
        let (ok, out, err) = env.run(&all);
        assert!(!ok && out.is_empty(), "{args:?}: {out}");
        let _ = writeln!(said, "$ otters kube keys:1 {}\n{err}", args.join(" "));
    }
    snapshot("unused_flags", &said);
    let (ok, out, err) = env.run(&[
        "kube",
        "keys:1",
        "--offline",
        "--image",
        &image,
        "--kind",
        "deployment",
        "--replicas",
        "3",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("replicas: 3"), "{out}");
}
