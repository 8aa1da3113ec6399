//! Issue 18.11: a RUNTIME is a bin image, as a BIN is (spec §f), and the same contract (AF403 when
//! the image has no bin name annotation) holds wherever otters can know it: at build and lock from
//! the registry (`registry::a_non_bin_runtime_is_af403_at_build`), at an `--offline` build from
//! `Agentfile.lock`, and at `otters lint` from the lock and the local store, without the network.

use crate::support::cli::Env;

/// `otters lint --format concise` of `ctx`: (success, the AF403 lines as `line:text`).
fn lint_af403(env: &Env, ctx: &std::path::Path) -> (bool, Vec<String>) {
    let (ok, out, _) = env.run(&["lint", "--format", "concise", ctx.to_str().expect("utf8")]);
    let lines = out
        .lines()
        .filter(|l| l.contains("AF403"))
        .map(str::to_owned)
        .collect();
    (ok, lines)
}

/// A plain container image (no bin name) and a bin image pulled into the store, then the registry
/// stopped: lint reports the plain RUNTIME on its line from the store alone, and not the bin.
#[test]
fn lint_reports_a_non_bin_runtime_the_local_store_holds() {
    // `bins/plain` has no bin name; `bins/jq` is a bin index.
    let (mut reg, ..) = crate::registry::registry_with_bins();
    let env = Env::new();
    let plain = format!("{}/bins/plain:1", reg.addr);
    let jq = format!("{}/bins/jq:1", reg.addr);
    env.ok(&["pull", "-q", &plain]);
    env.ok(&["pull", "-q", &jq]);
    // Lint asks no registry: what follows is known from the store alone.
    reg.kill();

    let ctx = env.dir.path().join("agent");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME broken\nRUNTIME {plain}\nBIN jq {jq}\nBIN plain {plain}\n"),
    );
    let (ok, found) = lint_af403(&env, &ctx);
    assert!(!ok, "lint should fail on an AF403 error: {found:?}");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].contains(":3:")
            && found[0].contains("a RUNTIME image needs")
            && found[0].contains("local store"),
        "{found:?}"
    );
    assert!(
        found[1].contains(":5:") && found[1].contains("a BIN image needs"),
        "{found:?}"
    );

    // An image neither locked nor stored is not known offline: lint says nothing of it (the
    // build asks the registry), and does not wait for the stopped registry.
    crate::support::write(
        &ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME elsewhere\nRUNTIME {}/bins/other:1\n",
            reg.addr
        ),
    );
    let (_, found) = lint_af403(&env, &ctx);
    assert!(found.is_empty(), "{found:?}");
}

/// A lock written before RUNTIME was checked pins a non-bin image with no bin name: lint says so
/// from the lock, and an `--offline` build (which asks no registry) refuses it instead of building
/// an agent that fails at run with "no binary found in layers". A pinned BIN with its bin name
/// passes both.
#[test]
fn a_lock_pin_without_a_bin_name_is_af403_at_lint_and_offline_build() {
    let env = Env::new();
    let ctx = env.dir.path().join("agent");
    // An address nothing listens on: neither command may need the registry.
    let addr = format!("127.0.0.1:{}", crate::support::registry::free_port());
    crate::support::write(
        &ctx.join("Agentfile"),
        format!(
            "FROM scratch\nNAME old\nMODEL openai/gpt-4o\nRUNTIME {addr}/rt/plain:1\nBIN jq {addr}/bins/jq:1\n"
        ),
    );
    let pin = |c: char| format!("sha256:{}", c.to_string().repeat(64));
    crate::support::write(
        &ctx.join("Agentfile.lock"),
        format!(
            r#"{{
  "version": 1,
  "platform": "linux/{arch}",
  "images": [
    {{
      "role": "runtime",
      "reference": "{addr}/rt/plain:1",
      "digest": "{rt}"
    }},
    {{
      "role": "bin",
      "reference": "{addr}/bins/jq:1",
      "digest": "{jq}",
      "bin": {{"name": "jq"}}
    }}
  ]
}}
"#,
            arch = crate::support::host_arch(),
            rt = pin('a'),
            jq = pin('b'),
        ),
    );
    let (ok, found) = lint_af403(&env, &ctx);
    assert!(!ok);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains(":4:")
            && found[0].contains("a RUNTIME image needs")
            && found[0].contains("Agentfile.lock pins it to sha256:aaaa"),
        "{found:?}"
    );

    let err = env.fails(&[
        "build",
        "-q",
        "--offline",
        "-t",
        "old:1",
        ctx.to_str().expect("utf8"),
    ]);
    assert!(
        err.contains("AF403")
            && err.contains("rt/plain:1")
            && err.contains("a RUNTIME image needs")
            && err.contains("Agentfile.lock pins it"),
        "{err}"
    );
    let listed = env.ok(&["images", "-q"]);
    assert!(listed.trim().is_empty(), "an image was stored: {listed}");
}
