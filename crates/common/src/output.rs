//! Where outputs go: the one module every writer of the workspace opens its files through
//! (profkit-export's viewer formats, `profkit inject`'s perf.data and ELFs, and the CLI's XRay
//! YAML, perf maps and re-encoded jitdumps; profkit-export re-exports it as its `output`).
//!
//! * [`Output`] is standard output (`-`) or a path. Writers create the main file with
//!   [`Output::create`] and any file beside it (Parquet's tables, one perf map per process)
//!   with [`Output::create_beside`]; everything is buffered.
//! * Files are **staged**: written to a hidden temporary file in the same directory (a new
//!   file, `O_EXCL | O_NOFOLLOW`, its name unpredictable) and put in place of their names
//!   (atomically: renamed, or exchanged with the old file, which is then removed) only by
//!   [`Output::commit`], after the whole conversion succeeded. A failed or
//!   interrupted conversion leaves no partial output and never clobbers an existing file
//!   ([`Output::discard`], or dropping the last handle, removes the temporary files). A process
//!   that ends at once — out of memory, SIGINT, SIGTERM, SIGHUP — removes them on its way out
//!   ([`emergency`]: their names are kept in static slots, removed without allocating); those
//!   a SIGKILL or a crash left are removed by the next run that writes in that directory.
//! * A file written beside the main one (Parquet's tables, perf maps, inject's ELFs) is never
//!   opened through a symbolic link: its name is replaced on commit. Only the main output,
//!   which the user named, is followed (a link's target replaced; a device written in place).
//! * profkit-export's `OutStream` adds gzip (level 1) when the name ends in `.gz` and the
//!   format allows it.
//! * Files are written by a thread of their own ([`WriteBehind`]), so encoding overlaps the
//!   `write` calls.
//! * [`Output::create_large`] writes a regular file with `O_DIRECT` in aligned 8 MiB chunks
//!   ([`DirectFile`]): multi-GB outputs (XRay YAML) are not throttled by page-cache writeback.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub mod emergency;
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

/// A temporary file, the name it takes on commit, and its slot in the [`emergency`] registry.
type StagedFile = (PathBuf, PathBuf, Option<emergency::Registered>);

/// Removes a temporary file that will not be committed, and forgets it.
fn remove_staged((tmp, _, slot): StagedFile) {
    let _ = std::fs::remove_file(tmp);
    if let Some(r) = slot {
        emergency::unregister(r);
    }
}

/// Temporary files and the names they take on commit.
#[derive(Debug, Default)]
struct Staged {
    files: Mutex<Vec<StagedFile>>,
    /// Directories already cleared of a killed run's temporary files.
    cleared: Mutex<Vec<PathBuf>>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Ok(files) = self.files.get_mut() {
            for f in files.drain(..) {
                remove_staged(f);
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
                let (f, _) = self.stage(p, true)?;
                Ok(Box::new(Named::new(WriteBehind::new(f)?, p)))
            }
        }
    }

    /// Opens `path` (a file a format writes beside the main one), staged like it. The user did
    /// not name it: a symbolic link (or anything else) there is replaced on commit, never
    /// followed or written through.
    pub fn create_beside(&self, path: &Path) -> io::Result<Box<dyn Write + Send>> {
        let (f, _) = self.stage(path, false)?;
        Ok(Box::new(Named::new(WriteBehind::new(f)?, path)))
    }

    /// The main file itself, unbuffered (for a writer that seeks); staged like
    /// [`Output::create`]. Standard output is refused.
    pub fn create_file(&self) -> io::Result<File> {
        match &self.dest {
            Dest::Stdout => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "this output must be a file, not standard output",
            )),
            Dest::Path(p) => Ok(self.stage(p, true)?.0),
        }
    }

    /// A file beside the main one, unbuffered, staged like [`Output::create_beside`] (its inode
    /// is the one the name has after [`Output::commit`]).
    pub fn create_file_beside(&self, path: &Path) -> io::Result<File> {
        Ok(self.stage(path, false)?.0)
    }

    /// Opens the output for a large write: a regular file through [`DirectFile`] where the
    /// system allows, else as [`Output::create`]. Call `flush` once at the end.
    pub fn create_large(&self) -> io::Result<Box<dyn Write + Send>> {
        let Dest::Path(p) = &self.dest else {
            return self.create();
        };
        let (f, tmp) = self.stage(p, true)?;
        match DirectFile::open(&tmp) {
            Some(d) => Ok(Box::new(Named::new(d, p))),
            None => Ok(Box::new(Named::new(BufWriter::with_capacity(BUF, f), p))),
        }
    }

    /// Creates the file to write for `path` and its name: a new temporary file beside it when
    /// staged, else `path` itself. `named`: the user named `path` (the main output), so a
    /// symbolic link there is followed and a device or FIFO written in place; a side file is
    /// always staged and its name replaced.
    fn stage(&self, path: &Path, named: bool) -> io::Result<(File, PathBuf)> {
        let named_err = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        // Only regular files are staged: a device (`/dev/null`), a FIFO or a socket the user
        // named is written in place, never replaced; a symbolic link's target is replaced, not
        // the link.
        let target = if named {
            match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => None,
                Ok(_) => Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())),
                Err(_) => Some(path.to_path_buf()),
            }
        } else {
            Some(path.to_path_buf())
        };
        let (Some(staged), Some(path)) = (&self.staged, target) else {
            let f = if named {
                File::create(path).map_err(named_err)?
            } else {
                // Not staged, not named: create it, never through a link.
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .custom_flags(O_NOFOLLOW)
                    .open(path)
                    .map_err(named_err)?
            };
            return Ok((f, path.to_path_buf()));
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
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{}: is a directory", path.display()),
            ));
        }
        let mut files = staged
            .files
            .lock()
            .map_err(|_| io::Error::other("output staging poisoned"))?;
        if let Ok(mut cleared) = staged.cleared.lock() {
            if !cleared.contains(&dir) {
                remove_leftovers(&dir);
                cleared.push(dir.clone());
            }
        }
        let (f, tmp, slot) = create_temp(&dir, &name, files.len()).map_err(named_err)?;
        files.push((tmp.clone(), path.to_path_buf(), slot));
        Ok((f, tmp))
    }

    /// Puts every file written so far in place of its name: the conversion succeeded (nothing
    /// to do for an output that is not staged). Each name is replaced atomically: it holds the
    /// old file or the new one, never nothing and never a partial output.
    pub fn commit(&self) -> io::Result<()> {
        let Some(staged) = &self.staged else {
            return Ok(());
        };
        let mut files = staged
            .files
            .lock()
            .map_err(|_| io::Error::other("output staging poisoned"))?;
        while !files.is_empty() {
            let (tmp, name, slot) = files.remove(0);
            if let Err(e) = replace(&tmp, &name) {
                remove_staged((tmp, name.clone(), slot));
                return Err(io::Error::new(e.kind(), format!("{}: {e}", name.display())));
            }
            // Renamed first: a process ending between the two removes nothing (the
            // temporary name is gone), never the output.
            if let Some(r) = slot {
                emergency::unregister(r);
            }
        }
        Ok(())
    }

    /// Removes every file written so far: the conversion failed.
    pub fn discard(&self) {
        let Some(staged) = &self.staged else { return };
        if let Ok(mut files) = staged.files.lock() {
            for f in files.drain(..) {
                remove_staged(f);
            }
        }
    }
}

/// Puts the staged file `tmp` in place of `name`, atomically: `name` holds the old file or the
/// new one at every instant.
///
/// An existing regular file (or link) is *exchanged* with the staged one
/// (`renameat2(RENAME_EXCHANGE)`) and then removed under the temporary name. A plain rename
/// over an existing file makes ext4 (`auto_da_alloc`) allocate the new file's blocks and start
/// writing them back inside the call: 6–8 ms for a 15 MB folded file, 3% of converting a
/// 90 MB recording, paid by everyone who converts to the same name twice. Where the name does
/// not exist, or the exchange is not supported (a kernel before 3.15, a filesystem without
/// it, another OS), a rename.
fn replace(tmp: &Path, name: &Path) -> io::Result<()> {
    let existing_file = std::fs::symlink_metadata(name).is_ok_and(|m| !m.is_dir());
    if existing_file && exchange(tmp, name).is_ok() {
        // `tmp` names what was at `name`: a directory put there since the check goes back
        // (a rename would not have replaced it); anything else is removed.
        if std::fs::symlink_metadata(tmp).is_ok_and(|m| m.is_dir()) {
            let _ = exchange(tmp, name);
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory".to_string(),
            ));
        }
        // Failing, the old file stays under the hidden name: the next run in this directory
        // removes it (`remove_leftovers`).
        let _ = std::fs::remove_file(tmp);
        return Ok(());
    }
    std::fs::rename(tmp, name)
}

/// Swaps the directory entries `a` and `b` (both must exist).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are NUL-terminated paths that live across the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// A writer whose errors name the file being written ("out.json: No space left on device").
struct Named<W> {
    inner: W,
    name: PathBuf,
}

impl<W: Write> Named<W> {
    fn new(inner: W, name: &Path) -> Named<W> {
        Named {
            inner,
            name: name.to_path_buf(),
        }
    }

    fn named(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.name.display()))
    }
}

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.named(e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf).map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.named(e))
    }
}

/// Never open the last component through a symbolic link.
const O_NOFOLLOW: i32 = libc::O_NOFOLLOW;

use std::os::unix::fs::OpenOptionsExt;

/// The marker in staged temporary names: `.NAME.profkit-PID-N-XXXX.tmp`.
const TMP_MARK: &str = ".profkit-";

/// Creates a new temporary file for `name` in `dir`: a name no other process can predict,
/// `O_EXCL | O_NOFOLLOW` (a file or link someone placed there is never opened). The name is
/// registered for removal on a signal ([`emergency`]) before the file is created, so that a
/// signal the moment the file appears still removes it (registered after, a SIGTERM between
/// the two left it behind).
fn create_temp(
    dir: &Path,
    name: &str,
    n: usize,
) -> io::Result<(File, PathBuf, Option<emergency::Registered>)> {
    let mut last = None;
    for attempt in 0..64u32 {
        let tmp = dir.join(format!(
            ".{name}{TMP_MARK}{}-{n}-{:016x}.tmp",
            std::process::id(),
            unpredictable(attempt)
        ));
        let slot = emergency::register(&tmp);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(O_NOFOLLOW)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp, slot)),
            Err(e) => {
                // Not ours: no longer registered.
                if let Some(slot) = slot {
                    emergency::unregister(slot);
                }
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary name")))
}

/// 64 bits no other user can guess: the kernel's randomness (`getrandom`), else the clock.
fn unpredictable(attempt: u32) -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: `b` is a writable buffer of the length passed.
    let got = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if got == 8 {
        return u64::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (u64::from(attempt) << 56) ^ u64::from(std::process::id())
}

/// A directory whose own size (bytes of its entries: ~20–40 per name on tmpfs and ext4) is
/// above this, ~30,000–50,000 names, is not scanned for leftovers.
const MAX_SCANNED_DIR_BYTES: u64 = 1 << 20;

/// Removes the temporary files aborted or killed runs left in `dir` (once per output and
/// directory): regular files (not links) of this user named `.NAME.profkit-PID-…tmp` whose
/// process is gone. Not in a directory of more than ~30,000 names ([`MAX_SCANNED_DIR_BYTES`]):
/// reading a /tmp of 890,000 names cost a perf.data conversion 40 % more CPU (#27); a leftover
/// there waits for the directory's own cleaning.
fn remove_leftovers(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata(dir).is_ok_and(|m| m.size() > MAX_SCANNED_DIR_BYTES) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(f) = file
            .to_str()
            .filter(|f| f.starts_with('.') && f.ends_with(".tmp"))
        else {
            continue;
        };
        let Some(rest) = f.rfind(TMP_MARK).and_then(|i| f.get(i + TMP_MARK.len()..)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let p = e.path();
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file() && m.uid() == uid) {
            let _ = std::fs::remove_file(&p);
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
    fn commit_replaces_an_existing_file_and_leaves_nothing_else() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("a.txt");
        let other_link = dir.path().join("old-too.txt");
        std::fs::write(&main, "old").unwrap();
        std::fs::hard_link(&main, &other_link).unwrap();
        let old_inode = std::fs::metadata(&main).unwrap().ino();
        let out = Output::staged(&main);
        let mut w = out.create().unwrap();
        w.write_all(b"new").unwrap();
        w.flush().unwrap();
        drop(w);
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&main).unwrap(), "new");
        assert_ne!(std::fs::metadata(&main).unwrap().ino(), old_inode);
        // The old file is only unlinked from the name: its other link still reads it.
        assert_eq!(std::fs::read_to_string(&other_link).unwrap(), "old");
        assert_eq!(std::fs::metadata(&other_link).unwrap().nlink(), 1);
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["a.txt", "old-too.txt"]);
    }

    #[test]
    fn replace_refuses_a_directory_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join(".x.tmp");
        let name = dir.path().join("x");
        std::fs::write(&tmp, "new").unwrap();
        std::fs::create_dir(&name).unwrap();
        std::fs::write(name.join("inside"), "kept").unwrap();
        assert!(replace(&tmp, &name).is_err());
        assert_eq!(
            std::fs::read_to_string(name.join("inside")).unwrap(),
            "kept"
        );
        assert_eq!(std::fs::read_to_string(&tmp).unwrap(), "new");
        // And a new name is a rename.
        let fresh = dir.path().join("fresh");
        replace(&tmp, &fresh).unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "new");
        assert!(!tmp.exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn exchange_swaps_two_names() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "A").unwrap();
        std::fs::write(&b, "B").unwrap();
        exchange(&a, &b).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "B");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "A");
        assert!(exchange(&a, &dir.path().join("missing")).is_err());
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
    fn side_files_never_follow_links_and_leftovers_go() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let main = dir.path().join("out.txt");
        let side = dir.path().join("out.side.txt");
        std::os::unix::fs::symlink(&victim, &side).unwrap();
        // Killed runs' temporary files (pid 0x7fffffff is not running) go; other files stay.
        let left = dir.path().join(".out.txt.profkit-2147483647-0-00.tmp");
        std::fs::write(&left, "old").unwrap();
        let other = dir.path().join(".other.txt.profkit-2147483647-0-00.tmp");
        std::fs::write(&other, "old").unwrap();
        let unrelated = dir.path().join(".other.txt.keep");
        std::fs::write(&unrelated, "keep").unwrap();
        let out = Output::staged(&main);
        let mut w = out.create().unwrap();
        w.write_all(b"main").unwrap();
        w.flush().unwrap();
        drop(w);
        let mut s = out.create_beside(&side).unwrap();
        s.write_all(b"side").unwrap();
        s.flush().unwrap();
        drop(s);
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&side).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&side).unwrap(), "side");
        assert!(!left.exists() && !other.exists());
        assert!(unrelated.exists());
        // A directory at the name is an error naming it, before anything is written.
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        let err = Output::staged(&d).create().err().unwrap().to_string();
        assert!(
            err.to_lowercase().contains("is a directory") && err.contains(&*d.to_string_lossy()),
            "{err}"
        );
    }

    #[test]
    fn a_full_disk_names_the_file() {
        let out = Output::staged("/dev/full");
        let mut w = out.create().unwrap();
        let e = w
            .write_all(&[0; 4 << 20])
            .and_then(|()| w.flush())
            .unwrap_err();
        assert!(e.to_string().starts_with("/dev/full: "), "{e}");
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
