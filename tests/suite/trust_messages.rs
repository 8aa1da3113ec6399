//! Issue 32, items 7, 8, 10, 14 and 15, through the binary against a real `docker-registry`:
//! `sign` pushes the signature of an image its registry holds and says where it went; `verify`
//! says which copy it checked (store or registry, and its digest) and points to `--remote`; the
//! `[verify]` gate of `run` holds `export` and `kube` too, and a pushed export is signed with
//! `otters sign REPO@sha256:…`; references pinned to a digest are printed with it once; `discover`
//! names a runnable export by its annotation; a pinned runtime that cannot be fetched points to
//! `mirrors`; a loopback registry that cannot be reached is not told about `insecure`; a dry run
//! says "pulled" only when it pulled; `run --pull always` follows a moved tag.
//!
//! Each user-visible output is pinned whole (`snapshots/trust/`), its variable parts (the
//! registry's address, temp paths, digests numbered in order of appearance) redacted.

use crate::support::cli::{json, Env};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::{free_port, Registry};
use crate::support::snap::Transcript;
use std::fmt::Write as _;

/// The runtime's bytes: no interpreter line, and no program either.
const RUNTIME: &[u8] = b"\x7fELF stand-in runtime bytes";

/// A registry holding a runtime, and a machine that builds agents against it.
struct World {
    reg: Registry,
    publisher: Env,
}

impl World {
    fn new() -> World {
        let reg = Registry::start();
        let publisher = Env::new();
        images::push_bin_index(
            &publisher.dir.path().join("rt"),
            &format!("{}/runtime:1", reg.addr),
            "runtime",
            RUNTIME,
            BinPrefix::Io,
            Some("test runtime"),
        );
        World { reg, publisher }
    }

    /// `REG/agents/NAME:1`.
    fn tag(&self, name: &str) -> String {
        format!("{}/agents/{name}:1", self.reg.addr)
    }

    /// Builds an agent (its bytes depend on `salt`) as `tag` on the publisher's machine.
    fn build(&self, tag: &str, salt: &str) -> String {
        let ctx = self.publisher.dir.path().join(format!("ctx-{salt}"));
        crate::support::write(
            &ctx.join("Agentfile"),
            format!(
                "FROM scratch\nNAME sig\nRUNTIME {}/runtime:1\nMODEL ollama/llama3\nCONTEXT SOUL <<EOF\nSalt {salt}.\nEOF\n",
                self.reg.addr
            ),
        );
        self.publisher
            .ok(&["build", "-q", "-t", tag, ctx.to_str().expect("utf8")])
            .trim()
            .to_owned()
    }

    /// Builds `tag` and pushes it.
    fn publish(&self, tag: &str, salt: &str) -> String {
        let digest = self.build(tag, salt);
        self.publisher.ok(&["push", "-q", tag]);
        digest
    }
}

/// A transcript filtering `replace` (the registry's address `[REG]`, temp paths `[TMP]`…).
fn transcript(replace: &[(&str, &str)]) -> Transcript {
    let mut t = Transcript::new();
    for (from, to) in replace {
        t.filter(*from, *to);
    }
    t
}

/// A `discover` tree with its top-level branches in the order of their text (branch glyphs
/// dropped, nesting kept as indentation).
fn sorted_tree(tree: &str) -> String {
    let mut lines = tree.lines();
    let root = lines.next().unwrap_or_default();
    let mut branches: Vec<Vec<String>> = Vec::new();
    for line in lines {
        let rest: String = line.chars().skip(4).collect();
        match branches.last_mut() {
            Some(b) if !line.starts_with('├') && !line.starts_with('└') => {
                b.push(format!("    {rest}"));
            }
            _ => branches.push(vec![format!("- {rest}")]),
        }
    }
    branches.sort();
    let mut out = format!("{root}\n");
    for line in branches.concat() {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Item 7 (and 14's doubled digest): a signature of a pulled image goes to its registry too,
/// so `verify --remote` finds it; `--local`, a local tag, an image the registry lacks each say
/// the signature stayed in the store, and why; a digest reference is printed with it once.
#[test]
fn sign_says_where_the_signature_went_and_pushes_it_to_the_images_registry() {
    let w = World::new();
    let tag = w.tag("sig");
    let digest = w.publish(&tag, "one");
    let puller = Env::new();
    let (key, public) = puller.key_pair("k");
    let tmp = puller.dir.path().display().to_string();
    let mut t = transcript(&[(&w.reg.addr, "[REG]"), (&tmp, "[TMP]")]);
    puller.ok(&["pull", "-q", &tag]);
    // Nothing signed yet, anywhere.
    let (ok, ..) = t.run(&puller, &["verify", "--remote", &tag, "--key", &public]);
    assert!(!ok);
    let (ok, out, _) = t.run(&puller, &["sign", &tag, "--key", &key]);
    assert!(ok);
    let signature = out.trim().to_owned();
    // A fresh machine asks the registry: the signature is there.
    let (ok, out, _) = t.run(&Env::new(), &["verify", "--remote", &tag, "--key", &public]);
    assert!(ok && out.starts_with("Verified OK"), "{out}");
    let (ok, tree, _) = t.run(&Env::new(), &["discover", "--remote", &tag]);
    assert!(ok && tree.contains(&signature), "{tree}");

    let pinned = format!("{}/agents/sig@{digest}", w.reg.addr);
    let (ok, ..) = t.run(&puller, &["sign", &pinned, "--key", &key]);
    assert!(ok);
    let (ok, ..) = t.run(&puller, &["sign", "--local", &tag, "--key", &key]);
    assert!(ok);
    puller.ok(&["tag", &tag, "sig:local"]);
    let (ok, ..) = t.run(&puller, &["sign", "sig:local", "--key", &key]);
    assert!(ok);
    // Built and tagged for the registry, not pushed yet.
    let unpushed = w.tag("unpushed");
    w.build(&unpushed, "two");
    let (publisher_key, _) = w.publisher.key_pair("p");
    let ptmp = w.publisher.dir.path().display().to_string();
    t.filter(ptmp, "[PUBLISHER]");
    let (ok, ..) = t.run(&w.publisher, &["sign", &unpushed, "--key", &publisher_key]);
    assert!(ok);
    t.assert("trust", "sign_where");
}

/// Item 8 (and 14): `verify` of a registry reference answered from the store says so, with the
/// digest it checked, and points to `--remote`, which checks what the tag names now (here, a
/// newer image); a plain pull's signatures are read from the registry and that is said too.
#[test]
fn verify_says_which_copy_it_checked() {
    let w = World::new();
    let tag = w.tag("moved");
    let (key, public) = w.publisher.key_pair("k");
    w.build(&tag, "old");
    w.publisher.ok(&["sign", &tag, "--key", &key]);
    w.publisher.ok(&["push", "-q", &tag]);
    let puller = Env::new();
    puller.ok(&["pull", "-q", "--referrers", &tag]);
    let plain = Env::new();
    plain.ok(&["pull", "-q", &tag]);
    // The tag moves on to a newer, signed image.
    w.build(&tag, "new");
    w.publisher.ok(&["sign", &tag, "--key", &key]);
    w.publisher.ok(&["push", "-q", &tag]);

    let tmp = w.publisher.dir.path().display().to_string();
    let mut t = transcript(&[(&w.reg.addr, "[REG]"), (&tmp, "[TMP]")]);
    let (ok, old, _) = t.run(&puller, &["verify", &tag, "--key", &public]);
    assert!(ok);
    let (ok, new, _) = t.run(&puller, &["verify", "--remote", &tag, "--key", &public]);
    assert!(ok);
    assert_ne!(old, new, "the store's copy and the registry's differ");
    let (ok, ..) = t.run(&plain, &["verify", &tag, "--key", &public]);
    assert!(ok);
    puller.ok(&["tag", &tag, "moved:local"]);
    let (ok, ..) = t.run(&puller, &["verify", "moved:local", "--key", &public]);
    assert!(ok);
    let old_digest = old.split('@').nth(1).unwrap().split(' ').next().unwrap();
    let pinned = format!("{}/agents/moved@{old_digest}", w.reg.addr);
    let (ok, ..) = t.run(&puller, &["verify", &pinned, "--key", &public]);
    assert!(ok);
    let (ok, ..) = t.run(&puller, &["discover", &pinned]);
    assert!(ok);
    t.assert("trust", "verify_which_copy");
}

/// Item 10 (and 14's export label): `[verify] key` in config.toml, and `--verify-key`, hold
/// `export` and `kube` as they hold `run`: an unsigned agent is neither exported nor deployed.
/// Signed, it is; the pushed export is signed with `otters sign REPO@sha256:…` (the signature
/// goes to the registry, where a cluster's policy reads it), and `discover` names the export.
#[test]
fn export_and_kube_are_held_to_the_verify_gate() {
    let w = World::new();
    let tag = w.tag("gated");
    w.publish(&tag, "gated");
    let ops = Env::new();
    let (key, public) = ops.key_pair("k");
    let (_, other) = ops.key_pair("other");
    crate::support::write(
        &ops.home().join("config.toml"),
        format!("[verify]\nkey = \"{public}\"\n"),
    );
    let tmp = ops.dir.path().display().to_string();
    let mut t = transcript(&[(&w.reg.addr, "[REG]"), (&tmp, "[TMP]")]);
    let image = format!("{}/agents/gated@sha256:{}", w.reg.addr, "0".repeat(64));
    let (ok, ..) = t.run(&ops, &["export", &tag, "--as", "runnable"]);
    assert!(!ok, "an unsigned agent was exported");
    let (ok, ..) = t.run(&ops, &["kube", &tag, "--image", &image]);
    assert!(!ok, "an unsigned agent was deployed");
    let (ok, ..) = t.run(&ops, &["sign", &tag, "--key", &key]);
    assert!(ok);
    // The flag names another signer than the config: still refused.
    let (ok, ..) = t.run(
        &ops,
        &["export", &tag, "--as", "runnable", "--verify-key", &other],
    );
    assert!(!ok, "--verify-key was not applied");
    // Exported, pushed and signed in one go: the signature goes beside the export.
    let (ok, out, _) = t.run(
        &ops,
        &[
            "export",
            &tag,
            "--as",
            "runnable",
            "--push",
            "--sign-key",
            &key,
        ],
    );
    assert!(ok);
    let export = out.lines().last().unwrap().to_owned();
    let (ok, yaml, _) = t.run_stderr(&ops, &["kube", &tag, "--kind", "pod"]);
    assert!(ok && yaml.contains(&export), "{yaml}");
    let exported = format!("{}/agents/gated@{export}", w.reg.addr);
    let (ok, ..) = t.run(
        &Env::new(),
        &["verify", "--remote", &exported, "--key", &public],
    );
    assert!(ok, "the export's signature is not in the registry");
    // The same signature by `otters sign` of the reference `kube` wrote (same key, same bytes).
    let (ok, ..) = t.run(&ops, &["sign", &exported, "--key", &key]);
    assert!(ok);
    let (ok, tree, _) = t.run_stderr(&ops, &["discover", &tag]);
    // Siblings are listed in digest order, and digests change with the registry's port: the
    // snapshot holds the tree with its top-level branches sorted by what they say.
    t.note("sorted", &sorted_tree(&tree));
    assert!(
        ok && tree.contains("io.openotters.export=runnable"),
        "{tree}"
    );
    t.assert("trust", "export_kube_gate");
}

/// Item 14: a run whose pinned runtime's registry cannot be reached (as after `copy -r` to
/// another registry) says the image is the agent's pinned runtime and points to `mirrors`; a
/// loopback registry that is down is not told about `insecure`; a dry run of an image the store
/// already holds under another name says it was tagged, not pulled.
#[test]
fn unreachable_pins_and_dry_runs_say_what_happened() {
    let mut w = World::new();
    let tag = w.tag("pins");
    w.publish(&tag, "pins");
    let other = w.tag("alias");
    w.publisher.ok(&["tag", &tag, &other]);
    w.publisher.ok(&["push", "-q", &other]);
    let user = Env::new();
    let tmp = user.dir.path().display().to_string();
    let down = format!("127.0.0.1:{}", free_port());
    let mut t = transcript(&[(&w.reg.addr, "[REG]"), (&tmp, "[TMP]"), (&down, "[DOWN]")]);
    user.ok(&["pull", "-q", &tag]);
    let (ok, ..) = t.run_stderr(&user, &["run", "--dry-run", &other]);
    assert!(ok);
    let (ok, ..) = t.run_stderr(&user, &["run", "--dry-run", &other]);
    assert!(ok);
    let (ok, ..) = t.run(&user, &["pull", &format!("{down}/agents/none:1")]);
    assert!(!ok);
    // The agent and what it pins, copied to another registry; then the first one goes away.
    let copy = Registry::start();
    user.ok(&[
        "copy",
        "-r",
        "-q",
        &tag,
        &format!("{}/agents/pins:1", copy.addr),
    ]);
    w.reg.kill();
    let (ok, ..) = t.run(&user, &["run", &tag]);
    assert!(!ok);
    t.assert("trust", "pins_and_dry_runs");
    // What the hint says works: the pinned runtime is read from the copy.
    crate::support::write(
        &user.home().join("config.toml"),
        format!(
            "[registry.\"{}\"]\nmirrors = [\"{}\"]\n",
            w.reg.addr, copy.addr
        ),
    );
    let (_, _, err) = user.run(&["run", &tag]);
    assert!(!err.contains("cannot fetch"), "{err}");
    let runtime = user.home().join("agents/sig/usr/local/bin/runtime");
    assert_eq!(
        std::fs::read(&runtime).expect("the runtime, fetched"),
        RUNTIME
    );
}

/// Item 15: `run --pull always` asks the registry what the tag names now and pulls it when it
/// moved; `--pull missing` (the default) keeps the local copy; an unchanged tag pulls nothing.
#[test]
fn run_pull_always_follows_a_moved_tag() {
    let w = World::new();
    let tag = w.tag("always");
    let first = w.publish(&tag, "first");
    let user = Env::new();
    let tmp = user.dir.path().display().to_string();
    let mut t = transcript(&[(&w.reg.addr, "[REG]"), (&tmp, "[TMP]")]);
    let plan_digest = |out: &str| json(out)["image"]["digest"].as_str().unwrap().to_owned();
    let (ok, out, _) = t.run_stderr(&user, &["run", "--dry-run", &tag]);
    assert!(ok && plan_digest(&out) == first);
    let second = w.publish(&tag, "second");
    assert_ne!(first, second);
    let (ok, out, _) = t.run_stderr(&user, &["run", "--dry-run", &tag]);
    assert!(
        ok && plan_digest(&out) == first,
        "--pull missing keeps the local copy"
    );
    let (ok, out, _) = t.run_stderr(&user, &["run", "--dry-run", "--pull", "always", &tag]);
    assert!(
        ok && plan_digest(&out) == second,
        "--pull always follows the tag"
    );
    let (ok, out, _) = t.run_stderr(&user, &["run", "--dry-run", "--pull", "always", &tag]);
    assert!(ok && plan_digest(&out) == second);
    t.assert("trust", "pull_always");
}
