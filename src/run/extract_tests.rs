//! Hand-built tar layers, benign and malicious, against [`super::unpack`] and [`super::find_binary`].

use super::*;

/// One tar entry written with raw header bytes (so `..` and absolute names can be produced).
struct E<'a> {
    name: &'a str,
    kind: tar::EntryType,
    data: &'a [u8],
    link: &'a str,
    size: Option<u64>,
}

fn file<'a>(name: &'a str, data: &'a [u8]) -> E<'a> {
    E {
        name,
        kind: tar::EntryType::Regular,
        data,
        link: "",
        size: None,
    }
}
fn link<'a>(name: &'a str, kind: tar::EntryType, target: &'a str) -> E<'a> {
    E {
        name,
        kind,
        data: b"",
        link: target,
        size: None,
    }
}

fn tar_of(entries: &[E<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut h = tar::Header::new_old();
        let raw = h.as_old_mut();
        raw.name[..e.name.len()].copy_from_slice(e.name.as_bytes());
        raw.linkname[..e.link.len()].copy_from_slice(e.link.as_bytes());
        h.set_entry_type(e.kind);
        h.set_mode(0o755);
        h.set_size(e.size.unwrap_or(e.data.len() as u64));
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(e.data);
        let pad = (512 - e.data.len() % 512) % 512;
        out.extend(std::iter::repeat_n(0u8, pad));
    }
    out.extend([0u8; 1024]);
    out
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn tree(p: &Path) -> Tree {
    Tree::open(p).unwrap()
}

fn budget() -> Budget {
    Budget::new(&Limits::default())
}

/// Unpack `bytes` into `dir` with default limits.
fn unpack_into(bytes: &[u8], dir: &Path) -> Result<(), ExtractError> {
    unpack("l", bytes, &tree(dir), &Limits::default(), &mut budget())
}

/// Unpack into `<tmp>/root`; return the error text and check that nothing appeared beside root.
fn unpack_err(entries: &[E<'_>]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs::create_dir(&root).unwrap();
    let bytes = tar_of(entries);
    let err = unpack(
        "sha256:abc",
        &bytes[..],
        &tree(&root),
        &Limits::default(),
        &mut budget(),
    )
    .unwrap_err()
    .to_string();
    let beside: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        beside,
        vec![std::ffi::OsString::from("root")],
        "wrote outside the root: {err}"
    );
    err
}

#[test]
fn unpacks_an_ordinary_layer() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = gz(&tar_of(&[
        file("./a/b.txt", b"hello"),
        link("a/c", tar::EntryType::Symlink, "b.txt"),
        link("a/d", tar::EntryType::Link, "a/b.txt"),
        E {
            name: "e/",
            kind: tar::EntryType::Directory,
            data: b"",
            link: "",
            size: None,
        },
    ]));
    let r = decoder(
        "application/vnd.oci.image.layer.v1.tar+gzip",
        Box::new(&bytes[..]),
    );
    unpack("l", r, &tree(dir.path()), &Limits::default(), &mut budget()).unwrap();
    assert_eq!(fs::read(dir.path().join("a/b.txt")).unwrap(), b"hello");
    assert_eq!(fs::read(dir.path().join("a/c")).unwrap(), b"hello");
    assert_eq!(fs::read(dir.path().join("a/d")).unwrap(), b"hello");
    assert!(dir.path().join("e").is_dir());
}

#[test]
fn refuses_traversal() {
    let e = unpack_err(&[file("../escape.txt", b"x")]);
    assert!(e.contains("contains `..`"), "{e}");
    let e = unpack_err(&[file("a/../../escape.txt", b"x")]);
    assert!(e.contains("contains `..`"), "{e}");
}

#[test]
fn refuses_absolute_paths() {
    let e = unpack_err(&[file("/tmp/otters-abs.txt", b"x")]);
    assert!(e.contains("absolute path"), "{e}");
}

#[test]
fn refuses_symlink_escapes() {
    for target in ["../outside", "/etc/passwd", "a/../../x"] {
        let e = unpack_err(&[link("l", tar::EntryType::Symlink, target)]);
        assert!(e.contains("leaves the layer"), "{target}: {e}");
    }
    // Two links that are each harmless lexically but escape together.
    let e = unpack_err(&[
        link("a", tar::EntryType::Symlink, "."),
        link("b", tar::EntryType::Symlink, "a/.."),
    ]);
    assert!(e.contains("leaves the layer"), "{e}");
    // Writing through a symlink is refused even when the link itself stays inside.
    let e = unpack_err(&[link("d", tar::EntryType::Symlink, "."), file("d/x", b"x")]);
    assert!(e.contains("below a symlink"), "{e}");
}

#[test]
fn refuses_hardlink_escapes() {
    let e = unpack_err(&[link("h", tar::EntryType::Link, "../../etc/passwd")]);
    assert!(e.contains("points outside"), "{e}");
    assert!(e.contains("points outside"), "{e}");
    let e = unpack_err(&[link("h", tar::EntryType::Link, "/etc/passwd")]);
    assert!(e.contains("points outside"), "{e}");
    let e = unpack_err(&[link("h", tar::EntryType::Link, "not-there")]);
    assert!(e.contains("not earlier in the layer"), "{e}");
}

#[test]
fn refuses_devices_fifos_and_whiteouts() {
    let e = unpack_err(&[E {
        name: "dev",
        kind: tar::EntryType::Char,
        data: b"",
        link: "",
        size: None,
    }]);
    assert!(e.contains("device node"), "{e}");
    let e = unpack_err(&[E {
        name: "blk",
        kind: tar::EntryType::Block,
        data: b"",
        link: "",
        size: None,
    }]);
    assert!(e.contains("device node"), "{e}");
    let e = unpack_err(&[E {
        name: "p",
        kind: tar::EntryType::Fifo,
        data: b"",
        link: "",
        size: None,
    }]);
    assert!(e.contains("fifo"), "{e}");
    let e = unpack_err(&[file("a/.wh.b", b"")]);
    assert!(e.contains("whiteout"), "{e}");
    let e = unpack_err(&[file(".wh..wh..opq", b"")]);
    assert!(e.contains("whiteout"), "{e}");
}

#[test]
fn refuses_oversized_entries_without_reading_them() {
    // The header claims 1 TiB; no data follows, so reading it would fail differently.
    let bytes = tar_of(&[E {
        name: "huge",
        kind: tar::EntryType::Regular,
        data: b"",
        link: "",
        size: Some(1 << 40),
    }]);
    let dir = tempfile::tempdir().unwrap();
    let e = unpack_into(&bytes, dir.path()).unwrap_err().to_string();
    assert!(e.contains("more than the 536870912-byte limit"), "{e}");
    let small = Limits {
        max_file: 4,
        ..Limits::default()
    };
    let e = find_binary(
        "l",
        &tar_of(&[file("tool", b"12345")])[..],
        "/tool",
        &tree(dir.path()),
        Path::new("t"),
        &small,
        &mut budget(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("limit"), "{e}");
    assert!(!dir.path().join("t").exists());
    let total = Limits {
        max_total: 6,
        ..Limits::default()
    };
    let e = unpack(
        "l",
        &tar_of(&[file("a", b"1234"), file("b", b"1234")])[..],
        &tree(dir.path()),
        &total,
        &mut Budget::new(&total),
    )
    .unwrap_err();
    assert!(matches!(e, ExtractError::TooMuch { .. }), "{e}");
}

#[test]
fn finds_binaries_by_path_or_basename() {
    let dir = tempfile::tempdir().unwrap();
    let t = tree(dir.path());
    let find = |layer: &[u8], target: &str| {
        find_binary(
            "l",
            layer,
            target,
            &t,
            Path::new("bin"),
            &Limits::default(),
            &mut budget(),
        )
    };
    let out = dir.path().join("bin");
    let layer = tar_of(&[file("README", b"r"), file("usr/local/bin/tool", b"#!bin")]);
    assert!(find(&layer, "/usr/local/bin/tool").unwrap());
    assert_eq!(fs::read(&out).unwrap(), b"#!bin");
    assert_eq!(
        fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(find(&layer, "/tool").unwrap());
    assert!(!find(&layer, "/other").unwrap());
    // A symlink with the right name is not a regular file: skipped.
    let layer = tar_of(&[link("tool", tar::EntryType::Symlink, "README")]);
    assert!(!find(&layer, "/tool").unwrap());
    // Malicious entries before the match refuse the layer.
    let layer = tar_of(&[file("../x", b""), file("tool", b"t")]);
    assert!(find(&layer, "/tool").is_err());
    assert_eq!(normalise_name("./a//b"), "a/b");
    assert_eq!(normalise_name("/"), "");
}

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
