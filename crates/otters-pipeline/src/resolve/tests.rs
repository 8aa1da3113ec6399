//! Unit tests of the resolve stage through its [`Registry`] seam, against the in-memory
//! [`FakeRegistry`]: pins from tags, digests and indexes, the lock offline and with `--locked`,
//! registry failures as their diagnostics (AF401–AF412), and a FROM parent pulled, hydrated and
//! merged.

use super::fake::{self, FakeRegistry};
use super::lockfile::BinInfo;
use super::*;
use otters_agentfile::check;
use otters_agentfile::diagnostic::SourceFile;
use otters_oci::registry::RegistryError;
use otters_oci::spec::descriptor::{
    AGENT_CONFIG, ANN_TITLE, CONTEXT_LAYER, FILE_LAYER, TAR_GZIP_LAYER,
};
use std::path::Path;
use tempfile::TempDir;

const RUNTIME: &str = "reg.test/lib/runtime:1";
const JQ: &str = "reg.test/tools/jq:1.7";
const CURL: &str = "reg.test/tools/curl:8";
const PARENT: &str = "reg.test/agents/parent:1";
const IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// The Agentfile with a RUNTIME and one BIN that most tests resolve.
const AGENT: &str = "FROM scratch\nNAME a\nMODEL m/x\nRUNTIME reg.test/lib/runtime:1\nBIN jq reg.test/tools/jq:1.7\n";

fn model(text: &str) -> Agentfile {
    check::analyze(
        &SourceFile::new("Agentfile", text),
        &check::Options::default(),
    )
    .model
}

fn platform(s: &str) -> otters_oci::Platform {
    otters_oci::Platform::parse(s).unwrap_or_else(|e| panic!("{e}"))
}

/// Options for `platform`, with a store (and lock path) in `dir`.
fn options(dir: &TempDir, target: &str) -> Options {
    Options {
        offline: false,
        locked: false,
        allow_unpinned: false,
        platform: platform(target),
        insecure: false,
        lock_path: dir.path().join(LOCK_NAME),
        store: Store::open(dir.path().join("store")).unwrap_or_else(|e| panic!("{e}")),
        docker_config: None,
    }
}

fn ok(r: Result<Resolution, Vec<Diagnostic>>) -> Resolution {
    r.unwrap_or_else(|d| panic!("resolution failed: {d:#?}"))
}

fn err(r: Result<Resolution, Vec<Diagnostic>>) -> Vec<Diagnostic> {
    match r {
        Ok(res) => panic!("resolution succeeded: {:?}", res.pins),
        Err(d) => d,
    }
}

/// The text a diagnostic points at.
fn at<'a>(text: &'a str, d: &Diagnostic) -> &'a str {
    &text[d.span_or_start().start..d.span_or_start().end]
}

/// A single-manifest image whose config says it is for `target`, with `annotations` and (when
/// given) a usage document titled `USAGE.md`.
fn image(
    fake: &mut FakeRegistry,
    target: &str,
    annotations: &[(&str, &str)],
    usage: Option<&str>,
) -> Descriptor {
    let p = platform(target);
    let config = serde_json::json!({"os": p.os, "architecture": p.architecture});
    let config = fake.blob(IMAGE_CONFIG, config.to_string().as_bytes());
    let mut layers = vec![fake.blob(TAR_GZIP_LAYER, format!("binary for {target}").as_bytes())];
    if let Some(u) = usage {
        layers.push(
            fake.blob("text/markdown", u.as_bytes())
                .with_annotation(ANN_TITLE, "USAGE.md"),
        );
    }
    fake.manifest(&config, &layers, annotations)
}

/// The annotations of an openotters bin named `name`.
/// The bin name annotation of a runtime image (spec §f: a RUNTIME is a bin image).
const RT: [(&str, &str); 1] = [("io.openotters.bin.name", "runtime")];

fn bin(name: &'static str) -> [(&'static str, &'static str); 3] {
    [
        ("io.openotters.bin.name", name),
        ("io.openotters.bin.usage", "/USAGE.md"),
        (
            "org.opencontainers.image.description",
            "from the annotation",
        ),
    ]
}

/// A registry with a linux/amd64 runtime and jq bin under [`RUNTIME`] and [`JQ`].
fn registry() -> (FakeRegistry, Descriptor, Descriptor) {
    let mut fake = FakeRegistry::new();
    let rt = image(&mut fake, "linux/amd64", &RT, None);
    fake.tag(RUNTIME, &rt);
    let jq = image(&mut fake, "linux/amd64", &bin("jq"), Some("jq FILTER FILE"));
    fake.tag(JQ, &jq);
    (fake, rt, jq)
}

fn entry(role: Role, reference: &str, digest: &otters_oci::Digest) -> Entry {
    Entry {
        role,
        reference: reference.to_owned(),
        digest: digest.clone(),
        index: None,
        platform: None,
        bin: None,
        description: None,
        usage: None,
    }
}

#[test]
fn tags_of_runtime_and_bin_are_pinned_to_their_manifest_digests() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, rt, jq) = registry();
    let res = ok(resolve_with(
        &model(AGENT),
        &options(&dir, "linux/amd64"),
        None,
        Some(&fake),
    ));
    assert_eq!(
        res.pins.runtime,
        Some(Pin {
            reference: RUNTIME.into(),
            digest: rt.digest.clone()
        })
    );
    assert_eq!(res.pins.bins["jq"].digest, jq.digest);
    assert_eq!(res.lock.platform, "linux/amd64");
    let mut runtime = entry(Role::Runtime, RUNTIME, &rt.digest);
    runtime.bin = Some(BinInfo {
        name: "runtime".into(),
        path: None,
        usage_path: None,
    });
    assert_eq!(res.lock.get(Role::Runtime, RUNTIME), Some(&runtime));
    let jq_entry = res
        .lock
        .get(Role::Bin, JQ)
        .unwrap_or_else(|| panic!("no jq"));
    assert_eq!(jq_entry.digest, jq.digest);
    assert_eq!(
        (
            jq_entry.index.as_ref().map(otters_oci::Digest::as_str),
            jq_entry.platform.as_deref()
        ),
        (None, None)
    );
    assert_eq!(
        jq_entry.bin,
        Some(BinInfo {
            name: "jq".into(),
            path: None,
            usage_path: Some("/USAGE.md".into())
        })
    );
    assert_eq!(jq_entry.usage.as_deref(), Some("jq FILTER FILE"));
    // The Agentfile gave the bin no description or usage: the image's fill them.
    let b = &res.model.agent.bins[0];
    assert_eq!(b.description.as_deref(), Some("from the annotation"));
    assert_eq!(b.usage.as_deref(), Some("jq FILTER FILE"));
    assert!(res.warnings.is_empty() && res.parent.is_none());
    // A single manifest's config is read to check its platform; the usage document is read.
    assert_eq!(
        fake.calls(),
        [
            "resolve reg.test/lib/runtime:1",
            "fetch_blob reg.test/lib/runtime:1",
            "resolve reg.test/tools/jq:1.7",
            "fetch_blob reg.test/tools/jq:1.7",
            "fetch_blob reg.test/tools/jq:1.7",
        ]
    );
}

#[test]
fn a_description_written_in_the_agentfile_wins_over_the_annotation() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, _, _) = registry();
    let text = AGENT.replace(JQ, &format!("{JQ} \"my words\""));
    let res = ok(resolve_with(
        &model(&text),
        &options(&dir, "linux/amd64"),
        None,
        Some(&fake),
    ));
    let b = &res.model.agent.bins[0];
    assert_eq!(b.description.as_deref(), Some("my words"));
    // The lock still records what the image says.
    assert_eq!(
        res.lock
            .get(Role::Bin, JQ)
            .and_then(|e| e.description.as_deref()),
        Some("from the annotation")
    );
}

#[test]
fn a_digest_reference_is_pinned_to_that_digest() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, rt, _) = registry();
    let by_digest = format!("reg.test/lib/runtime@{}", rt.digest);
    let text = AGENT.replace(RUNTIME, &by_digest);
    let res = ok(resolve_with(
        &model(&text),
        &options(&dir, "linux/amd64"),
        None,
        Some(&fake),
    ));
    assert_eq!(
        res.pins.runtime,
        Some(Pin {
            reference: by_digest.clone(),
            digest: rt.digest.clone()
        })
    );
    assert_eq!(fake.calls()[0], format!("resolve {by_digest}"));
}

#[test]
fn an_index_is_followed_to_the_manifest_of_the_target_platform() {
    let (mut fake, _, _) = registry();
    let amd = image(&mut fake, "linux/amd64", &RT, None);
    let arm = image(&mut fake, "linux/arm64", &RT, None);
    let v7 = image(&mut fake, "linux/arm/v7", &RT, None);
    let index = fake.index(&[
        ("linux/amd64", &amd),
        ("linux/arm64", &arm),
        ("linux/arm/v7", &v7),
    ]);
    fake.tag(RUNTIME, &index);
    let text = "FROM scratch\nRUNTIME reg.test/lib/runtime:1\n";
    for (target, want) in [
        ("linux/arm64", &arm),
        ("linux/arm/v7", &v7),
        ("linux/amd64", &amd),
    ] {
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let calls_before = fake.calls().len();
        let res = ok(resolve_with(
            &model(text),
            &options(&dir, target),
            None,
            Some(&fake),
        ));
        assert_eq!(
            res.pins.runtime.as_ref().map(|p| p.digest.as_str()),
            Some(want.digest.as_str()),
            "{target}"
        );
        let e = res
            .lock
            .get(Role::Runtime, RUNTIME)
            .unwrap_or_else(|| panic!("no entry"));
        assert_eq!(e.index.as_ref(), Some(&index.digest));
        assert_eq!(e.platform.as_deref(), Some(target));
        assert_eq!(res.lock.platform, target);
        // The index named the platform: no config is fetched to check it.
        assert_eq!(
            fake.calls()[calls_before..],
            ["resolve reg.test/lib/runtime:1"]
        );
    }
}

#[test]
fn an_index_without_the_target_platform_is_af411_listing_what_it_has() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (mut fake, _, _) = registry();
    let amd = image(&mut fake, "linux/amd64", &RT, None);
    let arm = image(&mut fake, "linux/arm64", &RT, None);
    let index = fake.index(&[("linux/amd64", &amd), ("linux/arm64", &arm)]);
    fake.tag(RUNTIME, &index);
    let text = "FROM scratch\nRUNTIME reg.test/lib/runtime:1\n";
    let d = err(resolve_with(
        &model(text),
        &options(&dir, "linux/s390x"),
        None,
        Some(&fake),
    ));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code.as_str(), "AF411");
    assert_eq!(
        d[0].message,
        "image `reg.test/lib/runtime:1` has no image for linux/s390x: it is built for linux/amd64, linux/arm64"
    );
    assert_eq!(at(text, &d[0]), RUNTIME);
}

#[test]
fn a_single_manifest_for_another_platform_is_af411_naming_it() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let mut fake = FakeRegistry::new();
    let arm = image(&mut fake, "linux/arm64", &RT, None);
    fake.tag(RUNTIME, &arm);
    let text = "FROM scratch\nRUNTIME reg.test/lib/runtime:1\n";
    let d = err(resolve_with(
        &model(text),
        &options(&dir, "linux/amd64"),
        None,
        Some(&fake),
    ));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code.as_str(), "AF411");
    assert_eq!(
        d[0].message,
        "image `reg.test/lib/runtime:1` has no image for linux/amd64: it is built for linux/arm64"
    );
}

/// A BIN, and the RUNTIME (a bin image too, spec §f), without the bin name annotation: AF403 on
/// its line, saying which role needs it.
#[test]
fn a_runtime_or_bin_image_without_a_bin_name_is_af403() {
    for (reference, role) in [(JQ, "BIN"), (RUNTIME, "RUNTIME")] {
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let (mut fake, _, _) = registry();
        let plain = image(&mut fake, "linux/amd64", &[], None);
        fake.tag(reference, &plain);
        let d = err(resolve_with(
            &model(AGENT),
            &options(&dir, "linux/amd64"),
            None,
            Some(&fake),
        ));
        assert_eq!(
            d.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
            ["AF403"]
        );
        assert!(
            d[0].message
                .starts_with(&format!("image `{reference}` is not a bin"))
                && d[0].message.contains(&format!("a {role} image needs")),
            "{}",
            d[0].message
        );
        assert_eq!(at(AGENT, &d[0]), reference);
    }
}

/// A lock pinning [`RUNTIME`] and [`JQ`] (with the bin's metadata) for linux/amd64.
fn lock_for(platform: &str) -> Lockfile {
    let mut lock = Lockfile::new(platform);
    let mut rt = entry(
        Role::Runtime,
        RUNTIME,
        &otters_oci::Digest::from_hex(&"a".repeat(64)).unwrap_or_else(|e| panic!("{e}")),
    );
    rt.bin = Some(BinInfo {
        name: "runtime".into(),
        path: None,
        usage_path: None,
    });
    lock.insert(rt);
    let mut jq = entry(
        Role::Bin,
        JQ,
        &otters_oci::Digest::from_hex(&"b".repeat(64)).unwrap_or_else(|e| panic!("{e}")),
    );
    jq.bin = Some(BinInfo {
        name: "jq".into(),
        path: None,
        usage_path: Some("/USAGE.md".into()),
    });
    jq.description = Some("locked description".into());
    jq.usage = Some("locked usage".into());
    lock.insert(jq);
    lock
}

#[test]
fn offline_pins_come_from_the_lock_and_no_registry_is_asked() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, _, _) = registry();
    let lock = lock_for("linux/amd64");
    let opts = Options {
        offline: true,
        ..options(&dir, "linux/amd64")
    };
    let res = ok(resolve_with(&model(AGENT), &opts, Some(&lock), Some(&fake)));
    assert!(fake.calls().is_empty(), "asked: {:?}", fake.calls());
    assert_eq!(
        res.pins.runtime.map(|p| p.digest.to_string()),
        Some(format!("sha256:{}", "a".repeat(64)))
    );
    assert_eq!(
        res.pins.bins["jq"].digest.as_str(),
        format!("sha256:{}", "b".repeat(64))
    );
    assert_eq!(res.lock, lock);
    let b = &res.model.agent.bins[0];
    assert_eq!(b.description.as_deref(), Some("locked description"));
    assert_eq!(b.usage.as_deref(), Some("locked usage"));
}

/// Issue 18.11 offline: a RUNTIME pin whose lock entry records no bin name (a lock written
/// before the RUNTIME was checked) is AF403, as the registry's answer would be; no registry asked.
#[test]
fn offline_a_runtime_pin_without_a_bin_name_is_af403() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, _, _) = registry();
    let mut lock = lock_for("linux/amd64");
    for e in &mut lock.images {
        if e.role == Role::Runtime {
            e.bin = None;
        }
    }
    let opts = Options {
        offline: true,
        ..options(&dir, "linux/amd64")
    };
    let d = err(resolve_with(&model(AGENT), &opts, Some(&lock), Some(&fake)));
    assert_eq!(
        d.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
        ["AF403"]
    );
    assert_eq!(at(AGENT, &d[0]), RUNTIME);
    assert!(
        d[0].message.contains("a RUNTIME image needs")
            && d[0]
                .message
                .contains("Agentfile.lock pins it to sha256:aaaa"),
        "{}",
        d[0].message
    );
    assert!(fake.calls().is_empty());
}

#[test]
fn online_a_pinned_tag_is_asked_again_and_the_new_lock_follows_it() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, rt, jq) = registry();
    let lock = lock_for("linux/amd64");
    let res = ok(resolve_with(
        &model(AGENT),
        &options(&dir, "linux/amd64"),
        Some(&lock),
        Some(&fake),
    ));
    assert_eq!(
        res.lock.get(Role::Runtime, RUNTIME).map(|e| &e.digest),
        Some(&rt.digest)
    );
    assert_eq!(
        res.lock.get(Role::Bin, JQ).map(|e| &e.digest),
        Some(&jq.digest)
    );
    assert!(fake
        .calls()
        .contains(&"resolve reg.test/lib/runtime:1".to_owned()));
}

#[test]
fn offline_without_a_pin_is_af405_and_allow_unpinned_makes_it_a_warning() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, _, _) = registry();
    let mut lock = lock_for("linux/amd64");
    lock.images.retain(|e| e.role != Role::Bin);
    let opts = Options {
        offline: true,
        ..options(&dir, "linux/amd64")
    };
    let d = err(resolve_with(&model(AGENT), &opts, Some(&lock), Some(&fake)));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code.as_str(), "AF405");
    assert_eq!(
        d[0].message,
        "--offline, but Agentfile.lock has no pin for `reg.test/tools/jq:1.7`"
    );
    assert_eq!(at(AGENT, &d[0]), JQ);

    let opts = Options {
        allow_unpinned: true,
        ..opts
    };
    let res = ok(resolve_with(&model(AGENT), &opts, Some(&lock), Some(&fake)));
    assert_eq!(
        res.warnings
            .iter()
            .map(|w| w.code.as_str())
            .collect::<Vec<_>>(),
        ["AF201"]
    );
    assert!(res.pins.bins.is_empty());
    assert!(res.pins.runtime.is_some());
    assert!(fake.calls().is_empty());
}

#[test]
fn offline_with_a_lock_for_another_platform_is_af405_naming_both() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let lock = lock_for("linux/arm64");
    let opts = Options {
        offline: true,
        ..options(&dir, "linux/amd64")
    };
    let d = err(resolve_with(&model(AGENT), &opts, Some(&lock), None));
    assert_eq!(
        d.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
        ["AF405", "AF405"]
    );
    assert_eq!(
        d[0].message,
        "--offline, but Agentfile.lock pins images for linux/arm64, not linux/amd64"
    );
}

#[test]
fn locked_with_a_lock_the_registry_no_longer_agrees_with_is_af406() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, rt, jq) = registry();
    let old = format!("sha256:{}", "a".repeat(64));
    let mut lock = lock_for("linux/amd64");
    // The bin's entry is what the registry says; the runtime's is stale.
    lock.insert(
        ok(resolve_with(
            &model(AGENT),
            &options(&dir, "linux/amd64"),
            None,
            Some(&fake),
        ))
        .lock
        .get(Role::Bin, JQ)
        .cloned()
        .unwrap_or_else(|| panic!("no jq")),
    );
    lock.insert(entry(Role::Bin, CURL, &jq.digest));
    let opts = Options {
        locked: true,
        ..options(&dir, "linux/amd64")
    };
    let d = err(resolve_with(&model(AGENT), &opts, Some(&lock), Some(&fake)));
    assert_eq!(
        d.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
        ["AF406", "AF406"]
    );
    let messages: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
    assert!(messages.contains(
        &format!(
            "--locked, but `{RUNTIME}` now resolves to {}, not {old} as Agentfile.lock says",
            rt.digest
        )
        .as_str()
    ));
    assert!(messages.contains(
        &"--locked, but Agentfile.lock pins `reg.test/tools/curl:8`, which the Agentfile no longer uses"
    ));
    // Without --locked the same resolution succeeds with a lock that follows the registry.
    let res = ok(resolve_with(
        &model(AGENT),
        &options(&dir, "linux/amd64"),
        Some(&lock),
        Some(&fake),
    ));
    assert_eq!(res.pins.runtime.map(|p| p.digest), Some(rt.digest));
    assert!(res.lock.get(Role::Bin, CURL).is_none());
}

#[test]
fn registry_failures_become_their_af4xx_code_with_the_reference() {
    fn denied(r: &Reference) -> RegistryError {
        RegistryError::Denied {
            registry: r.registry.clone(),
            user: None,
            what: "pull".into(),
        }
    }
    fn forbidden(r: &Reference) -> RegistryError {
        RegistryError::Forbidden {
            registry: r.registry.clone(),
            repository: r.repository.clone(),
            user: Some("me".into()),
            action: "pull",
        }
    }
    fn not_found(r: &Reference) -> RegistryError {
        RegistryError::NotFound {
            reference: r.familiar(),
        }
    }
    fn blob_not_found(r: &Reference) -> RegistryError {
        RegistryError::BlobNotFound {
            reference: r.familiar(),
            digest: otters_oci::Digest::from_hex(&"c".repeat(64)).unwrap_or_else(|e| panic!("{e}")),
        }
    }
    fn unreachable(r: &Reference) -> RegistryError {
        RegistryError::Unreachable {
            registry: r.registry.clone(),
            reason: "connection refused".into(),
        }
    }
    fn tls(r: &Reference) -> RegistryError {
        RegistryError::Tls {
            registry: r.registry.clone(),
            reason: "unknown issuer".into(),
        }
    }
    fn mismatch(r: &Reference) -> RegistryError {
        RegistryError::DigestMismatch {
            registry: r.registry.clone(),
            what: "manifest",
            expected: format!("sha256:{}", "a".repeat(64)),
            actual: format!("sha256:{}", "d".repeat(64)),
        }
    }
    fn http(r: &Reference) -> RegistryError {
        RegistryError::Http {
            registry: r.registry.clone(),
            action: "GET".into(),
            status: 500,
            body: String::new(),
        }
    }
    let cases: [(fake::Failure, &str, &str); 8] = [
        (
            denied,
            "AF402",
            "registry refused access to `reg.test/lib/runtime:1`",
        ),
        (
            forbidden,
            "AF402",
            "registry refused access to `reg.test/lib/runtime:1`",
        ),
        (
            not_found,
            "AF401",
            "cannot resolve image `reg.test/lib/runtime:1`: reg.test/lib/runtime:1 does not exist",
        ),
        (
            blob_not_found,
            "AF401",
            "cannot resolve image `reg.test/lib/runtime:1`: blob sha256:ccc",
        ),
        (
            unreachable,
            "AF410",
            "cannot resolve image `reg.test/lib/runtime:1`: cannot reach registry reg.test",
        ),
        (
            tls,
            "AF410",
            "cannot resolve image `reg.test/lib/runtime:1`: TLS with registry reg.test failed",
        ),
        (
            mismatch,
            "AF412",
            "cannot resolve image `reg.test/lib/runtime:1`: digest mismatch: manifest",
        ),
        (
            http,
            "AF412",
            "cannot resolve image `reg.test/lib/runtime:1`: reg.test answered 500 to GET",
        ),
    ];
    for (failure, code, message) in cases {
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let (mut fake, _, _) = registry();
        fake.fail("reg.test/lib/runtime", failure);
        let d = err(resolve_with(
            &model(AGENT),
            &options(&dir, "linux/amd64"),
            None,
            Some(&fake),
        ));
        assert_eq!(d.len(), 1, "{code}: {d:#?}");
        assert_eq!(d[0].code.as_str(), code, "{}", d[0].message);
        assert!(
            d[0].message.starts_with(message),
            "{code}: {}",
            d[0].message
        );
        assert_eq!(at(AGENT, &d[0]), RUNTIME);
        if code == "AF402" {
            let help = d[0].help.as_deref().unwrap_or_default();
            assert!(help.contains("otters login reg.test"), "{help}");
        }
    }
}

#[test]
fn an_unreachable_registry_suggests_offline_only_when_the_lock_pins_the_image() {
    fn unreachable(r: &Reference) -> RegistryError {
        RegistryError::Unreachable {
            registry: r.registry.clone(),
            reason: "connection refused".into(),
        }
    }
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (mut fake, _, _) = registry();
    fake.fail("reg.test/lib/runtime", unreachable);
    let opts = options(&dir, "linux/amd64");
    let help = |lock: Option<&Lockfile>| {
        let d = err(resolve_with(&model(AGENT), &opts, lock, Some(&fake)));
        assert_eq!(d[0].code.as_str(), "AF410");
        d[0].help.clone().unwrap_or_default()
    };
    assert!(help(Some(&lock_for("linux/amd64")))
        .contains("`otters build --offline` builds from the lock"));
    assert!(help(None).contains("an --offline build cannot help yet"));
    // A lock for another platform pins nothing for this build.
    assert!(help(Some(&lock_for("linux/arm64"))).contains("cannot help yet"));
}

/// The parent agent of the FROM tests: its model, context and ADD layers, in `fake` under
/// [`PARENT`]. Returns the manifest and the ADD layer.
fn parent_image(fake: &mut FakeRegistry, from: &str) -> (Descriptor, Descriptor) {
    let text = format!(
        "FROM {from}\nNAME parent\nMODEL anthropic/parent-model\nRUNTIME {RUNTIME}\n\
         CONTEXT SOUL \"parent rules\" <<EOF\nparent soul\nEOF\nCONTEXT STYLE file://style.md\n\
         CONFIG temperature=0.2\nBIN jq {JQ} \"JSON processor\"\nADD notes.txt\nLABEL team=parent\n"
    );
    let blob = otters_agentfile::ir::config_blob(&model(&text)).unwrap_or_else(|e| panic!("{e}"));
    let config = fake.blob(AGENT_CONFIG, &blob);
    let style = fake
        .blob(CONTEXT_LAYER, b"be terse\n")
        .with_annotation(ANN_TITLE, "STYLE.md");
    let notes = fake
        .blob(FILE_LAYER, b"parent notes\n")
        .with_annotation(ANN_TITLE, "notes.txt");
    let m = fake.manifest(&config, &[style, notes.clone()], &[]);
    fake.tag(PARENT, &m);
    (m, notes)
}

const CHILD: &str = "FROM reg.test/agents/parent:1\nNAME child\n\
CONTEXT SOUL \"child rules\" <<EOF\nchild soul\nEOF\nBIN curl reg.test/tools/curl:8\nLABEL team=child\n";

#[test]
fn a_from_parent_is_pulled_hydrated_and_merged_under_the_child() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (mut fake, rt, jq) = registry();
    let curl = image(&mut fake, "linux/amd64", &bin("curl"), None);
    fake.tag(CURL, &curl);
    let (manifest, notes) = parent_image(&mut fake, "scratch");
    let opts = options(&dir, "linux/amd64");
    let res = ok(resolve_with(&model(CHILD), &opts, None, Some(&fake)));

    let a = &res.model.agent;
    let value =
        |n: &Option<otters_agentfile::ir::Node<String>>| n.as_ref().map(|n| n.value.clone());
    // Overridden by the child.
    assert_eq!(value(&a.name).as_deref(), Some("child"));
    assert_eq!(a.labels["team"].value, "child");
    // Inherited from the parent.
    assert_eq!(value(&a.model).as_deref(), Some("anthropic/parent-model"));
    assert_eq!(value(&a.runtime).as_deref(), Some(RUNTIME));
    assert_eq!(
        a.configs.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
        ["temperature"]
    );
    // Contexts: the child's SOUL replaces the parent's in place; STYLE comes from its layer.
    let contexts: Vec<(&str, Option<&str>, Option<&str>)> = a
        .contexts
        .iter()
        .map(|c| (c.name.as_str(), c.content.as_deref(), c.file.as_deref()))
        .collect();
    assert_eq!(
        contexts,
        [
            ("SOUL", Some("child soul"), None),
            ("STYLE", Some("be terse\n"), None)
        ]
    );
    // BINs and ADDs: the parent's first, then the child's.
    assert_eq!(
        a.bins.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
        ["jq", "curl"]
    );
    assert_eq!(a.bins[0].description.as_deref(), Some("JSON processor"));
    assert_eq!(
        a.adds.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
        ["notes.txt"]
    );
    assert_eq!(res.inherited_adds, std::slice::from_ref(&notes));

    // Pins and lock: the parent by its manifest digest, and its references with the child's.
    let parent = res
        .parent
        .clone()
        .unwrap_or_else(|| panic!("no parent entry"));
    assert_eq!(parent, entry(Role::From, PARENT, &manifest.digest));
    assert_eq!(
        res.pins.runtime.as_ref().map(|p| &p.digest),
        Some(&rt.digest)
    );
    assert_eq!(res.pins.bins["jq"].digest, jq.digest);
    assert_eq!(res.pins.bins["curl"].digest, curl.digest);
    assert_eq!(
        res.lock.images.iter().map(|e| e.role).collect::<Vec<_>>(),
        [Role::From, Role::Runtime, Role::Bin, Role::Bin]
    );
    // The parent was pulled by digest into the store.
    for d in [&manifest.digest, &notes.digest] {
        assert!(opts.store.has_blob(d), "{d} not in the store");
    }
    assert_eq!(
        fake.calls()[..2],
        [
            format!("fetch_manifest {PARENT}"),
            format!("pull {PARENT}@{}", manifest.digest)
        ]
    );

    // Offline with the lock just made: the same result from the store, no registry asked.
    let asked = fake.calls().len();
    let offline = Options {
        offline: true,
        ..opts
    };
    let again = ok(resolve_with(
        &model(CHILD),
        &offline,
        Some(&res.lock),
        Some(&fake),
    ));
    assert_eq!(fake.calls().len(), asked);
    assert_eq!(again.pins, res.pins);
    assert_eq!(again.parent, res.parent);
    assert_eq!(again.inherited_adds, res.inherited_adds);
    assert_eq!(again.model.agent.contexts, res.model.agent.contexts);
}

#[test]
fn a_failure_of_an_inherited_reference_points_at_the_from_line() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let mut fake = FakeRegistry::new();
    parent_image(&mut fake, "scratch");
    let child = "FROM reg.test/agents/parent:1\nNAME child\n";
    // The registry has the parent but not its RUNTIME or BIN.
    let d = err(resolve_with(
        &model(child),
        &options(&dir, "linux/amd64"),
        None,
        Some(&fake),
    ));
    assert_eq!(
        d.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
        ["AF401", "AF401"]
    );
    for d in &d {
        assert_eq!(at(child, d), PARENT);
    }
    assert!(d
        .iter()
        .any(|d| d.message.contains(&format!("`{RUNTIME}`"))));
    assert!(d.iter().any(|d| d.message.contains(&format!("`{JQ}`"))));
}

#[test]
fn a_parent_whose_ancestors_lead_back_to_it_is_af407() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (mut fake, _, _) = registry();
    // parent:1 says FROM grand:1, whose config says FROM parent:1.
    parent_image(&mut fake, "reg.test/agents/grand:1");
    let grand = model("FROM reg.test/agents/parent:1\nNAME grand\n");
    let blob = otters_agentfile::ir::config_blob(&grand).unwrap_or_else(|e| panic!("{e}"));
    let config = fake.blob(AGENT_CONFIG, &blob);
    let m = fake.manifest(&config, &[], &[]);
    fake.tag("reg.test/agents/grand:1", &m);
    let d = err(resolve_with(
        &model(CHILD),
        &options(&dir, "linux/amd64"),
        None,
        Some(&fake),
    ));
    assert_eq!(d[0].code.as_str(), "AF407");
    assert_eq!(
        d[0].message,
        "inheritance cycle: reg.test/agents/parent:1 -> reg.test/agents/grand:1 -> reg.test/agents/parent:1"
    );
    assert_eq!(at(CHILD, &d[0]), PARENT);
}

/// A registry whose runtime and jq bin are indexes for linux/amd64 and linux/arm64; returns the
/// manifests as `[(runtime amd64, runtime arm64), (jq amd64, jq arm64)]`.
fn two_platform_registry() -> (FakeRegistry, [(Descriptor, Descriptor); 2]) {
    let mut fake = FakeRegistry::new();
    let rt_amd = image(&mut fake, "linux/amd64", &RT, None);
    let rt_arm = image(&mut fake, "linux/arm64", &RT, None);
    let rt = fake.index(&[("linux/amd64", &rt_amd), ("linux/arm64", &rt_arm)]);
    fake.tag(RUNTIME, &rt);
    let jq_amd = image(&mut fake, "linux/amd64", &bin("jq"), Some("jq FILTER FILE"));
    let jq_arm = image(&mut fake, "linux/arm64", &bin("jq"), Some("jq FILTER FILE"));
    let jq = fake.index(&[("linux/amd64", &jq_amd), ("linux/arm64", &jq_arm)]);
    fake.tag(JQ, &jq);
    (fake, [(rt_amd, rt_arm), (jq_amd, jq_arm)])
}

#[test]
fn two_platforms_resolve_runtime_and_bin_once_per_platform() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (fake, [(rt_amd, rt_arm), (jq_amd, jq_arm)]) = two_platform_registry();
    let platforms = [platform("linux/amd64"), platform("linux/arm64")];
    let res = resolve_each_with(
        &model(AGENT),
        &options(&dir, "linux/s390x"),
        &platforms,
        &[],
        Some(&fake),
    )
    .unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(res.len(), 2);
    for (r, (p, rt, jq)) in res.iter().zip([
        ("linux/amd64", &rt_amd, &jq_amd),
        ("linux/arm64", &rt_arm, &jq_arm),
    ]) {
        assert_eq!(r.lock.platform, p);
        assert_eq!(
            r.pins.runtime.as_ref().map(|x| &x.digest),
            Some(&rt.digest),
            "{p}"
        );
        assert_eq!(r.pins.bins.get("jq").map(|x| &x.digest), Some(&jq.digest));
        assert_eq!(
            r.lock
                .get(Role::Bin, JQ)
                .and_then(|e| e.platform.as_deref()),
            Some(p)
        );
    }
    // The multi-platform lock reads back as the same per-platform locks, and each is exactly the
    // lock a single-platform build writes.
    let locks: Vec<Lockfile> = res.iter().map(|r| r.lock.clone()).collect();
    let bytes = Lockfile::multi_bytes(&locks);
    let back =
        Lockfile::parse_all(Path::new("Agentfile.lock"), &bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, locks);
    let single = ok(resolve_with(
        &model(AGENT),
        &options(&dir, "linux/arm64"),
        None,
        Some(&fake),
    ));
    assert_eq!(single.lock, locks[1]);
    // Offline, each platform takes its pins from its own part of the lock.
    let mut offline = options(&dir, "linux/s390x");
    offline.offline = true;
    let again = resolve_each_with(&model(AGENT), &offline, &platforms, &back, None)
        .unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(again[1].pins.runtime, res[1].pins.runtime);
    assert_eq!(again[0].pins.bins, res[0].pins.bins);
}

#[test]
fn a_platform_an_image_lacks_fails_with_af411_naming_image_and_platform() {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let (mut fake, [(rt_amd, _), _]) = two_platform_registry();
    // The runtime is published for amd64 only; jq for both.
    let rt = fake.index(&[("linux/amd64", &rt_amd)]);
    fake.tag(RUNTIME, &rt);
    let platforms = [platform("linux/amd64"), platform("linux/arm64")];
    let d = resolve_each_with(
        &model(AGENT),
        &options(&dir, "linux/amd64"),
        &platforms,
        &[],
        Some(&fake),
    )
    .err()
    .unwrap_or_else(|| panic!("a missing platform must fail"));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].code.as_str(), "AF411");
    assert_eq!(
        d[0].message,
        "image `reg.test/lib/runtime:1` has no image for linux/arm64: it is built for linux/amd64"
    );
    assert_eq!(at(AGENT, &d[0]), RUNTIME);
}
