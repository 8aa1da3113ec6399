//! Store hygiene through the real binary: `otters prune` (and `otters image prune`) frees what a
//! removed image alone used, keeps every tagged image readable (by `skopeo`, `run --dry-run`,
//! `save`), and never breaks a build running at the same time.

use crate::support::cli::{json, Env};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::Registry;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

const MIB: usize = 1 << 20;

/// Build rounds of the concurrency test.
const ROUNDS: usize = 8;

/// Sets the mtime of every blob in the store two hours back: what a store looks like when its
/// untagged blobs were written long ago (the default grace period is one hour). A blob that a
/// concurrent `prune` removes between the listing and the open is skipped: it is gone, which is
/// what aging it was for.
fn age_blobs(store: &Path) {
    let old = SystemTime::now() - Duration::from_secs(2 * 3600);
    for e in fs::read_dir(store.join("blobs/sha256")).unwrap() {
        let path = e.unwrap().path();
        match fs::File::options().write(true).open(&path) {
            Ok(f) => f.set_modified(old).unwrap(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot open {}: {e}", path.display()),
        }
    }
}

/// Every digest an image reaches: its manifest, config and layers.
fn blobs_of(env: &Env, reference: &str) -> BTreeSet<String> {
    let v = json(&env.ok(&["inspect", reference, "--format", "json"]));
    let mut all = BTreeSet::from([v["digest"].as_str().unwrap().to_owned()]);
    all.insert(
        v["manifest"]["config"]["digest"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    for l in v["layers"].as_array().unwrap() {
        all.insert(l["digest"].as_str().unwrap().to_owned());
    }
    all
}

fn stored_blobs(env: &Env) -> BTreeSet<String> {
    fs::read_dir(env.store().join("blobs/sha256"))
        .unwrap()
        .map(|e| format!("sha256:{}", e.unwrap().file_name().to_string_lossy()))
        .collect()
}

/// A context whose Agentfile names `runtime` and ADDs `data.bin` holding `data`.
/// A registry holding a `/bin/sh` runtime, and a machine: the registry, the machine, the runtime's
/// reference (`<registry>/runtime:1`) and what [`images::push_bin_index`] returned for it.
fn runtime_and_machine() -> (Registry, Env, String, (Value, String)) {
    let reg = Registry::start();
    let env = Env::new();
    let runtime = format!("{}/runtime:1", reg.addr);
    let pushed = images::push_bin_index(
        &env.dir.path().join("rt"),
        &runtime,
        "runtime",
        b"#!/bin/sh\n",
        BinPrefix::Io,
        None,
    );
    (reg, env, runtime, pushed)
}

fn context(dir: &Path, runtime: &str, name: &str, data: &[u8]) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("data.bin"), data).unwrap();
    fs::write(
        dir.join("Agentfile"),
        format!("FROM scratch\nNAME {name}\nRUNTIME {runtime}\nMODEL anthropic/claude-test\nADD data.bin \"payload\"\n"),
    )
    .unwrap();
}

#[test]
fn prune_frees_exactly_a_removed_images_blobs_and_keeps_the_rest_readable() {
    if !crate::support::tools::require("prune_frees", "skopeo", &["--version"], "install skopeo") {
        return;
    }
    let (_reg, env, runtime, _) = runtime_and_machine();

    // A 64 MiB image and a small one; the same RUNTIME, so some blobs could be shared.
    let big: Vec<u8> = (0..64 * MIB).map(|i| (i * 7 % 251) as u8).collect();
    context(&env.dir.path().join("big"), &runtime, "big", &big);
    context(&env.dir.path().join("small"), &runtime, "small", b"small\n");
    for name in ["big", "small"] {
        let ctx = env.dir.path().join(name);
        env.ok(&["build", "-q", "-t", name, ctx.to_str().unwrap()]);
    }
    // `run --dry-run` pulls the runtime and tags it: it must survive the prune.
    env.ok(&["run", "small", "--dry-run"]);
    let big_blobs = blobs_of(&env, "big");
    let small_blobs = blobs_of(&env, "small");
    let unique: BTreeSet<String> = big_blobs.difference(&small_blobs).cloned().collect();
    let unique_bytes: u64 = unique
        .iter()
        .map(|d| fs::metadata(env.store_blob(d)).unwrap().len())
        .sum();
    assert!(unique_bytes >= 64 * MIB as u64, "{unique_bytes}");

    env.ok(&["rm", "big"]);
    // Just written: `--min-age` keeps them, and says so.
    let (ok, out, err) = env.run(&["prune", "--min-age", "1h"]);
    assert!(ok, "{err}");
    assert!(out.contains("freed 0 B in 0 blobs"), "{out}");
    assert!(err.contains("less than 1h ago"), "{err}");
    assert!(unique.is_subset(&stored_blobs(&env)));

    // By default (no build running: no lease), `rm` then `prune` frees them at once.
    let dry = json(&env.ok(&["prune", "--dry-run", "--format", "json"]));
    let listed: BTreeSet<String> = dry["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["digest"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, unique);
    assert!(
        unique.is_subset(&stored_blobs(&env)),
        "a dry run removes nothing"
    );

    let before = stored_blobs(&env);
    let done = json(&env.ok(&["image", "prune", "--format", "json"]));
    assert_eq!(done["freedBytes"], Value::from(unique_bytes));
    assert_eq!(done["removed"], dry["removed"]);
    let after = stored_blobs(&env);
    assert_eq!(
        before.difference(&after).cloned().collect::<BTreeSet<_>>(),
        unique
    );
    assert_eq!(
        fs::read_dir(env.store().join(".tmp")).unwrap().count(),
        0,
        "prune left files in .tmp"
    );

    // The other image: readable by skopeo, runnable offline, exportable (every blob verified).
    let store = env.store();
    let raw = crate::support::run_ok(std::process::Command::new("skopeo").args([
        "inspect",
        "--raw",
        &format!("oci:{}:small:latest", store.display()),
    ]));
    assert!(small_blobs.contains(&crate::support::sha256(raw.as_bytes())));
    // A copy reads (and checks) every blob.
    let copy = env.dir.path().join("copy");
    crate::support::run_ok(std::process::Command::new("skopeo").args([
        "copy",
        "-q",
        &format!("oci:{}:small:latest", store.display()),
        &format!("oci:{}:small", copy.display()),
    ]));
    let plan = json(&env.ok(&["run", "small", "--dry-run", "--pull", "never"]));
    assert!(plan["argv"].is_array(), "{plan}");
    let archive = env.dir.path().join("small.tar");
    env.ok(&["save", "small", "-o", archive.to_str().unwrap()]);
    let err = env.fails(&["inspect", "big"]);
    assert!(err.contains("not in the local store"), "{err}");
    // Nothing left to remove.
    let again = json(&env.ok(&["prune", "--format", "json"]));
    assert_eq!(again["freedBytes"], 0);
}

/// Builds and prunes in parallel. Each round builds an image, checks it, untags it and ages the
/// store, so the next round's build reuses old untagged blobs (the case a prune could break)
/// while another thread prunes with the defaults (no age rule: the builds' leases protect them).
#[test]
fn concurrent_builds_and_prunes_never_break_a_tagged_image() {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    fs::create_dir_all(&ctx).unwrap();
    fs::write(ctx.join("data.bin"), vec![7u8; MIB]).unwrap();
    fs::write(
        ctx.join("Agentfile"),
        "FROM scratch\nNAME racer\nRUNTIME ghcr.io/openotters/runtime:v1\nMODEL anthropic/claude-test\nADD data.bin \"payload\"\n",
    )
    .unwrap();
    let ctx = ctx.to_str().unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let freed = std::thread::scope(|s| {
        let pruner = s.spawn(|| {
            let mut freed = 0u64;
            let mut runs = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) && runs < 2000 {
                let v = json(&env.ok(&["prune", "--format", "json"]));
                freed += v["freedBytes"].as_u64().unwrap();
                runs += 1;
            }
            freed
        });
        for round in 0..ROUNDS {
            let tag = format!("racer:{round}");
            env.ok(&[
                "build",
                "--offline",
                "--allow-unpinned",
                "-q",
                "-t",
                &tag,
                ctx,
            ]);
            // Every blob of the new image is there and matches its digest (`save` verifies).
            let out = env.dir.path().join(format!("r{round}.tar"));
            env.ok(&["save", &tag, "-o", out.to_str().unwrap()]);
            fs::remove_file(&out).unwrap();
            env.ok(&["rm", &tag]);
            age_blobs(&env.store());
            if round % 2 == 0 {
                // Leave the pruner time to find the aged blobs before the next build reuses them.
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        env.ok(&[
            "build",
            "--offline",
            "--allow-unpinned",
            "-q",
            "-t",
            "racer:final",
            ctx,
        ]);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        pruner.join().unwrap()
    });
    assert!(
        freed > 0,
        "the pruner never removed anything: no race was exercised"
    );
    for d in blobs_of(&env, "racer:final") {
        assert!(env.store_blob(&d).is_file(), "{d} is missing");
    }
    let out = env.dir.path().join("final.tar");
    env.ok(&["save", "racer:final", "-o", out.to_str().unwrap()]);
}

/// `images -q`, `--digests`, an image pulled by digest listed as `<none>`, found by a digest
/// prefix and kept by `prune`; tagging it replaces its `<none>` row.
#[test]
fn images_lists_untagged_pulls_quiet_and_full_digests() {
    if !crate::support::tools::require(
        "images_untagged",
        "skopeo",
        &["--version"],
        "install skopeo",
    ) {
        return;
    }
    let (reg, env, _, (index, _)) = runtime_and_machine();
    let pulled = index["digest"].as_str().unwrap().to_owned();
    env.ok(&["pull", "-q", &format!("{}/runtime@{pulled}", reg.addr)]);
    let minimal = crate::support::fixture("minimal");
    let built = env
        .ok(&[
            "build",
            "--offline",
            "--allow-unpinned",
            "-q",
            "-t",
            "tiny",
            minimal.to_str().unwrap(),
        ])
        .trim()
        .to_owned();
    env.ok(&["tag", "tiny", "tiny:2"]);

    let table = env.ok(&["images"]);
    let none_row = table
        .lines()
        .find(|l| l.starts_with("<none>"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        none_row.contains(&pulled[7..19]) && !none_row.contains(&pulled),
        "{table}"
    );
    let full = env.ok(&["images", "--digests"]);
    assert!(full.contains(&pulled) && full.contains(&built), "{full}");
    let quiet: Vec<String> = env
        .ok(&["images", "-q"])
        .lines()
        .map(str::to_owned)
        .collect();
    let mut want = vec![pulled.clone(), built.clone()];
    want.sort();
    let mut got = quiet.clone();
    got.sort();
    assert_eq!(
        got, want,
        "one line per image, tags of one image counted once"
    );

    // Found by a digest prefix, and reachable for prune even with no grace period.
    let v = json(&env.ok(&["inspect", &pulled[7..15], "--format", "json"]));
    assert_eq!(v["digest"], Value::from(pulled.as_str()));
    env.ok(&["prune", "--min-age", "0"]);
    env.ok(&["inspect", &pulled, "--format", "json"]);

    env.ok(&["tag", &pulled[..15], "runtime:pinned"]);
    let table = env.ok(&["images"]);
    assert!(!table.contains("<none>"), "{table}");
}

/// A tagged agent's RUNTIME and BIN images are reachable only through its `agent.yaml`: prune
/// keeps them, so the agent still runs offline after its runtime's own tag went.
#[test]
fn prune_keeps_the_images_a_tagged_agent_pins() {
    if !crate::support::tools::require(
        "prune_keeps_pins",
        "skopeo",
        &["--version"],
        "install skopeo",
    ) {
        return;
    }
    let (reg, env, runtime, (_, pinned)) = runtime_and_machine();
    let ctx = env.dir.path().join("agent");
    context(&ctx, &runtime, "pinned", b"data\n");
    env.ok(&["build", "-q", "-t", "pinned:1", ctx.to_str().unwrap()]);
    // The runtime is pulled (as a run pulls it by its pin); then its own tag goes (as when the
    // tag moves on), so only the agent's agent.yaml still names it.
    env.ok(&["pull", "-q", &runtime]);
    // What the pin (the host platform's manifest) reaches: what an offline run needs.
    let manifest: Value =
        serde_json::from_slice(&fs::read(env.store_blob(&pinned)).unwrap()).unwrap();
    let mut runtime_blobs = BTreeSet::from([pinned.clone()]);
    runtime_blobs.insert(manifest["config"]["digest"].as_str().unwrap().to_owned());
    for l in manifest["layers"].as_array().unwrap() {
        runtime_blobs.insert(l["digest"].as_str().unwrap().to_owned());
    }
    env.ok(&["rm", &runtime]);
    age_blobs(&env.store());
    let done = json(&env.ok(&["prune", "--min-age", "0", "--format", "json"]));
    let removed: BTreeSet<String> = done["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["digest"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        removed.is_disjoint(&runtime_blobs),
        "prune removed the pinned runtime: {removed:?}"
    );
    assert!(runtime_blobs.is_subset(&stored_blobs(&env)));
    drop(reg);
    let plan = json(&env.ok(&["run", "pinned:1", "--dry-run", "--pull", "never"]));
    assert!(plan["argv"].is_array(), "{plan}");
}
