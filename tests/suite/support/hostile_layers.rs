//! Hostile tar layers and agent images for the security tests: raw tar entries with any name,
//! type, link target or claimed size (PAX records for long names), gzip (including a cheap
//! gigabyte-scale stream), and an agent image in an otters store whose layers are replaced.
//!
//! Used by `tests/security_extract.rs`; writes only below the paths it is given.

use serde_json::{json, Value};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// One raw tar member.
pub struct Entry {
    pub name: String,
    pub kind: u8,
    pub data: Vec<u8>,
    pub link: String,
}

pub fn file(name: &str, data: &[u8]) -> Entry {
    Entry {
        name: name.into(),
        kind: b'0',
        data: data.to_vec(),
        link: String::new(),
    }
}

pub fn dir(name: &str) -> Entry {
    Entry {
        name: name.into(),
        kind: b'5',
        data: Vec::new(),
        link: String::new(),
    }
}

pub fn symlink(name: &str, target: &str) -> Entry {
    Entry {
        name: name.into(),
        kind: b'2',
        data: Vec::new(),
        link: target.into(),
    }
}

pub fn hardlink(name: &str, target: &str) -> Entry {
    Entry {
        name: name.into(),
        kind: b'1',
        data: Vec::new(),
        link: target.into(),
    }
}

/// A ustar header block; `name`/`link` are cut at 100 bytes (the caller adds PAX records).
pub fn header(name: &[u8], kind: u8, size: u64, link: &[u8]) -> [u8; 512] {
    let mut h = [0u8; 512];
    let n = name.len().min(100);
    h[..n].copy_from_slice(&name[..n]);
    h[100..107].copy_from_slice(b"0000755");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = kind;
    let l = link.len().min(100);
    h[157..157 + l].copy_from_slice(&link[..l]);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    h
}

fn pad(out: &mut Vec<u8>) {
    out.extend(std::iter::repeat_n(0u8, (512 - out.len() % 512) % 512));
}

fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

/// An uncompressed tar of `entries`, with a PAX record before any entry whose name or link
/// target does not fit the header.
pub fn tar(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut pax = Vec::new();
        if e.name.len() > 100 {
            pax.extend(pax_record("path", &e.name));
        }
        if e.link.len() > 100 {
            pax.extend(pax_record("linkpath", &e.link));
        }
        if !pax.is_empty() {
            out.extend_from_slice(&header(b"PaxHeader", b'x', pax.len() as u64, b""));
            out.extend_from_slice(&pax);
            pad(&mut out);
        }
        out.extend_from_slice(&header(
            e.name.as_bytes(),
            e.kind,
            e.data.len() as u64,
            e.link.as_bytes(),
        ));
        out.extend_from_slice(&e.data);
        pad(&mut out);
    }
    out.extend([0u8; 1024]);
    out
}

pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).expect("gzip");
    enc.finish().expect("gzip finish")
}

fn deflate(c: &mut flate2::Compress, input: &[u8], flush: flate2::FlushCompress) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() + 1024);
    let mut pos = 0;
    loop {
        if out.len() == out.capacity() {
            out.reserve(64 << 10);
        }
        let before = c.total_in();
        let status = c
            .compress_vec(&input[pos..], &mut out, flush)
            .expect("deflate");
        pos += (c.total_in() - before) as usize;
        // Everything is out once all input is taken and the compressor left room unused.
        let flushed = pos == input.len() && out.len() < out.capacity();
        if flushed
            && (flush != flate2::FlushCompress::Finish || status == flate2::Status::StreamEnd)
        {
            return out;
        }
    }
}

/// A valid gzip stream of `head`, then `chunk` repeated `n` times, then `tail`, built from
/// `chunk` compressed once (sync-flushed deflate blocks concatenate; `chunk` must be periodic or
/// at least 32 KiB so back references see the same bytes in every copy). Gigabytes of data in a
/// few hundred KiB, built in milliseconds.
pub fn gz_repeat(head: &[u8], chunk: &[u8], n: usize, tail: &[u8]) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    assert!(n >= 1);
    let mut c = Compress::new(Compression::best(), false);
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend(deflate(&mut c, head, FlushCompress::Sync));
    out.extend(deflate(&mut c, chunk, FlushCompress::Sync));
    let again = deflate(&mut c, chunk, FlushCompress::Sync);
    for _ in 1..n {
        out.extend_from_slice(&again);
    }
    out.extend(deflate(&mut c, tail, FlushCompress::Finish));
    let mut crc = Crc::new();
    crc.update(head);
    let mut one = Crc::new();
    one.update(chunk);
    for _ in 0..n {
        crc.combine(&one);
    }
    let mut end = Crc::new();
    end.update(tail);
    crc.combine(&end);
    out.extend(crc.sum().to_le_bytes());
    let total = head.len() as u64 + chunk.len() as u64 * n as u64 + tail.len() as u64;
    out.extend((total as u32).to_le_bytes());
    out
}

/// The store's `index.json` entry tagged `tag`.
fn index_entry(store: &Path, tag: &str) -> Value {
    let index: Value =
        serde_json::from_slice(&std::fs::read(store.join("index.json")).expect("index.json"))
            .expect("index json");
    index["manifests"]
        .as_array()
        .and_then(|m| {
            m.iter()
                .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == tag)
        })
        .cloned()
        .unwrap_or_else(|| panic!("{tag} is not in the store"))
}

/// Writes a blob into the store; returns its descriptor.
pub fn put_blob(store: &Path, media_type: &str, bytes: &[u8]) -> Value {
    let digest = super::sha256(bytes);
    std::fs::write(blob_path(store, &digest), bytes).expect("write blob");
    json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
}

pub fn blob_path(store: &Path, digest: &str) -> PathBuf {
    store
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

/// The manifest of the image tagged `tag` in the store.
pub fn manifest(store: &Path, tag: &str) -> Value {
    let d = index_entry(store, tag);
    let digest = d["digest"].as_str().expect("digest");
    serde_json::from_slice(&std::fs::read(blob_path(store, digest)).expect("manifest blob"))
        .expect("manifest json")
}

/// Tags in the store, under `new_tag`, a copy of the agent image `tag` with `layers` (title,
/// tar+gzip bytes) appended as directory layers (unpacked into `etc/data/<title>`).
pub fn agent_with_layers(store: &Path, tag: &str, new_tag: &str, layers: &[(&str, &[u8])]) {
    let gzip = "application/vnd.oci.image.layer.v1.tar+gzip";
    let typed: Vec<(&str, &str, &[u8])> = layers.iter().map(|(t, b)| (*t, gzip, *b)).collect();
    agent_with_typed_layers(store, tag, new_tag, &typed);
}

/// [`agent_with_layers`] with each layer's media type given: `(title, media type, bytes)`.
pub fn agent_with_typed_layers(
    store: &Path,
    tag: &str,
    new_tag: &str,
    layers: &[(&str, &str, &[u8])],
) {
    let mut m = manifest(store, tag);
    for (title, media_type, bytes) in layers {
        let mut d = put_blob(store, media_type, bytes);
        d["annotations"] = json!({
            "org.opencontainers.image.title": title,
            "io.deis.oras.content.unpack": "true",
        });
        m["layers"].as_array_mut().expect("layers").push(d);
    }
    let bytes = serde_json::to_vec(&m).expect("json");
    let mut entry = index_entry(store, tag);
    let desc = put_blob(store, "application/vnd.oci.image.manifest.v1+json", &bytes);
    entry["digest"] = desc["digest"].clone();
    entry["size"] = desc["size"].clone();
    entry["annotations"]["org.opencontainers.image.ref.name"] = json!(new_tag);
    let path = store.join("index.json");
    let mut index: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("index.json")).expect("index json");
    index["manifests"]
        .as_array_mut()
        .expect("manifests")
        .push(entry);
    std::fs::write(&path, index.to_string()).expect("write index.json");
}

/// Flips one bit of the byte at offset `at` of a file; `at == None` flips the last byte.
pub fn flip_byte(path: &Path, at: Option<usize>) {
    let mut bytes = std::fs::read(path).expect("read blob");
    let i = at.unwrap_or(bytes.len() - 1);
    bytes[i] ^= 0x01;
    std::fs::write(path, bytes).expect("write blob");
}
