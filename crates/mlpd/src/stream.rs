//! Reading a file as a stream (a gzip file, a pipe): the header, then one buffer at a time,
//! each held in memory only while it is decoded. Buffers are self-contained (every one restarts
//! its delta state), so nothing but the current buffer's bytes needs to be kept.
//!
//! [`StreamReader`] mirrors [`crate::File::buffers`]: a bad buffer magic is reported and the
//! scan resumes at the next `BUF_ID`; a buffer cut off by the end of the stream is yielded
//! marked truncated and ends the scan, and [`StreamReader::truncation`] says where (as
//! [`crate::read::Buffers::truncation`] does). Offsets in errors are offsets in the
//! decompressed stream.

use std::io::{self, Read};

use profkit_common::Truncation;

use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;
use crate::raw::{BUF_HEADER_SIZE, BUF_ID};
use crate::read::file::{buffer_cut, header_cut};
use crate::read::{Buffer, BufferHeader};

/// Header strings longer than this are refused (Mono writes a few dozen bytes).
const MAX_HEADER_STRING: u32 = 1 << 20;

/// The largest buffer a [`StreamReader`] holds in memory: 256 MiB (Mono writes 64 KiB buffers,
/// larger only for an event that does not fit). A longer buffer in a stream is a `bad value`
/// error and is skipped (the file can still be read whole once decompressed).
pub const MAX_STREAM_BUFFER: u32 = 256 << 20;

/// A buffer read from a stream: it owns its event bytes.
#[derive(Clone, Debug, Default)]
pub struct OwnedBuffer {
    /// Index in the file.
    pub index: usize,
    /// Offset of its 48-byte header in the (decompressed) stream.
    pub offset: u64,
    /// The header.
    pub header: BufferHeader,
    /// The event bytes (shorter than `header.len` when the stream ended early).
    pub data: Vec<u8>,
    /// True when the stream ended before `header.len` bytes.
    pub truncated: bool,
}

impl OwnedBuffer {
    /// The borrowed view the decoder works on.
    pub fn buffer<'a>(&'a self, file: &Header) -> Buffer<'a> {
        Buffer::new(
            file,
            self.index,
            self.offset,
            self.header,
            &self.data,
            self.truncated,
        )
    }

    /// Offset just past the buffer's data (where the next buffer starts, or the stream ends).
    pub fn end(&self) -> u64 {
        self.offset + (BUF_HEADER_SIZE + self.data.len()) as u64
    }

    /// The cut, when the stream ended before the buffer's `header.len` bytes.
    pub fn truncation(&self) -> Option<Truncation> {
        self.truncated
            .then(|| buffer_cut(self.index, self.offset, self.header.len, self.data.len()))
    }
}

/// A reader with bytes pushed back in front of it (after a resync).
#[derive(Debug)]
struct Carry<R> {
    pending: Vec<u8>,
    at: usize,
    inner: R,
}

impl<R: Read> Read for Carry<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(rest) = self.pending.get(self.at..).filter(|r| !r.is_empty()) {
            let n = rest.len().min(buf.len());
            if let (Some(dst), Some(src)) = (buf.get_mut(..n), rest.get(..n)) {
                dst.copy_from_slice(src);
            }
            self.at += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

/// Reads a file's header and then its buffers from any [`Read`].
#[derive(Debug)]
pub struct StreamReader<R> {
    r: Carry<R>,
    header: Header,
    pos: u64,
    index: usize,
    done: bool,
    truncation: Option<Truncation>,
    /// How the stream failed, if it did (a cut or corrupt gzip stream).
    failure: Option<String>,
}

fn io_error(pos: u64, e: &io::Error) -> Error {
    Error::new(pos, ErrorKind::Io(e.to_string()))
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let Some(rest) = buf.get_mut(n..) else { break };
        match r.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<R: Read> StreamReader<R> {
    /// Reads and checks the file header.
    pub fn new(mut r: R) -> Result<StreamReader<R>> {
        let mut head = Vec::with_capacity(256);
        // the fixed part: id, major, minor, format, ptrsize
        Self::append(&mut r, &mut head, 8, "file header")?;
        let major = head.get(4).copied().unwrap_or(0);
        if major == 0 {
            Self::append(&mut r, &mut head, 24, "file header")?;
        } else {
            let fixed = 8 + if major >= 3 { 8 } else { 0 } + 14;
            Self::append(&mut r, &mut head, fixed, "file header")?;
            // What the fixed part gets wrong (magic, version), the slice reader reports first.
            match Header::parse(&head) {
                Err(e) if !matches!(e.kind, ErrorKind::Truncated(_)) => return Err(e),
                _ => {}
            }
            for what in ["header args", "header arch", "header os"] {
                let at = head.len();
                Self::append(&mut r, &mut head, 4, what)?;
                let mut len = [0u8; 4];
                if let Some(b) = head.get(at..at + 4) {
                    len.copy_from_slice(b);
                }
                let len = u32::from_le_bytes(len);
                if len > MAX_HEADER_STRING {
                    // Too long to hold; a stream that ends inside it is cut there, as the
                    // slice reader says.
                    let ends = io::copy(&mut (&mut r).take(len.into()), &mut io::sink())
                        .map_err(|e| io_error(at as u64, &e))?;
                    let kind = if ends < u64::from(len) {
                        ErrorKind::Truncated(what)
                    } else {
                        ErrorKind::BadValue(what, len.into())
                    };
                    return Err(Error::new(at as u64, kind));
                }
                Self::append(&mut r, &mut head, len as usize, what)?;
            }
        }
        // Header::parse validates magic, versions and the layout
        let header = Header::parse(&head)?;
        Ok(StreamReader {
            r: Carry {
                pending: Vec::new(),
                at: 0,
                inner: r,
            },
            pos: header.size as u64,
            header,
            index: 0,
            done: false,
            truncation: None,
            failure: None,
        })
    }

    /// Appends exactly `n` bytes to `head`, or fails with a truncation at the end of the stream.
    fn append(r: &mut R, head: &mut Vec<u8>, n: usize, what: &'static str) -> Result<()> {
        let at = head.len();
        head.resize(at + n, 0);
        let got = read_full(r, head.get_mut(at..).unwrap_or(&mut []))
            .map_err(|e| io_error(at as u64, &e))?;
        if got < n {
            // The stream ends here: the file is these bytes, and the slice reader's verdict on
            // them is the one (a bad magic before a cut, say).
            head.truncate(at + got);
            return Err(Header::parse(head)
                .err()
                .unwrap_or_else(|| Error::new((at + got) as u64, ErrorKind::Truncated(what))));
        }
        Ok(())
    }

    /// The file header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Where the stream is cut, once the reader has reached the cut (inside a buffer header,
    /// or inside a buffer's events); `None` for a stream that ends at a buffer boundary.
    pub fn truncation(&self) -> Option<Truncation> {
        self.truncation.clone()
    }

    /// How the stream failed (a cut or corrupt gzip stream), once the reader has met it.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Offset of the next buffer in the (decompressed) stream: after a bad buffer magic, of the
    /// next `BUF_ID` (or of the bad magic, when none follows).
    pub fn offset(&self) -> u64 {
        self.pos
    }

    /// The next buffer, read into `data` (a recycled allocation; its content is replaced).
    pub fn next_buffer(&mut self, mut data: Vec<u8>) -> Option<Result<OwnedBuffer>> {
        if self.done {
            return None;
        }
        let mut raw = [0u8; BUF_HEADER_SIZE];
        let got = match read_full(&mut self.r, &mut raw) {
            Ok(n) => n,
            Err(e) => {
                // A stream that fails here (a cut gzip file) is cut here.
                self.done = true;
                let mut cut = header_cut(self.index, self.pos, 0);
                cut.reason = format!("{} (the stream fails: {e})", cut.reason);
                self.failure = Some(e.to_string());
                self.truncation = Some(cut);
                return Some(Err(Error::new(
                    self.pos,
                    ErrorKind::Truncated("buffer header"),
                )
                .at(self.index as u64, None)));
            }
        };
        if got == 0 {
            self.done = true;
            return None;
        }
        let word = |i: usize| -> u64 {
            let mut b = [0u8; 8];
            if let Some(s) = raw.get(i..i + 8) {
                b.copy_from_slice(s);
            }
            u64::from_le_bytes(b)
        };
        let id = word(0) as u32;
        if got >= 4 && id != BUF_ID {
            let err =
                Error::new(self.pos, ErrorKind::BadBufferMagic(id)).at(self.index as u64, None);
            self.resync(raw.get(..got).unwrap_or(&[]));
            return Some(Err(err));
        }
        if got < BUF_HEADER_SIZE {
            // the offset of the first field that does not fit, as the slice reader says
            let field = [0, 4, 8, 16, 24, 32, 40]
                .into_iter()
                .rfind(|&b| b <= got)
                .unwrap_or(0);
            self.done = true;
            self.truncation = Some(header_cut(self.index, self.pos, got));
            return Some(Err(Error::new(
                self.pos + field as u64,
                ErrorKind::Truncated("buffer header"),
            )
            .at(self.index as u64, None)));
        }
        let header = BufferHeader {
            len: (word(0) >> 32) as u32,
            time_base: word(8),
            ptr_base: word(16),
            obj_base: word(24),
            thread_id: word(32),
            method_base: word(40),
        };
        if header.len > MAX_STREAM_BUFFER {
            let err = Error::new(
                self.pos + 4,
                ErrorKind::BadValue(
                    "buffer length (a streamed buffer may have 256 MiB; skipped)",
                    header.len.into(),
                ),
            )
            .at(self.index as u64, None);
            let want = u64::from(header.len);
            match io::copy(&mut (&mut self.r).take(want), &mut io::sink()) {
                Ok(n) if n == want => {
                    self.index += 1;
                    self.pos += BUF_HEADER_SIZE as u64 + want;
                }
                // the stream ends (or fails) inside the skipped buffer
                got => {
                    let got = got.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
                    self.done = true;
                    self.truncation = Some(buffer_cut(self.index, self.pos, header.len, got));
                }
            }
            return Some(Err(err));
        }
        data.clear();
        let want = u64::from(header.len);
        // A stream that fails part-way (a cut gzip file: "incomplete deflate stream") is cut
        // there: the events read before are used, as when a plain file ends early.
        let failed = (&mut self.r).take(want).read_to_end(&mut data).err();
        let truncated = (data.len() as u64) < want || failed.is_some();
        let buf = OwnedBuffer {
            index: self.index,
            offset: self.pos,
            header,
            data,
            truncated,
        };
        self.index += 1;
        self.pos += BUF_HEADER_SIZE as u64 + buf.data.len() as u64;
        if truncated {
            self.done = true;
            self.truncation = buf.truncation();
            if let (Some(t), Some(e)) = (&mut self.truncation, failed) {
                t.reason = format!("{} (the stream fails: {e})", t.reason);
                self.failure = Some(e.to_string());
            }
        }
        Some(Ok(buf))
    }

    /// After a bad buffer magic in `raw` (read at `self.pos`): finds the next `BUF_ID` and
    /// pushes the bytes from it on back in front of the stream.
    fn resync(&mut self, raw: &[u8]) {
        let magic = BUF_ID.to_le_bytes();
        // search the 47 bytes after the bad magic's first byte, then the stream byte by byte
        let mut window: Vec<u8> = raw.get(1..).unwrap_or(&[]).to_vec();
        let mut base = self.pos + 1;
        loop {
            if let Some(p) = window.windows(4).position(|w| w == magic) {
                let mut carry = window.split_off(p);
                carry.extend_from_slice(self.r.pending.get(self.r.at..).unwrap_or(&[]));
                self.pos = base + p as u64;
                self.r.pending = carry;
                self.r.at = 0;
                return;
            }
            let keep = window.len().saturating_sub(3);
            base += keep as u64;
            window.drain(..keep);
            let mut chunk = [0u8; 4096];
            match self.r.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    self.done = true;
                    return;
                }
                Ok(n) => window.extend_from_slice(chunk.get(..n).unwrap_or(&[])),
            }
        }
    }
}
