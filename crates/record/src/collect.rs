//! What the records say while they stream by: counts (samples, lost), the processes, their
//! executable mappings (for the BUILD_ID feature), and each process's JIT metadata, kept
//! open while the process lives so it survives the process and its container.
//!
//! A process's files are reached through `/proc/<pid>/root`, the process's own view of the
//! file system: a process in a container (its own mount and pid namespaces, a private /tmp)
//! names its jitdump by a path inside the container and its perf map by its namespace pid.
//! Paths from the records are the traced program's words, so they are resolved *inside* that
//! root (`openat2` with `RESOLVE_IN_ROOT`: a symbolic link cannot lead out to the host's
//! files), only regular files are read, and a perf map is kept only when the process's user
//! or root owns it (as perf reads maps). A jitdump is opened when its marker mmap is seen and
//! a process's `/tmp` when the process is first seen; both descriptors keep the files
//! readable after the process, its mount namespace and its tmpfs are gone.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// perf record types this reads.
mod rt {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const FORK: u32 = 7;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const LOST_SAMPLES: u32 = 13;
}

/// One process seen in the records.
#[derive(Debug, Default)]
pub struct Process {
    /// Its command name (the last COMM).
    pub comm: String,
    /// Its pid in its own pid namespace (the pid its files are named by).
    pub ns_pid: Option<u32>,
    /// Its real user id.
    uid: Option<u32>,
    /// `/proc/<pid>/root`, opened when it was first seen.
    root: Option<OwnedFd>,
    /// Its `/tmp`, opened inside its root.
    tmp: Option<OwnedFd>,
    /// Jitdumps its marker mmaps named: the path it named, and the file.
    dumps: Vec<(String, File)>,
    /// Its perf map, as read when it exited.
    map: Option<Vec<u8>>,
    /// Why its perf map was not kept, if one was there.
    map_refused: Option<String>,
    /// Whether it exited.
    pub exited: bool,
}

/// A JIT file kept in the recording.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Kept {
    /// `jitdump` or `perf-map`.
    pub kind: &'static str,
    /// The process (host pid).
    pub pid: u32,
    /// Its pid in its own namespace, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_pid: Option<u32>,
    /// The path the process used (its own view).
    pub recorded: String,
    /// Where the copy is, relative to the recording directory.
    pub copy: String,
    /// Bytes kept.
    pub bytes: u64,
}

/// What the records said.
#[derive(Debug, Default)]
pub struct Collector {
    /// SAMPLE records.
    pub samples: u64,
    /// Samples the kernel dropped (LOST and LOST_SAMPLES records).
    pub lost: u64,
    /// Records seen.
    pub records: u64,
    /// Processes by host pid.
    pub processes: BTreeMap<u32, Process>,
    /// Executable files mapped (for build ids), by path.
    pub exec_paths: BTreeSet<String>,
    /// Problems met keeping files (for the manifest).
    pub problems: Vec<String>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn c_str(b: &[u8]) -> String {
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(b.get(..end).unwrap_or_default()).into_owned()
}

impl Collector {
    /// Looks at one record (header included, as the kernel wrote it).
    pub fn see(&mut self, rec: &[u8]) {
        self.records += 1;
        let Some(kind) = u32_at(rec, 0) else {
            return;
        };
        match kind {
            rt::SAMPLE => self.samples += 1,
            rt::LOST => self.lost += u64_at(rec, 16).unwrap_or(0),
            rt::LOST_SAMPLES => self.lost += u64_at(rec, 8).unwrap_or(0),
            rt::COMM => {
                if let (Some(pid), Some(tid)) = (u32_at(rec, 8), u32_at(rec, 12)) {
                    let comm = c_str(rec.get(16..).unwrap_or_default());
                    let p = self.process(pid);
                    if pid == tid {
                        p.comm = comm;
                    }
                }
            }
            rt::FORK => {
                if let (Some(pid), Some(tid)) = (u32_at(rec, 8), u32_at(rec, 16)) {
                    if pid == tid {
                        self.process(pid);
                    }
                }
            }
            rt::EXIT => {
                if let (Some(pid), Some(tid)) = (u32_at(rec, 8), u32_at(rec, 16)) {
                    if pid == tid {
                        self.exited(pid);
                    }
                }
            }
            rt::MMAP | rt::MMAP2 => self.mmap(kind, rec),
            _ => {}
        }
    }

    fn mmap(&mut self, kind: u32, rec: &[u8]) {
        let Some(pid) = u32_at(rec, 8) else { return };
        let (prot, name_at) = if kind == rt::MMAP2 {
            (u32_at(rec, 64), 72)
        } else {
            (Some(libc::PROT_EXEC as u32), 40)
        };
        let name = c_str(rec.get(name_at..).unwrap_or_default());
        if prot.is_some_and(|p| p & libc::PROT_EXEC as u32 != 0) && name.starts_with('/') {
            self.exec_paths.insert(name.clone());
        }
        let file = Path::new(&name)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if file.starts_with("jit-") && file.ends_with(".dump") && pid != u32::MAX {
            let p = self.process(pid);
            if p.dumps.iter().any(|(n, _)| *n == name) {
                return;
            }
            match p.root.as_ref().map(|r| open_in_root(r, &name)) {
                Some(Ok(f)) => p.dumps.push((name, f)),
                Some(Err(e)) => self
                    .problems
                    .push(format!("pid {pid}: jitdump {name}: {e}")),
                None => {
                    // the process was gone before we saw it: the path on this machine
                    if let Ok(f) = open_regular(Path::new(&name)) {
                        p.dumps.push((name, f));
                    }
                }
            }
        }
    }

    /// The process `pid`, opened on first sight.
    fn process(&mut self, pid: u32) -> &mut Process {
        self.processes
            .entry(pid)
            .or_insert_with(|| Process::open(pid))
    }

    /// A process exited: its perf map is read now (runtimes write theirs at exit).
    fn exited(&mut self, pid: u32) {
        let p = self.process(pid);
        p.exited = true;
        p.snapshot_map(pid);
    }

    /// Keeps every process's JIT files in `dir/jit/` (perf maps of processes still alive are
    /// read now). Returns what was kept.
    pub fn keep(&mut self, dir: &Path) -> io::Result<Vec<Kept>> {
        let jit_dir = dir.join("jit");
        let mut kept = Vec::new();
        for (pid, p) in &mut self.processes {
            if p.map.is_none() {
                p.snapshot_map(*pid);
            }
            let ns_pid = p.ns_pid.filter(|n| n != pid);
            for (i, (recorded, file)) in p.dumps.iter_mut().enumerate() {
                let name = if i == 0 {
                    format!("jit-{pid}.dump")
                } else {
                    format!("jit-{pid}.{i}.dump")
                };
                std::fs::create_dir_all(&jit_dir)?;
                match copy_jitdump(file, &jit_dir.join(&name)) {
                    Ok(bytes) => kept.push(Kept {
                        kind: "jitdump",
                        pid: *pid,
                        ns_pid,
                        recorded: recorded.clone(),
                        copy: format!("jit/{name}"),
                        bytes,
                    }),
                    Err(e) => self
                        .problems
                        .push(format!("pid {pid}: jitdump {recorded}: {e}")),
                }
            }
            if let Some(map) = &p.map {
                std::fs::create_dir_all(&jit_dir)?;
                let name = format!("perf-{pid}.map");
                write_new(&jit_dir.join(&name), map)?;
                kept.push(Kept {
                    kind: "perf-map",
                    pid: *pid,
                    ns_pid,
                    recorded: format!("/tmp/perf-{}.map", p.ns_pid.unwrap_or(*pid)),
                    copy: format!("jit/{name}"),
                    bytes: map.len() as u64,
                });
            }
            if let Some(why) = &p.map_refused {
                self.problems
                    .push(format!("pid {pid}: perf map not kept: {why}"));
            }
        }
        Ok(kept)
    }
}

impl Process {
    fn open(pid: u32) -> Process {
        let mut p = Process::default();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        for line in status.lines() {
            if let Some(v) = line.strip_prefix("NSpid:") {
                p.ns_pid = v.split_whitespace().last().and_then(|n| n.parse().ok());
            } else if let Some(v) = line.strip_prefix("Uid:") {
                p.uid = v.split_whitespace().next().and_then(|n| n.parse().ok());
            } else if let Some(v) = line.strip_prefix("Name:") {
                p.comm = v.trim().to_string();
            }
        }
        p.root = open_path(Path::new(&format!("/proc/{pid}/root")), true).ok();
        p.tmp = p
            .root
            .as_ref()
            .and_then(|r| openat2(r, "/tmp", libc::O_PATH | libc::O_DIRECTORY).ok());
        p
    }

    /// Reads `perf-<ns pid>.map` from the process's /tmp, if it is there and its user's.
    fn snapshot_map(&mut self, pid: u32) {
        let Some(tmp) = &self.tmp else { return };
        let name = format!("perf-{}.map", self.ns_pid.unwrap_or(pid));
        let Ok(f) = openat2(tmp, &name, libc::O_RDONLY | libc::O_NONBLOCK) else {
            return;
        };
        let f = File::from(f);
        let Ok(meta) = f.metadata() else { return };
        if !meta.is_file() {
            self.map_refused = Some(format!("{name} is not a regular file"));
            return;
        }
        if meta.uid() != 0 && Some(meta.uid()) != self.uid {
            self.map_refused = Some(format!(
                "{name} belongs to uid {}, not to the process's user or root (perf ignores such maps too)",
                meta.uid()
            ));
            return;
        }
        let mut bytes = Vec::new();
        // a perf map is text of a few MB; 1 GiB bounds a hostile one
        if f.take(1 << 30).read_to_end(&mut bytes).is_ok() {
            self.map = Some(bytes);
        }
    }
}

/// Opens `path` with `O_PATH` (a directory when `dir`).
fn open_path(path: &Path, dir: bool) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let flags = libc::O_PATH | libc::O_CLOEXEC | if dir { libc::O_DIRECTORY } else { 0 };
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor this process owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens `path` relative to `root` as if `root` were `/` (`RESOLVE_IN_ROOT`: `..` and
/// symbolic links stay inside it; no magic links), never blocking.
fn openat2(root: &OwnedFd, path: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: open_how is plain data; zeroed is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: openat2 reads the path and `how` (of the size given).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    // SAFETY: a new descriptor this process owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A regular file at `path` inside `root`, for reading.
fn open_in_root(root: &OwnedFd, path: &str) -> io::Result<File> {
    let f = File::from(openat2(root, path, libc::O_RDONLY | libc::O_NONBLOCK)?);
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// A regular file at `path` on this machine, for reading.
fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// Copies the jitdump `from` (from its start) to a new file `to`; it must start with a
/// jitdump magic.
fn copy_jitdump(from: &mut File, to: &Path) -> io::Result<u64> {
    from.rewind()?;
    let mut magic = [0u8; 4];
    from.read_exact(&mut magic)?;
    if &magic != b"DTiJ" && &magic != b"JiTD" {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a jitdump (no DTiJ/JiTD magic)",
        ));
    }
    from.rewind()?;
    let mut out = create_new(to)?;
    let n = io::copy(from, &mut out)?;
    out.flush()?;
    Ok(n)
}

/// Creates `path`, which must not exist (never through a symbolic link).
pub fn create_new(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = create_new(path)?;
    f.write_all(bytes)
}

/// The path relative to the recording directory, for the manifest.
pub fn relative(dir: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(dir)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}
