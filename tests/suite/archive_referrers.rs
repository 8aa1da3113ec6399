//! Referrers in archives and layouts through the real binary (issues 31.4 and 32.1–32.4, 32.6):
//! a referrer is recorded only with its subject (a planted "runnable export" and junk bundles
//! for someone else's agent reach neither `kube`, `verify` nor the next `push`; with the agent
//! in the archive, `kube` still deploys only the export it derives and `verify` still finds the
//! signature); the signature of an index's platform manifest travels through `copy -r` to
//! `oci:`/`oci-archive:` and `save --with-deps`; an archive of a signed runnable export, saved
//! by digest, loads in otters, podman and skopeo; `save --with-deps` after a plain pull (and
//! after a registry-to-registry `copy -r`) carries the signature into the air gap.

use crate::support::cli::{self, flat, json, ok, Env};
use crate::support::registry::Registry;
use crate::support::runnable::{last_line, podman, StaticWorld};
use crate::support::{run_ok, write};
use std::path::Path;
use std::process::Command;

const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const SIGN: &str = "https://sigstore.dev/cosign/sign/v1";

/// This machine's platform as `kube` and `export` default to it.
fn host_platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("linux/{arch}")
}

/// `otters key generate` below `dir`; returns (private, public) paths.
fn keys(home: &Path, dir: &Path, name: &str) -> (String, String) {
    let prefix = dir.join(name);
    ok(cli::otters(home)
        .args(["key", "generate", "--out"])
        .arg(&prefix));
    (
        format!("{}.key", prefix.display()),
        format!("{}.pub", prefix.display()),
    )
}

/// The digests of the first level of `discover --format json`.
fn referrers(home: &Path, args: &[&str]) -> Vec<String> {
    let v = json(&ok(cli::otters(home)
        .args(["discover", "--format", "json"])
        .args(args)));
    v["referrers"]
        .as_array()
        .expect("referrers")
        .iter()
        .map(|r| r["digest"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Runs otters in `home`, expecting failure; returns stderr, unwrapped.
fn fails(home: &Path, args: &[&str]) -> String {
    let out = cli::otters(home).args(args).output().expect("otters");
    assert!(
        !out.status.success(),
        "otters {args:?} should fail: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    flat(&String::from_utf8_lossy(&out.stderr))
}

/// Unpacks the archive `file` into the new directory `dir`.
fn untar(file: &Path, dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    run_ok(Command::new("tar").arg("-xf").arg(file).arg("-C").arg(dir));
}

/// The `index.json` of the archive `file`.
fn archive_index(file: &Path) -> serde_json::Value {
    let out = run_ok(Command::new("tar").arg("-xOf").arg(file).arg("index.json"));
    json(&out)
}

fn snapshot(name: &str, text: &str) {
    crate::support::snap::assert("archive", name, text);
}

/// The planted referrers of issue 31.4: Mallory, who can pull Alice's agent, attaches to it an
/// artifact annotated as its runnable export and forty junk "signature" bundles, and hands Alice
/// archives. Without the agent in the archive nothing of it is recorded (`load` says so), so
/// `kube` finds no export and Alice's `push` publishes only her signature; with the agent in it,
/// `verify` still finds Alice's signature among the junk and `kube` refuses the planted export,
/// then deploys the one `otters export` makes. On the code before, `kube` printed the planted
/// digest, `verify` stopped after 32 junk bundles and `push` published all 41.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: each archive is loaded into the store the step before left"
)]
fn referrers_arrive_only_with_their_subject_and_junk_hides_no_signature() {
    const TEST: &str = "referrers_arrive_only_with_their_subject_and_junk_hides_no_signature";
    let Some(w) = StaticWorld::start(TEST) else {
        return;
    };
    let agent = w.agent("probe", "probe");
    let alice = &w.home;
    let (key, public) = keys(alice, w.tmp.path(), "alice");
    ok(cli::otters(alice).args(["sign", &agent, "--key", &key]));
    let signature = referrers(alice, &[&agent]);
    assert_eq!(signature.len(), 1);

    let mallory = w.fresh_home("mallory");
    let m = |args: &[&str]| ok(cli::otters(&mallory).args(args));
    m(&["pull", "-q", &agent]);
    let planted_file = w.tmp.path().join("planted.json");
    write(&planted_file, "{\"not\":\"an export\"}\n");
    let platform = format!("io.openotters.export.platform={}", host_platform());
    let planted = last_line(&m(&[
        "attach",
        &agent,
        "--artifact-type",
        "application/vnd.oci.image.config.v1+json",
        "--annotation",
        "io.openotters.export=runnable",
        "--annotation",
        &platform,
        &planted_file.to_string_lossy(),
    ]));
    let predicate = format!("dev.sigstore.bundle.predicateType={SIGN}");
    let mut junk_digests = Vec::new();
    for i in 0..40 {
        let junk = w.tmp.path().join(format!("junk{i}.json"));
        write(&junk, format!("{{\"junk\":{i}}}\n"));
        junk_digests.push(m(&[
            "attach",
            &agent,
            "--artifact-type",
            BUNDLE,
            "--layer-media-type",
            BUNDLE,
            "--annotation",
            &predicate,
            &junk.to_string_lossy(),
        ]));
    }
    let ctx = w.tmp.path().join("ctx-other");
    write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME other\nMODEL openai/gpt-4o\n",
    );
    m(&["build", "-q", "-t", "other:1", &ctx.to_string_lossy()]);
    let with = w.tmp.path().join("with.tar");
    m(&["save", &agent, "-o", &with.to_string_lossy()]);
    let both = w.tmp.path().join("both.tar");
    m(&["save", &agent, "other:1", "-o", &both.to_string_lossy()]);

    // The archive without the agent: its entry dropped (the catalogue of referrers is still
    // named by the other image's entry, as this otters writes it), and the planted export and
    // five junk bundles also listed as entries of their own, as an older otters wrote referrers.
    let dir = w.tmp.path().join("without");
    untar(&both, &dir);
    let mut index = json(&std::fs::read_to_string(dir.join("index.json")).expect("index"));
    let entries = index["manifests"].as_array_mut().expect("manifests");
    entries.retain(|e| e["annotations"]["org.opencontainers.image.ref.name"] == "other:1");
    assert_eq!(entries.len(), 1);
    for d in std::iter::once(&planted).chain(junk_digests.iter().take(5)) {
        let d = d.trim();
        let size = std::fs::metadata(dir.join("blobs/sha256").join(&d[7..]))
            .expect("referrer manifest")
            .len();
        entries.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": d, "size": size,
        }));
    }
    std::fs::write(dir.join("index.json"), index.to_string()).expect("write index");
    let without = w.tmp.path().join("without.tar");
    run_ok(
        Command::new("tar")
            .arg("-cf")
            .arg(&without)
            .arg("-C")
            .arg(&dir)
            .arg("."),
    );

    let out = cli::otters(alice)
        .args(["load", "-i"])
        .arg(&without)
        .output()
        .expect("load");
    assert!(out.status.success(), "{out:?}");
    // Nothing was recorded for the agent: its one referrer is Alice's signature.
    assert_eq!(referrers(alice, &[&agent]), signature);
    // Entries that name an image the archive lacks are images of their own.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&planted), "{stdout}");
    assert_eq!(stdout.lines().count(), 7, "{stdout}");
    let said = String::from_utf8_lossy(&out.stderr)
        .replace(&without.display().to_string(), "[dir]/without.tar");
    snapshot("load_leaves_out_orphan_referrers", &said);
    let mounts = [
        "--config",
        "webhook=x",
        "--mount",
        "/data=emptydir",
        "--mount",
        "/out=emptydir",
    ];
    let mut kube = vec!["kube", agent.as_str()];
    kube.extend(mounts);
    assert!(
        fails(alice, &kube).contains("has no runnable export"),
        "the planted export was found"
    );
    // Alice's next push publishes her signature only.
    ok(cli::otters(alice).args(["push", "-q", &agent]));
    let fresh = w.fresh_home("fresh");
    assert_eq!(
        referrers(&fresh, &["--remote", &agent]),
        signature,
        "the push published referrers that arrived without their subject"
    );

    // With the agent in the archive they are its referrers, and still harmless.
    ok(cli::otters(alice).args(["load", "-i"]).arg(&with));
    assert_eq!(referrers(alice, &[&agent]).len(), 42);
    let verified = ok(cli::otters(alice).args(["verify", &agent, "--key", &public, "--local"]));
    assert!(verified.contains("Verified OK"), "{verified}");
    let refused = fails(alice, &kube);
    assert!(
        refused.contains(&format!(
            "the runnable export listed for {agent} ({planted}) is not the one otters makes of this agent"
        )) && refused.contains(&format!("run `otters export {agent} --as runnable --push`")),
        "{refused}"
    );
    let export = last_line(&ok(
        cli::otters(alice).args(["export", &agent, "--as", "runnable"])
    ));
    let yaml = ok(cli::otters(alice).args(&kube));
    let repo = agent.rsplit_once(':').expect("tag").0;
    assert!(
        yaml.contains(&format!("image: \"{repo}@{export}\"")) && !yaml.contains(&planted),
        "{yaml}"
    );
}

/// Issue 32.2–32.4 and 32.6: a signed runnable export saved by digest is one named image (its
/// `repository@digest`, for `ctr image import` too) that podman loads and skopeo reads without a
/// name, and otters loads back with its signature (the export's own subject, the agent, is not
/// in the archive: it is an image, not a referrer).
#[test]
fn a_signed_export_saved_by_digest_loads_in_otters_podman_and_skopeo() {
    const TEST: &str = "a_signed_export_saved_by_digest_loads_in_otters_podman_and_skopeo";
    let Some(w) = StaticWorld::start(TEST) else {
        return;
    };
    let agent = w.agent("probe", "runnable");
    let home = &w.home;
    let export = last_line(&ok(
        cli::otters(home).args(["export", &agent, "--as", "runnable"])
    ));
    let (key, public) = keys(home, w.tmp.path(), "ci");
    ok(cli::otters(home).args(["sign", &export, "--key", &key]));
    let file = w.tmp.path().join("run.tar");
    ok(cli::otters(home).args(["save", &export, "-o"]).arg(&file));

    let repo = agent.rsplit_once(':').expect("tag").0;
    let name = format!("{repo}@{export}");
    let index = archive_index(&file);
    let entries = index["manifests"].as_array().expect("manifests");
    assert_eq!(entries.len(), 1, "{index}");
    let notes = &entries[0]["annotations"];
    assert_eq!(notes["org.opencontainers.image.ref.name"], name.as_str());
    assert_eq!(notes["io.containerd.image.name"], name.as_str());

    let env = Env::new();
    let loaded = env.ok(&["load", "-i", &file.to_string_lossy()]);
    assert_eq!(loaded.trim(), export, "{loaded}");
    assert!(env
        .ok(&["verify", &export, "--key", &public, "--local"])
        .contains("Verified OK"));
    // The same archive unpacked (`load -i DIR` reads the catalogue there too).
    let unpacked = env.dir.path().join("unpacked");
    untar(&file, &unpacked);
    let from_dir = Env::new();
    from_dir.ok(&["load", "-i", &unpacked.to_string_lossy()]);
    assert!(from_dir
        .ok(&["verify", &export, "--key", &public, "--local"])
        .contains("Verified OK"));
    let copied = env.dir.path().join("copied");
    env.ok(&[
        "copy",
        &format!("oci-archive:{}:{name}", file.display()),
        &format!("oci:{}", copied.display()),
    ]);
    // That layout lists the signature as an entry of its own; `pull oci:DIR` still finds the
    // one image.
    let pulled = Env::new().ok(&["pull", &format!("oci:{}", copied.display())]);
    assert!(pulled.contains(&export), "{pulled}");

    let skopeo = run_ok(
        Command::new("skopeo")
            .arg("inspect")
            .arg(format!("oci-archive:{}", file.display())),
    );
    assert_eq!(json(&skopeo)["Digest"], export.as_str());
    let Some(podman) = podman(TEST, w.tmp.path(), &w.reg.addr) else {
        return;
    };
    let out = podman()
        .args(["load", "-i"])
        .arg(&file)
        .output()
        .expect("podman");
    let _ = podman().args(["rmi", "-f", &name]).output();
    assert!(
        out.status.success(),
        "podman load: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The digest of the only platform manifest of the index `reference` names (read by skopeo).
fn platform_manifest(reference: &str) -> String {
    let raw = run_ok(Command::new("skopeo").args([
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]));
    json(&raw)["manifests"][0]["digest"]
        .as_str()
        .expect("an index")
        .to_owned()
}

/// Issue 32.1: the signature of a platform manifest of an index the agent pins (where
/// `cosign --recursive` and notation put them) reaches an `oci:` layout, an `oci-archive:` and a
/// `save --with-deps` archive, as it reaches a registry: each loads into a fresh store where it
/// verifies with no registry at all.
#[test]
fn platform_signatures_travel_into_layouts_and_archives() {
    const TEST: &str = "platform_signatures_travel_into_layouts_and_archives";
    let Some(mut w) = StaticWorld::start(TEST) else {
        return;
    };
    let agent = w.agent("probe", "signed");
    let home = w.home.clone();
    let runtime = format!("{}/runtime:1", w.reg.addr);
    let pin = platform_manifest(&runtime);
    let pinned = format!("{}/runtime@{pin}", w.reg.addr);
    let (key, public) = keys(&home, w.tmp.path(), "ci");
    ok(cli::otters(&home).args(["sign", "--remote", &pinned, "--key", &key]));

    let copier = Env::new();
    let layout = copier.dir.path().join("layout");
    let file = copier.dir.path().join("closure.tar");
    copier.ok(&["copy", "-r", &agent, &format!("oci:{}", layout.display())]);
    copier.ok(&[
        "copy",
        "-r",
        &agent,
        &format!("oci-archive:{}", file.display()),
    ]);
    let puller = Env::new();
    puller.ok(&["pull", "-q", &agent]);
    let saved = puller.dir.path().join("saved.tar");
    puller.ok(&[
        "save",
        "--with-deps",
        &agent,
        "-o",
        &saved.to_string_lossy(),
    ]);

    w.reg.kill();
    for from in [&layout, &file, &saved] {
        let env = Env::new();
        env.ok(&["load", "-i", &from.to_string_lossy()]);
        let out = env.ok(&["verify", &pin, "--key", &public, "--local"]);
        assert!(out.contains("Verified OK"), "{}: {out}", from.display());
    }
}

/// Issue 32.4: `save --with-deps` after a plain `pull` asks the registry for the signature (a
/// plain pull brings none), and after a registry-to-registry `copy -r` (which stages no image)
/// pulls the agent first, as the guide's recipe runs; in the air gap, `verify` then checks the
/// loaded copy. When the registry cannot be asked and the store has no signature, `save` says so
/// and how to fix it, instead of writing an archive that cannot be verified.
#[test]
fn save_with_deps_carries_the_signature_a_plain_pull_left_behind() {
    const TEST: &str = "save_with_deps_carries_the_signature_a_plain_pull_left_behind";
    let Some(mut w) = StaticWorld::start(TEST) else {
        return;
    };
    let agent = w.agent("probe", "team/meteo");
    let (key, public) = keys(&w.home, w.tmp.path(), "ci");
    ok(cli::otters(&w.home).args(["sign", "--remote", &agent, "--key", &key]));

    let plain = Env::new();
    plain.ok(&["pull", "-q", &agent]);
    let first = plain.dir.path().join("first.tar");
    plain.ok(&[
        "save",
        "--with-deps",
        &agent,
        "-o",
        &first.to_string_lossy(),
    ]);

    let production = Registry::start();
    let promoted = format!("{}/team/meteo:1", production.addr);
    let copier = Env::new();
    copier.ok(&["copy", "-r", &agent, &promoted]);
    let second = copier.dir.path().join("second.tar");
    // As the guide's recipe: the pins still name the first registry.
    copier.ok(&[
        "save",
        "--with-deps",
        "--from-registry",
        &w.reg.addr,
        &promoted,
        "-o",
        &second.to_string_lossy(),
    ]);

    // A plain pull of the agent and the images it pins, then no registry.
    let late = Env::new();
    for image in [
        &agent,
        &format!("{}/runtime:1", w.reg.addr),
        &format!("{}/tool:1", w.reg.addr),
    ] {
        late.ok(&["pull", "-q", image]);
    }
    w.reg.kill();
    drop(production);
    for (file, name) in [(&first, &agent), (&second, &promoted)] {
        let env = Env::new();
        env.ok(&["load", "-i", &file.to_string_lossy()]);
        let out = env.ok(&["verify", name, "--key", &public]);
        assert!(out.contains("Verified OK"), "{}: {out}", file.display());
    }
    let out = late
        .otters()
        .args(["save", "--with-deps", &agent, "-o"])
        .arg(late.dir.path().join("x.tar"))
        .output()
        .expect("save");
    assert!(!out.status.success());
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(
        err.contains(&format!(
            "cannot ask the registry of {agent} for its signatures and other referrers, and the store has none"
        )) && err.contains(&format!("run `otters pull --referrers {agent}`")),
        "{err}"
    );
    assert!(!late.dir.path().join("x.tar").exists());
}
