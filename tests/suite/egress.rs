//! Declared egress (issue 36) through the real binary: lint's codes for every EGRESS mistake,
//! the declaration in `inspect`, `agent.yaml` and the `--dry-run` plan, the system executor's
//! refusal, and the docker executor holding the agent to it with podman as the docker CLI: a
//! static stand-in runtime (no shell) tries targets on this host's own address — the declared one
//! is reached through the proxy, an undeclared port and every direct connection are not, `EGRESS
//! none` reaches nothing, no EGRESS reaches everything — and no network is left behind.

use crate::support::cli::{ok, Env};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::Registry;
use crate::support::runnable::static_binary;
use crate::support::snap::Transcript;
use crate::support::tools::skip;
use std::fs;
use std::io::Write as _;
use std::net::{IpAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::Command;

#[test]
fn lint_names_every_egress_mistake() {
    let env = Env::new();
    let file = env.dir.path().join("Agentfile");
    fs::write(
        &file,
        "FROM scratch\nRUNTIME ghcr.io/openotters/runtime:v1\nMODEL anthropic/claude-haiku-4-5\nNAME helper\nEGRESS api.example.com \"the API\"\nEGRESS API.example.com:443\nEGRESS *.com\nEGRESS files.example.com:https\nEGRESS none\n",
    )
    .unwrap();
    let mut t = Transcript::on(&env);
    let (passed, _, _) = t.run(
        &env,
        &["lint", "--format", "concise", file.to_str().unwrap()],
    );
    assert!(!passed, "lint passed a file with errors");
    t.assert("egress", "lint");
    // `fmt` keeps EGRESS as written (hosts are not re-cased: that would change the model).
    let messy = env.dir.path().join("Messy");
    fs::write(
        &messy,
        "FROM scratch\negress   API.example.com:8443    \"why\"\n",
    )
    .unwrap();
    let mut t = Transcript::on(&env);
    t.run(&env, &["fmt", "--check", messy.to_str().unwrap()]);
    t.assert("egress", "fmt");
}

/// A registry with the stand-in runtime, and agents built from it in one otters home.
struct World {
    env: Env,
    reg: Registry,
}

impl World {
    fn start(test: &str) -> Option<World> {
        let env = Env::new();
        let probe = static_binary(test, env.dir.path(), "egress_probe")?;
        let reg = Registry::start();
        images::push_bin_index(
            &env.dir.path().join("img-probe"),
            &format!("{}/probe:1", reg.addr),
            "runtime",
            &probe,
            BinPrefix::Io,
            Some("egress probe"),
        );
        Some(World { env, reg })
    }

    /// Builds an agent NAME whose Agentfile ends with `lines`; returns its reference.
    fn agent(&self, name: &str, lines: &str) -> String {
        let ctx = self.env.dir.path().join(format!("ctx-{name}"));
        fs::create_dir_all(&ctx).unwrap();
        fs::write(
            ctx.join("Agentfile"),
            format!(
                "FROM scratch\nNAME {name}\nRUNTIME {}/probe:1\nMODEL anthropic/claude-test\n{lines}",
                self.reg.addr
            ),
        )
        .unwrap();
        let agent = format!("{}/{name}:1", self.reg.addr);
        ok(self
            .env
            .otters()
            .args(["build", "-q", "-t", &agent])
            .arg(&ctx));
        agent
    }

    fn transcript(&self) -> Transcript {
        let mut t = Transcript::on(&self.env);
        t.registry(&self.reg);
        t
    }
}

#[test]
fn the_declaration_is_recorded_shown_and_refused_by_the_system_executor() {
    let Some(w) = World::start("egress::the_declaration_is_recorded") else {
        return;
    };
    let agent = w.agent(
        "fetcher",
        "EGRESS api.example.com \"the ticket API\"\nEGRESS [2001:db8::1]:853\nEGRESS *.example.org:80\n",
    );
    let none = w.agent("hermit", "EGRESS none\n");
    let mut t = w.transcript();
    t.run(&w.env, &["inspect", &agent]);
    t.run(&w.env, &["inspect", &none]);
    // The system executor cannot confine a host process: refused, unless the user accepts it.
    t.run(&w.env, &["run", &agent]);
    t.run(&w.env, &["run", &none]);
    t.assert("egress", "inspect_and_refusal");

    let dry = |args: &[&str]| -> serde_json::Value {
        let out = ok(w.env.otters().args(["run", "--dry-run"]).args(args));
        serde_json::from_str(&out).unwrap()
    };
    let plan = dry(&["--executor", "docker", &agent]);
    assert_eq!(
        plan["egress"],
        serde_json::json!({
            "enforced_by": "proxy",
            "declared": ["api.example.com:443", "[2001:db8::1]:853", "*.example.org:80"],
            "implicit": ["api.anthropic.com:443"],
        })
    );
    let plan = dry(&["--executor", "docker", &none]);
    assert_eq!(
        plan["egress"],
        serde_json::json!({"enforced_by": "no_network"})
    );
    let argv: Vec<&str> = plan["argv"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(argv.contains(&"--network=none") && !argv.iter().any(|a| a.starts_with("--publish")));
    // Accepted unenforced: the plan still says what was declared.
    let plan = dry(&["--egress", "unenforced", &none]);
    assert_eq!(
        plan["egress"],
        serde_json::json!({"enforced_by": "no_network"})
    );
    // An agent without EGRESS: nothing in its plan, agent.yaml or export label.
    let open = w.agent("open", "");
    let plan = dry(&["--executor", "docker", &open]);
    assert!(plan.get("egress").is_none(), "{plan}");
}

/// This host's own outbound address (not loopback: the container's loopback is its own).
fn host_address() -> Option<IpAddr> {
    let s = UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("203.0.113.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// A target on every address that greets each connection with `hi`.
fn greeter() -> u16 {
    let l = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let mut c = c;
            let _ = c.write_all(b"hi\n");
        }
    });
    port
}

fn podman_networks(conf: &PathBuf) -> String {
    let out = Command::new("podman")
        .env("CONTAINERS_CONF", conf)
        .args(["network", "ls", "--format", "{{.Name}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_docker_executor_holds_the_agent_to_its_egress() {
    let test = "egress::the_docker_executor_holds_the_agent_to_its_egress";
    if !crate::support::tools::works("podman", &["--version"]) {
        skip(test, "podman is not installed");
        return;
    }
    let Some(ip) = host_address() else {
        skip(test, "this host has no non-loopback address");
        return;
    };
    let Some(w) = World::start(test) else { return };
    let conf = w.env.dir.path().join("containers.conf");
    fs::write(&conf, "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n").unwrap();
    // A base image with nothing in it: the runtime is static and bind-mounted.
    let base = w.env.dir.path().join("base.tar");
    {
        let mut b = tar::Builder::new(fs::File::create(&base).unwrap());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        b.append_data(&mut h, "tmp/", std::io::empty()).unwrap();
        b.finish().unwrap();
    }
    let image = format!("localhost/otters-egress-base:{}", std::process::id());
    let imported = Command::new("podman")
        .env("CONTAINERS_CONF", &conf)
        .arg("import")
        .arg(&base)
        .arg(&image)
        .output()
        .unwrap();
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let (declared, undeclared) = (greeter(), greeter());
    let targets = format!("{ip}:{declared},{ip}:{undeclared}");
    let podman = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v podman"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let run = |agent: &str, name: &str| -> (String, String) {
        let root = w.env.dir.path().join(format!("root-{name}"));
        let out = w
            .env
            .otters()
            .env("CONTAINERS_CONF", &conf)
            // podman reads DOCKER_CONFIG's config.json, which the test machine does not have.
            .env_remove("DOCKER_CONFIG")
            .args(["run", "--executor", "docker", "--docker", podman.trim()])
            .args([
                "--base-image",
                &image,
                "-e",
                &format!("PROBE_TARGETS={targets}"),
            ])
            .arg("--root")
            .arg(&root)
            .arg(agent)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{name}: {stdout}\n{stderr}");
        (stdout, stderr)
    };
    let before = podman_networks(&conf);

    let confined = w.agent(
        "confined",
        &format!("EGRESS {ip}:{declared} \"the greeter\"\n"),
    );
    let (out, err) = run(&confined, "confined");
    let want = [
        format!("direct {ip}:{declared} blocked"),
        format!("proxy {ip}:{declared} HTTP/1.1 200 Connection established reached"),
        format!("direct {ip}:{undeclared} blocked"),
        format!("proxy {ip}:{undeclared} HTTP/1.1 403 Forbidden"),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "stderr: {err}");
    assert!(
        err.contains(&format!(
            "otters: egress: agent confined: refused {ip}:{undeclared}: not declared by EGRESS"
        )),
        "{err}"
    );
    assert_eq!(podman_networks(&conf), before, "a network was left behind");

    let hermit = w.agent("hermit", "EGRESS none\n");
    let (out, _) = run(&hermit, "hermit");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            format!("direct {ip}:{declared} blocked"),
            format!("direct {ip}:{undeclared} blocked")
        ]
    );

    // Without EGRESS the agent has the network it is given: both are reached (the test is not
    // vacuous).
    let open = w.agent("open", "");
    let (out, _) = run(&open, "open");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            format!("direct {ip}:{declared} reached"),
            format!("direct {ip}:{undeclared} reached")
        ]
    );
    let _ = Command::new("podman")
        .env("CONTAINERS_CONF", &conf)
        .args(["rmi", "-f", &image])
        .output();
}

/// `otters kube` of agents that declare EGRESS: the egress `NetworkPolicy` validates against the
/// Kubernetes 1.31 and 1.37 schemas and holds exactly the declared ports and addresses.
#[test]
fn kube_writes_an_egress_policy_that_validates() {
    let test = "egress::kube_writes_an_egress_policy_that_validates";
    let venv = std::env::var_os("OTTERS_K8S_VENV")
        .map_or_else(|| PathBuf::from("/tmp/otters-k8s-venv"), PathBuf::from);
    let kv = venv.join("bin/kubernetes-validate");
    if !kv.exists() {
        skip(
            test,
            "kubernetes-validate is not installed; run .ci/install",
        );
        return;
    }
    let Some(w) = World::start(test) else { return };
    for (name, lines, rules) in [
        (
            "fetcher",
            "EGRESS api.example.com\nEGRESS 10.0.0.5:5432\nEGRESS [2001:db8::1]:853\n",
            4,
        ),
        ("hermit", "EGRESS none\n", 0),
    ] {
        let agent = w.agent(name, lines);
        ok(w.env.otters().args(["push", "-q", &agent]));
        ok(w.env
            .otters()
            .args(["export", &agent, "--as", "runnable", "--push"]));
        let yaml = ok(w.env.otters().args(["kube", &agent]));
        let file = w.env.dir.path().join(format!("{name}.yaml"));
        fs::write(&file, &yaml).unwrap();
        for version in ["1.31.0", "1.37.0"] {
            let out = Command::new(&kv)
                .args(["--strict", "-k", version])
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "kubernetes-validate {version}:\n{}{}\n{yaml}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let docs: Vec<serde_yaml_ng::Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let policy = docs
            .iter()
            .find(|d| d["metadata"]["name"].as_str() == Some(&format!("{name}-egress")))
            .unwrap_or_else(|| panic!("no egress policy:\n{yaml}"));
        assert_eq!(policy["spec"]["policyTypes"][0].as_str(), Some("Egress"));
        let egress = policy["spec"]["egress"].as_sequence().unwrap();
        assert_eq!(egress.len(), rules, "{yaml}");
        if rules > 0 {
            let cidrs: Vec<&str> = egress
                .iter()
                .filter_map(|r| r["to"][0]["ipBlock"]["cidr"].as_str())
                .collect();
            assert_eq!(cidrs, ["10.0.0.5/32", "2001:db8::1/128"]);
            let open: Vec<u64> = egress[1]["ports"]
                .as_sequence()
                .unwrap()
                .iter()
                .filter_map(|p| p["port"].as_u64())
                .collect();
            assert_eq!(
                open,
                [443],
                "only the declared name's port (and the provider's, also 443)"
            );
        }
    }
}

/// `--network-policy cilium`: the declared egress as a `CiliumNetworkPolicy` (`toFQDNs` with the
/// DNS rule Cilium needs), valid against Cilium's CRD schema (`testdata/cilium`), which refuses a
/// mangled copy (so the check is not vacuous).
#[test]
fn kube_cilium_policy_validates_against_the_crd_schema() {
    let test = "egress::kube_cilium_policy_validates_against_the_crd_schema";
    let venv = std::env::var_os("OTTERS_K8S_VENV")
        .map_or_else(|| PathBuf::from("/tmp/otters-k8s-venv"), PathBuf::from);
    let python = venv.join("bin/python");
    if !venv.join("bin/jsonschema").exists() {
        skip(
            test,
            "the jsonschema validator is not installed; run .ci/install",
        );
        return;
    }
    let Some(w) = World::start(test) else { return };
    let agent = w.agent(
        "fetcher",
        "EGRESS api.example.com\nEGRESS *.example.org:80\nEGRESS 10.0.0.5:5432\nEGRESS [2001:db8::1]:853\n",
    );
    ok(w.env.otters().args(["push", "-q", &agent]));
    ok(w.env
        .otters()
        .args(["export", &agent, "--as", "runnable", "--push"]));
    let yaml = ok(w
        .env
        .otters()
        .args(["kube", &agent, "--network-policy", "cilium"]));
    let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let cnp = docs
        .iter()
        .find(|d| d["kind"] == "CiliumNetworkPolicy")
        .unwrap_or_else(|| panic!("no CiliumNetworkPolicy:\n{yaml}"));
    assert_eq!(cnp["apiVersion"], "cilium.io/v2");
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"] == "NetworkPolicy" && d["metadata"]["name"] == "fetcher-egress"),
        "a NetworkPolicy as well as the Cilium one:\n{yaml}"
    );
    let rules = cnp["spec"]["egress"].as_array().unwrap();
    assert_eq!(
        rules[0]["toPorts"][0]["rules"]["dns"][0]["matchPattern"],
        "*"
    );
    let to: Vec<String> = rules[1..]
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["toFQDNs"][0].to_string() + &r["toCIDR"][0].to_string(),
                r["toPorts"][0]["ports"][0]["port"]
            )
        })
        .collect();
    assert_eq!(
        to,
        [
            r#"{"matchName":"api.example.com"}null "443""#,
            r#"{"matchPattern":"*.example.org"}null "80""#,
            r#"null"10.0.0.5/32" "5432""#,
            r#"null"2001:db8::1/128" "853""#,
            r#"{"matchName":"api.anthropic.com"}null "443""#,
        ]
    );
    let cilium = crate::support::repo().join("testdata/cilium");
    let schema = cilium.join("ciliumnetworkpolicy_v2.json");
    let check = |doc: &serde_json::Value| -> (bool, String) {
        let file = w.env.dir.path().join("cnp.json");
        fs::write(&file, doc.to_string()).unwrap();
        let out = Command::new(&python)
            .arg(cilium.join("validate.py"))
            .arg(&schema)
            .arg(&file)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (valid, why) = check(cnp);
    assert!(valid, "{why}\n{cnp}");
    let mut mangled = cnp.clone();
    mangled["spec"]["egress"][1]["toFQDNs"][0]["matchHost"] = serde_json::json!("x");
    assert!(!check(&mangled).0, "the schema accepted an unknown field");
}
