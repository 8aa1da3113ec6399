//! The decompression of a layer, chosen by its media type: none (`…tar`), gzip (`…tar+gzip`,
//! docker's `…tar.gzip`) or zstd (`…tar+zstd`, what podman, buildah and buildx push on request).
//!
//! Takes: a layer's media type and a reader of its bytes. Returns: a reader of the tar stream, or
//! an error naming a compression otters cannot read (never the raw bytes read as a tar). Must
//! never: allocate what a frame header asks without a bound. The zstd decoder is `ruzstd` (pure
//! Rust); a frame may ask for a window of at most [`ZSTD_MAX_WINDOW`] (zstd's own default
//! decoding limit), so one layer being read holds at most that much history in memory. Every
//! frame of the stream is read in turn (`zstd:chunked` layers hold many, with skippable frames
//! between them); the bounds on what the tar stream holds are the tar walk's (its `Limits`), the
//! same for every compression.

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use std::io::{self, BufRead, BufReader, Read};

/// Largest window a zstd frame of a layer may ask for (128 MiB, zstd's `ZSTD_WINDOWLOG_LIMIT_DEFAULT`).
pub const ZSTD_MAX_WINDOW: u64 = 128 << 20;

/// How a layer's bytes are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression a tar layer's media type names; `None` for a suffix otters cannot read.
    pub fn of(media_type: &str) -> Option<Compression> {
        let (_, suffix) = media_type.rsplit_once("tar")?;
        match suffix {
            "" => Some(Compression::None),
            "+gzip" | ".gzip" => Some(Compression::Gzip),
            "+zstd" | ".zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// `r` decompressed as `compression` says.
pub fn reader<'a>(compression: Compression, r: Box<dyn Read + 'a>) -> Box<dyn Read + 'a> {
    match compression {
        Compression::None => r,
        Compression::Gzip => Box::new(flate2::read::GzDecoder::new(r)),
        Compression::Zstd => Box::new(ZstdFrames::new(r)),
    }
}

/// A zstd stream of one or more frames (skippable frames passed over), as one reader.
pub struct ZstdFrames<R: Read> {
    source: BufReader<R>,
    decoder: FrameDecoder,
    /// A frame is being decoded (its header was read).
    in_frame: bool,
}

impl<R: Read> ZstdFrames<R> {
    pub fn new(source: R) -> Self {
        let mut decoder = FrameDecoder::new();
        decoder.set_max_window_size(ZSTD_MAX_WINDOW);
        Self {
            source: BufReader::new(source),
            decoder,
            in_frame: false,
        }
    }

    /// Reads the next frame's header, passing over skippable frames. `false` at the end of the
    /// stream (which may only end between frames).
    fn next_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.source.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.decoder.init(&mut self.source) {
                Ok(()) => return Ok(true),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let want = u64::from(length);
                    let skipped = io::copy(&mut (&mut self.source).take(want), &mut io::sink())?;
                    if skipped != want {
                        return Err(invalid("the stream ends inside a skippable frame"));
                    }
                }
                Err(FrameDecoderError::WindowSizeTooBig { requested, max }) => {
                    return Err(invalid(&format!(
                        "a frame asks for a {requested}-byte window, more than the {max} bytes otters allows; recompress the layer with a smaller window (zstd without `--long`)"
                    )))
                }
                Err(e) => return Err(invalid(&e.to_string())),
            }
        }
    }
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {why}"))
}

impl<R: Read> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.in_frame {
                if !self.next_frame()? {
                    return Ok(0);
                }
                self.in_frame = true;
            }
            while self.decoder.can_collect() == 0 && !self.decoder.is_finished() {
                self.decoder
                    .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(|e| invalid(&e.to_string()))?;
            }
            let n = self.decoder.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            if self.decoder.is_finished() {
                let (read, computed) = (
                    self.decoder.get_checksum_from_data(),
                    self.decoder.get_calculated_checksum(),
                );
                if let (Some(read), Some(computed)) = (read, computed) {
                    if read != computed {
                        return Err(invalid("a frame's content checksum does not match"));
                    }
                }
                self.in_frame = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    fn skippable(payload: &[u8]) -> Vec<u8> {
        let mut v = 0x184D_2A50u32.to_le_bytes().to_vec();
        v.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn decode(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        ZstdFrames::new(bytes).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn media_types_name_their_compression() {
        for (mt, want) in [
            (
                "application/vnd.oci.image.layer.v1.tar",
                Some(Compression::None),
            ),
            (
                "application/vnd.oci.image.layer.v1.tar+gzip",
                Some(Compression::Gzip),
            ),
            (
                "application/vnd.docker.image.rootfs.diff.tar.gzip",
                Some(Compression::Gzip),
            ),
            (
                "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
                Some(Compression::Gzip),
            ),
            (
                "application/vnd.oci.image.layer.v1.tar+zstd",
                Some(Compression::Zstd),
            ),
            ("application/vnd.oci.image.layer.v1.tar+bzip2", None),
            (
                "application/vnd.oci.image.layer.v1.tar+gzip+encrypted",
                None,
            ),
            ("application/octet-stream", None),
        ] {
            assert_eq!(Compression::of(mt), want, "{mt}");
        }
    }

    #[test]
    fn frames_and_skippable_frames_read_as_one_stream() {
        let a: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut stream = frame(&a[..70_000]);
        stream.extend(skippable(b"metadata a tool wrote"));
        stream.extend(frame(&a[70_000..]));
        stream.extend(skippable(b""));
        assert_eq!(decode(&stream).unwrap(), a);
        assert_eq!(decode(&[]).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn a_cut_or_damaged_stream_is_an_error_never_a_panic() {
        let a: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 13) as u8).collect();
        let whole = frame(&a);
        assert!(decode(&whole[..whole.len() / 2]).is_err());
        assert!(decode(&skippable(b"0123456789")[..9]).is_err());
        assert!(decode(b"not zstd at all").is_err());
        for i in (0..whole.len()).step_by(7) {
            let mut bad = whole.clone();
            bad[i] ^= 0x5a;
            let _ = decode(&bad);
        }
    }

    #[test]
    fn a_frame_asking_for_a_huge_window_is_refused() {
        // Magic, then a frame header descriptor with no single-segment flag and a window
        // descriptor of exponent 31 (a 2 GiB window).
        let mut bad = 0xFD2F_B528u32.to_le_bytes().to_vec();
        bad.extend_from_slice(&[0x00, (31 - 10) << 3]);
        bad.extend_from_slice(&[0; 16]);
        let err = decode(&bad).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "zstd: a frame asks for a 2147483648-byte window, more than the 134217728 bytes"
            ),
            "{err}"
        );
    }
}
