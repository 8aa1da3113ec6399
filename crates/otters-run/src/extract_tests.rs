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
        "l",
        "application/vnd.oci.image.layer.v1.tar+gzip",
        Box::new(&bytes[..]),
    )
    .unwrap();
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

/// `<tmp>/root` plus a canary file beside it; returns (tmp, root).
fn sandbox() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs::create_dir(&root).unwrap();
    fs::write(dir.path().join("canary"), "original").unwrap();
    (dir, root)
}

/// The canary beside the root is untouched and nothing else appeared there.
fn assert_host_untouched(dir: &Path) {
    let mut beside: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    beside.sort();
    assert_eq!(beside, ["canary", "root"], "wrote beside the root");
    assert_eq!(fs::read(dir.join("canary")).unwrap(), b"original");
    assert_eq!(fs::metadata(dir.join("canary")).unwrap().nlink(), 1);
}

fn dir_entry(name: &str) -> E<'_> {
    E {
        name,
        kind: tar::EntryType::Directory,
        data: b"",
        link: "",
        size: None,
    }
}

#[test]
fn symlink_chains_through_later_links_are_refused() {
    // `p` is harmless while `q` is a directory; `q -> .` would make it climb four levels.
    let e = unpack_err(&[
        dir_entry("q/"),
        link("p", tar::EntryType::Symlink, "q/q/q/q/../../../.."),
        link("q", tar::EntryType::Symlink, "."),
    ]);
    assert!(e.contains("`..` after a name"), "{e}");
    // Leading `..` within the link's depth are fine; one more is refused.
    let (dir, root) = sandbox();
    let ok = tar_of(&[
        file("f", b"x"),
        link("d/e/l", tar::EntryType::Symlink, "../../f"),
        link("d/e/m", tar::EntryType::Symlink, "./../x/y"),
    ]);
    unpack_into(&ok, &root).unwrap();
    assert_eq!(fs::read(root.join("d/e/l")).unwrap(), b"x");
    let bad = tar_of(&[link("d/l", tar::EntryType::Symlink, "../../canary")]);
    assert!(unpack_into(&bad, &root).is_err());
    assert_host_untouched(dir.path());
}

#[test]
fn a_link_from_an_earlier_layer_is_never_written_through() {
    let (dir, root) = sandbox();
    let t = tree(&root);
    let mut b = budget();
    // Layer 1 (into `a`): `d/p -> ..`, a link that stays inside.
    let dest = t.subdir(Path::new("a"), true).unwrap();
    let l1 = tar_of(&[link("d/p", tar::EntryType::Symlink, "..")]);
    unpack("l1", &l1[..], &dest, &Limits::default(), &mut b).unwrap();
    // Layer 2 into the same root names a path below the link.
    let l2 = tar_of(&[file("d/p/x", b"x")]);
    let e = unpack("l2", &l2[..], &dest, &Limits::default(), &mut b)
        .unwrap_err()
        .to_string();
    assert!(e.contains("below a symlink"), "{e}");
    // A layer whose root lies below the link.
    let e = t.subdir(Path::new("a/d/p/tmp"), true).unwrap_err();
    assert!(e.to_string().contains("is a symlink"), "{e}");
    assert!(!root.join("a/tmp").exists() && !root.join("a/x").exists());
    assert_host_untouched(dir.path());
}

#[test]
fn hard_links_never_reach_through_a_replaced_directory() {
    let (dir, root) = sandbox();
    fs::write(root.join("outside-layer"), "o").unwrap();
    // `x/f` is a file of the layer, then `x` becomes a link; `h -> x/f` must not follow it.
    let bytes = tar_of(&[
        file("x/f", b"mine"),
        dir_entry("y/"),
        link("x", tar::EntryType::Symlink, "y"),
        link("h", tar::EntryType::Link, "x/f"),
    ]);
    let e = unpack_into(&bytes, &root).unwrap_err().to_string();
    assert!(e.contains("below a symlink"), "{e}");
    // A hard link to a directory or a symlink of the layer is refused too.
    let bytes = tar_of(&[
        link("s", tar::EntryType::Symlink, "f"),
        file("f", b"x"),
        link("h", tar::EntryType::Link, "s"),
    ]);
    let e = unpack_into(&bytes, &root).unwrap_err().to_string();
    assert!(e.contains("hard link"), "{e}");
    assert_host_untouched(dir.path());
}

#[test]
fn the_tree_budget_spans_layers() {
    let dir = tempfile::tempdir().unwrap();
    let t = tree(dir.path());
    let limits = Limits {
        max_tree_entries: 3,
        max_tree_bytes: 10,
        ..Limits::default()
    };
    let two = tar_of(&[file("a", b"1"), file("b", b"2")]);
    let mut b = Budget::new(&limits);
    unpack("l1", &two[..], &t, &limits, &mut b).unwrap();
    let e = unpack("l2", &two[..], &t, &limits, &mut b).unwrap_err();
    assert!(
        matches!(
            e,
            ExtractError::TreeTooLarge {
                limit: 3,
                unit: "entries",
                ..
            }
        ),
        "{e}"
    );
    let mut b = Budget::new(&limits);
    let big = tar_of(&[file("a", b"123456")]);
    unpack("l1", &big[..], &t, &limits, &mut b).unwrap();
    let e = unpack("l2", &big[..], &t, &limits, &mut b)
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than 10 bytes"), "{e}");
    assert!(e.contains("across all its layers"), "{e}");
}

#[test]
fn header_bombs_are_refused_before_they_are_read() {
    // A PAX record and a GNU long name that claim 1 GiB, with the bytes really there (gzip makes
    // them a few hundred KiB): refused at the header, with nothing allocated for them.
    for flag in [b'x', b'L'] {
        let mut h = tar::Header::new_ustar();
        h.set_path("bomb").unwrap();
        h.set_size(1 << 30);
        h.as_mut_bytes()[156] = flag;
        h.set_cksum();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(h.as_bytes()).unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..16 {
            enc.write_all(&chunk).unwrap();
        }
        let layer = enc.finish().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let r = decoder(
            "l",
            "application/vnd.oci.image.layer.v1.tar+gzip",
            Box::new(&layer[..]),
        )
        .unwrap();
        let e = unpack("l", r, &tree(dir.path()), &Limits::default(), &mut budget())
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than the 65536-byte limit"), "{e}");
    }
}

/// A zstd layer gets the bounds a gzip one does: the same header bomb (16 MiB of a claimed
/// 1 GiB PAX record, a few KiB compressed) and a file over the size limit are refused.
#[test]
fn zstd_layers_are_bounded_as_gzip_ones() {
    let mut h = tar::Header::new_ustar();
    h.set_path("bomb").unwrap();
    h.set_size(1 << 30);
    h.as_mut_bytes()[156] = b'x';
    h.set_cksum();
    let mut raw = h.as_bytes().to_vec();
    raw.extend(std::iter::repeat_n(b'a', 16 << 20));
    let layer =
        ruzstd::encoding::compress_to_vec(&raw[..], ruzstd::encoding::CompressionLevel::Fastest);
    assert!(layer.len() < 4 << 20, "{}", layer.len());
    let dir = tempfile::tempdir().unwrap();
    let zstd = "application/vnd.oci.image.layer.v1.tar+zstd";
    let r = decoder("l", zstd, Box::new(&layer[..])).unwrap();
    let e = unpack("l", r, &tree(dir.path()), &Limits::default(), &mut budget())
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than the 65536-byte limit"), "{e}");

    let big = tar_of(&[file("big", &[7u8; 4096])]);
    let layer =
        ruzstd::encoding::compress_to_vec(&big[..], ruzstd::encoding::CompressionLevel::Fastest);
    let limits = Limits {
        max_file: 1024,
        ..Limits::default()
    };
    let r = decoder("l", zstd, Box::new(&layer[..])).unwrap();
    let e = unpack("l", r, &tree(dir.path()), &limits, &mut budget())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("4096 bytes, more than the 1024-byte limit"),
        "{e}"
    );

    // The same layer unpacks within the default limits; another compression is refused by name.
    let r = decoder("l", zstd, Box::new(&layer[..])).unwrap();
    unpack("l", r, &tree(dir.path()), &Limits::default(), &mut budget()).unwrap();
    assert_eq!(fs::read(dir.path().join("big")).unwrap(), [7u8; 4096]);
    let Err(e) = decoder(
        "l",
        "application/vnd.oci.image.layer.v1.tar+bzip2",
        Box::new(&b""[..]),
    ) else {
        panic!("bzip2 accepted");
    };
    assert!(e.to_string().contains("media type application/vnd.oci.image.layer.v1.tar+bzip2, a compression otters cannot read"), "{e}");
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const NAMES: &[&str] = &["a", "b", "q", "..", ".", "", "/", "canary", ".wh.x"];

    fn name() -> impl Strategy<Value = String> {
        proptest::collection::vec(0..NAMES.len(), 1..5)
            .prop_map(|ix| ix.iter().map(|i| NAMES[*i]).collect::<Vec<_>>().join("/"))
    }

    fn entry() -> impl Strategy<Value = (u8, String, String)> {
        (0u8..4, name(), name())
    }

    /// Every symlink below `root` that resolves at all resolves inside `root`.
    fn links_stay_inside(root: &Path, dir: &Path) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                if let Ok(real) = fs::canonicalize(&p) {
                    assert!(
                        real.starts_with(root),
                        "{} -> {}",
                        p.display(),
                        real.display()
                    );
                }
            } else if m.is_dir() {
                links_stay_inside(root, &p);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, .. ProptestConfig::default() })]
        #[test]
        fn random_layers_never_escape(
            l1 in proptest::collection::vec(entry(), 1..8),
            l2 in proptest::collection::vec(entry(), 1..8),
            sub in name(),
        ) {
            let (dir, root) = sandbox();
            let root = fs::canonicalize(&root).unwrap();
            let t = tree(&root);
            let mut b = budget();
            let kinds = [
                tar::EntryType::Regular,
                tar::EntryType::Directory,
                tar::EntryType::Symlink,
                tar::EntryType::Link,
            ];
            let layer = |entries: &[(u8, String, String)]| {
                let es: Vec<E<'_>> = entries
                    .iter()
                    .map(|(k, n, l)| E {
                        name: n,
                        kind: kinds[*k as usize],
                        data: b"data",
                        link: l,
                        size: None,
                    })
                    .collect();
                tar_of(&es)
            };
            let _ = unpack("l1", &layer(&l1)[..], &t, &Limits::default(), &mut b);
            if let Ok(dest) = t.subdir(Path::new(&normalise_name(&sub)), true) {
                // A directory ADD layer titled `sub`: its `sub/` prefix (when it has one) removed.
                let _ = unpack_dir("l2", &layer(&l2)[..], &dest, &sub, &Limits::default(), &mut b);
            }
            assert_host_untouched(dir.path());
            links_stay_inside(&root, &root);
        }
    }
}

#[test]
fn extension_records_count_toward_the_layer_total() {
    // A 60-KiB PAX comment on an empty file: no file data, but decompression work all the same.
    let body = format!(" comment={}\n", "c".repeat(60 << 10));
    let record = format!("{}{body}", body.len() + 5);
    assert_eq!(record.len(), body.len() + 5);
    let bytes = tar_of(&[
        E {
            name: "pax",
            kind: tar::EntryType::XHeader,
            data: record.as_bytes(),
            link: "",
            size: None,
        },
        file("f", b""),
    ]);
    let limits = Limits {
        max_total: 32 << 10,
        ..Limits::default()
    };
    let dir = tempfile::tempdir().unwrap();
    unpack(
        "l",
        &bytes[..],
        &tree(dir.path()),
        &Limits::default(),
        &mut budget(),
    )
    .unwrap();
    let e = unpack("l", &bytes[..], &tree(dir.path()), &limits, &mut budget()).unwrap_err();
    assert!(
        matches!(e, ExtractError::TooMuch { unit: "bytes", .. }),
        "{e}"
    );
}

#[test]
fn error_messages_show_at_most_the_start_of_a_long_name() {
    let name = format!("{}/x", "n".repeat(5000));
    let e = entry_path("l", name.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("longer than 4096 bytes"), "{e}");
    assert!(e.len() < 600, "{} bytes", e.len());
}

/// Unpack a directory layer titled `title` into a fresh dir; the files written, sorted.
fn unpack_dir_files(title: &str, entries: &[E<'_>]) -> Result<Vec<String>, String> {
    let dir = tempfile::tempdir().unwrap();
    let bytes = tar_of(entries);
    unpack_dir(
        "l",
        &bytes[..],
        &tree(dir.path()),
        title,
        &Limits::default(),
        &mut budget(),
    )
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut stack = vec![dir.path().to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir.path()).unwrap().display().to_string();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[test]
fn a_directory_layer_loses_its_title_prefix() {
    // What otters' writer and Go oras write: the titled directory first, then everything below.
    let got = unpack_dir_files(
        "regions",
        &[
            dir_entry("regions/"),
            file("regions/north.md", b"n"),
            dir_entry("regions/regions/"),
            file("regions/regions/deep.md", b"d"),
            link("regions/up", tar::EntryType::Symlink, "north.md"),
            link("regions/hl", tar::EntryType::Link, "regions/north.md"),
        ],
    )
    .unwrap();
    assert_eq!(
        got,
        ["hl", "north.md", "regions/", "regions/deep.md", "up"],
        "one level, not two"
    );
    // A nested title: the entries carry the whole title (Go oras) …
    let got = unpack_dir_files(
        "docs/regions",
        &[dir_entry("docs/regions/"), file("docs/regions/a.md", b"a")],
    )
    .unwrap();
    assert_eq!(got, ["a.md"]);
    // … or only its last component (oras-py archives `basename(dir)`).
    let got = unpack_dir_files(
        "docs/regions",
        &[dir_entry("regions/"), file("regions/a.md", b"a")],
    )
    .unwrap();
    assert_eq!(got, ["a.md"]);
    // A layer of the directory's contents (no prefix) is unpacked as it is.
    let got = unpack_dir_files("regions", &[file("./a.md", b"a"), file("b/c.md", b"c")]).unwrap();
    assert_eq!(got, ["a.md", "b/", "b/c.md"]);
}

#[test]
fn a_prefixed_directory_layer_keeps_every_entry_below_its_prefix() {
    let e = unpack_dir_files(
        "regions",
        &[dir_entry("regions/"), file("other/x.md", b"x")],
    )
    .unwrap_err();
    assert!(
        e.contains("\"other/x.md\" lies outside the directory"),
        "{e}"
    );
    // A symlink's `..` count is checked against its depth below the prefix, not in the archive.
    let e = unpack_dir_files(
        "regions",
        &[
            dir_entry("regions/"),
            link("regions/l", tar::EntryType::Symlink, "../x"),
        ],
    )
    .unwrap_err();
    assert!(
        e.contains("is a symlink that is absolute, leaves the layer"),
        "{e}"
    );
    // A hard link to a path outside the prefix is refused.
    let e = unpack_dir_files(
        "regions",
        &[
            dir_entry("regions/"),
            link("regions/hl", tar::EntryType::Link, "etc/passwd"),
        ],
    )
    .unwrap_err();
    assert!(e.contains("is a link that points outside the layer"), "{e}");
    // A file (or link) where the layer's directory should be is refused, not skipped.
    for first in [
        file("regions", b"x"),
        link("regions", tar::EntryType::Symlink, "x"),
    ] {
        let e = unpack_dir_files("regions", &[first]).unwrap_err();
        assert!(
            e.contains("is named like the layer's directory but is not a directory"),
            "{e}"
        );
    }
}

#[test]
fn locate_binary_names_the_file_find_binary_takes_and_writes_nothing() {
    let locate = |layer: &[u8], target: &str| {
        locate_binary("l", layer, target, &Limits::default(), &mut budget()).unwrap()
    };
    let layer = tar_of(&[file("README", b"r"), file("usr/bin/jq", b"jq")]);
    assert_eq!(
        locate(&layer, "/usr/bin/jq"),
        Some(PathBuf::from("usr/bin/jq"))
    );
    // By basename, as the bin contract finds it.
    assert_eq!(locate(&layer, "/jq"), Some(PathBuf::from("usr/bin/jq")));
    assert_eq!(locate(&layer, "/rg"), None);
    let layer = tar_of(&[link("jq", tar::EntryType::Symlink, "README")]);
    assert_eq!(locate(&layer, "/jq"), None);
    let bad = tar_of(&[file("../x", b""), file("jq", b"t")]);
    assert!(locate_binary("l", &bad[..], "/jq", &Limits::default(), &mut budget()).is_err());
}
