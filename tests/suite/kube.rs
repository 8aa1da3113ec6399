//! `otters kube` through the real binary: the objects of a pushed, exported agent validate
//! against the Kubernetes 1.31 and 1.37 schemas (kubernetes-validate `--strict`), pass
//! checkov's Pod Security "restricted" and hardening checks, pass our own volumeMount and
//! DNS-1123 checks, and run on a real engine: `podman kube play` of the Pod and the Deployment
//! starts the static runtime, which sees its CONFIG, ENV, context, BIN and (through a podman
//! secret) its provider key, writes into its MOUNT and is not root; two agents played side by side
//! get volumes of their own. And the refusals: a required CONFIG without value, an unmapped
//! MOUNT, an agent with no export (those that need no registry pinned whole in `snapshots/kube_cli/`).
//!
//! The checkers live in the venv `.ci/install` makes (`$OTTERS_K8S_VENV`, default
//! `/tmp/otters-k8s-venv`); without them the test is skipped (and fails under CI).

use crate::support::cli::{self, flat, ok};
use crate::support::runnable::{assert_report, last_line, podman, StaticWorld};
use crate::support::snap::Transcript;
use crate::support::tools::skip;
use crate::support::write;
use serde_yaml_ng::Value;
use std::fs;
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The checks of the issue: restricted profile and hardening, requests and limits, and the
/// liveness and readiness probes of a serving agent (checkov does not ask them of a Job).
const CHECKOV_CHECKS: &[&str] = &[
    "CKV_K8S_8",
    "CKV_K8S_9",
    "CKV_K8S_10",
    "CKV_K8S_11",
    "CKV_K8S_12",
    "CKV_K8S_13",
    "CKV_K8S_20",
    "CKV_K8S_22",
    "CKV_K8S_23",
    "CKV_K8S_28",
    "CKV_K8S_29",
    "CKV_K8S_30",
    "CKV_K8S_31",
    "CKV_K8S_37",
    "CKV_K8S_38",
    "CKV_K8S_40",
    "CKV_K8S_43",
];

fn venv_tool(name: &str) -> PathBuf {
    let venv = std::env::var_os("OTTERS_K8S_VENV")
        .map_or_else(|| PathBuf::from("/tmp/otters-k8s-venv"), PathBuf::from);
    venv.join("bin").join(name)
}

pub(crate) fn docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML document"))
        .collect()
}

fn is_dns1123(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// What kubernetes-validate misses: every volumeMount names a volume of its pod; every name is
/// DNS-1123.
pub(crate) fn own_checks(text: &str) {
    for d in docs(text) {
        let name = d["metadata"]["name"].as_str().unwrap_or_default();
        assert!(is_dns1123(name), "name {name:?} is not DNS-1123");
        let pod = if d["spec"]["template"]["spec"].is_mapping() {
            &d["spec"]["template"]["spec"]
        } else if d["spec"]["podTemplate"]["spec"].is_mapping() {
            &d["spec"]["podTemplate"]["spec"]
        } else {
            &d["spec"]
        };
        let Some(containers) = pod["containers"].as_sequence() else {
            continue;
        };
        let volumes: Vec<&str> = pod["volumes"]
            .as_sequence()
            .map(|v| v.iter().filter_map(|v| v["name"].as_str()).collect())
            .unwrap_or_default();
        for c in containers {
            for m in c["volumeMounts"].as_sequence().into_iter().flatten() {
                let m = m["name"].as_str().unwrap_or_default();
                assert!(
                    volumes.contains(&m),
                    "{name}: volumeMount {m} names no volume"
                );
            }
        }
    }
}

pub(crate) fn validate(test: &str, file: &Path) -> bool {
    validate_except(test, file, &[])
}

/// [`validate`], the checkov checks `exempt` aside (a check the output cannot pass by design,
/// such as `CKV_K8S_40`'s fixed high UID under `--uid auto`).
pub(crate) fn validate_except(test: &str, file: &Path, exempt: &[&str]) -> bool {
    validate_for(test, file, exempt, &["1.31.0", "1.37.0"])
}

/// [`validate_except`] against the schemas of the Kubernetes `versions` the output claims.
pub(crate) fn validate_for(test: &str, file: &Path, exempt: &[&str], versions: &[&str]) -> bool {
    let (kv, checkov) = (venv_tool("kubernetes-validate"), venv_tool("checkov"));
    if !kv.exists() || !checkov.exists() {
        skip(
            test,
            "kubernetes-validate and checkov are not installed; run .ci/install",
        );
        return false;
    }
    for version in versions {
        let out = Command::new(&kv)
            .args(["--strict", "-k", version])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubernetes-validate {version} {}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = Command::new(&checkov)
        .args(["--framework", "kubernetes", "--compact", "-o", "json", "-f"])
        .arg(file)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "checkov output is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let failed: Vec<String> = report["results"]["failed_checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["check_id"].as_str().map(str::to_owned))
        .collect();
    let passed = report["summary"]["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 15, "checkov ran too few checks: {report}");
    let bad: Vec<&String> = failed
        .iter()
        .filter(|c| CHECKOV_CHECKS.contains(&c.as_str()) && !exempt.contains(&c.as_str()))
        .collect();
    assert!(
        bad.is_empty(),
        "checkov failed {bad:?} on {}",
        file.display()
    );
    true
}

/// What podman 4.3 cannot play, changed: a Pod's annotations go (podman refuses annotation
/// values over 63 characters, such as the agent's digest, in a Pod, though Kubernetes accepts
/// them; a Deployment keeps them). The Secret reference stays: podman resolves it from a podman
/// secret holding a Kubernetes Secret (see [`podman_secret`]).
fn for_podman(text: &str) -> String {
    let mut out = Vec::new();
    for mut d in docs(text) {
        if d["kind"] == "Pod" {
            if let Some(m) = d["metadata"].as_mapping_mut() {
                m.remove("annotations");
            }
        }
        out.push(serde_yaml_ng::to_string(&d).unwrap());
    }
    out.join("---\n")
}

/// A podman secret `name` with the provider key, in the shape podman 4.3's `kube play` reads a
/// `secretKeyRef` from: a JSON object of each key's value in base64 (as a Secret's `data`).
fn podman_secret(podman: &dyn Fn() -> Command, dir: &Path, name: &str) {
    let file = dir.join(format!("{name}.secret.json"));
    // "sk-from-the-secret", base64.
    fs::write(&file, r#"{"ANTHROPIC_API_KEY":"c2stZnJvbS10aGUtc2VjcmV0"}"#).unwrap();
    let _ = podman().args(["secret", "rm", name]).output();
    let out = podman()
        .args(["secret", "create", name])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "podman secret create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The named volume podman gives the container `container` at `path`.
fn volume_at(podman: &dyn Fn() -> Command, container: &str, path: &str) -> String {
    let out = podman()
        .args(["inspect", container, "--format", "{{json .Mounts}}"])
        .output()
        .unwrap();
    let mounts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "podman inspect {container} ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    mounts
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["Destination"] == path)
        .and_then(|m| m["Name"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Plays `file`, waits for the runtime's report in the container's log, takes the pod down.
fn play(podman: &dyn Fn() -> Command, file: &Path, prefix: &str) -> String {
    let out = podman()
        .args(["kube", "play", "--tls-verify=false"])
        .arg(file)
        .output()
        .unwrap();
    let mut log = String::new();
    if out.status.success() {
        for _ in 0..240 {
            // The container's name: `<pod>-agent`, the pod named after the object (podman
            // calls a Deployment's pod `<name>-pod`).
            let ps = podman()
                .args(["ps", "-a", "--format", "{{.Names}}"])
                .output()
                .unwrap();
            let names = String::from_utf8_lossy(&ps.stdout).into_owned();
            let Some(container) = names
                .lines()
                .find(|n| n.starts_with(prefix) && n.ends_with("-agent"))
            else {
                std::thread::sleep(std::time::Duration::from_millis(250));
                continue;
            };
            let l = podman().args(["logs", container]).output().unwrap();
            log = String::from_utf8_lossy(&l.stdout).into_owned();
            if log.contains("END") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
    }
    let _ = podman().args(["kube", "down"]).arg(file).output();
    assert!(
        out.status.success(),
        "podman kube play failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    log
}

#[test]
fn kube_objects_validate_pass_checkov_and_run_under_podman() {
    let test = "kube_objects_validate_pass_checkov_and_run_under_podman";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = w.agent("Probe_Agent", "probe");
    let export = last_line(&ok(
        cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"])
    ));
    let data = w.tmp.path().join("data");
    let outdir = w.tmp.path().join("out");
    write(&data.join("in.txt"), "hello from the host\n");
    fs::create_dir_all(&outdir).unwrap();
    fs::set_permissions(&outdir, fs::Permissions::from_mode(0o777)).unwrap();
    let name = format!("kt{}", w.reg.port);
    let kube = |kind: &str, extra: &[&str]| {
        let mut c = cli::otters(&w.home);
        c.args(["kube", &agent, "--kind", kind, "--name", &name])
            .args([
                "--config",
                "webhook=https://example.com/hook",
                "--config",
                "hold=1",
            ])
            .arg("--mount")
            .arg(format!("/data=hostpath:{}", data.display()))
            .arg("--mount")
            .arg(format!("/out=hostpath:{}", outdir.display()))
            .args(extra);
        ok(&mut c)
    };
    let pod = kube("pod", &[]);
    // Reproducible, and the default name comes from NAME.
    assert_eq!(pod, kube("pod", &[]));
    let deployment = kube(
        "deployment",
        &["--service", "--network-policy", "--namespace", "agents"],
    );
    let job = kube("job", &["--image-pull-secret", "regcred"]);
    let default_name = ok(cli::otters(&w.home).args([
        "kube",
        &agent,
        "--allow-missing-mounts",
        "--config-from",
        "secret:probe-config",
    ]));
    assert!(
        default_name.contains("name: \"probe-agent\""),
        "{default_name}"
    );

    let repo = agent.trim_end_matches(":1");
    for text in [&pod, &deployment, &job] {
        assert!(
            text.contains(&format!("image: \"{repo}@{export}\"")),
            "{text}"
        );
        assert!(text.contains("secretKeyRef"), "{text}");
        assert!(!text.contains("sk-"), "a credential in the objects: {text}");
        assert!(
            text.contains("RUNTIME_WEBHOOK: \"https://example.com/hook\""),
            "{text}"
        );
        own_checks(text);
    }
    assert!(job.contains("restartPolicy: \"Never\"") && job.contains("kind: \"Job\""));
    // The agent serves: its Pod and Deployment are probed on the runtime's port, its Job is not.
    for text in [&pod, &deployment] {
        assert!(
            text.contains("readinessProbe:\n          tcpSocket:\n            port: 9999")
                || text.contains("readinessProbe:\n      tcpSocket:\n        port: 9999"),
            "{text}"
        );
        assert!(text.contains("livenessProbe:"), "{text}");
    }
    assert!(!job.contains("Probe:"), "{job}");
    assert!(!kube("pod", &["--no-probes"]).contains("Probe:"));
    assert!(
        deployment.contains("kind: \"Service\"") && deployment.contains("kind: \"NetworkPolicy\"")
    );

    let mut validated = true;
    for (file, text) in [("pod", &pod), ("deployment", &deployment), ("job", &job)] {
        let path = w.tmp.path().join(format!("{file}.yaml"));
        fs::write(&path, text).unwrap();
        validated &= validate(test, &path);
    }
    if !validated {
        return;
    }

    // Run the Pod and the Deployment on podman, the key from a podman secret.
    let Some(podman) = podman(test, w.tmp.path(), &w.reg.addr) else {
        return;
    };
    let secret = format!("{name}-credentials");
    podman_secret(&podman, w.tmp.path(), &secret);
    for (kind, text) in [("pod", &pod), ("deployment", &kube("deployment", &[]))] {
        let _ = fs::remove_file(outdir.join("result.txt"));
        let file = w.tmp.path().join(format!("play-{kind}.yaml"));
        fs::write(&file, for_podman(text)).unwrap();
        let log = play(&podman, &file, &name);
        assert_report(
            kind,
            &log,
            &outdir,
            &["ENV ANTHROPIC_API_KEY=sk-from-the-secret"],
        );
    }

    side_by_side(&w, &podman, &agent, &name, &secret);
    let _ = podman().args(["secret", "rm", &secret]).output();
    let _ = podman()
        .args(["rmi", "-f", &format!("{repo}@{export}")])
        .output();
}

/// Two agents side by side, `name` and `name-b`, played (not started) at once: podman makes a named
/// volume of each volume, and none of theirs is shared. Takes the volumes down after.
fn side_by_side(
    w: &StaticWorld,
    podman: &dyn Fn() -> Command,
    agent: &str,
    name: &str,
    secret: &str,
) {
    let other = format!("{name}-b");
    let mut files = Vec::new();
    for n in [name, &other] {
        let mut c = cli::otters(&w.home);
        c.args(["kube", agent, "--kind", "pod", "--name", n])
            .args(["--config", "webhook=x", "--allow-missing-mounts"])
            .args(["--secret", secret]);
        let file = w.tmp.path().join(format!("side-{n}.yaml"));
        fs::write(&file, for_podman(&ok(&mut c))).unwrap();
        let out = podman()
            .args(["kube", "play", "--start=false", "--tls-verify=false"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "podman kube play {n}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(file);
    }
    let seen: Vec<(&str, String, String)> = ["/workspace", "/home", "/tmp", "/var/lib"]
        .into_iter()
        .map(|path| {
            let at = |n: &str| volume_at(podman, &format!("{n}-agent"), path);
            (path, at(name), at(&other))
        })
        .collect();
    // Taken down before any assertion, so a failure leaves nothing behind.
    for file in &files {
        let _ = podman().args(["kube", "down"]).arg(file).output();
    }
    let mut volumes: Vec<String> = seen
        .iter()
        .flat_map(|(_, a, b)| [a.clone(), b.clone()])
        .collect();
    for n in [name, &other] {
        for dir in ["workspace", "home", "tmp", "var-lib"] {
            volumes.push(format!("{n}-{dir}"));
        }
    }
    volumes.sort();
    volumes.dedup();
    volumes.retain(|v| !v.is_empty());
    let _ = podman()
        .args(["volume", "rm", "-f"])
        .args(&volumes)
        .output();
    for (path, a, b) in &seen {
        let dir = path.trim_start_matches('/').replace('/', "-");
        assert_eq!(
            (a.clone(), b.clone()),
            (format!("{name}-{dir}"), format!("{other}-{dir}")),
            "the volumes at {path}"
        );
    }
}

#[test]
fn kube_refuses_missing_config_unmapped_mounts_and_no_export() {
    let test = "kube_refuses_missing_config_unmapped_mounts_and_no_export";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = w.agent("probe", "probe");
    let mounts = ["--mount", "/data=emptydir", "--mount", "/out=pvc:results"];

    // No export yet: the error says how to make one.
    let mut c = cli::otters(&w.home);
    c.args(["kube", &agent, "--config", "webhook=x"])
        .args(mounts);
    let err = flat(&String::from_utf8_lossy(&c.output().unwrap().stderr));
    assert!(
        err.contains("has no runnable export")
            && err.contains("otters export")
            && err.contains("--push")
            && err.contains("help: or pass --image REPO@sha256:…"),
        "{err}"
    );
    ok(cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"]));

    // A required CONFIG without value: named, with the flags that give it one.
    let mut c = cli::otters(&w.home);
    c.args(["kube", &agent]).args(mounts);
    let out = c.output().unwrap();
    assert!(!out.status.success());
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(
        err.contains("required config(s) have no value: webhook")
            && err.contains(
                "help: pass --config webhook=VALUE, or --config-from secret:NAME|configmap:NAME"
            ),
        "{err}"
    );

    // Unmapped MOUNTs: every one listed.
    let out = cli::otters(&w.home)
        .args([
            "kube",
            &agent,
            "--config",
            "webhook=x",
            "--mount",
            "/out=emptydir",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(
        err.contains("declared mount(s) not mapped: /data")
            && err.contains("help: map each mount with --mount TARGET=pvc:NAME|emptydir|hostpath:/PATH, or pass --allow-missing-mounts"),
        "{err}"
    );
    // A fresh home finds the export through the registry's referrers.
    let home = w.fresh_home("elsewhere");
    let mut c = cli::otters(&home);
    c.args(["kube", &agent, "--config", "webhook=x"])
        .args(mounts);
    assert!(ok(&mut c).contains("@sha256:"));
}

/// An agent built offline (RUNTIME unpinned) and tagged in a registry nothing listens on (a port
/// bound, then released), with no export anywhere: (its home, its reference).
fn an_agent_whose_registry_is_down() -> (cli::Env, String) {
    let env = cli::Env::new();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let agent = format!("127.0.0.1:{port}/agents/lonely:1");
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME lonely\nMODEL anthropic/x\nRUNTIME example.test/rt:1\n",
    );
    env.build_unpinned(&agent, &ctx);
    (env, agent)
}

/// A transcript on `env` whose agent `agent` is in the registry nothing listens on (`[DOWN]`),
/// this machine's platform `linux/[HOST]`.
fn down(env: &cli::Env, agent: &str) -> Transcript {
    let mut t = Transcript::on(env);
    t.filter(agent.split('/').next().unwrap_or_default(), "[DOWN]")
        .filter(
            format!("linux/{}", crate::support::host_arch()),
            "linux/[HOST]",
        );
    t
}

/// An agent with no export in the store, whose registry cannot be reached: the error says what
/// was being looked for (not only "cannot reach registry"), keeps the registry's cause, and the
/// help names `--image` and `--offline`; with `--offline` it is the plain "no export" refusal.
/// Then the `--image` that help points to: parsed as a reference by a whole digest.
#[test]
fn kube_says_what_it_looked_for_when_the_registry_cannot_be_asked() {
    let (env, agent) = an_agent_whose_registry_is_down();
    let mut t = down(&env, &agent);
    let (made, ..) = t.run(&env, &["kube", &agent]);
    assert!(!made);
    let (made, _, err) = t.run(&env, &["kube", "--offline", &agent]);
    assert!(!made && !err.contains("cannot reach"), "{err}");

    // `--image` is parsed as a reference by digest, not searched for `@sha256:`: a short digest
    // or a control character never reaches the pod spec.
    let zeros = "0".repeat(64);
    for bad in [
        "x@sha256:abc".to_owned(),
        format!("a\u{1b}[2J@sha256:{zeros}"),
    ] {
        let (made, out, err) = t.run(&env, &["kube", "--offline", &agent, "--image", &bad]);
        assert!(!made && out.is_empty(), "{bad:?} accepted: {err}");
    }
    t.assert("kube_cli", "registry_down");
    let good = format!("127.0.0.1:5000/agents/lonely@sha256:{zeros}");
    let yaml = ok(env
        .otters()
        .args(["kube", "--offline", &agent, "--image", &good]));
    assert!(yaml.contains(&format!("image: \"{good}\"")), "{yaml}");
}

/// Requests and limits are Kubernetes quantities, and no request is above its limit: anything
/// else is refused before a byte is written, with the flag to fix (the API server would refuse
/// the pod only at `kubectl apply`).
#[test]
fn kube_refuses_quantities_kubernetes_would_refuse() {
    let (env, agent) = an_agent_whose_registry_is_down();
    let image = format!("127.0.0.1:5000/agents/lonely@sha256:{}", "0".repeat(64));
    let t = std::cell::RefCell::new(down(&env, &agent));
    let kube = |flags: &[&str]| {
        let mut args = vec!["kube", "--offline", &agent, "--image", &image];
        args.extend_from_slice(flags);
        t.borrow_mut().run(&env, &args)
    };
    for flags in [
        &["--cpu-limit", "lots"][..],
        &["--memory-request", "1\u{1b}[2J"],
        &["--cpu-request", "2"],
        &["--memory-request", "1Gi"],
    ] {
        let (ok, stdout, err) = kube(flags);
        assert!(!ok && stdout.is_empty(), "{flags:?} accepted: {err}");
    }
    t.into_inner().assert("kube_cli", "quantities_refused");
    let (ok, stdout, err) = env.run(&[
        "kube",
        "--offline",
        &agent,
        "--image",
        &image,
        "--cpu-request",
        "1.5",
        "--cpu-limit",
        "2",
        "--memory-limit",
        "1e9",
    ]);
    assert!(ok, "{err}");
    assert!(
        stdout.contains("cpu: \"1.5\"") && stdout.contains("memory: \"1e9\""),
        "{stdout}"
    );
}

/// A name the user gave for a Kubernetes object that is not DNS-1123 is refused before a byte is
/// written: the error names the object and the value (the library knows no flags), the help line
/// the flag that gives it. The whole stderr and exit code of each, pinned.
#[test]
fn kube_names_a_bad_object_name_and_the_flag_that_fixes_it() {
    use std::fmt::Write as _;
    let (env, agent) = an_agent_whose_registry_is_down();
    let image = format!("127.0.0.1:5000/agents/lonely@sha256:{}", "0".repeat(64));
    let mut all = String::new();
    for flags in [
        &["--secret", "Bad_Name"][..],
        &[
            "--image-pull-secret",
            "ok",
            "--image-pull-secret",
            "Bad_Name",
        ][..],
        &["--var-lib-pvc", "Bad_Name"][..],
        &["--config-from", "configmap:Bad_Name"][..],
        &["--mount", "/data=pvc:Bad_Name"][..],
    ] {
        let mut args = vec![
            "kube",
            "--offline",
            agent.as_str(),
            "--image",
            image.as_str(),
        ];
        args.extend_from_slice(flags);
        let out = env.otters().args(&args).output().unwrap();
        assert!(out.stdout.is_empty(), "{flags:?} wrote objects");
        write!(
            all,
            "$ otters kube {}\nexit: {:?}\n{}\n",
            flags.join(" "),
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
        .unwrap();
    }
    crate::support::snap::assert("kube", "bad_object_names", &all.replace(&agent, "[AGENT]"));
}

/// `kube -o FILE` is an output like `save -o`: a link at FILE is replaced, never followed (the
/// file it named keeps its bytes), a FIFO is written as a stream and stays a FIFO, a directory is
/// refused, and a second run over the first output succeeds.
#[test]
fn kube_output_replaces_links_streams_into_fifos_and_refuses_directories() {
    let env = cli::Env::new();
    let dir = env.dir.path();
    let hello = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/hello");
    env.build_unpinned("meteo:1.0", &hello);
    let image = format!("127.0.0.1:5000/meteo@sha256:{}", "0".repeat(64));
    let kube = |out: &Path| {
        env.otters()
            .args(["kube", "meteo:1.0", "--offline", "--image", &image])
            .args(["--mount", "/reports=emptydir", "-o"])
            .arg(out)
            .output()
            .unwrap()
    };
    let victim = dir.join("victim");
    fs::write(&victim, "keep me\n").unwrap();
    let link = dir.join("link.yaml");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for _ in 0..2 {
        let out = kube(&link);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me\n");
    let meta = fs::symlink_metadata(&link).unwrap();
    assert!(meta.is_file(), "the link was not replaced by the output");
    assert!(fs::read_to_string(&link)
        .unwrap()
        .contains("kind: \"Deployment\""));

    let fifo = dir.join("objects.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    let out = kube(&fifo);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(reader.join().unwrap().contains("kind: \"Deployment\""));
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

    let out = kube(dir);
    assert!(!out.status.success());
    assert!(
        flat(&String::from_utf8_lossy(&out.stderr)).contains("directory"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kube` reads through a leased store: a concurrent `prune` (which removes every blob no image
/// reaches and no lease lists) never takes the agent and export documents it fetched before it
/// reads them. Each round renders the objects in a store a pruner empties again and again.
#[test]
fn kube_beside_a_concurrent_prune_reads_what_it_fetched() {
    let test = "kube_beside_a_concurrent_prune_reads_what_it_fetched";
    let Some(w) = StaticWorld::start(test) else {
        return;
    };
    let agent = w.agent("racer", "racer");
    ok(cli::otters(&w.home).args(["export", &agent, "--as", "runnable", "--push"]));
    let home = w.fresh_home("racing");
    crate::support::beside_a_pruner(&home, 6, |round| {
        let out = cli::otters(&home)
            .args(["kube", &agent, "--config", "webhook=x"])
            .args(["--mount", "/data=emptydir", "--mount", "/out=pvc:results"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "round {round}: kube failed: {err}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("kind: \"Deployment\""),
            "round {round}"
        );
        // What kube pulled is tagged: untag it, so the next round fetches anew.
        let _ = cli::otters(&home).args(["rm", &agent]).output();
    });
}
