//! Issue 35, the organisation policy, through the real binary and a real registry: an agent that
//! breaks every rule (EGRESS too) gets one lint finding per violation at its line; `build`
//! refuses naming them all; built elsewhere without the policy and pushed, it is refused by
//! `run --dry-run`, `kube`, `export`, `copy -r` and `save --with-deps` before they act (nothing
//! written, nothing pushed); a compliant agent passes; `OTTERS_POLICY` works as `--policy`; a
//! project's `otters.toml` cannot widen the user's policy; a signature rule refuses an unsigned
//! image and accepts it once signed by the key (by identity: `keyless`).
//! Whole outputs pinned in `snapshots/policy/`.

use crate::support::cli::Env;
use crate::support::images::{self, BinPrefix};
use crate::support::snap::Transcript;
use crate::support::{write, World};
use std::path::{Path, PathBuf};

const RUNTIME: &[u8] = b"#!/bin/sh\necho runtime\n";
const TOOL: &[u8] = b"#!/bin/sh\necho tool\n";

/// A registry holding the runtime and the tool twice: under `approved/` (the policy's) and at
/// its top (not allowed); the index digest of the approved runtime and tool.
struct Setup {
    w: World,
    runtime: String,
    tool: String,
    policy: PathBuf,
}

fn setup() -> Setup {
    let w = World::new();
    let a = w.reg.addr.clone();
    let push = |dir: &str, dest: String, name: &str, body: &[u8]| {
        let (index, _) =
            images::push_bin_index(&w.dir().join(dir), &dest, name, body, BinPrefix::Io, None);
        format!("{dest}@{}", index["digest"].as_str().unwrap())
    };
    push("rt", format!("{a}/runtime:1"), "runtime", RUNTIME);
    push("tl", format!("{a}/tool:1"), "tool", TOOL);
    let runtime = push("art", format!("{a}/approved/runtime:1"), "runtime", RUNTIME);
    let tool = push("atl", format!("{a}/approved/tool:1"), "tool", TOOL);
    let policy = w.dir().join("org-policy.toml");
    write(
        &policy,
        format!(
            "# The platform team's policy.\n[policy]\nregistries = [\"{a}/approved/*\"]\nproviders = [\"anthropic\"]\ncapabilities = [\"note_list\"]\nbins = [\"tool\"]\nmounts = \"ro\"\nrequire-pinned = true\negress = [\"api.example.com:443\", \"*.example.net:443\"]\n"
        ),
    );
    Setup {
        w,
        runtime,
        tool,
        policy,
    }
}

/// An agent breaking every rule: runtime and BIN from outside `approved/`, unpinned, a BIN name
/// and a capability not listed, another provider, a read-write mount, and (beside an allowed
/// destination) an EGRESS the policy does not list.
fn bad_agent(s: &Setup) -> PathBuf {
    let a = &s.w.reg.addr;
    s.w.context(
        "bad",
        &format!("FROM scratch\nNAME bad\nRUNTIME {a}/runtime:1\nMODEL openai/gpt-4o\nBIN jq {a}/tool:1\nCAPABILITY note_delete\nMOUNT /data rw\nEGRESS api.example.com\nEGRESS uploads.example.org \"exfiltration\"\n"),
        &[],
    )
}

fn good_agent(s: &Setup) -> PathBuf {
    s.w.context(
        "good",
        &format!(
            "FROM scratch\nNAME good\nRUNTIME {}\nMODEL anthropic/claude-test\nBIN tool {}\nCAPABILITY note_list\nMOUNT /data ro\nEGRESS files.example.net \"the model's files\"\n",
            s.runtime, s.tool
        ),
        &[],
    )
}

fn transcript(s: &Setup, env: &Env) -> Transcript {
    let mut t = Transcript::on(env);
    t.path(s.w.dir(), "[TMP]").registry(&s.w.reg);
    t
}

fn arg(p: &Path) -> String {
    p.display().to_string()
}

fn with_env(env: &Env, vars: &[(&str, &str)]) -> assert_cmd::Command {
    let mut c = Transcript::otters(env);
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

#[test]
fn an_agent_breaking_every_rule_is_refused_at_each_line_and_by_build() {
    let s = setup();
    let env = &s.w.env;
    let bad = bad_agent(&s);
    let mut t = transcript(&s, env);
    let p = arg(&s.policy);
    let (ok, ..) = t.run(env, &["lint", "--policy", &p, &arg(&bad)]);
    assert!(!ok);
    let (ok, ..) = t.run(
        env,
        &[
            "policy",
            "check",
            &arg(&bad),
            "--policy",
            &p,
            "--format",
            "json",
        ],
    );
    assert!(!ok);
    let (ok, ..) = t.run(env, &["build", "-q", "--policy", &p, &arg(&bad)]);
    assert!(!ok);
    // OTTERS_POLICY holds as --policy does: the same findings.
    let (ok, ..) = t.run_cmd(
        with_env(env, &[("OTTERS_POLICY", &p)]),
        &["policy", "check", &arg(&bad)],
    );
    assert!(!ok);
    t.assert("policy", "every_rule_broken");
    // Nothing was built.
    let (_, listed, _) = s.w.env.run(&["images", "--format", "json"]);
    assert!(!listed.contains("bad"), "{listed}");
}

#[test]
fn a_pushed_agent_that_breaks_the_policy_is_refused_before_anything_acts() {
    let s = setup();
    let a = s.w.reg.addr.clone();
    let bad = bad_agent(&s);
    let image = format!("{a}/team/bad:1");
    // Built and pushed by someone without the policy.
    s.w.env
        .ok(&["build", "-q", "--push", "-t", &image, &arg(&bad)]);
    // The organisation's machine: the policy in its config.toml.
    let org = Env::new();
    write(
        &org.home().join("config.toml"),
        std::fs::read_to_string(&s.policy).unwrap(),
    );
    let mut t = transcript(&s, &org);
    let key = [
        ("ANTHROPIC_API_KEY", "sk-test"),
        ("OPENAI_API_KEY", "sk-test"),
    ];
    let (ok, ..) = t.run_cmd(with_env(&org, &key), &["run", "--dry-run", &image]);
    assert!(!ok);
    let (ok, ..) = t.run(&org, &["kube", &image]);
    assert!(!ok);
    let (ok, ..) = t.run(&org, &["export", &image, "--as", "runnable"]);
    assert!(!ok);
    let dest = format!("{a}/copied/bad:1");
    let (ok, ..) = t.run(&org, &["copy", "-r", &image, &dest]);
    assert!(!ok);
    let archive = org.dir.path().join("bad.tar");
    let (ok, ..) = t.run(&org, &["save", "--with-deps", &image, "-o", &arg(&archive)]);
    assert!(!ok);
    assert!(!archive.exists(), "save wrote the archive");
    let (ok, ..) = t.run(&org, &["policy", "check", &image]);
    assert!(!ok);
    t.assert("policy", "pushed_agent_refused");
    // Nothing pushed, nothing exported, no runtime fetched.
    let repos = s.w.reg.storage().join("docker/registry/v2/repositories");
    assert!(!repos.join("copied").exists(), "copy pushed something");
    let (_, listed, _) = org.run(&["images", "--format", "json"]);
    assert!(
        !listed.contains("runtime") && !listed.contains("tool"),
        "{listed}"
    );
    let images: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(images.as_array().map(Vec::len), Some(1), "{listed}");
}

#[test]
fn a_compliant_agent_passes_and_the_project_cannot_widen() {
    let s = setup();
    let env = &s.w.env;
    let good = good_agent(&s);
    write(
        &env.home().join("config.toml"),
        std::fs::read_to_string(&s.policy).unwrap(),
    );
    let image = format!("{}/approved/good:1", s.w.reg.addr);
    let mut t = transcript(&s, env);
    t.run(env, &["policy", "show", &arg(&good)]);
    let (ok, ..) = t.run(env, &["lint", &arg(&good)]);
    assert!(ok);
    let (ok, ..) = t.run(env, &["policy", "check", &arg(&good)]);
    assert!(ok);
    let (ok, ..) = t.run(env, &["build", "-q", "--push", "-t", &image, &arg(&good)]);
    assert!(ok);
    let key = [("ANTHROPIC_API_KEY", "sk-test")];
    let (ok, ..) = t.run_cmd_stderr(with_env(env, &key), &["run", "--dry-run", &image]);
    assert!(ok);
    let dest = format!("{}/approved/copied:1", s.w.reg.addr);
    let (ok, ..) = t.run_stderr(env, &["copy", "-r", &image, &dest]);
    assert!(ok);
    // A project that lists more providers widens nothing: openai stays refused.
    write(
        &good.join("otters.toml"),
        "[policy]\nproviders = [\"anthropic\", \"openai\"]\n",
    );
    let agentfile = std::fs::read_to_string(good.join("Agentfile")).unwrap();
    write(
        &good.join("Agentfile"),
        agentfile.replace("anthropic/claude-test", "openai/gpt-4o"),
    );
    let (ok, ..) = t.run(env, &["lint", &arg(&good)]);
    assert!(!ok);
    t.run(env, &["policy", "show", &arg(&good)]);
    // One that narrows to nothing is an error naming its line.
    write(
        &good.join("otters.toml"),
        "\n[policy]\nproviders = [\"openai\"]\n",
    );
    let (ok, ..) = t.run(env, &["policy", "show", &arg(&good)]);
    assert!(!ok);
    t.assert("policy", "compliant_and_project");
}

#[test]
fn a_signature_rule_refuses_unsigned_and_accepts_signed() {
    let s = setup();
    let env = &s.w.env;
    let good = good_agent(&s);
    let (private, public) = env.key_pair("release");
    let signed = s.w.dir().join("signed-policy.toml");
    write(
        &signed,
        format!(
            "{}\n[policy.signature]\nkey = \"{}\"\n",
            std::fs::read_to_string(&s.policy).unwrap(),
            Path::new(&public).file_name().unwrap().to_string_lossy()
        ),
    );
    let image = format!("{}/approved/signed:1", s.w.reg.addr);
    env.ok(&["build", "-q", "--push", "-t", &image, &arg(&good)]);
    let mut t = transcript(&s, env);
    let p = arg(&signed);
    let key = [("ANTHROPIC_API_KEY", "sk-test")];
    let (ok, ..) = t.run_cmd_stderr(
        with_env(env, &key),
        &["run", "--dry-run", &image, "--policy", &p],
    );
    assert!(!ok);
    env.ok(&["sign", &image, "--key", &private]);
    let (ok, ..) = t.run_cmd_stderr(
        with_env(env, &key),
        &["run", "--dry-run", &image, "--policy", &p],
    );
    assert!(ok);
    let (ok, ..) = t.run(env, &["policy", "check", &image, "--policy", &p]);
    assert!(ok);
    t.assert("policy", "signature_rule");
}
