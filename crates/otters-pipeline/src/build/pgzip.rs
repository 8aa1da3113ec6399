//! Deterministic block-parallel gzip: the compression of directory layers.
//!
//! Takes: an output writer, a worker count, and a closure that writes the uncompressed stream.
//! Returns: the writer, after one gzip member holding the stream. The bytes depend only on the
//! stream, never on the worker count or the machine:
//!
//! - A stream of at most [`BLOCK`] bytes is one deflate stream at [`GZIP_LEVEL`] (flate2's
//!   `GzBuilder`, mtime 0), fed in the pieces it was written in (deflate's output depends on
//!   them; the tar writer's are fixed): the format and the bytes directory layers had before this
//!   module, so small layers keep their digests.
//! - A longer stream is cut into blocks of exactly [`BLOCK`] bytes (the last one shorter). Each
//!   block is deflated on its own (a fresh compressor at [`BLOCK_LEVEL`], primed with the last
//!   32 KiB of the block before it as its dictionary, as pigz does), ending in a sync flush (the
//!   last one in the final block), so the blocks concatenate into one deflate stream that any
//!   gzip reader unpacks. A block whose bytes are near-uniform ([`incompressible`], an integer
//!   test of its byte histogram) is written as stored deflate blocks instead: compressing it
//!   would cost the most time for nothing. The CRC-32 is combined from the blocks' CRCs. These
//!   bytes do not depend on the write sizes either: each block is deflated in one call.
//!
//! The caller's thread fills the blocks (the tar: reading the files), `workers` threads compress
//! them, and one more thread, started with the second block, writes them to the output in order
//! (for a store blob that is SHA-256 and the file write, which so overlap the reading instead of
//! following it); at most `2 × workers + 2` blocks are in flight.
//! Must never: let the worker count, timing or write sizes change a byte of the output.

use flate2::{Compress, Compression, Crc, FlushCompress, GzBuilder, Status};
use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// The gzip level of directory layers of at most one [`BLOCK`] (longer ones: [`BLOCK_LEVEL`]).
/// Changing it changes the digest of those layers.
pub const GZIP_LEVEL: u32 = 6;

/// Uncompressed bytes per block. Changing it changes the digest of every layer longer than it.
pub const BLOCK: usize = 1 << 20;

/// The deflate level of the blocks of a stream longer than one [`BLOCK`] (a stream of one block
/// keeps [`GZIP_LEVEL`] and the bytes it had before). Directory layers must stay gzip (oras'
/// `io.deis.oras.content.unpack` and openotters' loader read only `tar+gzip`), and level 6 made
/// a build of text 10× its floor. Level 2, not 1: zlib-rs' level 1 is its "quick" deflate (static
/// Huffman codes only), whose text layers were 1.43× the size of `gzip -1`'s; level 2 is the
/// classic fast deflate with dynamic codes, 0.98× `gzip -1`'s size for 0.73× the CPU of one
/// thread of `pigz -1` (docs/performance.md, "Layer size against gzip -1").
/// Changing it changes the digest of every layer longer than a block.
pub const BLOCK_LEVEL: u32 = 2;

/// How much of the previous block primes a block's compressor (deflate's window).
const WINDOW: usize = 32 * 1024;

/// The longest stored deflate block.
const STORED_MAX: usize = 65_535;

/// How many workers to compress with on this machine: its available cores (the affinity mask
/// counts), at most 8. The output does not depend on it.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Runs `fill` with a writer whose bytes end up gzip-compressed in `out`; returns `out` and what
/// `fill` returned. An error of `fill` or of `out` ends the stream; the workers stop with it.
pub fn gzip<W: Write + Send, T, E: From<io::Error>>(
    out: W,
    workers: usize,
    fill: impl FnOnce(&mut dyn Write) -> Result<T, E>,
) -> Result<(W, T), E> {
    std::thread::scope(|scope| {
        let pool = (workers > 1).then(|| {
            let (job_tx, job_rx) = mpsc::sync_channel::<Job>(workers);
            let job_rx = Arc::new(Mutex::new(job_rx));
            for _ in 0..workers {
                let rx = Arc::clone(&job_rx);
                scope.spawn(move || work(&rx));
            }
            job_tx
        });
        let mut w = Blocks {
            scope,
            out: Some(out),
            writer: None,
            buf: Vec::with_capacity(BLOCK),
            pieces: Vec::new(),
            dict: Vec::new(),
            pool,
            max_pending: 2 * workers.max(1),
        };
        let value = fill(&mut w)?;
        Ok((w.finish()?, value))
    })
}

/// One block to compress, and where its result goes.
struct Job {
    data: Vec<u8>,
    dict: Vec<u8>,
    last: bool,
    done: SyncSender<io::Result<Done>>,
}

/// One compressed block, with the CRC of its uncompressed bytes.
struct Done {
    bytes: Vec<u8>,
    crc: Crc,
}

fn work(jobs: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while taking a job, never while compressing one.
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let done = compress_block(&job.data, &job.dict, job.last);
        // The receiver is gone only when the stream was abandoned.
        let _ = job.done.send(done);
    }
}

struct Blocks<'scope, 'env, W: Write + Send> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    /// The output, until the stream is known to be longer than one block; then the writer's.
    out: Option<W>,
    /// The thread writing the blocks in order, and where their results go to it.
    writer: Option<Writer<'scope, W>>,
    /// The block being filled.
    buf: Vec<u8>,
    /// While the first block is filled: where each `write` ended in it. Deflate's output depends
    /// on how its input is cut into calls, so a stream of one block is replayed in these pieces.
    pieces: Vec<usize>,
    /// The last [`WINDOW`] bytes of the block handed out before `buf`.
    dict: Vec<u8>,
    pool: Option<SyncSender<Job>>,
    max_pending: usize,
}

struct Writer<'scope, W> {
    results: SyncSender<Pending>,
    thread: std::thread::ScopedJoinHandle<'scope, io::Result<(W, Crc)>>,
}

enum Pending {
    Ready(io::Result<Done>),
    Waiting(Receiver<io::Result<Done>>),
}

impl<'scope, W: Write + Send + 'scope> Blocks<'scope, '_, W> {
    /// Hands the full (or, when `last`, final) block out for compression.
    fn dispatch(&mut self, last: bool) -> io::Result<()> {
        if let Some(out) = self.out.take() {
            let (results, rx) = mpsc::sync_channel(self.max_pending);
            let thread = self.scope.spawn(move || write_in_order(out, &rx));
            self.writer = Some(Writer { results, thread });
            self.pieces = Vec::new();
        }
        let data = std::mem::replace(&mut self.buf, Vec::with_capacity(BLOCK));
        let tail = data.len().saturating_sub(WINDOW);
        let next_dict = data[tail..].to_vec();
        let dict = std::mem::replace(&mut self.dict, next_dict);
        if let Some(pool) = &self.pool {
            let (done, rx) = mpsc::sync_channel(1);
            let job = Job {
                data,
                dict,
                last,
                done,
            };
            pool.send(job)
                .map_err(|_| io::Error::other("a compression worker stopped"))?;
            self.send(Pending::Waiting(rx))
        } else {
            let done = compress_block(&data, &dict, last);
            self.send(Pending::Ready(done))
        }
    }

    /// Queues a block's result for the writer; when the writer has stopped, its error.
    fn send(&mut self, p: Pending) -> io::Result<()> {
        let Some(w) = &self.writer else {
            return Err(io::Error::other("the gzip writer is not started"));
        };
        if w.results.send(p).is_ok() {
            return Ok(());
        }
        match self.stop_writer() {
            Err(e) => Err(e),
            Ok(_) => Err(io::Error::other("the gzip writer stopped")),
        }
    }

    /// Closes the writer's queue and waits for it: the output and the CRC of what it wrote.
    fn stop_writer(&mut self) -> io::Result<(W, Crc)> {
        let Some(Writer { results, thread }) = self.writer.take() else {
            return Err(io::Error::other("the gzip writer is not started"));
        };
        drop(results);
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the gzip writer panicked")))
    }

    fn finish(mut self) -> io::Result<W> {
        if let Some(out) = self.out.take() {
            // One block or less: the single-stream format (and bytes) of before.
            let mut gz = GzBuilder::new()
                .mtime(0)
                .write(out, Compression::new(GZIP_LEVEL));
            let mut at = 0;
            for &end in &self.pieces {
                gz.write_all(&self.buf[at..end])?;
                at = end;
            }
            return gz.finish();
        }
        self.dispatch(true)?;
        let (mut out, crc) = self.stop_writer()?;
        out.write_all(&crc.sum().to_le_bytes())?;
        out.write_all(&crc.amount().to_le_bytes())?;
        Ok(out)
    }
}

/// The writer thread: the gzip header, then each block's bytes in stream order as they are
/// ready, until the queue is closed; returns the output and the combined CRC.
fn write_in_order<W: Write>(mut out: W, results: &Receiver<Pending>) -> io::Result<(W, Crc)> {
    out.write_all(&gzip_header())?;
    let mut crc = Crc::new();
    for p in results {
        let done = match p {
            Pending::Ready(done) => done?,
            Pending::Waiting(rx) => rx
                .recv()
                .map_err(|_| io::Error::other("a compression worker stopped"))??,
        };
        crc.combine(&done.crc);
        out.write_all(&done.bytes)?;
    }
    Ok((out, crc))
}

impl<'scope, W: Write + Send + 'scope> Write for Blocks<'scope, '_, W> {
    fn write(&mut self, mut data: &[u8]) -> io::Result<usize> {
        let n = data.len();
        while !data.is_empty() {
            if self.buf.len() == BLOCK {
                self.dispatch(false)?;
            }
            let take = (BLOCK - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.out.is_some() {
                self.pieces.push(self.buf.len());
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The header `GzBuilder::new().mtime(0)` writes at level 6: no name, no mtime, OS unknown.
fn gzip_header() -> [u8; 10] {
    [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]
}

/// True when `data`'s bytes are spread so evenly that deflate would gain at most about 1 %:
/// 256 · Σ count² ≤ (17/16) · n², that is a collision entropy of at least 7.91 bits per byte
/// (so a Shannon entropy at least that). Integer arithmetic only, the same on every machine.
pub fn incompressible(data: &[u8]) -> bool {
    let mut counts = [0u64; 256];
    for &b in data {
        counts[usize::from(b)] += 1;
    }
    let n = data.len() as u64;
    let squares: u64 = counts.iter().map(|c| c * c).sum();
    // n ≤ BLOCK = 2^20, so n² and 256 · 16 · Σc² ≤ 2^52 fit in a u64.
    256 * 16 * squares <= 17 * n * n
}

/// One block's deflate bytes: compressed, primed with `dict`, ending in a sync flush (or the end
/// of the stream when `last`); or stored when [`incompressible`].
fn compress_block(data: &[u8], dict: &[u8], last: bool) -> io::Result<Done> {
    let mut crc = Crc::new();
    crc.update(data);
    let bytes = if incompressible(data) {
        stored(data, last)
    } else {
        deflate(data, dict, last)?
    };
    Ok(Done { bytes, crc })
}

/// `data` as stored deflate blocks (byte-aligned: every block before ends in a sync flush).
fn stored(data: &[u8], last: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / STORED_MAX * 5 + 5);
    let mut chunks = data.chunks(STORED_MAX).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[u8::from(last), 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let final_bit = last && chunks.peek().is_none();
        let len = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
        out.push(u8::from(final_bit));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

/// `data` deflated at [`BLOCK_LEVEL`] by a new compressor primed with `dict`. New, never one
/// `reset()` after another block: zlib-rs' reset keeps the window's old bytes, and its
/// dictionary and match code read a few bytes past the data, so a reused compressor's output
/// depended on the block it compressed before, that is on which worker took which block
/// (zlib-rs issue 459; the same bytes came out only on one thread).
fn deflate(data: &[u8], dict: &[u8], last: bool) -> io::Result<Vec<u8>> {
    let fail = |e: flate2::CompressError| io::Error::other(format!("deflate: {e}"));
    let mut c = Compress::new(Compression::new(BLOCK_LEVEL), false);
    if !dict.is_empty() {
        c.set_dictionary(dict).map_err(fail)?;
    }
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    let mut out = Vec::with_capacity(data.len() + data.len() / 8 + 1024);
    let start = c.total_in();
    loop {
        let used = usize::try_from(c.total_in() - start).map_or(data.len(), |n| n.min(data.len()));
        let status = c
            .compress_vec(&data[used..], &mut out, flush)
            .map_err(fail)?;
        let all_in = c.total_in() - start == data.len() as u64;
        // A flush is complete when the compressor returns with output space left.
        let flushed = all_in && out.len() < out.capacity();
        if status == Status::StreamEnd || (!last && flushed) {
            return Ok(out);
        }
        if out.len() == out.capacity() {
            out.reserve(64 * 1024);
        } else if status == Status::BufError {
            return Err(io::Error::other("deflate made no progress"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Text-like and random bytes, mixed, over several blocks.
    fn sample(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut out = Vec::with_capacity(len);
        let mut i = 0;
        while out.len() < len {
            if (i / 3) % 2 == 0 {
                out.extend_from_slice(format!("line {i}: the quick brown otter\n").as_bytes());
            } else {
                for _ in 0..512 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    out.push(state as u8);
                }
            }
            i += 1;
        }
        out.truncate(len);
        out
    }

    fn gz(data: &[u8], workers: usize, piece: usize) -> Vec<u8> {
        let (out, ()) = gzip(Vec::new(), workers, |w| -> io::Result<()> {
            for p in data.chunks(piece) {
                w.write_all(p)?;
            }
            Ok(())
        })
        .unwrap();
        out
    }

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn same_bytes_for_any_worker_count_and_write_sizes() {
        for len in [0, 10, BLOCK, BLOCK + 1, 3 * BLOCK + 12_345] {
            let data = sample(len);
            let one = gz(&data, 1, 4096);
            for (workers, piece) in [(2, 1000), (3, BLOCK), (8, 7 * BLOCK)] {
                // One block is deflated as it was written (the format of before); longer streams
                // do not depend on the write sizes either.
                let piece = if len <= BLOCK { 4096 } else { piece };
                assert!(
                    one == gz(&data, workers, piece),
                    "len {len}, {workers} workers"
                );
            }
            assert!(gunzip(&one) == data, "len {len}");
        }
    }

    /// Lines of nine words drawn from `seed` (an LCG): text that the block level compresses about 3×.
    fn otter_lines(seed: u64, len: usize) -> Vec<u8> {
        const WORDS: [&str; 8] = [
            "otter", "river", "stone", "fish", "swim", "den", "night", "water",
        ];
        let mut state = seed;
        (0..)
            .map(|i| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let w = WORDS[(state >> 61) as usize];
                if i % 9 == 8 {
                    format!("{w}\n")
                } else {
                    format!("{w} ")
                }
            })
            .flat_map(String::into_bytes)
            .take(len)
            .collect()
    }

    /// The documented format, built here block by block with a new compressor for each:
    /// header, each block deflated on its own primed with the 32 KiB before it, CRC and length.
    fn reference(data: &[u8]) -> Vec<u8> {
        let mut out = gzip_header().to_vec();
        let blocks: Vec<&[u8]> = data.chunks(BLOCK).collect();
        for (i, block) in blocks.iter().enumerate() {
            let last = i + 1 == blocks.len();
            if incompressible(block) {
                out.extend(stored(block, last));
                continue;
            }
            let mut c = Compress::new(Compression::new(BLOCK_LEVEL), false);
            if i > 0 {
                c.set_dictionary(&blocks[i - 1][BLOCK - WINDOW..]).unwrap();
            }
            let mut bytes = Vec::with_capacity(2 * block.len() + 1024);
            let flush = if last {
                FlushCompress::Finish
            } else {
                FlushCompress::Sync
            };
            c.compress_vec(block, &mut bytes, flush).unwrap();
            assert!(c.total_in() == block.len() as u64);
            out.extend(bytes);
        }
        let mut crc = Crc::new();
        crc.update(data);
        out.extend(crc.sum().to_le_bytes());
        out.extend(crc.amount().to_le_bytes());
        out
    }

    #[test]
    fn a_block_does_not_depend_on_what_its_worker_compressed_before() {
        // A block of text, then a short one primed with its last 32 KiB: compressed by one
        // reused-and-reset zlib-rs compressor, the second block came out other than from a new
        // compressor (the window kept the first block's bytes), so with several workers a layer's
        // bytes depended on which worker had taken which block. This input showed it.
        let mut data = otter_lines(40, BLOCK);
        data.extend(otter_lines(1040, 4096));
        let want = reference(&data);
        for workers in [1, 2] {
            assert!(gz(&data, workers, BLOCK) == want, "{workers} workers");
        }
        assert!(gunzip(&want) == data);
    }

    #[test]
    fn one_block_is_the_single_stream_format_of_before() {
        let data = sample(BLOCK);
        let mut old = GzBuilder::new()
            .mtime(0)
            .write(Vec::new(), Compression::new(GZIP_LEVEL));
        for piece in data.chunks(333) {
            old.write_all(piece).unwrap();
        }
        assert!(old.finish().unwrap() == gz(&data, 2, 333));
    }

    #[test]
    fn random_blocks_are_stored_and_text_blocks_compressed() {
        let mut state = 7u64;
        let random: Vec<u8> = (0..2 * BLOCK)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                (state >> 56) as u8
            })
            .collect();
        assert!(incompressible(&random));
        let out = gz(&random, 2, BLOCK);
        // Stored: 5 bytes per 64 KiB block, a header and a trailer.
        assert!(
            out.len() < random.len() + random.len() / 1000 + 64,
            "{}",
            out.len()
        );
        assert!(gunzip(&out) == random);

        let text: Vec<u8> = (0..)
            .flat_map(|i| format!("line {i}: the quick brown otter\n").into_bytes())
            .take(3 * BLOCK)
            .collect();
        assert!(!incompressible(&text));
        let out = gz(&text, 2, BLOCK);
        assert!(out.len() < text.len() * 3 / 5, "{}", out.len());
        assert!(gunzip(&out) == text);
    }

    #[test]
    fn an_error_of_the_input_ends_the_stream_and_its_threads() {
        // Three blocks handed to the workers and the writer thread, then the input fails: the
        // error comes back (nothing waits forever on a block that never comes).
        let data = sample(3 * BLOCK + 10);
        for workers in [1, 2] {
            let r = gzip(Vec::new(), workers, |w| -> io::Result<()> {
                w.write_all(&data)?;
                Err(io::Error::other("the input changed"))
            });
            assert!(r.unwrap_err().to_string().contains("the input changed"));
        }
    }

    #[test]
    fn an_error_of_the_writer_stops_the_stream() {
        #[derive(Debug)]
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let data = sample(5 * BLOCK);
        let r = gzip(Full, 2, |w| w.write_all(&data));
        assert!(r.unwrap_err().to_string().contains("disk full"));
    }
}
