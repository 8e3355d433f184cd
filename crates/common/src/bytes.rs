//! [`FileBytes`]: a whole file's bytes, memory-mapped where the file allows it (no copy, pages
//! read on demand and dropped again on request), else read into a buffer.
//!
//! The one place profkit maps files: inputs, jitdumps, ELF binaries.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::Path;

/// A file's bytes: a read-only mapping or an owned buffer.
pub enum FileBytes {
    /// A regular, non-empty file, mapped.
    Mapped(memmap2::Mmap),
    /// Bytes read (an empty or special file, stdin, a decompressed input).
    Owned(Vec<u8>),
}

impl FileBytes {
    /// The bytes of the file at `path`: mapped when it is a regular non-empty file, else read.
    pub fn open(path: &Path) -> io::Result<FileBytes> {
        let file = File::open(path)?;
        FileBytes::of_file(&file)
    }

    /// The bytes of a regular file at `path` that profkit found by itself (a binary or a
    /// jitdump named by a recording), mapped: opened without blocking (`O_NONBLOCK`: a FIFO
    /// named like a binary does not hang), refused unless it is a regular file of at least
    /// `min_len` bytes (procfs and tracefs files say size 0 and read without end:
    /// `/proc/self/pagemap`, `trace_pipe`), and never read as a stream.
    pub fn open_regular(path: &Path, min_len: u64) -> io::Result<FileBytes> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (a directory, FIFO, socket or device): not read",
            ));
        }
        if meta.len() < min_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} bytes, below the {min_len} its format needs (a procfs or sysfs file is not read)",
                    meta.len()
                ),
            ));
        }
        // SAFETY: as in `of_file`.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(FileBytes::Mapped(map))
    }

    /// The bytes of an opened file (see [`FileBytes::open`]).
    pub fn of_file(file: &File) -> io::Result<FileBytes> {
        let meta = file.metadata()?;
        if meta.len() == 0 || !meta.is_file() {
            let mut v = Vec::new();
            let mut reader = file;
            reader.read_to_end(&mut v)?;
            return Ok(FileBytes::Owned(v));
        }
        // SAFETY: the map is read-only and private to this process; bytes changed on disk
        // while it is mapped are read as they are, and every reader treats them as untrusted.
        // A file truncated under a live map may fault (SIGBUS), the caveat every mmap-based
        // reader (perf, samply) accepts.
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(FileBytes::Mapped(map))
    }

    /// Tells the kernel the first `upto` bytes will not be read again: for a mapped file, their
    /// pages leave the process's resident set (they stay in the page cache), so a reader that
    /// moves forward keeps its memory flat. Owned bytes are kept.
    pub fn release(&self, upto: u64) {
        self.release_range(0, upto);
    }

    /// Tells the kernel bytes `start..end` will not be read again soon (see
    /// [`FileBytes::release`]); whole pages inside the range only.
    pub fn release_range(&self, start: u64, end: u64) {
        let FileBytes::Mapped(m) = self else { return };
        let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
            return;
        };
        let start = start.saturating_add(0xfff) & !0xfff;
        let end = end.min(m.len()) & !0xfff;
        if start < end {
            // SAFETY: a shared, read-only, file-backed map: a dropped page is read again from
            // the file on its next access, so no reference sees other contents.
            let _ = unsafe {
                m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(v) => v,
        }
    }
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            FileBytes::Mapped(_) => "mapped",
            FileBytes::Owned(_) => "owned",
        };
        write!(f, "FileBytes({kind}, {} bytes)", self.len())
    }
}

/// Prefetches the cache lines ahead of a reader that walks a buffer forward in steps it learns
/// as it goes (records whose position depends on the previous record's size). Without it
/// every record header costs a full memory round trip: records are too far apart, and their
/// distance too irregular, for the hardware prefetcher.
#[derive(Clone, Debug)]
pub struct ReadAhead {
    /// Offset up to which cache lines have been prefetched.
    upto: usize,
}

impl ReadAhead {
    /// How far ahead of the reader lines are prefetched.
    pub const DISTANCE: usize = 4096;

    /// A reader starting at `start`.
    pub fn new(start: usize) -> ReadAhead {
        ReadAhead { upto: start }
    }

    /// The reader is at `pos` of `data`: prefetch up to [`ReadAhead::DISTANCE`] beyond it.
    #[inline]
    pub fn reached(&mut self, data: &[u8], pos: usize) {
        let ahead = pos.saturating_add(Self::DISTANCE).min(data.len());
        self.upto = self.upto.max(pos);
        while self.upto < ahead {
            prefetch(data, self.upto);
            self.upto += 64;
        }
    }
}

/// Hints the CPU to load the cache line holding `data[at]`. Never faults.
#[inline(always)]
fn prefetch(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = data.get(at) {
        // SAFETY: prefetch is a hint; the pointer is in bounds and is never dereferenced.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (b as *const u8).cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}
