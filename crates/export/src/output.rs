//! Where outputs go: the one module every writer of the workspace opens its files through
//! (the viewer formats here, and the CLI's XRay YAML, perf maps and re-encoded jitdumps).
//!
//! * [`Output`] is standard output (`-`) or a path. Writers create the main file with
//!   [`Output::create`] and any file beside it (Parquet's tables, one perf map per process)
//!   with [`Output::create_beside`]; everything is buffered.
//! * Files are **staged**: written to a hidden temporary file in the same directory and renamed
//!   to their names (an existing file removed first) only by [`Output::commit`], after the
//!   whole conversion succeeded. A
//!   failed or interrupted conversion leaves no partial output and never clobbers an existing
//!   file ([`Output::discard`], or dropping the last handle, removes the temporary files).
//! * [`OutStream`] adds gzip (level 1) when the name ends in `.gz` and the format allows it.
//! * Files are written by a thread of their own ([`WriteBehind`]), so encoding overlaps the
//!   `write` calls.
//! * [`Output::create_large`] writes a regular file with `O_DIRECT` in aligned 8 MiB chunks
//!   ([`DirectFile`]): multi-GB outputs (XRay YAML) are not throttled by page-cache writeback.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use flate2::write::GzEncoder;
use flate2::Compression;

mod write_behind;
pub use write_behind::WriteBehind;

/// Where an output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dest {
    /// Standard output.
    Stdout,
    /// A file (files a format writes beside it go in the same directory).
    Path(PathBuf),
}

/// An output: a destination and, when staged, the files written for it so far (clones share
/// them).
#[derive(Clone, Debug)]
pub struct Output {
    dest: Dest,
    staged: Option<Arc<Staged>>,
}

impl PartialEq for Output {
    fn eq(&self, other: &Output) -> bool {
        self.dest == other.dest
    }
}

/// Temporary files and the names they take on commit.
#[derive(Debug, Default)]
struct Staged {
    files: Mutex<Vec<(PathBuf, PathBuf)>>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Ok(files) = self.files.get_mut() {
            for (tmp, _) in files.drain(..) {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

const BUF: usize = 1 << 20;

impl Output {
    /// Standard output.
    pub fn stdout() -> Output {
        Output {
            dest: Dest::Stdout,
            staged: None,
        }
    }

    /// A file, written in place.
    pub fn path(p: impl Into<PathBuf>) -> Output {
        Output {
            dest: Dest::Path(p.into()),
            staged: None,
        }
    }

    /// A file, staged: nothing appears under its name (or beside it) before
    /// [`Output::commit`].
    pub fn staged(p: impl Into<PathBuf>) -> Output {
        Output {
            dest: Dest::Path(p.into()),
            staged: Some(Arc::default()),
        }
    }

    /// `-` is standard output, anything else a staged path.
    pub fn parse(s: &str) -> Output {
        if s == "-" {
            Output::stdout()
        } else {
            Output::staged(s)
        }
    }

    /// The destination.
    pub fn dest(&self) -> &Dest {
        &self.dest
    }

    /// The path, unless the output is standard output.
    pub fn as_path(&self) -> Option<&Path> {
        match &self.dest {
            Dest::Stdout => None,
            Dest::Path(p) => Some(p),
        }
    }

    /// Whether the output should be gzip-compressed because its name ends in `.gz`.
    pub fn is_gz(&self) -> bool {
        self.as_path()
            .and_then(|p| p.extension())
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
    }

    /// Opens the output for writing, buffered (a path is staged until [`Output::commit`]).
    pub fn create(&self) -> io::Result<Box<dyn Write + Send>> {
        match &self.dest {
            Dest::Stdout => Ok(Box::new(BufWriter::with_capacity(BUF, io::stdout()))),
            Dest::Path(p) => {
                let f = self.stage(p)?;
                Ok(Box::new(WriteBehind::new(f)?))
            }
        }
    }

    /// Opens `path` (a file a format writes beside the main one), staged like it.
    pub fn create_beside(&self, path: &Path) -> io::Result<Box<dyn Write + Send>> {
        let f = self.stage(path)?;
        Ok(Box::new(WriteBehind::new(f)?))
    }

    /// Opens the output for a large write: a regular file through [`DirectFile`] where the
    /// system allows, else as [`Output::create`]. Call `flush` once at the end.
    pub fn create_large(&self) -> io::Result<Box<dyn Write + Send>> {
        let Dest::Path(p) = &self.dest else {
            return self.create();
        };
        let tmp = self.stage_path(p)?;
        match DirectFile::open(&tmp) {
            Some(d) => Ok(Box::new(d)),
            None => Ok(Box::new(BufWriter::with_capacity(
                BUF,
                std::fs::OpenOptions::new().write(true).open(&tmp)?,
            ))),
        }
    }

    fn stage(&self, path: &Path) -> io::Result<File> {
        let tmp = self.stage_path(path)?;
        std::fs::OpenOptions::new().write(true).open(tmp)
    }

    /// Creates the file to write for `path`: a recorded temporary file when staged, else
    /// `path` itself.
    fn stage_path(&self, path: &Path) -> io::Result<PathBuf> {
        // Only regular files are staged: a device (`/dev/null`), a FIFO or a socket is written
        // in place, never replaced; a symbolic link's target is replaced, not the link.
        let target = match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => None,
            Ok(_) => Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())),
            Err(_) => Some(path.to_path_buf()),
        };
        let (Some(staged), Some(path)) = (&self.staged, target) else {
            File::create(path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            return Ok(path.to_path_buf());
        };
        let path = path.as_path();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".to_string());
        let mut files = staged
            .files
            .lock()
            .map_err(|_| io::Error::other("output staging poisoned"))?;
        let tmp = dir.join(format!(
            ".{name}.profkit-{}-{}.tmp",
            std::process::id(),
            files.len()
        ));
        File::create(&tmp)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        files.push((tmp.clone(), path.to_path_buf()));
        Ok(tmp)
    }

    /// Renames every file written so far over its name: the conversion succeeded (nothing to
    /// do for an output that is not staged).
    pub fn commit(&self) -> io::Result<()> {
        let Some(staged) = &self.staged else {
            return Ok(());
        };
        let mut files = staged
            .files
            .lock()
            .map_err(|_| io::Error::other("output staging poisoned"))?;
        for (tmp, name) in files.drain(..) {
            // Renaming over an existing file makes ext4 write the new file's data out before
            // the rename returns (`auto_da_alloc`): 50-90 ms for a 92 MB folded file, more
            // while the disk is busy. Removing the old file first avoids that; the name is
            // missing only between the two calls, and never holds a partial output.
            if std::fs::symlink_metadata(&name).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(&name);
            }
            std::fs::rename(&tmp, &name)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", name.display())))?;
        }
        Ok(())
    }

    /// Removes every file written so far: the conversion failed.
    pub fn discard(&self) {
        let Some(staged) = &self.staged else { return };
        if let Ok(mut files) = staged.files.lock() {
            for (tmp, _) in files.drain(..) {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

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

/// A regular file written in large aligned chunks with `O_DIRECT` (Linux), bypassing the page
/// cache: on the benchmark machine a buffered writer of a multi-GB file is throttled by
/// dirty-page writeback (6.8 GB took 10.9 s with `dd bs=1M`, 2.4 s with `oflag=direct`). The
/// last partial block goes through a second, ordinary descriptor; if the file system refuses
/// direct I/O, writing continues through that descriptor at the same offset. `flush` writes
/// everything staged (and ends direct writing: later writes go through the ordinary path).
pub struct DirectFile {
    direct: Option<File>,
    plain: File,
    buf: Vec<u8>,
    /// Offset of the first aligned byte of `buf`.
    start: usize,
    /// Bytes staged after `start`.
    len: usize,
    /// File offset of the first staged byte.
    pos: u64,
}

const DIRECT_ALIGN: usize = 4096;
const DIRECT_CHUNK: usize = 8 << 20;

impl DirectFile {
    /// The open flag, where known.
    fn o_direct() -> Option<i32> {
        if cfg!(not(target_os = "linux")) {
            None
        } else if cfg!(any(
            target_arch = "x86_64",
            target_arch = "x86",
            target_arch = "riscv64"
        )) {
            Some(0o40000)
        } else if cfg!(any(target_arch = "aarch64", target_arch = "arm")) {
            Some(0o200000)
        } else {
            None
        }
    }

    /// Opens an existing regular file for direct writing from offset 0; `None` when it is not
    /// a regular file or direct I/O is not available (write through the ordinary path then).
    pub fn open(path: &Path) -> Option<DirectFile> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let flag = Self::o_direct()?;
            if !std::fs::metadata(path).ok()?.is_file() {
                return None;
            }
            let direct = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(flag)
                .open(path)
                .ok()?;
            let plain = std::fs::OpenOptions::new().write(true).open(path).ok()?;
            let buf = vec![0u8; DIRECT_CHUNK + DIRECT_ALIGN];
            let start = buf.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
            Some(DirectFile {
                direct: Some(direct),
                plain,
                buf,
                start,
                len: 0,
                pos: 0,
            })
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None
        }
    }

    /// Writes the first `n` staged bytes at the current file offset.
    fn write_out(&mut self, n: usize) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            let data = self.buf.get(self.start..self.start + n).unwrap_or_default();
            let mut done = false;
            if let Some(d) = &self.direct {
                if n.is_multiple_of(DIRECT_ALIGN) {
                    match d.write_all_at(data, self.pos) {
                        Ok(()) => done = true,
                        Err(_) => self.direct = None,
                    }
                }
            }
            if !done {
                self.plain.write_all_at(data, self.pos)?;
            }
        }
        self.pos += n as u64;
        self.buf
            .copy_within(self.start + n..self.start + self.len, self.start);
        self.len -= n;
        Ok(())
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = DIRECT_CHUNK - self.len;
        let n = data.len().min(room);
        let at = self.start + self.len;
        if let (Some(dst), Some(src)) = (self.buf.get_mut(at..at + n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.len += n;
        if self.len == DIRECT_CHUNK {
            self.write_out(DIRECT_CHUNK)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        let aligned = self.len / DIRECT_ALIGN * DIRECT_ALIGN;
        if aligned > 0 {
            self.write_out(aligned)?;
        }
        if self.len > 0 {
            self.write_out(self.len)?;
            // The file offset is no longer aligned.
            self.direct = None;
        }
        self.plain.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_until_commit() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("a.txt");
        let side = dir.path().join("b.txt");
        std::fs::write(&main, "old").unwrap();
        let out = Output::staged(&main);
        let mut w = out.create().unwrap();
        w.write_all(b"new").unwrap();
        w.flush().unwrap();
        let mut s = out.create_beside(&side).unwrap();
        s.write_all(b"side").unwrap();
        s.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&main).unwrap(), "old");
        assert!(!side.exists());
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&main).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&side).unwrap(), "side");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn devices_and_links_are_written_not_replaced() {
        let out = Output::staged("/dev/null");
        let mut w = out.create().unwrap();
        w.write_all(b"x").unwrap();
        w.flush().unwrap();
        out.commit().unwrap();
        let m = std::fs::metadata("/dev/null").unwrap();
        assert!(!m.is_file(), "/dev/null must stay a device");
        #[cfg(unix)]
        {
            let dir = tempfile::tempdir().unwrap();
            let real = dir.path().join("real.txt");
            let link = dir.path().join("link.txt");
            std::fs::write(&real, "old").unwrap();
            std::os::unix::fs::symlink(&real, &link).unwrap();
            let out = Output::staged(&link);
            let mut w = out.create().unwrap();
            w.write_all(b"new").unwrap();
            w.flush().unwrap();
            drop(w);
            out.commit().unwrap();
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        }
    }

    #[test]
    fn discarded_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("a.txt");
        {
            let out = Output::staged(&main);
            let mut w = out.create().unwrap();
            w.write_all(b"partial").unwrap();
            w.flush().unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn large_writes_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("big.txt");
        let out = Output::staged(&main);
        let mut w = out.create_large().unwrap();
        let data: Vec<u8> = (0..(DIRECT_CHUNK + 12345))
            .map(|i| (i % 251) as u8)
            .collect();
        for c in data.chunks(100_000) {
            w.write_all(c).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        out.commit().unwrap();
        assert_eq!(std::fs::read(&main).unwrap(), data);
    }
}
