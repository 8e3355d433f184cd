//! The file and the buffer scan: [`File`] → [`Buffers`] → [`Buffer`] (its 48-byte
//! [`BufferHeader`] and its event bytes).
//!
//! A file that ends inside a buffer (a profiler killed, a file still being written) is cut:
//! the scan yields the buffer's complete part (marked [`Buffer::truncated`]) and stops, and
//! [`Buffers::truncation`] says where and why, also when the cut falls between two events
//! (every event of the part then decodes cleanly). A cut inside a buffer header is reported
//! by the iterator (an error) and by [`Buffers::truncation`].

use profkit_common::Truncation;

use super::events::{Ctx, Events};
use crate::cursor::Cursor;
use crate::error::{self, Error, ErrorExt, Result};
use crate::header::Header;
use crate::raw::*;

/// A whole file (already decompressed).
#[derive(Clone, Debug)]
pub struct File<'a> {
    /// The file header.
    pub header: Header,
    data: &'a [u8],
}

impl<'a> File<'a> {
    /// Parses the header of `data`.
    pub fn parse(data: &'a [u8]) -> Result<File<'a>> {
        let header = Header::parse(data)?;
        Ok(File { header, data })
    }

    /// The whole file's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The buffers, in file order.
    pub fn buffers(&self) -> Buffers<'a> {
        Buffers {
            data: self.data,
            pos: self.header.size,
            index: 0,
            done: false,
            ctx_version: self.header.data_version,
            ptrsize: self.header.ptrsize,
            truncation: None,
        }
    }

    /// Where the file is cut, if it ends inside a buffer (a scan of the buffer headers only).
    /// The offset is where the data ends; a decoder that finds the cut inside an event can
    /// place it at that event's start.
    pub fn truncation(&self) -> Option<Truncation> {
        let mut b = self.buffers();
        for _ in b.by_ref() {}
        b.truncation
    }
}

/// The cut of a file that ends inside the header of buffer #`index` at `offset` (`remain`
/// bytes of it are there).
#[cold]
pub(crate) fn header_cut(index: usize, offset: u64, remain: usize) -> Truncation {
    Truncation::new(
        offset,
        None,
        format!("buffer #{index}: the file ends inside its {BUF_HEADER_SIZE}-byte header ({remain} bytes remain)"),
    )
}

/// The cut of a file that ends after `avail` of the `len` event bytes of buffer #`index`,
/// whose header is at `offset`.
#[cold]
pub(crate) fn buffer_cut(index: usize, offset: u64, len: u32, avail: usize) -> Truncation {
    Truncation::new(
        offset + (BUF_HEADER_SIZE + avail) as u64,
        None,
        format!("buffer #{index} at {offset:#x}: the file ends after {avail} of its {len} bytes of events"),
    )
}

/// A buffer header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferHeader {
    /// Bytes of events after the header.
    pub len: u32,
    /// Time base (ns).
    pub time_base: u64,
    /// Pointer base.
    pub ptr_base: u64,
    /// Object base (already `>> 3`).
    pub obj_base: u64,
    /// Thread id (pthread_t).
    pub thread_id: u64,
    /// Method base: the method cursor's start.
    pub method_base: u64,
}

impl BufferHeader {
    /// Decodes the 48-byte header at the start of `raw`, whose first byte is at file offset
    /// `offset`: a wrong magic is a [`bad_buffer_magic`](crate::error::bad_buffer_magic) at `offset`, fewer than 48 bytes
    /// a truncation at the first field that does not fit. `len` is not judged: a length
    /// past the end of the file is a cut buffer, found when its events are read. The one check
    /// of the slice scan ([`Buffers`]) and of the stream ([`crate::stream::StreamReader`]).
    pub fn parse(raw: &[u8], offset: u64) -> Result<BufferHeader> {
        let mut c = Cursor::new(raw, offset, true);
        let id = c.u32le("buffer header")?;
        if id != BUF_ID {
            return Err(error::bad_buffer_magic(offset, id));
        }
        Ok(BufferHeader {
            len: c.u32le("buffer header")?,
            time_base: c.u64le("buffer header")?,
            ptr_base: c.u64le("buffer header")?,
            obj_base: c.u64le("buffer header")?,
            thread_id: c.u64le("buffer header")?,
            method_base: c.u64le("buffer header")?,
        })
    }

    /// Encodes the 48-byte header.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&BUF_ID.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        for v in [
            self.time_base,
            self.ptr_base,
            self.obj_base,
            self.thread_id,
            self.method_base,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// One buffer: the events of one thread.
#[derive(Clone, Copy, Debug)]
pub struct Buffer<'a> {
    /// Index in the file.
    pub index: usize,
    /// File offset of the buffer header.
    pub offset: u64,
    /// The header.
    pub header: BufferHeader,
    /// The event bytes (shorter than `header.len` when the file is cut off).
    pub data: &'a [u8],
    /// True when the file ends before `header.len` bytes ([`Buffer::truncation`] says where).
    pub truncated: bool,
    version: u8,
    ptrsize: u8,
}

impl<'a> Buffer<'a> {
    /// A buffer over `data` (its event bytes) for a file with `header`; `offset` is the file
    /// offset of its 48-byte header. Used by the streaming reader, whose buffers own their bytes.
    pub fn new(
        file: &Header,
        index: usize,
        offset: u64,
        header: BufferHeader,
        data: &'a [u8],
        truncated: bool,
    ) -> Buffer<'a> {
        Buffer {
            index,
            offset,
            header,
            data,
            truncated,
            version: file.data_version,
            ptrsize: file.ptrsize,
        }
    }

    /// The events of this buffer.
    pub fn events(&self) -> Events<'a> {
        let h = &self.header;
        Events::new(
            Cursor::new(
                self.data,
                self.offset + BUF_HEADER_SIZE as u64,
                self.truncated,
            ),
            Ctx::new(h.ptr_base, h.obj_base, self.version, self.ptrsize),
            self.index as u64,
            h.time_base,
            h.method_base,
        )
    }

    /// Data version of the file.
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Offset just past the buffer's data (where the next buffer starts, or the file ends).
    pub fn end(&self) -> u64 {
        self.offset + (BUF_HEADER_SIZE + self.data.len()) as u64
    }

    /// The cut, when the file ends before the buffer's `header.len` bytes.
    pub fn truncation(&self) -> Option<Truncation> {
        self.truncated
            .then(|| buffer_cut(self.index, self.offset, self.header.len, self.data.len()))
    }

    /// The cut as a scan of the events in file order sees it: `next` is where the first event
    /// not decoded starts, `record` its index in the file, and `incomplete` the error that
    /// ended the buffer inside that event, if one did, with the event's index in the buffer.
    pub(crate) fn cut_at(
        &self,
        next: u64,
        record: u64,
        incomplete: Option<(u64, &Error)>,
    ) -> Option<Truncation> {
        let mut t = self.truncation()?;
        t.record = Some(record);
        if let Some((event, e)) = incomplete {
            t.offset = next;
            t.reason = format!("{}; event #{event} is incomplete ({})", t.reason, e.message);
        }
        Some(t)
    }
}

/// Iterator over the buffers of a file. A bad buffer magic is reported and the scan resumes
/// at the next `BUF_ID`; a cut-off buffer is yielded (marked truncated) and ends the scan.
#[derive(Clone, Debug)]
pub struct Buffers<'a> {
    data: &'a [u8],
    pos: usize,
    index: usize,
    done: bool,
    ctx_version: u8,
    ptrsize: u8,
    truncation: Option<Truncation>,
}

impl<'a> Buffers<'a> {
    /// Offset of the next buffer.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Where the file is cut, once the scan has reached the cut: inside a buffer header, or
    /// inside a buffer's events (the buffer was yielded with its complete part). `None` for a
    /// file that ends at a buffer boundary.
    pub fn truncation(&self) -> Option<Truncation> {
        self.truncation.clone()
    }
}

impl<'a> Iterator for Buffers<'a> {
    type Item = Result<Buffer<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.data.len() {
            return None;
        }
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        let header = match BufferHeader::parse(rest, self.pos as u64) {
            Ok(h) => h,
            Err(e) => {
                if e.is_truncation() {
                    self.done = true;
                    self.truncation = Some(header_cut(self.index, self.pos as u64, rest.len()));
                } else {
                    // resync at the next buffer magic
                    let magic = BUF_ID.to_le_bytes();
                    let from = self.pos + 1;
                    match self
                        .data
                        .get(from..)
                        .and_then(|s| s.windows(4).position(|w| w == magic))
                    {
                        Some(p) => self.pos = from + p,
                        None => self.done = true,
                    }
                }
                return Some(Err(e.at(self.index as u64, None)));
            }
        };
        let start = self.pos + BUF_HEADER_SIZE;
        let want = header.len as usize;
        let avail = self.data.len().saturating_sub(start);
        let truncated = want > avail;
        let end = start + want.min(avail);
        let buf = Buffer {
            index: self.index,
            offset: self.pos as u64,
            header,
            data: self.data.get(start..end).unwrap_or(&[]),
            truncated,
            version: self.ctx_version,
            ptrsize: self.ptrsize,
        };
        self.index += 1;
        self.pos = end;
        if truncated {
            self.done = true;
            self.truncation = buf.truncation();
        }
        Some(Ok(buf))
    }
}
