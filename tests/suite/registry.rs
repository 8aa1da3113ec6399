//! Registry integration tests: real registries (no auth, basic, token), pushed and pulled through
//! the `otters` binary, with skopeo as the independent client.

use crate::support::cli::{flat, json, Env};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::{Auth, Registry};

/// Builds a small agent (one CONTEXT, one ADD of `data_len` bytes) tagged `tag`.
pub(crate) fn build_agent(env: &Env, tag: &str, data_len: usize) -> String {
    let ctx = env
        .dir
        .path()
        .join(format!("ctx-{}", tag.replace(['/', ':'], "_")));
    let data: Vec<u8> = (0..data_len).map(|i| (i * 7 % 251) as u8).collect();
    crate::support::write(&ctx.join("data.bin"), data);
    crate::support::write(&ctx.join("notes.txt"), format!("notes for {tag}\n"));
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nCONTEXT SOUL <<EOF\nBe brief.\nEOF\nADD notes.txt\nADD data.bin\n",
    );
    env.ok(&["build", "-q", "-t", tag, ctx.to_str().expect("utf8")])
        .trim()
        .to_owned()
}

fn list(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn harness_registries_accept_skopeo_pushes() {
    for reg in [
        Registry::start(),
        Registry::start_basic("alice", "s3cret"),
        Registry::start_token(&[("alice", "s3cret")]),
    ] {
        let tmp = tempfile::tempdir().expect("tmp");
        let (idx, _) = images::bin_index(
            &tmp.path().join("l"),
            "v1",
            "hello",
            b"#!/bin/sh\necho hi\n",
            BinPrefix::Io,
            Some("says hi"),
        );
        let creds = match reg.auth {
            Auth::None => None,
            _ => Some(("alice", "s3cret")),
        };
        let dest = format!("{}/bins/hello:v1", reg.addr);
        images::skopeo_push(&tmp.path().join("l"), "v1", &dest, creds);
        assert_eq!(
            images::skopeo_digest(&dest, creds),
            idx["digest"].as_str().unwrap_or_default(),
            "{}",
            reg.log()
        );
    }
}

#[test]
fn push_then_pull_without_auth_and_skopeo_agrees() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/team/agent:1", reg.addr);
    let local = build_agent(&env, &tag, 4096);
    let report = json(&env.ok(&["push", &tag, "--format", "json"]));
    assert_eq!(report["digest"], local.as_str());
    assert!(list(&report, "uploaded").len() >= 4, "{report}");
    assert_eq!(
        images::skopeo_digest(&tag, None),
        local,
        "skopeo sees another manifest"
    );

    // A re-push of an unchanged image uploads nothing.
    let again = json(&env.ok(&["push", &tag, "--format", "json"]));
    assert!(list(&again, "uploaded").is_empty(), "{again}");
    assert_eq!(
        list(&again, "skipped").len(),
        list(&report, "uploaded").len()
    );

    // Another machine pulls it: same digest, tagged locally, every blob verified into the store.
    let other = Env::new();
    let out = other.ok(&["pull", &tag]);
    assert_eq!(out.trim(), local);
    let images_out = other.ok(&["images"]);
    assert!(images_out.contains("team/agent"), "{images_out}");
    for d in list(&report, "uploaded") {
        assert!(
            other.store_blob(&d).is_file(),
            "blob {d} missing after pull"
        );
    }
    // Pulling again downloads nothing.
    let again = json(&other.ok(&["pull", &tag, "--format", "json"]));
    assert!(list(&again, "downloaded").is_empty(), "{again}");
}

#[test]
fn pushing_under_another_name_mounts_blobs_across_repositories() {
    for reg in [
        Registry::start(),
        Registry::start_token(&[("alice", "s3cret")]),
    ] {
        let env = Env::new();
        if !matches!(reg.auth, Auth::None) {
            reg.docker_config(&env.docker(), "alice", "s3cret");
        }
        let a = format!("{}/one/agent:1", reg.addr);
        let b = format!("{}/two/agent:1", reg.addr);
        let local = build_agent(&env, &a, 1000);
        env.ok(&["push", &a]);
        let report = json(&env.ok(&["push", &a, &b, "--format", "json"]));
        assert!(list(&report, "uploaded").is_empty(), "{report}");
        assert!(
            list(&report, "mounted").len() >= 4,
            "{report}\n{}",
            reg.log()
        );
        assert_eq!(images::skopeo_digest(&b, Some(("alice", "s3cret"))), local);
    }
}

#[test]
fn basic_auth_login_push_pull_logout() {
    let reg = Registry::start_basic("alice", "s3cret");
    let env = Env::new();
    let tag = format!("{}/team/agent:1", reg.addr);
    let local = build_agent(&env, &tag, 100);

    let err = env.fails(&["push", &tag]);
    assert!(
        err.contains(&reg.addr) && err.contains("otters login"),
        "{err}"
    );

    let mut wrong = env.otters();
    wrong
        .args(["login", &reg.addr, "-u", "alice", "--password-stdin"])
        .write_stdin("nope\n");
    let out = wrong.output().expect("login");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("{} refused credentials for user alice", reg.addr)),
        "{err}"
    );
    assert!(
        !env.docker().join("config.json").exists(),
        "wrong credentials were stored"
    );

    let mut right = env.otters();
    right
        .args(["login", &reg.addr, "-u", "alice", "--password-stdin"])
        .write_stdin("s3cret\n");
    right.assert().success();
    let cfg = std::fs::read_to_string(env.docker().join("config.json")).expect("config.json");
    assert!(cfg.contains(&reg.addr), "{cfg}");

    env.ok(&["push", &tag]);
    assert_eq!(
        images::skopeo_digest(&tag, Some(("alice", "s3cret"))),
        local
    );
    let other = Env::new();
    reg.docker_config(&other.docker(), "alice", "s3cret");
    assert_eq!(other.ok(&["pull", &tag]).trim(), local);

    env.ok(&["logout", &reg.addr]);
    let err = env.fails(&["pull", &tag]);
    assert!(
        err.contains(&format!("{} requires credentials", reg.addr)),
        "{err}"
    );
}

#[test]
fn token_auth_push_and_anonymous_pull_and_wrong_password() {
    let reg = Registry::start_token(&[("alice", "s3cret")]);
    let env = Env::new();
    let tag = format!("{}/team/agent:2", reg.addr);
    let local = build_agent(&env, &tag, 2000);

    // Anonymous clients get pull-only tokens: pushing is refused, naming the registry.
    let err = env.fails(&["push", &tag]);
    assert!(err.contains(&reg.addr), "{err}");

    reg.docker_config(&env.docker(), "alice", "wrong");
    let err = env.fails(&["push", &tag]);
    assert!(
        err.contains(&format!("{} refused credentials for user alice", reg.addr)),
        "{err}"
    );

    reg.docker_config(&env.docker(), "alice", "s3cret");
    env.ok(&["push", &tag]);
    assert_eq!(
        images::skopeo_digest(&tag, Some(("alice", "s3cret"))),
        local
    );

    let anon = Env::new();
    assert_eq!(anon.ok(&["pull", &tag]).trim(), local);

    // What the token server saw: a denied attempt for the wrong password, alice's push asking
    // only for the target repository, and an anonymous pull asking only to pull.
    let seen = reg
        .token
        .as_ref()
        .expect("token server")
        .requests
        .lock()
        .expect("log")
        .clone();
    assert!(seen.iter().any(|(u, _)| u == "DENIED alice"), "{seen:?}");
    let alice: Vec<_> = seen.iter().filter(|(u, _)| u == "alice").collect();
    assert!(!alice.is_empty(), "{seen:?}");
    for (_, scopes) in &alice {
        assert!(
            scopes
                .iter()
                .all(|s| s.starts_with("repository:team/agent:")),
            "alice asked beyond team/agent: {scopes:?}"
        );
    }
    let (who, scopes) = seen.last().expect("a request");
    assert_eq!(
        (who.as_str(), scopes.as_slice()),
        ("-", ["repository:team/agent:pull".to_owned()].as_slice()),
        "the anonymous pull asked for more than pull: {seen:?}"
    );
}

#[test]
fn pulls_an_image_skopeo_copied_in_and_picks_the_platform() {
    let reg = Registry::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let layout = tmp.path().join("bin");
    let tag = format!("{}/bins/jq:1", reg.addr);
    let (idx, host_manifest) = images::push_bin_index(
        &layout,
        &tag,
        "jq",
        b"jq binary",
        BinPrefix::Io,
        Some("json tool"),
    );

    let env = Env::new();
    let out = env.ok(&["pull", &tag]);
    assert_eq!(out.trim(), idx["digest"].as_str().unwrap_or_default());

    let env2 = Env::new();
    let platform = format!("linux/{}", crate::support::host_arch());
    let out = env2.ok(&["pull", &tag, "--platform", &platform, "-t", "jq:host"]);
    assert_eq!(out.trim(), host_manifest);
    let err = env2.fails(&["pull", &tag, "--platform", "windows/arm64"]);
    assert!(
        err.contains("no manifest for platform windows/arm64") && err.contains("s390x"),
        "{err}"
    );
    // The library names the platforms; the CLI adds the flag that helps.
    assert!(
        err.contains("help: pass --platform with one of them"),
        "{err}"
    );
}

#[test]
fn corrupted_blob_is_a_digest_mismatch_and_never_stored() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/team/agent:bad", reg.addr);
    build_agent(&env, &tag, 50_000);
    let report = json(&env.ok(&["push", &tag, "--format", "json"]));
    // Corrupt the largest blob in the registry's storage, keeping its size.
    let victim = list(&report, "uploaded")
        .into_iter()
        .max_by_key(|d| std::fs::metadata(reg.blob_path(d)).map_or(0, |m| m.len()))
        .expect("a blob");
    let path = reg.blob_path(&victim);
    let len = std::fs::metadata(&path).expect("blob file").len() as usize;
    std::fs::write(&path, vec![b'x'; len]).expect("corrupt");

    let other = Env::new();
    let err = other.fails(&["pull", &tag]);
    assert!(
        err.contains("digest mismatch") && err.contains(&victim) && err.contains(&reg.addr),
        "{err}"
    );
    assert!(
        !other.store_blob(&victim).exists(),
        "corrupt blob reached the store"
    );
    let tmp_left: Vec<_> = std::fs::read_dir(other.home().join("store/.tmp"))
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(tmp_left.is_empty(), "temp files left: {tmp_left:?}");
}

#[test]
fn registry_killed_mid_push_then_rerun_uploads_only_what_is_missing() {
    let mut reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/team/big:1", reg.addr);
    build_agent(&env, &tag, 96 << 20);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("otters"))
        .env("OTTERS_HOME", env.home())
        .env("DOCKER_CONFIG", env.docker())
        .args(["push", &tag, "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn push");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !reg.upload_in_progress(1 << 20) {
        assert!(
            std::time::Instant::now() < deadline,
            "the big upload never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    reg.kill();
    let out = child.wait_with_output().expect("push output");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "push survived the registry's death");
    assert!(
        err.contains(&reg.addr) && err.contains("run the command again")
            || err.contains("cannot reach"),
        "{err}"
    );
    let before = reg.blobs();
    assert!(!before.is_empty(), "no blob arrived before the kill");

    reg.restart();
    let report = json(&env.ok(&["push", &tag, "--format", "json"]));
    let skipped = list(&report, "skipped");
    let uploaded = list(&report, "uploaded");
    for d in &before {
        assert!(skipped.contains(d), "{d} was uploaded again: {report}");
        assert!(!uploaded.contains(d));
    }
    assert!(!uploaded.is_empty(), "{report}");
}

#[test]
fn references_are_checked_before_anything_happens() {
    let env = Env::new();
    let err = env.fails(&["pull", "Bad/Name"]);
    assert!(err.contains("must be lowercase"), "{err}");
    let err = env.fails(&["push", "nothing-here:1"]);
    assert!(
        err.contains("no image nothing-here:1 in the local store"),
        "{err}"
    );
    // A loopback registry is already asked over plain HTTP: `insecure` would not help it.
    let err = env.fails(&["pull", "127.0.0.1:1/x:1"]);
    assert!(err.contains("cannot reach registry 127.0.0.1:1"), "{err}");
    assert!(!err.contains("insecure") && !err.contains("help:"), "{err}");
    // Another host: the library names the config setting; the CLI adds its flag.
    let err = env.fails(&["pull", "otters-test.invalid:5001/x:1"]);
    assert!(
        err.contains("needs `insecure = true` for it")
            && crate::support::cli::flat(&err).contains(
                "help: or pass --insecure for a plain-HTTP registry that is not on this machine"
            ),
        "{err}"
    );
}

/// A registry holding a runtime and bins: `bins/jq` (index, io.* annotations, description),
/// `bins/old` (single manifest, vnd.* annotations) and `bins/plain` (no bin annotations).
pub(crate) fn registry_with_bins() -> (Registry, String, String, String) {
    let reg = Registry::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let (_, jq_host) = images::push_bin_index(
        &tmp.path().join("jq"),
        &format!("{}/bins/jq:1", reg.addr),
        "jq",
        b"jq",
        BinPrefix::Io,
        Some("json processor"),
    );
    let old = images::bin_single(
        &tmp.path().join("old"),
        "1",
        "old",
        b"old",
        BinPrefix::Vnd,
        Some("an old tool"),
    );
    images::skopeo_push(
        &tmp.path().join("old"),
        "1",
        &format!("{}/bins/old:1", reg.addr),
        None,
    );
    images::bin_single(
        &tmp.path().join("plain"),
        "1",
        "plain",
        b"plain",
        BinPrefix::None,
        None,
    );
    images::skopeo_push(
        &tmp.path().join("plain"),
        "1",
        &format!("{}/bins/plain:1", reg.addr),
        None,
    );
    let (_, rt_host) = images::push_bin_index(
        &tmp.path().join("rt"),
        &format!("{}/runtime:1", reg.addr),
        "runtime",
        b"rt",
        BinPrefix::Io,
        None,
    );
    (reg, jq_host, old, rt_host)
}

#[test]
fn lock_pins_runtime_and_bins_and_reads_both_annotation_prefixes() {
    let (reg, jq, old, rt) = registry_with_bins();
    let env = Env::new();
    let ctx = env.dir.path().join("agent");
    let a = &reg.addr;
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME locked\nRUNTIME {a}/runtime:1\nBIN jq {a}/bins/jq:1\nBIN old {a}/bins/old:1 \"mine\"\n"),
    );
    env.ok(&["lock", ctx.to_str().expect("utf8")]);
    let lock_path = ctx.join("Agentfile.lock");
    let text = std::fs::read_to_string(&lock_path).expect("Agentfile.lock");
    let lock = json(&text);
    assert_eq!(lock["version"], 1);
    let find = |r: &str| {
        lock["images"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["reference"] == r).cloned())
            .unwrap_or_default()
    };
    let jq_e = find(&format!("{a}/bins/jq:1"));
    assert_eq!(jq_e["digest"], jq.as_str(), "{text}");
    assert_eq!(
        jq_e["platform"],
        format!("linux/{}", crate::support::host_arch())
    );
    assert_eq!(jq_e["description"], "json processor");
    assert_eq!(jq_e["bin"]["name"], "jq");
    let old_e = find(&format!("{a}/bins/old:1"));
    assert_eq!(old_e["digest"], old.as_str());
    assert_eq!(old_e["description"], "an old tool");
    assert_eq!(old_e["bin"]["name"], "old");
    assert_eq!(find(&format!("{a}/runtime:1"))["digest"], rt.as_str());

    // Unchanged resolution leaves the file alone.
    let mtime = std::fs::metadata(&lock_path)
        .and_then(|m| m.modified())
        .ok();
    let (_, _, err) = env.run(&["lock", ctx.to_str().expect("utf8")]);
    assert!(err.contains("unchanged"), "{err}");
    assert_eq!(
        std::fs::metadata(&lock_path)
            .and_then(|m| m.modified())
            .ok(),
        mtime
    );
}

/// The registry of [`registry_with_bins`] and a machine with an Agentfile in `agent/`, written by
/// `text` from the registry's address.
fn agent_with_bins(text: impl Fn(&str) -> String) -> (Registry, Env, std::path::PathBuf) {
    let (reg, ..) = registry_with_bins();
    let env = Env::new();
    let ctx = env.dir.path().join("agent");
    crate::support::write(&ctx.join("Agentfile"), text(&reg.addr));
    (reg, env, ctx)
}

#[test]
fn lock_reports_missing_images_and_non_bins_on_their_lines() {
    let (_reg, env, ctx) = agent_with_bins(|a| {
        format!("FROM scratch\nNAME broken\nBIN plain {a}/bins/plain:1\nBIN gone {a}/bins/gone:1\n")
    });
    let err = env.fails(&["lock", ctx.to_str().expect("utf8")]);
    assert!(
        err.contains("AF403")
            && err.contains("bins/plain:1")
            && err.contains("io.openotters.bin.name"),
        "{err}"
    );
    assert!(
        err.contains("AF401") && err.contains("bins/gone:1"),
        "{err}"
    );
    assert!(
        err.contains(":3:") && err.contains(":4:"),
        "diagnostics should point at lines 3 and 4: {err}"
    );
    assert!(!ctx.join("Agentfile.lock").exists());
}

/// Issue 18.11: a RUNTIME is a bin image too (spec §f); a plain container image as RUNTIME is
/// AF403 at build, on its line, instead of failing only at `otters run` ("no binary found").
#[test]
fn a_non_bin_runtime_is_af403_at_build() {
    let (_reg, env, ctx) = agent_with_bins(|a| {
        format!("FROM scratch\nNAME broken\nRUNTIME {a}/bins/plain:1\nBIN jq {a}/bins/jq:1\n")
    });
    let err = env.fails(&["build", "-q", "-t", "broken:1", ctx.to_str().expect("utf8")]);
    assert!(
        err.contains("AF403")
            && err.contains("bins/plain:1")
            && err.contains("a RUNTIME image needs")
            && err.contains(":3:"),
        "{err}"
    );
    assert!(!ctx.join("Agentfile.lock").exists());
    let listed = env.ok(&["images", "-q"]);
    assert!(listed.trim().is_empty(), "an image was stored: {listed}");
}

#[test]
fn lock_names_the_registry_that_denies_a_pull() {
    let reg = Registry::start_basic("alice", "s3cret");
    let env = Env::new();
    let ctx = env.dir.path().join("agent");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME x\nBIN jq {}/bins/jq:1\n", reg.addr),
    );
    let err = env.fails(&["lock", ctx.to_str().expect("utf8")]);
    assert!(
        err.contains("AF402") && err.contains(&format!("otters login {}", reg.addr)),
        "{err}"
    );
}

/// Pushes an openotters-style agent (raw per-file layers) whose config says `from` and names
/// `bins`, as `reg/<repo>:1`.
fn push_openotters_agent(reg: &Registry, repo: &str, from: &str, bins: &str) {
    let tmp = tempfile::tempdir().expect("tmp");
    // NAME is a path-safe file name (otters refuses an image whose NAME is not).
    let name = repo.replace('/', "-");
    let config = format!(
        r#"{{"syntax":"openotters/agentfile:1","agent":{{"from":"{from}","name":"{name}","model":"m","contexts":[{{"name":"SOUL","file":"soul.md"}}],"bins":[{bins}],"adds":[{{"src":"data.txt","name":"data.txt"}}]}}}}"#
    );
    images::openotters_agent(
        &tmp.path().join("l"),
        "1",
        &config,
        &[
            (
                "application/vnd.openotters.agentfile",
                "Agentfile",
                b"FROM scratch\n",
            ),
            (
                "application/vnd.openotters.context.v1",
                "SOUL.md",
                b"parent soul\n",
            ),
            ("application/octet-stream", "data.txt", b"parent data\n"),
        ],
    );
    images::skopeo_push(
        &tmp.path().join("l"),
        "1",
        &format!("{}/{repo}:1", reg.addr),
        None,
    );
}

#[test]
fn from_an_openotters_parent_merges_its_bins_into_the_lock() {
    let (reg, jq, ..) = registry_with_bins();
    let a = reg.addr.clone();
    push_openotters_agent(
        &reg,
        "agents/base",
        "scratch",
        &format!(r#"{{"name":"jq","image":"{a}/bins/jq:1"}}"#),
    );
    let env = Env::new();
    let ctx = env.dir.path().join("child");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM {a}/agents/base:1\nNAME child\nBIN old {a}/bins/old:1\n"),
    );
    env.ok(&["lock", ctx.to_str().expect("utf8")]);
    let lock = json(&std::fs::read_to_string(ctx.join("Agentfile.lock")).expect("lock"));
    let refs: Vec<String> = lock["images"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|e| format!("{}={}", e["role"], e["reference"]))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        refs.contains(&format!("\"from\"=\"{a}/agents/base:1\"")),
        "{refs:?}"
    );
    assert!(
        refs.contains(&format!("\"bin\"=\"{a}/bins/jq:1\"")),
        "parent's BIN not merged: {refs:?}"
    );
    assert!(
        refs.contains(&format!("\"bin\"=\"{a}/bins/old:1\"")),
        "{refs:?}"
    );
    let jq_entry = lock["images"]
        .as_array()
        .and_then(|v| {
            v.iter()
                .find(|e| e["reference"] == format!("{a}/bins/jq:1"))
                .cloned()
        })
        .unwrap_or_default();
    assert_eq!(jq_entry["digest"], jq.as_str());
    // The parent was pulled into the store, layers included.
    let data_digest = crate::support::sha256(b"parent data\n");
    assert!(
        env.store_blob(&data_digest).is_file(),
        "parent ADD layer not in the store"
    );
}

/// A parent agent (`data_len` bytes of data) built in one home and pushed to a fresh registry, and
/// a second home with a child context `FROM` it: (registry, parent, the child's home, its context).
fn a_child_of_a_pushed_parent(data_len: usize) -> (Registry, String, Env, std::path::PathBuf) {
    let reg = Registry::start();
    let env = Env::new();
    let parent = format!("{}/agents/parent:1", reg.addr);
    build_agent(&env, &parent, data_len);
    env.ok(&["push", &parent]);
    let other = Env::new();
    let ctx = other.dir.path().join("child");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM {parent}\nNAME child\n"),
    );
    (reg, parent, other, ctx)
}

#[test]
fn from_an_otters_built_parent_resolves() {
    let (_reg, parent, other, ctx) = a_child_of_a_pushed_parent(10);
    other.ok(&["lock", ctx.to_str().expect("utf8")]);
    let text = std::fs::read_to_string(ctx.join("Agentfile.lock")).expect("lock");
    assert!(
        text.contains("\"from\"") && text.contains(&parent),
        "{text}"
    );
}

/// `lock` pulls its FROM parent through a leased store: a concurrent `prune` (which removes every
/// blob no image reaches and no lease lists) never takes the parent's blobs between their arrival
/// and the merge that reads them. Each round locks anew in a store a pruner empties again and again.
#[test]
fn lock_beside_a_concurrent_prune_reads_the_parent_it_pulled() {
    let (_reg, parent, other, ctx) = a_child_of_a_pushed_parent(256 * 1024);
    let lockfile = ctx.join("Agentfile.lock");
    crate::support::beside_a_pruner(&other.home(), 6, |round| {
        let (ok, _, err) = other.run(&["lock", ctx.to_str().expect("utf8")]);
        assert!(ok, "round {round}: lock failed: {err}");
        let text = std::fs::read_to_string(&lockfile).expect("the lockfile");
        assert!(text.contains(&parent), "round {round}: {text}");
        // Start the next round from nothing: no lockfile, no parent in the store.
        std::fs::remove_file(&lockfile).expect("remove the lockfile");
        let _ = other.run(&["rm", &parent]);
    });
}

#[test]
fn inheritance_cycles_and_depth_are_reported() {
    let reg = Registry::start();
    let a = reg.addr.clone();
    push_openotters_agent(&reg, "cyc/a", &format!("{a}/cyc/b:1"), "");
    push_openotters_agent(&reg, "cyc/b", &format!("{a}/cyc/a:1"), "");
    let env = Env::new();
    let ctx = env.dir.path().join("c");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM {a}/cyc/a:1\nNAME c\n"),
    );
    let err = env.fails(&["lock", ctx.to_str().expect("utf8")]);
    assert!(
        err.contains("AF407") && err.contains("inheritance cycle") && err.contains("cyc/a:1 ->"),
        "{err}"
    );

    for i in 0..12 {
        let from = if i == 11 {
            "scratch".to_owned()
        } else {
            format!("{a}/deep/p{}:1", i + 1)
        };
        push_openotters_agent(&reg, &format!("deep/p{i}"), &from, "");
    }
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM {a}/deep/p0:1\nNAME c\n"),
    );
    let err = env.fails(&["lock", ctx.to_str().expect("utf8")]);
    assert!(
        err.contains("AF408") && err.contains("depth exceeds 10"),
        "{err}"
    );
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM {a}/deep/p3:1\nNAME c\n"),
    );
    env.ok(&["lock", ctx.to_str().expect("utf8")]);
}

/// A push uploads the blobs of a manifest at once (issue 22: the config and small layers ride
/// alongside the large one instead of each adding its round trips). Seen from the registry's own
/// access log, which lists requests as they complete: a second upload session is opened (`POST
/// …/blobs/uploads/`) before the first is finished (`PUT …?digest=`); one blob after the other,
/// every `POST` is followed by its `PUT` before the next `POST`.
/// The image still arrives whole: pulled into an empty store, it has the pushed digest.
#[test]
fn push_uploads_the_blobs_of_a_manifest_at_once() {
    let reg = Registry::start();
    let addr = &reg.addr;
    let env = Env::new();
    // A layer of 8 MiB that does not compress: its upload lasts while the small blobs go.
    let ctx = env.dir.path().join("ctx");
    crate::support::write(&ctx.join("big.bin"), crate::support::noise(8 << 20, 0));
    crate::support::write(&ctx.join("notes.txt"), "notes\n");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nADD notes.txt\nADD big.bin\n",
    );
    let tag = format!("{addr}/team/at-once:1");
    let local = env.ok(&["build", "-q", "-t", &tag, ctx.to_str().expect("utf8")]);

    let pushed = json(&env.ok(&["push", &tag, "--format", "json"]));
    assert!(list(&pushed, "uploaded").len() >= 3, "{pushed}");
    let (sessions, log) = (reg.upload_sessions(), reg.log());
    assert_eq!(
        sessions.matches('S').count(),
        list(&pushed, "uploaded").len(),
        "{log}"
    );
    assert!(
        sessions.contains("SS"),
        "uploads one after the other: {sessions}\n{log}"
    );

    let fresh = Env::new();
    assert_eq!(fresh.ok(&["pull", "-q", &tag]).trim(), local.trim());
}

/// A registry that stops reading the upload of one layer (its connection stays open, nothing is
/// answered) while the store's copy of a later layer is damaged: otters' own check fails that
/// layer's upload at its last byte, and that must end the push at once, not after the stalled upload gives up; no
/// manifest is pushed and the stalled upload is never completed. The destination is the fake
/// registry of `support/hostile_registry.rs`: a real registry never stops reading an upload.
#[test]
fn a_failing_upload_stops_the_other_uploads_and_pushes_no_manifest() {
    use crate::security_registry::hostile_registry::{Content, Hostile, Req, Unread};
    use std::sync::Arc;
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(&ctx.join("one.bin"), crate::support::noise(300_000, 5));
    crate::support::write(&ctx.join("two.bin"), crate::support::noise(200_000, 6));
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nADD one.bin\nADD two.bin\n",
    );
    env.ok(&["build", "-q", "-t", "m:1", ctx.to_str().expect("utf8")]);
    let inspect = json(&env.ok(&["inspect", "m:1", "--format", "json"]));
    let layers = inspect["manifest"]["layers"].as_array().expect("layers");
    // The layer of the file `name`: its place in the manifest, digest and size.
    let of_file = |name: &str| {
        let (i, l) = layers
            .iter()
            .enumerate()
            .find(|(_, l)| l["annotations"]["org.opencontainers.image.title"] == name)
            .unwrap_or_else(|| panic!("no layer {name}: {inspect}"));
        let digest = l["digest"].as_str().expect("digest").to_owned();
        (i, digest, l["size"].as_u64().expect("size"))
    };
    let ((stalled_at, stalled, stalled_size), (failing_at, failing, _)) =
        (of_file("one.bin"), of_file("two.bin"));
    // The stalled upload comes first: reported in manifest order, it used to hold the failure back.
    assert!(stalled_at < failing_at, "{inspect}");
    // Same size, one byte flipped: otters' digest check at the blob's last byte fails its upload.
    let damaged = env.store_blob(&failing);
    let mut bytes = std::fs::read(&damaged).expect("read");
    bytes[100] ^= 1;
    std::fs::write(&damaged, &bytes).expect("damage");

    let content = Arc::new(Content::new());
    let stored = content.clone();
    let stall_len = stalled_size.to_string();
    let stalls = move |r: &Req| {
        r.method == "PATCH" && r.header("content-length") == Some(stall_len.as_str())
    };
    let unread: Unread = Arc::new(stalls.clone());
    let dest = Hostile::start_on(
        "127.0.0.1".parse().expect("ip"),
        Arc::new(move |req| stored.serve(req)),
        Some(unread),
    );
    let target = format!("{}/agents/m:1", dest.addr);
    // A transfer timeout far beyond the wait: only stopping the stalled upload ends the push in
    // time.
    let (ok, _, err) = env
        .run_within(
            &["push", "m:1", &target],
            &[("OTTERS_REGISTRY_TIMEOUT", "600")],
            std::time::Duration::from_secs(120),
        )
        .expect("the push kept waiting on the stalled upload after another blob failed");
    let err = flat(&err);
    assert!(!ok, "{err}");
    assert!(
        err.contains("in the store is corrupt") && err.contains(failing.as_str()),
        "the failing blob is not named: {err}"
    );
    let requests = dest.requests();
    // Both layers were on their way at once: the stalled layer's upload was sent.
    assert!(
        requests.iter().any(&stalls),
        "the stalled layer's upload never started"
    );
    // No manifest; the stalled upload was never completed (no `PUT ?digest=`), and the registry
    // holds neither layer.
    assert!(
        !requests
            .iter()
            .any(|r| r.method == "PUT" && r.path().contains("/manifests/")),
        "a manifest was pushed"
    );
    assert!(content.manifest("agents/m", "1").is_none(), "tagged");
    assert!(
        !requests
            .iter()
            .any(|r| r.method == "PUT" && r.query("digest").as_deref() == Some(stalled.as_str())),
        "the stalled upload was completed"
    );
    for layer in [&stalled, &failing] {
        assert!(
            content.blob(layer).is_none(),
            "{layer} reached the registry"
        );
    }
}
