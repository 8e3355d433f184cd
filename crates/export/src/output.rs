//! Where outputs go: profkit-common's [`output`](profkit_common::output) (staged files renamed
//! on success, `O_EXCL | O_NOFOLLOW`, cleanup, write-behind, `O_DIRECT`), re-exported, and
//! [`OutStream`], which adds gzip.

use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;

pub use profkit_common::output::{Dest, DirectFile, Output, WriteBehind};

/// An output stream, gzip-compressed or not.
///
/// Flushing an `OutStream` *finishes* it (writes the gzip trailer): the writers of this crate
/// flush exactly once, in `EventSink::finish`.
pub enum OutStream {
    /// Uncompressed.
    Plain(Box<dyn Write + Send>),
    /// gzip-compressed.
    Gz(Box<GzEncoder<Box<dyn Write + Send>>>),
}

impl OutStream {
    /// Opens `output`; compressed when `gz_allowed` and the name ends in `.gz`.
    pub fn open(output: &Output, gz_allowed: bool) -> io::Result<OutStream> {
        let w = output.create()?;
        Ok(if gz_allowed && output.is_gz() {
            // Level 1: trace JSON compresses well even at the fastest level, and the writer
            // stays I/O-bound on multi-GB outputs.
            OutStream::Gz(Box::new(GzEncoder::new(w, Compression::fast())))
        } else {
            OutStream::Plain(w)
        })
    }
}

impl Write for OutStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            OutStream::Plain(w) => w.write(buf),
            OutStream::Gz(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            OutStream::Plain(w) => w.write_all(buf),
            OutStream::Gz(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            OutStream::Plain(w) => w.flush(),
            OutStream::Gz(w) => {
                w.try_finish()?;
                w.get_mut().flush()
            }
        }
    }
}
