//! [`FollowReader`]: records of a jitdump that is still being written.

use std::io::{self, Read};

use super::header::Header;
use super::records::{RawRecord, Records};
use crate::error::Result;
use crate::raw::{FILE_HEADER_SIZE, MAGIC};

/// Reads records from a source that grows (a live JIT's `jit-<pid>.dump`).
///
/// Call [`FollowReader::fill`] to pull in whatever bytes have been appended, then
/// [`FollowReader::next_record`] until it returns `Ok(None)` ("not enough bytes yet": wait and
/// fill again). A corrupt record is an `Err`, never confused with a record still being written.
#[derive(Debug)]
pub struct FollowReader<R> {
    src: R,
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed.
    consumed: usize,
    /// File offset of `buf[0]`.
    base: u64,
    header_bytes: Option<Vec<u8>>,
    index: usize,
    failed: bool,
}

impl<R: Read> FollowReader<R> {
    /// A reader positioned at the start of the file.
    pub fn new(src: R) -> FollowReader<R> {
        FollowReader {
            src,
            buf: Vec::with_capacity(64 * 1024),
            consumed: 0,
            base: 0,
            header_bytes: None,
            index: 0,
            failed: false,
        }
    }

    /// Reads every byte currently available (until the source reports end of file) and
    /// returns how many were added.
    pub fn fill(&mut self) -> io::Result<usize> {
        if self.consumed > 0 {
            self.buf.drain(..self.consumed);
            self.base += self.consumed as u64;
            self.consumed = 0;
        }
        let before = self.buf.len();
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.src.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => self.buf.extend_from_slice(chunk.get(..n).unwrap_or(&[])),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(self.buf.len() - before)
    }

    /// The file header, once enough bytes have arrived (`Ok(None)` before that).
    pub fn header(&mut self) -> Result<Option<Header<'_>>> {
        if self.header_bytes.is_none() {
            let avail = self.buf.get(self.consumed..).unwrap_or(&[]);
            if avail.len() < FILE_HEADER_SIZE {
                // Let a wrong magic fail early.
                if let Some(magic) = avail.get(..4) {
                    if magic != MAGIC.to_le_bytes() && magic != MAGIC.to_be_bytes() {
                        return Header::parse(avail).map(|_| None);
                    }
                }
                return Ok(None);
            }
            match Header::parse(avail) {
                Ok(h) => {
                    let size = h.total_size as usize;
                    self.header_bytes = Some(avail.get(..size).unwrap_or(&[]).to_vec());
                    self.consumed += size;
                }
                Err(e) if e.offset == 8 && e.message.contains("runs past") => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        match &self.header_bytes {
            Some(bytes) => Header::parse(bytes).map(Some),
            None => Ok(None),
        }
    }

    /// The next complete record, `Ok(None)` if it has not been written completely yet.
    pub fn next_record(&mut self) -> Result<Option<RawRecord<'_>>> {
        let Some(endian) = self.header()?.map(|h| h.endian) else {
            return Ok(None);
        };
        if self.failed {
            return Ok(None);
        }
        let avail = self.buf.get(self.consumed..).unwrap_or(&[]);
        let mut records = Records::new(avail, 0, endian);
        match records.next() {
            None => Ok(None),
            Some(Err(mut e)) => {
                self.failed = true;
                e.offset += self.base + self.consumed as u64;
                e.record = Some(self.index as u64);
                Err(e)
            }
            Some(Ok(mut raw)) => {
                let size = raw.total_size();
                raw.offset = self.base + self.consumed as u64;
                raw.index = self.index;
                self.consumed += size;
                self.index += 1;
                Ok(Some(raw))
            }
        }
    }

    /// Bytes read from the source so far.
    pub fn bytes_read(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// The source.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.src
    }

    /// Starts over with `src` (the file was truncated and rewritten, or replaced): everything
    /// read so far is forgotten, the next bytes are a header again.
    pub fn restart(&mut self, src: R) {
        *self = FollowReader::new(src);
    }

    /// Bytes received but not yet consumed as complete records.
    pub fn pending_bytes(&self) -> usize {
        self.buf.len() - self.consumed
    }

    /// File offset of the next record.
    pub fn offset(&self) -> u64 {
        self.base + self.consumed as u64
    }
}
