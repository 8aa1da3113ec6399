//! Registry mirrors (`[registry."HOST"] mirrors = [...]` in `$OTTERS_HOME/config.toml`), through
//! the `otters` binary: pulls try each mirror in order and fall back to the registry; pushes never
//! touch a mirror; a mirror never sees the registry's credentials; a mirror's bytes are checked
//! against the digests like anyone's. Two real registries (one a skopeo copy of the other) and
//! recording fake registries, all on loopback.

use crate::registry::build_agent;
use crate::security_registry::hostile_registry::{self, Content, Hostile, Reply};
use crate::support::cli::{json, Env};
use crate::support::registry::{free_port, Registry};
use std::sync::Arc;

/// Writes `config.toml` giving `registry` the `mirrors`, in order.
pub(crate) fn configure(env: &Env, registry: &str, mirrors: &[&str]) {
    let list: Vec<String> = mirrors.iter().map(|m| format!("\"{m}\"")).collect();
    crate::support::write(
        &env.home().join("config.toml"),
        format!(
            "[registry.\"{registry}\"]\nmirrors = [{}]\n",
            list.join(", ")
        ),
    );
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `skopeo copy --all` of `from` to `to` (plain HTTP on both sides).
pub(crate) fn skopeo_copy(from: &str, to: &str) {
    crate::support::run_ok(std::process::Command::new("skopeo").args([
        "copy",
        "--quiet",
        "--all",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        &format!("docker://{from}"),
        &format!("docker://{to}"),
    ]));
}

#[test]
fn pull_comes_from_the_mirror_and_push_goes_upstream() {
    let upstream = Registry::start();
    let mut mirror = Registry::start();
    let builder = Env::new();
    let tag = format!("{}/team/agent:1", upstream.addr);
    let local = build_agent(&builder, &tag, 4096);
    builder.ok(&["push", "-q", &tag]);
    skopeo_copy(&tag, &format!("{}/team/agent:1", mirror.addr));

    // With the upstream registry stopped, only the mirror can serve the pull.
    let mut upstream = upstream;
    upstream.kill();
    let env = Env::new();
    configure(&env, &upstream.addr, &[&mirror.addr]);
    let (ok, out, err) = env.run(&["pull", &tag, "--format", "json"]);
    assert!(ok, "{err}");
    let report = json(&out);
    assert_eq!(report["digest"], local.as_str());
    assert_eq!(strings(&report["from"]), [mirror.addr.as_str()], "{report}");
    let env2 = Env::new();
    configure(&env2, &upstream.addr, &[&mirror.addr]);
    let (ok, _, err) = env2.run(&["pull", &tag]);
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("pulled {tag} from {}:", mirror.addr)),
        "{err}"
    );

    // A push never goes to the mirror: with the upstream down it fails, and the mirror gets no
    // new repository.
    let (ok, _, err) = env.run(&["push", &tag, &format!("{}/team/pushed:1", upstream.addr)]);
    assert!(!ok, "push went somewhere: {err}");
    assert!(err.contains(&upstream.addr), "{err}");
    assert_eq!(
        crate::support::registry::http_status(&mirror.addr, "/v2/team/pushed/tags/list"),
        Some(404),
        "{}",
        mirror.log()
    );
    mirror.kill();
}

#[test]
fn failing_mirrors_fall_back_in_order_to_the_registry() {
    let upstream = Registry::start();
    let empty = Registry::start();
    let builder = Env::new();
    let tag = format!("{}/team/agent:2", upstream.addr);
    let local = build_agent(&builder, &tag, 2048);
    builder.ok(&["push", "-q", &tag]);
    let broken = Hostile::start(|_| Reply::bytes(503, "down"));
    let refused = format!("127.0.0.1:{}", free_port());
    let env = Env::new();
    // Does not resolve; refuses connections; answers 503; has no such image (404).
    configure(
        &env,
        &upstream.addr,
        &["mirror.invalid:5000", &refused, &broken.addr, &empty.addr],
    );
    let (ok, out, err) = env.run(&["pull", &tag, "--format", "json"]);
    assert!(ok, "{err}");
    let report = json(&out);
    assert_eq!(report["digest"], local.as_str());
    assert_eq!(
        strings(&report["from"]),
        [upstream.addr.as_str()],
        "{report}"
    );
    // The 404 mirror was asked (for the manifest) and answered nothing; the broken one too.
    assert!(
        broken
            .requests()
            .iter()
            .any(|r| r.path().contains("/manifests/")),
        "the 503 mirror was never asked"
    );
    // Text output names the skipped mirrors and the 404 one is not "skipped" (it stays usable).
    let env2 = Env::new();
    configure(&env2, &upstream.addr, &["mirror.invalid:5000", &empty.addr]);
    let (ok, _, err) = env2.run(&["pull", &tag]);
    assert!(ok, "{err}");
    assert!(
        err.contains("warning: mirror mirror.invalid:5000 of ") && err.contains("was skipped"),
        "{err}"
    );
    assert!(!err.contains(&format!("mirror {} of", empty.addr)), "{err}");
    assert!(err.contains(&format!("pulled {tag}:")), "{err}");
}

#[test]
fn a_mirror_never_sees_the_registrys_credentials() {
    let up = Arc::new(Content::with_basic("alice", "s3cret"));
    let manifest = up.image(
        "team/agent",
        "1",
        b"{\"config\":{}}",
        &[("application/vnd.oci.image.layer.v1.tar", b"layer bytes")],
    );
    let upstream = {
        let up = up.clone();
        Hostile::start(move |req| up.serve(req))
    };
    // A mirror that asks for credentials (it gets none: none are stored for it), then one that
    // serves only the manifest: the blobs come from the registry, with its credentials.
    let asking = Hostile::start(|_| {
        Reply::bytes(401, r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#)
            .header("WWW-Authenticate", r#"Basic realm="mirror""#)
    });
    let partial = {
        let m = Content::new();
        m.put_manifest(
            "team/agent",
            "1",
            "application/vnd.oci.image.manifest.v1+json",
            &manifest,
        );
        Hostile::start(move |req| m.serve(req))
    };
    let env = Env::new();
    crate::support::write(
        &env.docker().join("config.json"),
        format!(
            "{{\"auths\":{{\"{}\":{{\"auth\":\"{}\"}}}}}}",
            upstream.addr,
            base64_of("alice:s3cret")
        ),
    );
    configure(&env, &upstream.addr, &[&asking.addr, &partial.addr]);
    let tag = format!("{}/team/agent:1", upstream.addr);
    let (ok, out, err) = env.run(&["pull", &tag, "--format", "json"]);
    assert!(ok, "{err}");
    let report = json(&out);
    assert_eq!(
        strings(&report["from"]),
        [partial.addr.as_str(), upstream.addr.as_str()],
        "{report}"
    );
    assert!(
        !asking.requests().is_empty(),
        "the first mirror was never asked"
    );
    for m in [&asking, &partial] {
        assert!(
            m.authorized().is_empty(),
            "mirror {} saw credentials: {:?}",
            m.addr,
            m.authorized()
                .iter()
                .map(|r| r.path().to_owned())
                .collect::<Vec<_>>()
        );
    }
    assert!(
        !upstream.authorized().is_empty(),
        "the registry got no credentials"
    );

    // A push with mirrors configured touches no mirror.
    asking.clear();
    partial.clear();
    env.ok(&[
        "push",
        "-q",
        &tag,
        &format!("{}/team/copy:1", upstream.addr),
    ]);
    assert!(up.manifest("team/copy", "1").is_some());
    assert!(asking.requests().is_empty() && partial.requests().is_empty());
}

fn base64_of(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn a_lying_mirror_changes_nothing_that_is_stored() {
    let up = Arc::new(Content::new());
    let layer: &[u8] = b"the true layer, 32 bytes long...";
    let manifest = up.image(
        "team/agent",
        "1",
        b"{\"config\":{}}",
        &[("application/vnd.oci.image.layer.v1.tar", layer)],
    );
    let pinned = hostile_registry::digest(&manifest);
    let layer_digest = hostile_registry::digest(layer);
    let upstream = {
        let up = up.clone();
        Hostile::start(move |req| up.serve(req))
    };
    // One mirror sends another manifest under the pinned digest; the other sends the right
    // manifest but other bytes (of the same length) for the layer.
    let other_manifest = {
        let fake = Content::new();
        fake.image(
            "team/agent",
            "1",
            b"{\"config\":{}}",
            &[("application/vnd.oci.image.layer.v1.tar", b"evil")],
        )
    };
    let bad_manifest = Hostile::start(move |req| {
        if req.path().contains("/manifests/") {
            Reply::bytes(200, other_manifest.clone())
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        } else {
            Reply::bytes(200, "{}")
        }
    });
    let bad_blob = {
        let up = up.clone();
        let layer_digest = layer_digest.clone();
        Hostile::start(move |req| {
            if req.path().ends_with(&format!("/blobs/{layer_digest}")) {
                Reply::bytes(200, b"an evil layer, also 32 bytes....".to_vec())
            } else {
                up.serve(req)
            }
        })
    };
    let reference = format!("{}/team/agent@{pinned}", upstream.addr);
    for mirror in [&bad_manifest, &bad_blob] {
        let env = Env::new();
        configure(&env, &upstream.addr, &[&mirror.addr]);
        let (ok, out, err) = env.run(&["pull", &reference]);
        assert!(ok, "{err}");
        assert_eq!(out.trim(), pinned);
        assert!(
            err.contains(&format!("warning: mirror {} of", mirror.addr))
                && err.contains("digest mismatch"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(env.store_blob(&layer_digest)).expect("layer stored"),
            layer
        );
        assert_eq!(
            std::fs::read(env.store_blob(&pinned)).expect("manifest stored"),
            manifest
        );
        assert!(
            mirror
                .requests()
                .iter()
                .any(|r| r.path().contains("/team/agent/")),
            "mirror {} was never asked",
            mirror.addr
        );
    }
}

#[test]
fn mirrors_that_are_not_hosts_are_refused_with_the_line() {
    let env = Env::new();
    crate::support::write(
        &env.home().join("config.toml"),
        "[registry.\"127.0.0.1:1\"]\nmirrors = [\"http://mirror.invalid/v2\"]\n",
    );
    let err = env.fails(&["pull", "127.0.0.1:1/team/agent:1"]);
    assert!(
        err.contains("mirror \"http://mirror.invalid/v2\" of registry \"127.0.0.1:1\" is not a HOST or HOST:PORT"),
        "{err}"
    );
}

#[test]
fn resolution_for_lock_uses_the_mirror() {
    use crate::support::images::{self, BinPrefix};
    // The registry the Agentfile names refuses connections; only the mirror has the runtime.
    let mirror = Registry::start();
    let upstream = format!("127.0.0.1:{}", free_port());
    let tmp = tempfile::tempdir().expect("tmp");
    let (_, rt_host) = images::push_bin_index(
        &tmp.path().join("rt"),
        &format!("{}/runtime:1", mirror.addr),
        "runtime",
        b"rt",
        BinPrefix::Io,
        None,
    );
    let env = Env::new();
    let ctx = env.dir.path().join("agent");
    crate::support::write(
        &ctx.join("Agentfile"),
        format!("FROM scratch\nNAME locked\nRUNTIME {upstream}/runtime:1\n"),
    );
    let err = env.fails(&["lock", ctx.to_str().expect("utf8")]);
    assert!(err.contains(&upstream), "{err}");
    configure(&env, &upstream, &[&mirror.addr]);
    env.ok(&["lock", ctx.to_str().expect("utf8")]);
    let lock = json(&std::fs::read_to_string(ctx.join("Agentfile.lock")).expect("lock"));
    let entry = lock["images"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|e| e["reference"] == format!("{upstream}/runtime:1").as_str())
                .cloned()
        })
        .unwrap_or_default();
    assert_eq!(entry["digest"], rt_host.as_str(), "{lock}");
}

/// The referrers (artifact types) the registry at `tag` lists now, asked without mirrors.
fn upstream_referrers(tag: &str) -> Vec<String> {
    let env = Env::new();
    let v = json(&env.ok(&["discover", "--remote", "--format", "json", tag]));
    let mut digests: Vec<String> = v["referrers"]
        .as_array()
        .expect("referrers")
        .iter()
        .map(|r| r["digest"].as_str().unwrap_or_default().to_owned())
        .collect();
    digests.sort();
    digests
}

/// Issue 17.4: the tag-schema read-modify-write of `sign --remote`, `attach --remote` and `push`
/// reads the `sha256-<hex>` index from the registry itself. A mirror holding a stale copy of it
/// (one signature, from before a report was attached) must not be merged and written back,
/// which would delete the report and later signatures from the registry.
#[test]
fn a_stale_mirror_index_never_deletes_referrers() {
    let upstream = Registry::start();
    let mut mirror = Registry::start();
    let builder = Env::new();
    let tag = format!("{}/team/signed:1", upstream.addr);
    let digest = build_agent(&builder, &tag, 512);
    let prefix = builder.dir.path().join("ci");
    builder.ok(&["key", "generate", "--out", &prefix.to_string_lossy()]);
    let key = format!("{}.key", prefix.display());
    builder.ok(&["sign", &tag, "--key", &key]);
    builder.ok(&["push", "-q", &tag]);
    assert_eq!(upstream_referrers(&tag).len(), 1);
    // The mirror gets the image and the referrers index as they are now.
    let hex = digest.trim_start_matches("sha256:");
    skopeo_copy(&tag, &format!("{}/team/signed:1", mirror.addr));
    skopeo_copy(
        &format!("{}/team/signed:sha256-{hex}", upstream.addr),
        &format!("{}/team/signed:sha256-{hex}", mirror.addr),
    );

    // Someone attaches a report upstream; the mirror does not see it.
    let other = Env::new();
    let report = other.dir.path().join("report.json");
    crate::support::write(&report, br#"{"ok":true}"#);
    other.ok(&[
        "attach",
        "--remote",
        &tag,
        "--artifact-type",
        "application/vnd.example.report+json",
        &report.to_string_lossy(),
    ]);
    let before = upstream_referrers(&tag);
    assert_eq!(before.len(), 2);

    // A user whose config has the stale mirror signs remotely: the registry keeps everything.
    let user = Env::new();
    configure(&user, &upstream.addr, &[&mirror.addr]);
    // (Another key: the same key would make the same, deterministic, signature.)
    let prefix = user.dir.path().join("user");
    user.ok(&["key", "generate", "--out", &prefix.to_string_lossy()]);
    let user_key = format!("{}.key", prefix.display());
    let sig2 = user.ok(&["sign", "--remote", &tag, "--key", &user_key]);
    let after = upstream_referrers(&tag);
    assert_eq!(after.len(), 3, "sign --remote lost referrers: {after:?}");
    assert!(
        before.iter().all(|d| after.contains(d)),
        "{before:?} {after:?}"
    );
    assert!(after.contains(&sig2.trim().to_owned()), "{after:?}");

    // And a push of a new local referrer with the mirror configured keeps them too.
    configure(&builder, &upstream.addr, &[&mirror.addr]);
    let note = builder.dir.path().join("note.txt");
    crate::support::write(&note, b"note");
    let attached = builder.ok(&[
        "attach",
        &tag,
        "--artifact-type",
        "application/vnd.example.note",
        &note.to_string_lossy(),
    ]);
    builder.ok(&["push", "-q", &tag]);
    let last = upstream_referrers(&tag);
    assert_eq!(last.len(), 4, "push lost referrers: {last:?}");
    assert!(after.iter().all(|d| last.contains(d)), "{after:?} {last:?}");
    assert!(last.contains(&attached.trim().to_owned()), "{last:?}");
    mirror.kill();
}
