//! What the kernel needs to start an exported program: the interpreter a `#!` line names, or
//! the dynamic loader (`PT_INTERP`) of an ELF program. An export holds nothing but the runtime,
//! its BINs and the agent's files, so a shell-script RUNTIME (`#!/bin/sh`) or a dynamically
//! linked one would fail in the container with a bare `exec /opt/runtime/runtime: no such file or
//! directory`; the export refuses it instead, naming the missing file.
//!
//! Takes: a file of the tree the export just materialised (opened without following a link).
//! Returns: the absolute path it needs, if any. Must never: read more than the `#!` line (the
//! kernel's 256 bytes) and, for ELF, 64 KiB of program headers and a 4 KiB loader path, whatever
//! the file claims.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The longest `#!` line the kernel reads (`BINPRM_BUF_SIZE`).
const SHEBANG_MAX: usize = 256;
/// Program headers read at most.
const PHDRS_MAX: u64 = 64 << 10;
/// `PT_INTERP` path read at most.
const INTERP_MAX: u64 = 4 << 10;

/// How a program needs another file to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Needs {
    /// A script: the interpreter of its `#!` line.
    Interpreter(Vec<u8>),
    /// A dynamically linked ELF program: its loader.
    Loader(Vec<u8>),
}

impl Needs {
    pub fn path(&self) -> &[u8] {
        match self {
            Needs::Interpreter(p) | Needs::Loader(p) => p,
        }
    }
}

/// What the program at `path` needs to start, if anything.
pub fn needs(path: &Path) -> io::Result<Option<Needs>> {
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)?;
    let mut head = Vec::with_capacity(SHEBANG_MAX);
    (&mut f).take(SHEBANG_MAX as u64).read_to_end(&mut head)?;
    if let Some(line) = head.strip_prefix(b"#!") {
        return Ok(interpreter(line).map(Needs::Interpreter));
    }
    if head.starts_with(b"\x7fELF") {
        return Ok(elf_loader(&mut f, &head)?.map(Needs::Loader));
    }
    Ok(None)
}

/// The interpreter of a `#!` line (after the `#!`): its first word.
fn interpreter(line: &[u8]) -> Option<Vec<u8>> {
    let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
    let word: Vec<u8> = line
        .iter()
        .skip_while(|b| matches!(b, b' ' | b'\t'))
        .take_while(|b| !matches!(b, b' ' | b'\t' | b'\r' | 0))
        .copied()
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The `PT_INTERP` path of an ELF file whose first bytes are `head`.
fn elf_loader(f: &mut fs::File, head: &[u8]) -> io::Result<Option<Vec<u8>>> {
    const PT_INTERP: u32 = 3;
    let (Some(&class), Some(&data)) = (head.get(4), head.get(5)) else {
        return Ok(None);
    };
    let wide = match class {
        1 => false,
        2 => true,
        _ => return Ok(None),
    };
    let little = match data {
        1 => true,
        2 => false,
        _ => return Ok(None),
    };
    let uint = |b: &[u8]| -> u64 {
        let mut v = 0u64;
        if little {
            for &x in b.iter().rev() {
                v = (v << 8) | u64::from(x);
            }
        } else {
            for &x in b {
                v = (v << 8) | u64::from(x);
            }
        }
        v
    };
    let field = |at: usize, len: usize| head.get(at..at + len).map(&uint);
    let (phoff, phentsize, phnum) = if wide {
        (field(0x20, 8), field(0x36, 2), field(0x38, 2))
    } else {
        (field(0x1C, 4), field(0x2A, 2), field(0x2C, 2))
    };
    let (Some(phoff), Some(phentsize), Some(phnum)) = (phoff, phentsize, phnum) else {
        return Ok(None);
    };
    let min = if wide { 0x38 } else { 0x20 };
    if phentsize < min || phentsize.saturating_mul(phnum) > PHDRS_MAX {
        return Ok(None);
    }
    let mut table = Vec::new();
    f.seek(SeekFrom::Start(phoff))?;
    f.take(phentsize * phnum).read_to_end(&mut table)?;
    for ph in table.chunks_exact(usize::try_from(phentsize).unwrap_or(usize::MAX)) {
        if uint(&ph[0..4]) != u64::from(PT_INTERP) {
            continue;
        }
        let (offset, size) = if wide {
            (uint(&ph[0x08..0x10]), uint(&ph[0x20..0x28]))
        } else {
            (uint(&ph[0x04..0x08]), uint(&ph[0x10..0x14]))
        };
        let mut path = Vec::new();
        f.seek(SeekFrom::Start(offset))?;
        f.take(size.min(INTERP_MAX)).read_to_end(&mut path)?;
        let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
        path.truncate(end);
        return Ok((!path.is_empty()).then_some(path));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs_of(bytes: &[u8]) -> Option<Needs> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, bytes).unwrap();
        needs(&p).unwrap()
    }

    #[test]
    fn a_script_needs_its_interpreter() {
        for (text, want) in [
            (&b"#!/bin/sh\necho hi\n"[..], &b"/bin/sh"[..]),
            (b"#! /usr/bin/env python3 -u\n", b"/usr/bin/env"),
            (b"#!/bin/bash\r\n", b"/bin/bash"),
            (b"#!/opt/bins/busybox sh", b"/opt/bins/busybox"),
        ] {
            assert_eq!(
                needs_of(text),
                Some(Needs::Interpreter(want.to_vec())),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        assert_eq!(needs_of(b"#!\n"), None);
        assert_eq!(needs_of(b"plain data"), None);
        assert_eq!(needs_of(b""), None);
    }

    /// A minimal 64-bit little-endian ELF header with one program header at 64.
    fn elf64(p_type: u32, interp: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 64 + 56];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        f[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        f[0x38..0x3A].copy_from_slice(&1u16.to_le_bytes());
        let at = f.len() as u64;
        f[64..68].copy_from_slice(&p_type.to_le_bytes());
        f[64 + 8..64 + 16].copy_from_slice(&at.to_le_bytes());
        f[64 + 0x20..64 + 0x28].copy_from_slice(&(interp.len() as u64).to_le_bytes());
        f.extend_from_slice(interp);
        f
    }

    #[test]
    fn a_dynamic_program_needs_its_loader_a_static_one_nothing() {
        assert_eq!(
            needs_of(&elf64(3, b"/lib64/ld-linux-x86-64.so.2\0")),
            Some(Needs::Loader(b"/lib64/ld-linux-x86-64.so.2".to_vec()))
        );
        assert_eq!(needs_of(&elf64(1, b"")), None);
        // Truncated or lying headers are no loader, and no error.
        assert_eq!(needs_of(b"\x7fELF\x02\x01"), None);
        let mut lying = elf64(3, b"/x\0");
        lying[0x38..0x3A].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(needs_of(&lying), None);
    }

    #[test]
    fn this_test_binary_is_read_as_it_is() {
        // Whatever the toolchain made of this test: reading it never fails.
        let me = std::env::current_exe().unwrap();
        let _ = needs(&me).unwrap();
    }
}
