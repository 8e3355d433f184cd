//! [`WriteBehind`]: a file written by a thread of its own, so that encoding the next chunk of
//! an output overlaps the `write` system calls of the last one. Copying a large output into
//! the page cache costs about as much as producing it (a 92 MB folded file: ~22 ms of `write`
//! against ~15 ms of formatting); with the writes behind, the encoder only fills buffers.
//!
//! Buffers of [`CHUNK`] bytes go to the thread over a channel bounded to [`IN_FLIGHT`] and come
//! back for reuse once written, so memory stays a few MiB whatever the output's size. A write
//! error ends the thread; the encoder gets it from its next `write` or `flush`, with its kind.
//!
//! When no thread can start (a low `ulimit -v` or `RLIMIT_NPROC`: issue #23, B5) the chunks are
//! written by the calling thread instead, as a `BufWriter` would.

use std::fs::File;
use std::io::{self, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Bytes handed to the thread at a time.
pub const CHUNK: usize = 1 << 20;
/// Chunks queued at most.
pub const IN_FLIGHT: usize = 4;

/// See the [module docs](self).
pub struct WriteBehind {
    buf: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    /// Written buffers, back for reuse.
    spent: Receiver<Vec<u8>>,
    /// Chunks sent and not back yet.
    outstanding: usize,
    worker: Option<JoinHandle<io::Result<()>>>,
    /// The file, written by the calling thread, when no thread could start.
    direct: Option<File>,
}

impl WriteBehind {
    /// Writes `file` on a new thread (on the calling thread when none can start).
    pub fn new(file: File) -> io::Result<WriteBehind> {
        // The thread takes the file; a failed spawn drops it, so the caller keeps a handle.
        let direct = file.try_clone()?;
        let mut file = file;
        let (tx, rx) = sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (spent_tx, spent) = channel();
        let spawned =
            std::thread::Builder::new()
                .name("output".into())
                .spawn(move || -> io::Result<()> {
                    for mut chunk in rx {
                        file.write_all(&chunk)?;
                        chunk.clear();
                        // The encoder may have stopped waiting: then the buffer is dropped.
                        let _ = spent_tx.send(chunk);
                    }
                    Ok(())
                });
        let (tx, worker, direct) = match spawned {
            Ok(worker) => (Some(tx), Some(worker), None),
            Err(_) => (None, None, Some(direct)),
        };
        Ok(WriteBehind {
            buf: Vec::with_capacity(CHUNK),
            tx,
            spent,
            outstanding: 0,
            worker,
            direct,
        })
    }

    /// Hands the buffer to the thread (a fresh or reused one takes its place).
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(f) = &mut self.direct {
            let r = f.write_all(&self.buf);
            self.buf.clear();
            return r;
        }
        let next = match self.spent.try_recv() {
            Ok(b) => {
                self.outstanding = self.outstanding.saturating_sub(1);
                b
            }
            Err(_) => Vec::with_capacity(CHUNK),
        };
        let chunk = std::mem::replace(&mut self.buf, next);
        match &self.tx {
            Some(tx) if tx.send(chunk).is_ok() => {
                self.outstanding += 1;
                Ok(())
            }
            _ => Err(self.stop()),
        }
    }

    /// Ends the thread and returns why it stopped (its write error).
    fn stop(&mut self) -> io::Error {
        self.tx = None;
        match self.worker.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => e,
            Some(Err(_)) => io::Error::other("the output thread panicked"),
            _ => io::Error::other("the output thread has stopped"),
        }
    }
}

impl Write for WriteBehind {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > CHUNK && !self.buf.is_empty() {
            self.send()?;
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    /// Returns once everything written so far is in the file.
    fn flush(&mut self) -> io::Result<()> {
        self.send()?;
        while self.outstanding > 0 {
            match self.spent.recv() {
                Ok(_) => self.outstanding = self.outstanding.saturating_sub(1),
                Err(_) => return Err(self.stop()),
            }
        }
        Ok(())
    }
}

impl Drop for WriteBehind {
    fn drop(&mut self) {
        // Unflushed bytes are still written (as a `BufWriter` would), errors ignored.
        let _ = self.send();
        self.tx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_everything_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut expected = Vec::new();
        {
            let mut w = WriteBehind::new(File::create(&path).unwrap()).unwrap();
            for i in 0..50_000u32 {
                let line = format!("line {i} {}\n", "x".repeat((i % 97) as usize));
                w.write_all(line.as_bytes()).unwrap();
                expected.extend_from_slice(line.as_bytes());
                if i % 10_000 == 0 {
                    w.flush().unwrap();
                    assert_eq!(std::fs::read(&path).unwrap(), expected);
                }
            }
            w.write_all(&vec![7u8; 3 * CHUNK + 5]).unwrap();
            expected.extend(vec![7u8; 3 * CHUNK + 5]);
            w.flush().unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn a_write_error_reaches_the_encoder() {
        // /dev/full: every write fails with ENOSPC.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut w = WriteBehind::new(full).unwrap();
        let mut result = Ok(());
        for _ in 0..(IN_FLIGHT + 4) {
            result = w.write_all(&vec![0u8; CHUNK]);
            if result.is_err() {
                break;
            }
        }
        let err = result.and_then(|_| w.flush()).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28), "{err}");
    }

    #[test]
    fn without_a_thread_the_caller_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut w = WriteBehind::new(File::create(&path).unwrap()).unwrap();
        // As if the spawn had failed.
        w.tx = None;
        if let Some(t) = w.worker.take() {
            t.join().unwrap().unwrap();
        }
        w.direct = Some(File::options().append(true).open(&path).unwrap());
        w.write_all(&vec![1u8; CHUNK + 3]).unwrap();
        w.write_all(b"end").unwrap();
        w.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), CHUNK + 6);
    }
}
