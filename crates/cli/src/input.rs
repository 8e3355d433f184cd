//! Opening inputs: a path (memory-mapped) or `-` (stdin), with gzip unwrapped transparently.
//!
//! A plain file is mapped ([`Input`]). A gzip file, stdin or a pipe is a stream
//! ([`StreamInput`]): its first (decompressed) bytes are read ahead for format detection, so a
//! stream of no known format fails before it is inflated. The formats whose readers stream
//! (jitdump and Mono files: `info`, `dump`, `validate`, `report`) read it one record or buffer
//! at a time; for every other reader the stream is inflated into an unlinked temporary file
//! that is then mapped like a plain file ([`crate::inflate::read_whole`]), up to
//! [`crate::inflate::max_inflated`] bytes.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

use anyhow::{Context, Result};
use profkit_common::{FileBytes, Truncation};

/// An opened input.
pub struct Input {
    /// Name for messages: the path as given, or `<stdin>`.
    pub name: String,
    /// The (decompressed) content.
    pub data: FileBytes,
    /// `Some("gzip")` when the file was compressed.
    pub compression: Option<&'static str>,
    /// Where a compressed stream is cut off (or corrupt): `data` holds what was inflated
    /// before, which the format's reader reads like any cut file.
    pub cut: Option<Truncation>,
}

/// How much of a stream is read ahead for format detection ([`StreamInput::head`]).
const HEAD: usize = 64 << 10;

pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Opens `path` (`-` = stdin) whole: a plain file mapped, a gzip file or stdin inflated into a
/// temporary file and mapped (see [`crate::inflate::read_whole`]).
pub fn open(path: &Path) -> Result<Input> {
    let path = &*profkit_record::recording_file(path);
    match open_streaming(path)? {
        Opened::Data(input) => Ok(input),
        Opened::Stream(s) => crate::inflate::read_whole(s, "the input"),
    }
}

/// An input opened for a streaming reader: plain files stay mapped (their pages can be
/// released as the reader moves on); gzip files and stdin are read as a stream, so memory does
/// not grow with the input.
pub enum Opened {
    /// A plain file, mapped (or read, when it cannot be mapped).
    Data(Input),
    /// A stream: its first (decompressed) bytes are read ahead for format detection.
    Stream(StreamInput),
}

/// A stream input: the decompressed bytes, as [`Read`] and [`BufRead`], from the start.
pub struct StreamInput {
    /// Name for messages.
    pub name: String,
    /// `Some("gzip")` when the stream is compressed.
    pub compression: Option<&'static str>,
    /// The bytes read ahead ([`StreamInput::head`]), returned first.
    head: Vec<u8>,
    /// How much of `head` has been consumed.
    at: usize,
    /// Whether the read-ahead has been done.
    peeked: bool,
    /// How the stream failed during the read-ahead (returned once `head` is consumed).
    failed: Option<io::Error>,
    inner: Box<dyn BufRead + Send>,
    /// (Decompressed) bytes consumed so far.
    consumed: u64,
}

impl StreamInput {
    fn new(
        name: String,
        compression: Option<&'static str>,
        inner: Box<dyn BufRead + Send>,
    ) -> Self {
        StreamInput {
            name,
            compression,
            head: Vec::new(),
            at: 0,
            peeked: false,
            failed: None,
            inner,
            consumed: 0,
        }
    }

    /// The first (decompressed) bytes of the stream, up to 64 KiB (fewer when it ends or fails
    /// before), for format detection; they are still read first.
    pub fn head(&mut self) -> &[u8] {
        if !self.peeked {
            self.peeked = true;
            self.head = vec![0u8; HEAD];
            let mut n = 0;
            while let Some(rest) = self.head.get_mut(n..).filter(|r| !r.is_empty()) {
                match self.inner.read(rest) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.failed = Some(e);
                        break;
                    }
                }
            }
            self.head.truncate(n);
        }
        self.head.get(self.at..).unwrap_or_default()
    }

    /// How the stream failed while its first bytes were read ahead ([`StreamInput::head`]), if
    /// it did.
    pub fn head_failure(&self) -> Option<&io::Error> {
        self.failed.as_ref()
    }

    /// Reads (and drops) the rest of the stream; the stream's whole (decompressed) size, or
    /// what there was of it before it failed.
    pub fn finish(&mut self) -> u64 {
        let _ = io::copy(self, &mut io::sink());
        self.consumed
    }
}

impl Read for StreamInput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), avail.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for StreamInput {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at < self.head.len() {
            return Ok(self.head.get(self.at..).unwrap_or_default());
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.consumed += n as u64;
        if self.at < self.head.len() {
            self.at += n;
            if self.at >= self.head.len() {
                self.head = Vec::new();
                self.at = 0;
            }
        } else {
            self.inner.consume(n);
        }
    }
}

/// Opens `path` (`-` = stdin) for streaming: gzip (by its magic) and stdin become streams,
/// plain files are mapped.
pub fn open_streaming(path: &Path) -> Result<Opened> {
    let path = &*profkit_record::recording_file(path);
    const BUF: usize = 1 << 20;
    let (name, mut raw): (String, Box<dyn io::BufRead + Send>) = if path.as_os_str() == "-" {
        (
            "<stdin>".to_string(),
            Box::new(io::BufReader::with_capacity(BUF, io::stdin())),
        )
    } else {
        let name = path.display().to_string();
        let mut file = File::open(path).with_context(|| format!("{name}: cannot open"))?;
        let mut magic = [0u8; 2];
        let n = file
            .read(&mut magic)
            .with_context(|| format!("{name}: cannot read"))?;
        let is_file = file.metadata().map(|m| m.is_file()).unwrap_or(false);
        if is_file && !(n == 2 && magic == GZIP_MAGIC) {
            let data = FileBytes::of_file(&file).with_context(|| format!("{name}: cannot read"))?;
            return Ok(Opened::Data(Input {
                name,
                data,
                compression: None,
                cut: None,
            }));
        }
        let head = io::Cursor::new(magic.get(..n).unwrap_or_default().to_vec());
        (
            name,
            Box::new(io::BufReader::with_capacity(BUF, head.chain(file))),
        )
    };
    let is_gzip = raw
        .fill_buf()
        .with_context(|| format!("{name}: cannot read"))?
        .starts_with(&GZIP_MAGIC);
    Ok(Opened::Stream(if is_gzip {
        let inflated =
            io::BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(raw));
        StreamInput::new(name, Some("gzip"), Box::new(inflated))
    } else {
        StreamInput::new(name, None, raw)
    }))
}
