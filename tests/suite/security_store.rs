//! The local store is the user's own, but its files are still checked: a blob damaged on disk is
//! never pushed to a registry under a digest it no longer has. Real `docker-registry`.

use crate::support::cli::{flat, json, Env};
use crate::support::registry::Registry;
use crate::support::repo;

#[test]
fn a_damaged_store_blob_is_never_pushed() {
    if !crate::support::tools::require(
        "a_damaged_store_blob_is_never_pushed",
        "docker-registry",
        &["--version"],
        "apt-get install docker-registry",
    ) {
        return;
    }
    let reg = Registry::start();
    let env = Env::new();
    env.ok(&[
        "build",
        "-q",
        "--offline",
        "--allow-unpinned",
        "-t",
        "m:1",
        repo().join("examples/hello").to_str().unwrap(),
    ]);
    let inspect = json(&env.ok(&["inspect", "m:1", "--format", "json"]));
    let layer = inspect["manifest"]["layers"][1]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let blob = env.store_blob(&layer);

    // Same size, one byte flipped: otters' own digest check while streaming catches it, before
    // the upload's last chunk is sent (not the registry's check at `PUT`, which a registry that
    // trusts its clients would not make).
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&blob, &bytes).unwrap();
    let dest = format!("{}/agents/m:1", reg.addr);
    let out = env.otters().args(["push", "m:1", &dest]).output().unwrap();
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "a damaged blob was pushed: {err}");
    assert!(err.contains(layer.as_str()), "{err}");
    assert!(
        err.contains("in the store is corrupt") && err.contains(&blob.display().to_string()),
        "not caught by otters' own check: {err}"
    );
    assert!(
        !reg.blobs().iter().any(|b| layer.ends_with(b.as_str())),
        "the registry holds the damaged blob under its old digest"
    );

    // A truncated blob is refused before anything is sent.
    std::fs::write(&blob, &bytes[..bytes.len() / 2]).unwrap();
    let out = env.otters().args(["push", "m:1", &dest]).output().unwrap();
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(err.contains("corrupt"), "{err}");
    assert!(err.contains("bytes"), "{err}");
}

/// Tag names and annotations come from images: `images` and `inspect` print them escaped, so an
/// image cannot clear the screen or reorder text with bidi overrides.
#[test]
fn images_and_inspect_never_print_raw_control_characters() {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME esc\nMODEL m\nLABEL note=\"a\u{1b}[2Jb\u{202e}c\"\n",
    );
    env.ok(&[
        "build",
        "-q",
        "--offline",
        "--allow-unpinned",
        "-t",
        "esc:1",
        ctx.to_str().unwrap(),
    ]);
    for args in [&["inspect", "esc:1"][..], &["images"][..]] {
        let out = env.ok(args);
        assert!(
            !out.contains('\u{1b}'),
            "{args:?} printed a raw ESC: {out:?}"
        );
        assert!(
            !out.contains('\u{202e}'),
            "{args:?} printed a raw bidi override: {out:?}"
        );
    }
    let out = env.ok(&["inspect", "esc:1"]);
    assert!(
        out.contains("\\x1b[2J") || out.contains("\\u{1b}[2J"),
        "{out}"
    );
    // JSON output keeps the exact value, escaped by JSON itself.
    let v = json(&env.ok(&["inspect", "esc:1", "--format", "json"]));
    assert_eq!(
        v["manifest"]["annotations"]["note"].as_str(),
        Some("a\u{1b}[2Jb\u{202e}c")
    );
}

/// `otters load` of an archive whose blob is not what its name says: refused, and the content is
/// stored under no digest at all (neither the claimed one nor its real one), no temp file left.
#[test]
fn load_never_stores_a_blob_under_a_name_it_does_not_hash_to() {
    let env = Env::new();
    let claimed = format!("{:064x}", 7);
    let content = b"not what the name says".to_vec();
    let archive = env.dir.path().join("evil.tar");
    let mut b = tar::Builder::new(std::fs::File::create(&archive).unwrap());
    let mut add = |path: &str, data: &[u8]| {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        b.append_data(&mut h, path, data).unwrap();
    };
    add("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#);
    add(&format!("blobs/sha256/{claimed}"), &content);
    add("index.json", br#"{"schemaVersion":2,"manifests":[]}"#);
    b.finish().unwrap();
    drop(b);
    let out = env
        .otters()
        .args(["load", "-i"])
        .arg(&archive)
        .output()
        .unwrap();
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("holds content with digest"), "{err}");
    let real = crate::support::sha256(&content);
    assert!(
        !env.store_blob(&real).exists(),
        "stored under its real digest"
    );
    assert!(!env.store_blob(&format!("sha256:{claimed}")).exists());
    let tmp = env.store().join(".tmp");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "temp files left: {left:?}");
}
