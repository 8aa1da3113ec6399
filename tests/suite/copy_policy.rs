//! What a copy may take and where it may write (issue 31, items 2, 3 and 6; issue 32, item 5),
//! through the binary against real `docker-registry` instances: `copy -r` never moves a
//! destination tag a pinned image names to other content without `--force` (and a dry run says
//! which tags it would replace or keep, and lists the referrers it would take); pins on a
//! registry other than the source's are read only when the user names it (`--from-registry`),
//! for `copy -r` and `save --with-deps` alike; and a registry-to-registry copy mounts no blob the
//! source did not prove it holds.

use crate::copy::{agent, other_arch, push_two_arch, sha256, skopeo_raw, CopyWorld, RUNTIME, TOOL};
use crate::mirrors::{configure, skopeo_copy};
use crate::support::cli::{json, Env};
use crate::support::registry::{http_status, Registry};
use serde_json::Value;

/// `text` with each `sha256:<hex>` written `sha256:[DIGEST]`, registries and architectures named.
fn redact(text: &str, regs: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    for (addr, name) in regs {
        text = text.replace(addr, name);
    }
    text = text
        .replace(
            &format!("linux/{}", crate::support::host_arch()),
            "linux/[HOST]",
        )
        .replace(&format!("linux/{}", other_arch()), "linux/[OTHER]");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("sha256:") {
        out.push_str(&rest[..i + 7]);
        out.push_str("[DIGEST]");
        rest = rest[i + 7..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

fn snapshot(name: &str, text: &str) {
    crate::support::snap::assert("copy", name, text);
}

/// The digest of what `reference` (`host/repo:tag` or `@digest`) names, read by skopeo.
fn digest_at(reference: &str) -> Option<String> {
    skopeo_raw(&format!("docker://{reference}")).map(|raw| sha256(&raw))
}

/// The image of `report` with `role`.
fn image<'a>(report: &'a Value, role: &str) -> &'a Value {
    report["images"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["role"] == role))
        .unwrap_or_else(|| panic!("no {role} in {report}"))
}

#[test]
fn copy_r_keeps_a_destination_tag_that_names_other_content_unless_forced() {
    let mut w = CopyWorld::new(None);
    let (a, b) = (w.reg1.addr.clone(), w.reg2.addr.clone());
    // A team's image already holds the tag the agent's RUNTIME names, on the destination.
    skopeo_copy(
        &format!("{a}/tools/tool:1"),
        &format!("{b}/tools/runtime:1"),
    );
    assert_eq!(
        digest_at(&format!("{b}/tools/runtime:1")),
        Some(w.tool.0.clone())
    );

    // The dry run says what happens to that tag and lists every referrer it would take.
    let (ok, out, err) = w
        .env
        .run(&["copy", "-r", "--dry-run", &agent(&w.reg1), &agent(&w.reg2)]);
    assert!(ok, "{err}");
    let forced = w.env.run(&[
        "copy",
        "-r",
        "--dry-run",
        "--force",
        &agent(&w.reg1),
        &agent(&w.reg2),
    ]);
    assert!(forced.0, "{}", forced.2);
    let regs = [(a.as_str(), "[REG1]"), (b.as_str(), "[REG2]")];
    let whole = format!(
        "--- stdout\n{out}--- stderr\n{err}--- with --force: stdout\n{}--- stderr\n{}",
        forced.1, forced.2
    );
    snapshot("dry_run_keeps_a_tag", &redact(&whole, &regs));
    let plan = json(&w.env.ok(&[
        "copy",
        "-r",
        "--dry-run",
        "--format",
        "json",
        &agent(&w.reg1),
        &agent(&w.reg2),
    ]));
    assert!(plan["referrers"].as_u64().unwrap() >= 2, "{plan}");

    let (ok, out, err) = w.env.run(&[
        "copy",
        "-r",
        "--format",
        "json",
        &agent(&w.reg1),
        &agent(&w.reg2),
    ]);
    assert!(ok, "{err}");
    let report = json(&out);
    // The dry run counted what the copy moved.
    assert_eq!(report["referrers"], plan["referrers"], "{plan}\n{report}");
    let runtime = image(&report, "runtime");
    assert_eq!(runtime["kept_tag"]["holds"], w.tool.0.as_str(), "{report}");
    assert_eq!(
        runtime["destination"],
        format!("{b}/tools/runtime@{}", w.runtime.0).as_str(),
        "{report}"
    );
    assert!(
        err.contains(&format!("kept tag {b}/tools/runtime:1")) && err.contains("--force"),
        "{err}"
    );
    // The team's tag is untouched; the pinned index is there by digest.
    assert_eq!(
        digest_at(&format!("{b}/tools/runtime:1")),
        Some(w.tool.0.clone())
    );
    assert_eq!(
        digest_at(&format!("{b}/tools/runtime@{}", w.runtime.0)),
        Some(w.runtime.0.clone())
    );

    // The mirror recipe still runs the agent from the destination alone: its pins are found
    // there by digest, under the paths the agent names.
    w.reg1.kill();
    let fresh = Env::new();
    configure(&fresh, &a, &[&b]);
    let root = fresh.dir.path().join("tree");
    let mut run = fresh.otters();
    run.env("ANTHROPIC_API_KEY", "sk-test")
        .args(["run", &agent(&w.reg2), "--root"])
        .arg(&root);
    crate::support::cli::ok(&mut run);
    let ran = std::fs::read_to_string(root.join("workspace/report.txt")).unwrap();
    assert!(ran.starts_with("RUNTIME"), "{ran}");
    w.reg1.restart();

    // With --force the tag moves, and the copy says what it named.
    let (ok, _, err) = w
        .env
        .run(&["copy", "-r", "--force", &agent(&w.reg1), &agent(&w.reg2)]);
    assert!(ok, "{err}");
    assert_eq!(
        digest_at(&format!("{b}/tools/runtime:1")),
        Some(w.runtime.0.clone())
    );
    assert!(
        err.contains(&format!(
            "replaced tag {b}/tools/runtime:1 (it named {})",
            w.tool.0
        )),
        "{err}"
    );
}

/// An agent on `home` whose RUNTIME is there too and whose BIN is on `private`.
fn agent_with_a_foreign_pin(env: &Env, home: &Registry, private: &Registry) -> String {
    let dir = env.dir.path();
    let (h, p) = (&home.addr, &private.addr);
    push_two_arch(
        &dir.join("l/rt"),
        "runtime",
        RUNTIME,
        &format!("{h}/tools/runtime:1"),
    );
    push_two_arch(
        &dir.join("l/tool"),
        "tool",
        TOOL,
        &format!("{p}/corp/tool:1"),
    );
    let ctx = dir.join("agent");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME x\nRUNTIME {h}/tools/runtime:1\nMODEL anthropic/claude-test\nBIN tool {p}/corp/tool:1\n"
        ),
    );
    let reference = format!("{h}/agents/x:1");
    env.ok(&[
        "build",
        "-q",
        "--push",
        "-t",
        &reference,
        ctx.to_str().unwrap(),
    ]);
    reference
}

/// Requests for `repository` in a registry's access log.
fn asked_for(reg: &Registry, repository: &str) -> usize {
    reg.log()
        .lines()
        .filter(|l| l.contains(&format!("/v2/{repository}/")))
        .count()
}

#[test]
fn copy_r_and_save_with_deps_read_pins_only_on_the_registries_the_user_names() {
    let env = Env::new();
    let (home, dest, private) = (Registry::start(), Registry::start(), Registry::start());
    let x = agent_with_a_foreign_pin(&env, &home, &private);
    let to = format!("{}/agents/x:1", dest.addr);
    let before = asked_for(&private, "corp/tool");
    assert!(
        before > 0,
        "the build resolved the pin there: {}",
        private.log()
    );

    let (ok, _, err) = env.run(&["copy", "-r", &x, &to]);
    assert!(!ok, "{err}");
    let regs = [
        (home.addr.as_str(), "[HOME]"),
        (dest.addr.as_str(), "[DEST]"),
        (private.addr.as_str(), "[PRIVATE]"),
    ];
    snapshot("foreign_pin_refused", &redact(&err, &regs));
    assert!(
        err.contains(&format!("--from-registry {}", private.addr)),
        "{err}"
    );
    assert!(
        dest.blobs().is_empty(),
        "the refused copy wrote to the destination"
    );
    assert_eq!(
        asked_for(&private, "corp/tool"),
        before,
        "the refused copy read the private registry"
    );

    // save --with-deps: the same rule, the registry of the image saved as the source's.
    let archive = env.dir.path().join("x.tar");
    let out = archive.to_str().unwrap();
    let err = env.fails(&["save", "--with-deps", &x, "-o", out]);
    assert!(
        err.contains(&format!("{}/corp/tool:1@sha256:", private.addr))
            && err.contains(&format!("--from-registry {}", private.addr)),
        "{err}"
    );
    assert!(!archive.exists(), "the refused save wrote {out}");

    // Named, the registry is read and the pin copied.
    env.ok(&["copy", "-r", "--from-registry", &private.addr, &x, &to]);
    assert!(digest_at(&format!("{}/corp/tool:1", dest.addr)).is_some());
    env.ok(&[
        "save",
        "--with-deps",
        "--from-registry",
        &private.addr,
        &x,
        "-o",
        out,
    ]);
    assert!(archive.is_file());
}

#[test]
fn a_copy_between_registries_mounts_no_blob_the_source_does_not_serve() {
    let env = Env::new();
    let (source, dest) = (Registry::start(), Registry::start());
    let dir = env.dir.path();
    // A private image on the destination, which this user has pulled (so otters knows the
    // repository holds its blobs).
    let (_, platforms) = push_two_arch(
        &dir.join("l/secret"),
        "secret",
        "#!/bin/sh\necho private\n",
        &format!("{}/private/secret:1", dest.addr),
    );
    env.ok(&["pull", "-q", &format!("{}/private/secret:1", dest.addr)]);
    let manifest: Value = serde_json::from_slice(
        &skopeo_raw(&format!(
            "docker://{}/private/secret@{}",
            dest.addr, platforms[0]
        ))
        .unwrap(),
    )
    .unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap().to_owned();
    // The source lists that layer in a manifest of its own, but does not hold it: its
    // repository has no link to the blob (distribution answers 404 for it).
    push_two_arch(
        &dir.join("l/secret"),
        "secret",
        "#!/bin/sh\necho private\n",
        &format!("{}/evil/agent:1", source.addr),
    );
    let link = source.storage().join(format!(
        "repositories/evil/agent/_layers/sha256/{}",
        layer.trim_start_matches("sha256:")
    ));
    std::fs::remove_dir_all(&link).unwrap();
    assert_eq!(
        http_status(&source.addr, &format!("/v2/evil/agent/blobs/{layer}")),
        Some(404)
    );

    let to = format!("{}/mirror/agent:1", dest.addr);
    let err = env.fails(&["copy", &format!("{}/evil/agent:1", source.addr), &to]);
    assert!(err.contains(&layer), "{err}");
    assert_eq!(
        http_status(&dest.addr, &format!("/v2/mirror/agent/blobs/{layer}")),
        Some(404),
        "the private layer was linked into the copy's repository"
    );
    assert!(digest_at(&to).is_none(), "the copy was tagged");
}
