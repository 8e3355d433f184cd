//! The gzip-compressed profile, compressed on a thread of its own while it is serialized.
//!
//! The profile is written at the end, after the input was read: serializing it and
//! compressing it would run one after the other on one core while the reading threads are
//! done. Here the serializer fills chunks of [`CHUNK`] bytes that a second thread compresses
//! (level 1, as every gzip output of the workspace) into the output; at most [`IN_FLIGHT`]
//! chunks wait, so memory stays bounded whatever the profile's size, and spent chunks come
//! back for reuse. When the thread cannot be started, the profile is compressed inline.

use std::io::{self, BufWriter, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};

use flate2::write::GzEncoder;
use flate2::Compression;
use serde::Serialize;

use super::lines::{self, Fill};

/// Bytes handed to the compressing thread at a time.
const CHUNK: usize = 1 << 18;
/// Chunks waiting for it at most.
const IN_FLIGHT: usize = 4;

/// Writes `value` filled in with `fill` ([`lines::write`]), gzip-compressed, into `out`.
pub(super) fn write<W: Write + Send, T: Serialize>(
    out: &mut W,
    value: &T,
    fill: &Fill<'_>,
) -> io::Result<()> {
    let started = std::thread::scope(|scope| {
        let (tx, rx) = sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (spent_tx, spent) = channel::<Vec<u8>>();
        let out = &mut *out;
        let compressor = std::thread::Builder::new()
            .name("gzip".into())
            .spawn_scoped(scope, move || -> io::Result<()> {
                let mut gz = GzEncoder::new(out, Compression::fast());
                for mut chunk in rx {
                    gz.write_all(&chunk)?;
                    chunk.clear();
                    // The serializer may be done: then the buffer is dropped.
                    let _ = spent_tx.send(chunk);
                }
                gz.finish()?;
                Ok(())
            });
        let Ok(compressor) = compressor else {
            return None;
        };
        let mut chunks = Chunks {
            buf: Vec::with_capacity(CHUNK),
            tx,
            spent,
        };
        let written = lines::write(&mut chunks, value, fill).and_then(|()| chunks.send());
        // Closing the channel ends the thread's loop.
        drop(chunks);
        let compressed = compressor
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the gzip thread panicked")));
        // The thread's error first: a failed send only says that the thread stopped.
        Some(compressed.and(written))
    });
    match started {
        Some(result) => result,
        None => {
            let gz = GzEncoder::new(out, Compression::fast());
            let mut buffered = BufWriter::with_capacity(1 << 16, gz);
            lines::write(&mut buffered, value, fill)?;
            buffered
                .into_inner()
                .map_err(|e| e.into_error())?
                .finish()?;
            Ok(())
        }
    }
}

/// The serializer's side: fills a chunk, hands it over when full.
struct Chunks {
    buf: Vec<u8>,
    tx: SyncSender<Vec<u8>>,
    spent: Receiver<Vec<u8>>,
}

impl Chunks {
    /// Hands the chunk to the thread (a spent or new one takes its place).
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .spent
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.buf, next);
        self.tx
            .send(full)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the gzip thread stopped"))
    }
}

impl Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.buf.len() + buf.len() > CHUNK && !self.buf.is_empty() {
            self.send()?;
        }
        // A third of the writes are one byte (the `,` before each sample's number): pushed,
        // not copied by a call to `memcpy`.
        match *buf {
            [byte] => self.buf.push(byte),
            _ => self.buf.extend_from_slice(buf),
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::lines::SourceLines;
    use super::super::sample_table::SampleTables;
    use super::*;
    use std::io::Read;

    /// A writer that fails after `left` bytes.
    struct Failing {
        left: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.left {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A value of many chunks.
    fn big() -> Vec<String> {
        (0..200_000).map(|i| format!("string number {i}")).collect()
    }

    #[test]
    fn the_output_is_the_gzipped_json() {
        let value = big();
        let mut out = Vec::new();
        let (lines, samples) = (SourceLines::default(), SampleTables::default());
        let fill = Fill {
            lines: &lines,
            traced: false,
            samples: &samples,
        };
        write(&mut out, &value, &fill).unwrap();
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&out[..])
            .read_to_end(&mut json)
            .unwrap();
        assert!(json.len() > 3 * CHUNK);
        assert_eq!(json, serde_json::to_vec(&value).unwrap());
    }

    #[test]
    fn a_write_error_is_the_writer_s() {
        let value = big();
        let (lines, samples) = (SourceLines::default(), SampleTables::default());
        let fill = Fill {
            lines: &lines,
            traced: false,
            samples: &samples,
        };
        let err = write(&mut Failing { left: 1000 }, &value, &fill).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }
}
