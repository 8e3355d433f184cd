//! [`BufferSource`]: one way to walk a file's buffers, whether the file is in memory
//! ([`FileBuffers`], from [`File::source`]) or read as a stream ([`StreamReader`]: a gzip file,
//! a pipe), so [`summary`](crate::summary), [`validate`](crate::validate) and
//! [`dump`](crate::dump) are written once.
//!
//! Both say the same things the same way: a bad buffer magic is an error and the walk resumes
//! at the next `BUF_ID` ([`BufferSource::offset`] is then where), a buffer cut off is yielded
//! marked truncated and ends the walk, and [`BufferSource::truncation`] says where the input is
//! cut. A stream that fails (a cut or corrupt gzip stream) is cut where it fails.

use std::io::Read;

use profkit_common::Truncation;

use crate::error::Result;
use crate::header::Header;
use crate::read::{Buffer, Buffers, File};
use crate::stream::{OwnedBuffer, StreamReader};

/// A file's header and buffers, in file order, from memory or from a stream.
pub trait BufferSource {
    /// The file header.
    fn header(&self) -> &Header;

    /// The next buffer (its events decode from it), or the error of a bad buffer magic or of a
    /// cut inside a buffer header.
    fn next(&mut self) -> Option<Result<Buffer<'_>>>;

    /// Offset of the next buffer (after a bad magic: of the next `BUF_ID`, or where the magic
    /// was when none follows).
    fn offset(&self) -> u64;

    /// Where the input is cut, once the walk has reached the cut.
    fn truncation(&self) -> Option<Truncation>;

    /// How the stream failed (a cut or corrupt gzip stream), once the walk has met it.
    fn failure(&self) -> Option<&str> {
        None
    }

    /// The cut as a walk of the events in file order reports it: `at_event`, the cut the walk
    /// placed at an incomplete event, or else the input's own with
    /// `record` events before it; with how the stream failed, when it did.
    fn cut(&self, at_event: Option<Truncation>, record: u64) -> Option<Truncation> {
        let mut t = at_event.or_else(|| {
            self.truncation().map(|mut t| {
                t.record = Some(record);
                t
            })
        })?;
        if let Some(why) = self.failure().filter(|why| !t.reason.contains(why)) {
            t.reason = format!("{} (the stream fails: {why})", t.reason);
        }
        Some(t)
    }
}

/// The buffers of a [`File`] in memory, as a [`BufferSource`].
#[derive(Clone, Debug)]
pub struct FileBuffers<'a> {
    header: Header,
    scan: Buffers<'a>,
}

impl<'a> File<'a> {
    /// The header and buffers as a [`BufferSource`].
    pub fn source(&self) -> FileBuffers<'a> {
        FileBuffers {
            header: self.header.clone(),
            scan: self.buffers(),
        }
    }
}

impl BufferSource for FileBuffers<'_> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn next(&mut self) -> Option<Result<Buffer<'_>>> {
        self.scan.next()
    }

    fn offset(&self) -> u64 {
        self.scan.offset() as u64
    }

    fn truncation(&self) -> Option<Truncation> {
        self.scan.truncation()
    }
}

/// A [`StreamReader`] as a [`BufferSource`]: it holds the current buffer (its allocation is
/// reused for the next one).
#[derive(Debug)]
pub struct StreamBuffers<R> {
    reader: StreamReader<R>,
    current: OwnedBuffer,
}

impl<R: Read> StreamBuffers<R> {
    /// Reads and checks the file header (see [`StreamReader::new`]).
    pub fn new(r: R) -> Result<StreamBuffers<R>> {
        Ok(StreamBuffers {
            reader: StreamReader::new(r)?,
            current: OwnedBuffer::default(),
        })
    }
}

impl<R: Read> BufferSource for StreamBuffers<R> {
    fn header(&self) -> &Header {
        self.reader.header()
    }

    fn next(&mut self) -> Option<Result<Buffer<'_>>> {
        let data = std::mem::take(&mut self.current.data);
        match self.reader.next_buffer(data)? {
            Ok(b) => {
                self.current = b;
                Some(Ok(self.current.buffer(self.reader.header())))
            }
            Err(e) => Some(Err(e)),
        }
    }

    fn offset(&self) -> u64 {
        self.reader.offset()
    }

    fn truncation(&self) -> Option<Truncation> {
        self.reader.truncation()
    }

    fn failure(&self) -> Option<&str> {
        self.reader.failure()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::Writer;

    fn file() -> Vec<u8> {
        let mut w = Writer::new(Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            args: "log:calls".into(),
            ..Header::default()
        });
        let mut b = w.buffer(7, 100);
        b.jit(110, 0x5000, 0x9000, 16, b"Main");
        b.enter(120, 0x5000);
        b.finish();
        w.raw(b"garbage!"); // a bad buffer magic
        let mut b = w.buffer(8, 200);
        b.enter(210, 0x5008);
        b.raw(&[0x6e, 1, 2, 3]); // an unknown event
        b.finish();
        let mut b = w.buffer(7, 300);
        b.leave(310, 0x5000);
        b.finish();
        w.into_bytes()
    }

    /// What summary, validate and both dumps say of a source.
    fn walks<'a>(src: impl Fn() -> Box<dyn BufferSource + 'a>) -> Vec<String> {
        let mut text = Vec::new();
        let p = crate::dump::write_text_of(&mut *src(), &mut text).unwrap();
        let mut json = Vec::new();
        let q = crate::dump::write_ndjson_of(&mut *src(), &mut json).unwrap();
        vec![
            format!("{:?}", crate::summary::summary_of(&mut *src())),
            format!("{:?}", crate::validate::validate_source(&mut *src())),
            format!("{}{p:?}", String::from_utf8_lossy(&text)),
            format!("{}{q:?}", String::from_utf8_lossy(&json)),
        ]
    }

    #[test]
    fn a_stream_says_what_the_file_says_at_every_cut() {
        let bytes = file();
        let header = File::parse(&bytes).unwrap().header.size;
        for len in header..=bytes.len() {
            let cut = &bytes[..len];
            let f = File::parse(cut).unwrap();
            let slice = walks(|| Box::new(f.source()));
            let stream = walks(|| Box::new(StreamBuffers::new(cut).unwrap()));
            assert_eq!(stream, slice, "cut at {len}");
        }
        for len in 0..header {
            assert!(File::parse(&bytes[..len]).is_err());
            assert!(StreamBuffers::new(&bytes[..len]).is_err());
        }
    }
}
