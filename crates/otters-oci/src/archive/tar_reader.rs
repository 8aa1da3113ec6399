//! A small, bounded tar reader for untrusted layers and archives: raw 512-byte headers, GNU long
//! names/links and PAX records, each extension record capped at [`MAX_EXTENSION`] bytes before a
//! byte of it is read.
//!
//! Takes: a byte stream (already gunzipped). Returns: one [`Entry`] at a time (path, link target,
//! type, mode, size) and a reader for its data. Must never: allocate more than [`MAX_EXTENSION`]
//! bytes for an entry's metadata, accept more than one record of each extension kind per entry,
//! read past an entry's data, or panic on any input. It knows nothing of paths' safety: the
//! caller checks names, types and sizes.

use std::io::{self, Read};

/// Largest GNU long-name / long-link record or PAX extended header accepted, in bytes.
pub const MAX_EXTENSION: u64 = 64 << 10;

const BLOCK: u64 = 512;

#[derive(Debug, thiserror::Error)]
pub enum TarError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("tar header at byte {offset}: {what}")]
    Malformed { offset: u64, what: String },
    #[error("tar header at byte {offset}: a {kind} of {size} bytes, more than the {MAX_EXTENSION}-byte limit")]
    ExtensionTooLarge {
        offset: u64,
        kind: &'static str,
        size: u64,
    },
}

/// An entry's type, from its type flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Regular,
    Directory,
    Symlink,
    HardLink,
    Char,
    Block,
    Fifo,
    /// Any other flag (`g` global PAX header, `S` sparse, `V` volume, …).
    Other(u8),
}

/// One archive member, with its GNU / PAX extensions applied.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The raw path bytes (not yet checked).
    pub path: Vec<u8>,
    /// The raw link target (symlinks and hard links; empty otherwise).
    pub link: Vec<u8>,
    pub kind: Kind,
    /// Permission bits from the header (`0o644` when unreadable).
    pub mode: u32,
    /// Size of the entry's data.
    pub size: u64,
    /// Offset of the entry's header in the stream, for messages.
    pub offset: u64,
    /// Bytes of extension records (GNU long name/link, PAX) read for this entry.
    pub meta: u64,
}

/// Reads entries one at a time from `inner`.
pub struct TarReader<R> {
    inner: R,
    pos: u64,
    /// Unread data bytes of the current entry, then its padding.
    remaining: u64,
    pad: u64,
    finished: bool,
}

impl<R: Read> TarReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            pos: 0,
            remaining: 0,
            pad: 0,
            finished: false,
        }
    }

    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The current entry's data (what is left of it).
    pub fn data(&mut self) -> EntryData<'_, R> {
        EntryData { tar: self }
    }

    /// Skips `n` bytes of the stream; a stream that ends first is truncated.
    fn skip(&mut self, n: u64) -> Result<(), TarError> {
        let got = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())?;
        self.pos += got;
        if got < n {
            return Err(malformed(self.pos, "the archive ends inside an entry"));
        }
        Ok(())
    }

    /// Reads one 512-byte block; `None` at a clean end of stream.
    fn block(&mut self) -> Result<Option<[u8; 512]>, TarError> {
        let mut b = [0u8; 512];
        let mut got = 0;
        while got < b.len() {
            match self.inner.read(&mut b[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.pos += got as u64;
        match got {
            0 => Ok(None),
            512 => Ok(Some(b)),
            _ => Err(malformed(self.pos, "the archive ends inside a header")),
        }
    }

    /// Reads an extension record's data (at most [`MAX_EXTENSION`] bytes, checked before).
    fn record(&mut self, offset: u64, kind: &'static str, size: u64) -> Result<Vec<u8>, TarError> {
        if size > MAX_EXTENSION {
            return Err(TarError::ExtensionTooLarge { offset, kind, size });
        }
        let mut data = Vec::with_capacity(size as usize);
        let got = (&mut self.inner).take(size).read_to_end(&mut data)? as u64;
        self.pos += got;
        if got < size {
            return Err(malformed(self.pos, "the archive ends inside an entry"));
        }
        self.skip(padding(size))?;
        Ok(data)
    }

    /// The next entry, or `None` after the end-of-archive block (or a clean end of stream).
    pub fn next_entry(&mut self) -> Result<Option<Entry>, TarError> {
        if self.finished {
            return Ok(None);
        }
        let rest = self.remaining + self.pad;
        self.remaining = 0;
        self.pad = 0;
        self.skip(rest)?;
        let mut long_name: Option<Vec<u8>> = None;
        let mut long_link: Option<Vec<u8>> = None;
        let mut pax: Option<Pax> = None;
        let mut meta = 0u64;
        loop {
            let offset = self.pos;
            let Some(h) = self.block()? else {
                self.finished = true;
                if long_name.is_some() || long_link.is_some() || pax.is_some() {
                    return Err(malformed(
                        offset,
                        "extension records with no entry after them",
                    ));
                }
                return Ok(None);
            };
            if h.iter().all(|b| *b == 0) {
                self.finished = true;
                if long_name.is_some() || long_link.is_some() || pax.is_some() {
                    return Err(malformed(
                        offset,
                        "extension records with no entry after them",
                    ));
                }
                return Ok(None);
            }
            check_sum(&h).map_err(|what| malformed(offset, what))?;
            let flag = h[156];
            let size = number(&h[124..136])
                .ok_or_else(|| malformed(offset, "the size field is not a number"))?;
            if matches!(flag, b'L' | b'K' | b'x' | b'X') {
                meta = meta.saturating_add(size);
            }
            let dup = |what: &str| TarError::Malformed {
                offset,
                what: format!("two {what} records for one entry"),
            };
            match flag {
                b'L' => {
                    if long_name.is_some() {
                        return Err(dup("GNU long name"));
                    }
                    long_name = Some(cstr(&self.record(offset, "GNU long name", size)?).to_vec());
                }
                b'K' => {
                    if long_link.is_some() {
                        return Err(dup("GNU long link"));
                    }
                    long_link = Some(cstr(&self.record(offset, "GNU long link", size)?).to_vec());
                }
                b'x' | b'X' => {
                    if pax.is_some() {
                        return Err(dup("PAX extended header"));
                    }
                    let data = self.record(offset, "PAX extended header", size)?;
                    pax = Some(Pax::parse(&data).map_err(|what| malformed(offset, what))?);
                }
                _ => {
                    let pax = pax.unwrap_or_default();
                    let size = pax.size.unwrap_or(size);
                    let path = pax.path.or(long_name).unwrap_or_else(|| header_name(&h));
                    let link = pax
                        .linkpath
                        .or(long_link)
                        .unwrap_or_else(|| cstr(&h[157..257]).to_vec());
                    let kind = match flag {
                        b'0' | 0 | b'7' => Kind::Regular,
                        b'1' => Kind::HardLink,
                        b'2' => Kind::Symlink,
                        b'3' => Kind::Char,
                        b'4' => Kind::Block,
                        b'5' => Kind::Directory,
                        b'6' => Kind::Fifo,
                        other => Kind::Other(other),
                    };
                    let kind = if pax.sparse { Kind::Other(b'S') } else { kind };
                    let mode = number(&h[100..108]).map_or(0o644, |m| (m & 0o7777) as u32);
                    self.remaining = size;
                    self.pad = padding(size);
                    return Ok(Some(Entry {
                        path,
                        link,
                        kind,
                        mode,
                        size,
                        offset,
                        meta,
                    }));
                }
            }
        }
    }
}

/// The current entry's data; reading past it returns end of file.
pub struct EntryData<'a, R> {
    tar: &'a mut TarReader<R>,
}

impl<R: Read> Read for EntryData<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let t = &mut *self.tar;
        if t.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(t.remaining).unwrap_or(usize::MAX));
        let n = t.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the archive ends inside an entry",
            ));
        }
        t.remaining -= n as u64;
        t.pos += n as u64;
        Ok(n)
    }
}

fn malformed(offset: u64, what: impl Into<String>) -> TarError {
    TarError::Malformed {
        offset,
        what: what.into(),
    }
}

fn padding(size: u64) -> u64 {
    (BLOCK - size % BLOCK) % BLOCK
}

/// The bytes before the first NUL.
fn cstr(b: &[u8]) -> &[u8] {
    b.iter().position(|c| *c == 0).map_or(b, |i| &b[..i])
}

/// `prefix/name` for POSIX ustar headers, `name` otherwise (GNU headers use the prefix bytes
/// for other fields).
fn header_name(h: &[u8; 512]) -> Vec<u8> {
    let name = cstr(&h[..100]);
    if &h[257..263] == b"ustar\0" {
        let prefix = cstr(&h[345..500]);
        if !prefix.is_empty() {
            let mut p = prefix.to_vec();
            p.push(b'/');
            p.extend_from_slice(name);
            return p;
        }
    }
    name.to_vec()
}

/// A numeric header field: octal text (NUL/space padded) or GNU base-256.
fn number(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        if field[0] == 0xff {
            return None; // negative
        }
        let mut v: u64 = u64::from(field[0] & 0x7f);
        for b in &field[1..] {
            v = v.checked_mul(256)?.checked_add(u64::from(*b))?;
        }
        return Some(v);
    }
    let text = cstr(field);
    let text = std::str::from_utf8(text).ok()?.trim_matches(' ');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

fn check_sum(h: &[u8; 512]) -> Result<(), &'static str> {
    let stored = number(&h[148..156]).ok_or("the checksum field is not a number")?;
    let sum: u64 = h
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if (148..156).contains(&i) {
                u64::from(b' ')
            } else {
                u64::from(*b)
            }
        })
        .sum();
    if sum == stored {
        Ok(())
    } else {
        Err("checksum mismatch (not a tar archive, or a damaged one)")
    }
}

/// The PAX keys otters uses.
#[derive(Default)]
struct Pax {
    path: Option<Vec<u8>>,
    linkpath: Option<Vec<u8>>,
    size: Option<u64>,
    sparse: bool,
}

impl Pax {
    /// Parses `"<len> <key>=<value>\n"` records.
    fn parse(mut data: &[u8]) -> Result<Pax, String> {
        let mut pax = Pax::default();
        while !data.is_empty() {
            let bad = || "a malformed PAX record".to_owned();
            let sp = data.iter().position(|b| *b == b' ').ok_or_else(bad)?;
            let len: usize = std::str::from_utf8(&data[..sp])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(bad)?;
            if len <= sp + 1 || len > data.len() || data[len - 1] != b'\n' {
                return Err(bad());
            }
            let kv = &data[sp + 1..len - 1];
            let eq = kv.iter().position(|b| *b == b'=').ok_or_else(bad)?;
            let (key, value) = (&kv[..eq], &kv[eq + 1..]);
            match key {
                b"path" => pax.path = (!value.is_empty()).then(|| value.to_vec()),
                b"linkpath" => pax.linkpath = (!value.is_empty()).then(|| value.to_vec()),
                b"size" => {
                    pax.size = Some(
                        std::str::from_utf8(value)
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .ok_or_else(|| "a PAX size that is not a number".to_owned())?,
                    );
                }
                k if k.starts_with(b"GNU.sparse.") => pax.sparse = true,
                _ => {}
            }
            data = &data[len..];
        }
        Ok(pax)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &[u8], flag: u8, size: u64) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name);
        h[100..107].copy_from_slice(b"0000755");
        h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
        h[156] = flag;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        h
    }

    fn member(out: &mut Vec<u8>, name: &[u8], flag: u8, data: &[u8]) {
        out.extend_from_slice(&header(name, flag, data.len() as u64));
        out.extend_from_slice(data);
        out.extend(std::iter::repeat_n(
            0u8,
            padding(data.len() as u64) as usize,
        ));
    }

    fn pax_record(key: &str, value: &str) -> Vec<u8> {
        let body = format!(" {key}={value}\n");
        let mut len = body.len() + 1;
        while format!("{len}{body}").len() != len {
            len += 1;
        }
        format!("{len}{body}").into_bytes()
    }

    #[test]
    fn reads_plain_gnu_and_pax_names() {
        let mut t = Vec::new();
        member(&mut t, b"a.txt", b'0', b"hello");
        member(&mut t, b"././@LongLink", b'L', &[b'x'; 300]);
        member(&mut t, b"short", b'0', b"long");
        let mut pax = pax_record("path", "p/q.txt");
        pax.extend(pax_record("linkpath", "target"));
        member(&mut t, b"PaxHeader", b'x', &pax);
        member(&mut t, b"ignored", b'2', b"");
        t.extend([0u8; 1024]);
        let mut r = TarReader::new(&t[..]);
        let e = r.next_entry().unwrap().unwrap();
        assert_eq!(
            (e.path.as_slice(), e.kind, e.size),
            (&b"a.txt"[..], Kind::Regular, 5)
        );
        let mut s = String::new();
        r.data().read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello");
        let e = r.next_entry().unwrap().unwrap();
        assert_eq!(e.path, vec![b'x'; 300]);
        // Data left unread is skipped.
        let e = r.next_entry().unwrap().unwrap();
        assert_eq!(e.path, b"p/q.txt");
        assert_eq!(e.link, b"target");
        assert_eq!(e.kind, Kind::Symlink);
        assert!(r.next_entry().unwrap().is_none());
        assert!(r.next_entry().unwrap().is_none());
    }

    #[test]
    fn refuses_oversized_extension_records_without_reading_them() {
        for flag in [b'L', b'K', b'x'] {
            // The header claims 8 GiB of record; nothing follows it.
            let big = (1 << 33) - 1;
            let mut t = header(b"bomb", flag, big).to_vec();
            t.extend([0u8; 1024]);
            let e = TarReader::new(&t[..]).next_entry().unwrap_err();
            assert!(
                matches!(e, TarError::ExtensionTooLarge { size, .. } if size == big),
                "{e}"
            );
            assert!(e.to_string().contains("65536-byte limit"), "{e}");
        }
    }

    #[test]
    fn refuses_repeated_and_dangling_extension_records() {
        let mut t = Vec::new();
        member(&mut t, b"l", b'L', b"one");
        member(&mut t, b"l", b'L', b"two");
        member(&mut t, b"f", b'0', b"");
        let e = TarReader::new(&t[..]).next_entry().unwrap_err().to_string();
        assert!(e.contains("two GNU long name records"), "{e}");
        let mut t = Vec::new();
        member(&mut t, b"l", b'x', &pax_record("path", "x"));
        t.extend([0u8; 1024]);
        let e = TarReader::new(&t[..]).next_entry().unwrap_err().to_string();
        assert!(e.contains("no entry after them"), "{e}");
    }

    #[test]
    fn pax_size_overrides_the_header_and_sparse_is_flagged() {
        let mut t = Vec::new();
        member(&mut t, b"x", b'x', &pax_record("size", "3"));
        t.extend_from_slice(&header(b"f", b'0', 0));
        t.extend_from_slice(b"abc");
        t.extend([0u8; 509]);
        member(&mut t, b"x", b'x', &pax_record("GNU.sparse.map", "0,1"));
        member(&mut t, b"s", b'0', b"");
        t.extend([0u8; 1024]);
        let mut r = TarReader::new(&t[..]);
        let e = r.next_entry().unwrap().unwrap();
        assert_eq!(e.size, 3);
        let mut v = Vec::new();
        r.data().read_to_end(&mut v).unwrap();
        assert_eq!(v, b"abc");
        assert_eq!(r.next_entry().unwrap().unwrap().kind, Kind::Other(b'S'));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        let mut bad_sum = header(b"f", b'0', 0);
        bad_sum[0] = b'g';
        for input in [
            &bad_sum[..],
            &header(b"f", b'0', 10)[..], // data missing
            &[1u8; 100][..],             // partial header
        ] {
            let mut r = TarReader::new(input);
            let res = r.next_entry().and_then(|_| r.next_entry());
            assert!(res.is_err(), "{input:?}");
        }
        for pax in [&b"5 a=b"[..], b"99 path=x\n", b"x path=y\n", b"5 ab\n"] {
            assert!(Pax::parse(pax).is_err(), "{pax:?}");
        }
        assert_eq!(number(b"\x80\0\0\0\0\0\0\0\0\0\x01\0"), Some(256));
        assert_eq!(number(b"\xff\xff"), None);
        assert_eq!(number(b" 17 \0"), Some(15));
    }
}
