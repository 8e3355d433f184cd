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

use crate::error::{self, Error, ErrorExt, Result};
use crate::header::Header;
use crate::raw::{BUF_HEADER_SIZE, BUF_ID};
use crate::read::file::{buffer_cut, header_cut};
use crate::read::{Buffer, BufferHeader};

/// Header strings longer than this are refused (Mono writes a few dozen bytes).
const MAX_HEADER_STRING: u32 = 1 << 20;

/// The largest buffer a [`StreamReader`] holds in memory: 256 MiB (Mono writes 64 KiB buffers,
/// larger only for an event that does not fit). A longer buffer that the stream goes on past is
/// a `bad value` error and is skipped (the file can still be read whole once decompressed); one
/// that the stream ends inside is a cut buffer, as in the file.
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
    /// The largest buffer held ([`MAX_STREAM_BUFFER`]; smaller in tests).
    max_buffer: u32,
}

fn io_error(pos: u64, e: &io::Error) -> Error {
    error::io(pos, e)
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
                Err(e) if !e.is_truncation() => return Err(e),
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
                    return Err(if ends < u64::from(len) {
                        error::truncated(at as u64, what)
                    } else {
                        error::bad_value(at as u64, what, len.into())
                    });
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
            max_buffer: MAX_STREAM_BUFFER,
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
                .unwrap_or_else(|| error::truncated((at + got) as u64, what)));
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
                return Some(Err(
                    error::truncated(self.pos, "buffer header").at(self.index as u64, None)
                ));
            }
        };
        if got == 0 {
            self.done = true;
            return None;
        }
        let header = match BufferHeader::parse(raw.get(..got).unwrap_or(&[]), self.pos) {
            Ok(h) => h,
            Err(e) => {
                if e.is_truncation() {
                    self.done = true;
                    self.truncation = Some(header_cut(self.index, self.pos, got));
                } else {
                    self.resync(raw.get(..got).unwrap_or(&[]));
                }
                return Some(Err(e.at(self.index as u64, None)));
            }
        };
        data.clear();
        let want = u64::from(header.len);
        // At most MAX_STREAM_BUFFER bytes are held. A longer buffer that the stream ends
        // inside is a cut buffer like any other (the slice reader's verdict: a length is not
        // wrong, the file is cut); only one the stream goes on past is too big to hold.
        let hold = want.min(self.max_buffer.into());
        // A stream that fails part-way (a cut gzip file: "incomplete deflate stream") is cut
        // there: the events read before are used, as when a plain file ends early.
        let failed = (&mut self.r).take(hold).read_to_end(&mut data).err();
        if failed.is_none() && data.len() as u64 == hold && hold < want {
            return Some(Err(self.skip_oversized(header, data.len() as u64)));
        }
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

    /// A buffer of `header.len` bytes, over the bound ([`MAX_STREAM_BUFFER`]), whose first `read` bytes
    /// were read: the rest is read and dropped, and the buffer is a `bad value` error (or a
    /// cut, when the stream ends inside it).
    #[cold]
    fn skip_oversized(&mut self, header: BufferHeader, read: u64) -> Error {
        let err = error::bad_value(
            self.pos + 4,
            "buffer length (a streamed buffer may have 256 MiB; skipped)",
            header.len.into(),
        )
        .at(self.index as u64, None);
        let want = u64::from(header.len) - read;
        match io::copy(&mut (&mut self.r).take(want), &mut io::sink()) {
            Ok(n) if n == want => {
                self.index += 1;
                self.pos += BUF_HEADER_SIZE as u64 + u64::from(header.len);
            }
            // the stream ends (or fails) inside the skipped buffer
            got => {
                let got = read + got.unwrap_or(0);
                let got = usize::try_from(got).unwrap_or(usize::MAX);
                self.done = true;
                self.truncation = Some(buffer_cut(self.index, self.pos, header.len, got));
            }
        }
        err
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

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use super::*;
    use crate::validate::{validate_bytes, validate_stream};

    /// The findings where they are: (code, severity, offset, record).
    fn found(v: &profkit_common::Validation) -> Vec<(&str, String, u64, Option<u64>)> {
        v.findings
            .iter()
            .map(|f| (f.code, format!("{:?}", f.severity), f.offset, f.record))
            .collect()
    }

    /// Found by `mlpd_read` (crash-c32f3441…, minimised): a major-0 header, then a buffer
    /// whose length (0xd080_0193, 3.5 GB) is over the stream's bound and past the end of the
    /// file, with one event and the byte of an unknown one. The file is cut inside that buffer
    /// (the slice reader decodes what there is); the stream called the length a bad value at 36
    /// and skipped the buffer.
    const CUT_HUGE_BUFFER: [u8; 105] = [
        0x01, 0x5a, 0x50, 0x4d, 0x00, 0x00, 0x08, 0x08, 0x00, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00,
        0x00, 0x16, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x92, 0x10, 0x00, 0x00, 0xb3, 0x15,
        0x00, 0x00, // header (major 0, data version 8)
        0x01, 0x4c, 0x50, 0x4d, 0x93, 0x01, 0x80, 0xd0, 0xaa, 0x7d, 0x80, 0xbe, 0x80, 0x80, 0xd0,
        0xaa, 0x7d, 0x11, 0x0a, 0x00, 0x01, 0x21, 0x0a, 0x80, 0x80, 0x40, 0x31, 0x0a, 0x02, 0x00,
        0x80, 0x80, 0x80, 0x80, 0x80, 0x04, 0x11, 0x0a, 0x05, 0x01, 0x41, 0x0a, 0x02, 0x07, 0x07,
        0x51, 0x0a, 0x02, // buffer header: len 0xd080_0193
        0x07, 0x84, 0x46, 0x0f, 0x00, 0x02, 0x80, 0xbe, 0x80, 0x80, 0xd0, 0xaa, 0x7d, 0x80, 0x9e,
        0x80, 0x80, 0xd0, 0xaa, 0x7d, 0x04, 0x05, 0x0f, 0x14, // an event
        0x05, // an event byte v8 does not define
    ];

    #[test]
    fn a_buffer_over_the_bound_cut_by_the_end_of_the_stream_is_a_cut_buffer() {
        let data = &CUT_HUGE_BUFFER[..];
        let file = crate::File::parse(data).unwrap();
        let slice = validate_bytes(data);
        assert_eq!(
            found(&slice),
            [
                ("unknown-event", "Error".into(), 104, Some(1)),
                ("truncated", "Error".into(), 105, Some(1)),
            ]
        );
        for capacity in [1, 7, 61, 4096] {
            let reader = || BufReader::with_capacity(capacity, data);
            assert_eq!(
                found(&validate_stream(reader())),
                found(&slice),
                "{capacity}"
            );
            let mut s = crate::source::StreamBuffers::new(reader()).unwrap();
            assert_eq!(
                format!("{:?}", crate::summary::summary_of(&mut s)),
                format!("{:?}", crate::summary::summary(&file)),
            );
        }
        // every cut of it too
        for len in 32..data.len() {
            let d = &data[..len];
            assert_eq!(
                found(&validate_stream(d)),
                found(&validate_bytes(d)),
                "cut at {len}"
            );
        }
    }

    /// A buffer over the bound that the stream goes on past: too big to hold, a `bad-value`
    /// error; the next buffer is read. Ending inside the part not held is a cut there.
    #[test]
    fn a_buffer_over_the_bound_the_stream_goes_on_past_is_skipped() {
        let mut w = crate::write::Writer::new(Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            ..Header::default()
        });
        let mut b = w.buffer(1, 100);
        b.enter(110, 0x5000);
        b.leave(120, 0x5000);
        b.finish();
        let first = w.into_bytes();
        let header = crate::File::parse(&first).unwrap().header.size;
        let mut bytes = first.clone();
        bytes.extend_from_slice(&first[header..]);
        let len = (first.len() - header - BUF_HEADER_SIZE) as u32;
        let walk = |bytes: &[u8]| {
            let mut r = StreamReader::new(bytes).unwrap();
            r.max_buffer = len - 1;
            let mut got = Vec::new();
            while let Some(b) = r.next_buffer(Vec::new()) {
                got.push(b.map(|b| (b.index, b.offset, b.truncated)).map_err(|e| {
                    assert_eq!(e.code, Some(crate::validate::codes::BAD_VALUE), "{e}");
                    (e.offset, e.context.clone())
                }));
            }
            (got, r.truncation().map(|t| t.offset), r.offset())
        };
        let (got, cut, end) = walk(&bytes);
        let second = (first.len()) as u64;
        assert_eq!(
            got,
            [
                Err((header as u64 + 4, Some("buffer #0".to_string()))),
                Err((second + 4, Some("buffer #1".to_string())))
            ]
        );
        assert_eq!((cut, end), (None, bytes.len() as u64));
        // cut inside the part it does not hold
        let (got, cut, _) = walk(&bytes[..bytes.len() - 1]);
        assert_eq!(got.len(), 2);
        assert_eq!(cut, Some(bytes.len() as u64 - 1));
        // cut inside the part it holds: a cut buffer, as in the file
        let short = &bytes[..second as usize + BUF_HEADER_SIZE + 1];
        let (got, cut, _) = walk(short);
        assert_eq!(got[1], Ok((1, second, true)));
        assert_eq!(cut, Some(short.len() as u64));
    }
}
