//! A recorded process's JIT metadata: where its `jit-<pid>.dump` and `perf-<pid>.map` are,
//! and what they say.
//!
//! Search order (what `perf inject --jit`, perf and samply do, plus the places a user copies
//! files to):
//! * jitdump: the path of the marker mmap perf recorded (the runtime mmaps its dump so the
//!   recording names it), then the marker's file name beside perf.data, then in each
//!   `--jit-dir`; a process with no marker is looked up as `jit-<pid>.dump` in the same places;
//! * perf map: `/tmp/perf-<pid>.map`, then beside perf.data, then in each `--jit-dir`.
//!
//! Files named on the command line come first: `--jit-dir FILE` takes a `jit-<pid>.dump` or
//! `perf-<pid>.map` (the pid from its name; a jitdump of another name by its header's pid),
//! `--perf-map PID=FILE` a perf map of any name for `PID`.
//!
//! A perf map is read as a stream, one line at a time, from a regular file only, and — as perf
//! does — only if it belongs to the current user or root: `/tmp` is shared, and a map planted
//! there by someone else would name another user's samples (`--any-map-owner` overrides).
//!
//! A jitdump becomes a [`CodeMap`] (address@time → function, lines, inline frames, tier,
//! unwinding info), and for `profkit inject` also each region's code bytes
//! ([`load_jitdump_with_code`]); a perf map a [`MapBuilder`] (no times: the last line for an
//! address wins, as in perf).

use std::path::{Path, PathBuf};

use profkit_common::FileBytes;
use profkit_jitdump::perfmap::MapBuilder;
use profkit_jitdump::raw::FLAG_ARCH_TIMESTAMP;
use profkit_jitdump::{JitDump, Record};
use rustc_hash::FxHashMap;

use crate::codemap::CodeMap;

/// Where to look for JIT metadata.
#[derive(Clone, Debug, Default)]
pub struct JitSearch {
    /// The directory of the perf.data file (`None` for a pipe).
    pub beside: Option<PathBuf>,
    /// `--jit-dir` directories, in order.
    pub dirs: Vec<PathBuf>,
    /// Where perf maps live (`/tmp`; tests point it elsewhere).
    pub tmp: PathBuf,
    /// Jitdumps named on the command line, with the pid each belongs to.
    pub dump_files: Vec<(u32, PathBuf)>,
    /// Perf maps named on the command line, with the pid each belongs to.
    pub map_files: Vec<(u32, PathBuf)>,
    /// Read perf maps whoever owns them (perf's `-f`).
    pub any_map_owner: bool,
}

impl JitSearch {
    /// A search beside `perf_data` (a file path) and in `dirs`. The files of a `jit/`
    /// directory beside perf.data — where `profkit record` keeps each process's jitdump and
    /// perf map, named by host pid — come first, as files named on the command line do.
    pub fn new(perf_data: Option<&Path>, dirs: Vec<PathBuf>) -> JitSearch {
        let mut search = JitSearch::without_recording(perf_data, dirs);
        if let Some(kept) = search.beside.as_ref().map(|b| b.join("jit")) {
            search.add_kept(&kept);
        }
        search
    }

    /// The files `profkit record` kept in `dir` (`jit-<pid>.dump`, `perf-<pid>.map`).
    fn add_kept(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut names: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        names.sort();
        for path in names {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let pid_in = |prefix: &str, suffix: &str| {
                name.strip_prefix(prefix)?
                    .strip_suffix(suffix)?
                    .parse::<u32>()
                    .ok()
            };
            if let Some(pid) = pid_in("jit-", ".dump") {
                self.dump_files.push((pid, path.clone()));
            } else if let Some(pid) = pid_in("perf-", ".map") {
                self.map_files.push((pid, path.clone()));
            }
        }
    }

    fn without_recording(perf_data: Option<&Path>, dirs: Vec<PathBuf>) -> JitSearch {
        JitSearch {
            beside: perf_data.and_then(Path::parent).map(|p| {
                if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                }
            }),
            dirs,
            tmp: PathBuf::from("/tmp"),
            ..JitSearch::default()
        }
    }

    /// Adds what the user named with `--jit-dir`: directories are searched; a file is taken
    /// as the jitdump or perf map of the pid in its name (`jit-<pid>.dump`, `perf-<pid>.map`)
    /// or, for a jitdump, in its header. An error says why a path cannot be used.
    pub fn add_jit_path(&mut self, path: &Path) -> Result<(), String> {
        let meta =
            std::fs::metadata(path).map_err(|e| format!("--jit-dir {}: {e}", path.display()))?;
        if meta.is_dir() {
            self.dirs.push(path.to_path_buf());
            return Ok(());
        }
        if !meta.is_file() {
            return Err(format!(
                "--jit-dir {}: neither a directory nor a regular file",
                path.display()
            ));
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let pid_in = |prefix: &str, suffix: &str| {
            name.strip_prefix(prefix)?
                .strip_suffix(suffix)?
                .parse::<u32>()
                .ok()
        };
        if let Some(pid) = pid_in("perf-", ".map") {
            self.map_files.push((pid, path.to_path_buf()));
            return Ok(());
        }
        if let Some(pid) = pid_in("jit-", ".dump").or_else(|| jitdump_header_pid(path)) {
            self.dump_files.push((pid, path.to_path_buf()));
            return Ok(());
        }
        Err(format!(
            "--jit-dir {}: a file that is neither a jitdump nor named perf-<pid>.map; give a perf map of another name as --perf-map PID={}",
            path.display(),
            path.display()
        ))
    }

    /// Candidate paths of a file called `name` that was at `recorded` (if known).
    fn candidates(&self, recorded: Option<&Path>, name: &str, tmp: bool) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(r) = recorded {
            out.push(r.to_path_buf());
        }
        if tmp {
            out.push(self.tmp.join(name));
        }
        if let Some(b) = &self.beside {
            out.push(b.join(name));
        }
        out.extend(self.dirs.iter().map(|d| d.join(name)));
        out.dedup();
        out
    }

    /// The jitdump of process `pid`, whose marker mmap (if any) named `marker`: the first
    /// candidate that exists, or every path tried.
    pub fn jitdump(&self, pid: u32, marker: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>> {
        let name = marker
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("jit-{pid}.dump"));
        let mut paths = named(&self.dump_files, pid);
        paths.extend(self.candidates(marker, &name, false));
        first_file(paths)
    }

    /// The perf map of process `pid`: the first candidate that exists, or every path tried.
    pub fn perf_map(&self, pid: u32) -> Result<PathBuf, Vec<PathBuf>> {
        let mut paths = named(&self.map_files, pid);
        paths.extend(self.candidates(None, &format!("perf-{pid}.map"), true));
        first_file(paths)
    }
}

/// The files of `files` named for `pid`.
fn named(files: &[(u32, PathBuf)], pid: u32) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|(p, _)| *p == pid)
        .map(|(_, f)| f.clone())
        .collect()
}

/// The pid in the header of the jitdump at `path` (`None`: not a jitdump).
fn jitdump_header_pid(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut header = [0u8; profkit_jitdump::raw::FILE_HEADER_SIZE];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    JitDump::parse(&header).ok().map(|d| d.header().pid)
}

fn first_file(paths: Vec<PathBuf>) -> Result<PathBuf, Vec<PathBuf>> {
    match paths.iter().find(|p| p.is_file()) {
        Some(p) => Ok(p.clone()),
        None => Err(paths),
    }
}

/// A loaded jitdump.
#[derive(Debug)]
pub struct LoadedDump {
    /// Where it was found.
    pub path: PathBuf,
    /// Its code map.
    pub map: CodeMap,
    /// The pid its header names.
    pub pid: u32,
    /// The ELF machine of the code (`e_machine`).
    pub elf_mach: u32,
    /// Whether the dump is big-endian.
    pub big_endian: bool,
    /// Whether its timestamps are CLOCK_MONOTONIC ns (not ARCH_TIMESTAMP, i.e. TSC ticks).
    pub monotonic: bool,
    /// The earliest and latest record timestamps.
    pub time_range: Option<(u64, u64)>,
    /// Problems met while reading (records that did not decode, a cut-off tail).
    pub problems: Vec<String>,
    /// The regions' code bytes (only from [`load_jitdump_with_code`]).
    pub code: Option<CodeBytes>,
}

impl LoadedDump {
    /// A dump of `map` for process `pid` read from `path` without code bytes (a perf map's
    /// entries, a test's regions): CLOCK_MONOTONIC times, little-endian, `elf_mach` given.
    pub fn without_code(path: PathBuf, pid: u32, elf_mach: u32, map: CodeMap) -> LoadedDump {
        LoadedDump {
            path,
            pid,
            elf_mach,
            big_endian: false,
            monotonic: true,
            time_range: map.time_range(),
            map,
            problems: Vec::new(),
            code: None,
        }
    }

    /// The code bytes of region `index` (an index into [`CodeMap::regions`]): `None` without
    /// code bytes, or when its load carried fewer bytes than the region's size.
    pub fn code(&self, index: usize) -> Option<&[u8]> {
        let code = self.code.as_ref()?;
        let region = self.map.region(index)?;
        let (off, len) = (*code.at.get(index)?)?;
        if (len as u64) < region.size {
            return None;
        }
        code.bytes.get(off..off.checked_add(len)?)
    }

    /// The size of the dump's bytes kept for [`LoadedDump::code`] (0 without them).
    pub fn byte_len(&self) -> usize {
        self.code.as_ref().map_or(0, |c| c.bytes.len())
    }
}

/// A jitdump's bytes (mapped) and where each region's code is in them.
pub struct CodeBytes {
    bytes: FileBytes,
    /// `(offset, len)` in `bytes` of each region's code (`None`: its load carried none).
    at: Vec<Option<(usize, usize)>>,
}

impl std::fmt::Debug for CodeBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeBytes")
            .field("bytes", &self.bytes.len())
            .field("regions", &self.at.len())
            .finish()
    }
}

/// Reads the jitdump at `path` (a regular file, mapped): its code map, not its code bytes.
pub fn load_jitdump(path: &Path) -> Result<LoadedDump, String> {
    // Mapped: the code map copies what it keeps, and most of a dump (the code bytes) is never
    // read. The mapping is dropped at the end.
    let bytes = open(path)?;
    let dump = JitDump::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(loaded(path, &dump, Some(&|upto| bytes.release(upto))))
}

/// Reads the jitdump at `path` as [`load_jitdump`] does, and keeps it mapped with where each
/// region's code bytes are: a JIT_CODE_LOAD's own code; a JIT_CODE_MOVE's the code of the
/// last load of its code index (none if that load carried none).
pub fn load_jitdump_with_code(path: &Path) -> Result<LoadedDump, String> {
    let bytes = open(path)?;
    let (mut out, at) = {
        let dump = JitDump::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        // Not released as it is read: the code bytes are read again below.
        let out = loaded(path, &dump, None);
        let base = bytes.as_ptr() as usize;
        // Code of each LOAD (by record index) and of each MOVE (the code of its code_index then).
        let mut by_record: FxHashMap<usize, (usize, usize)> = FxHashMap::default();
        let mut by_index: FxHashMap<u64, (usize, usize)> = FxHashMap::default();
        for raw in dump.records().flatten() {
            let index = raw.header().index;
            match raw.parse() {
                Ok(Record::CodeLoad(l)) => match l.code {
                    Some(code) => {
                        let at = ((code.as_ptr() as usize).wrapping_sub(base), code.len());
                        by_record.insert(index, at);
                        by_index.insert(l.code_index, at);
                    }
                    None => {
                        by_index.remove(&l.code_index);
                    }
                },
                Ok(Record::CodeMove(m)) => {
                    if let Some(&c) = by_index.get(&m.code_index) {
                        by_record.insert(index, c);
                    }
                }
                _ => {}
            }
        }
        let at: Vec<_> = out
            .map
            .regions()
            .iter()
            .map(|r| by_record.get(&r.record).copied())
            .collect();
        (out, at)
    };
    out.code = Some(CodeBytes { bytes, at });
    Ok(out)
}

/// A jitdump found by a search: a regular file only, mapped, never read as a stream (a
/// recording names the path).
fn open(path: &Path) -> Result<FileBytes, String> {
    FileBytes::open_regular(path, 1).map_err(|e| format!("{}: {e}", path.display()))
}

/// The code map and header facts of `dump`, read from `path`.
fn loaded(path: &Path, dump: &JitDump<'_>, release: Option<&(dyn Fn(u64) + Sync)>) -> LoadedDump {
    let header = dump.header();
    let map = match release {
        Some(release) => CodeMap::from_jitdump_releasing(dump, release),
        None => CodeMap::from_jitdump(dump),
    };
    let mut problems: Vec<String> = map
        .problems
        .iter()
        .map(|p| format!("{}: {p}", path.display()))
        .collect();
    if let Some(cut) = &map.truncation {
        problems.push(format!("{}: {cut}", path.display()));
    }
    LoadedDump {
        path: path.to_path_buf(),
        pid: header.pid,
        elf_mach: header.elf_mach,
        big_endian: header.endian == profkit_jitdump::Endian::Big,
        monotonic: header.flags & FLAG_ARCH_TIMESTAMP == 0,
        time_range: map.time_range(),
        map,
        problems,
        code: None,
    }
}

/// A loaded perf map.
#[derive(Debug)]
pub struct LoadedMap {
    /// Where it was found.
    pub path: PathBuf,
    /// Its entries (the last line for an address wins).
    pub map: MapBuilder,
    /// Lines that did not parse.
    pub bad_lines: u64,
}

/// Reads the perf map at `path`, a line at a time: a regular file owned by the current user
/// or root (or anyone's, with `any_owner`), as perf requires.
pub fn load_perf_map(path: &Path, any_owner: bool) -> Result<LoadedMap, String> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // Non-blocking: a FIFO in the map's place must not hang the run (it is refused below).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "{}: not a regular file: perf map skipped",
            path.display()
        ));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if !any_owner && meta.uid() != 0 && meta.uid() != euid {
        return Err(format!(
            "{}: owned by uid {}, not by the current user ({euid}) or root: perf map skipped, as perf skips it (pass --any-map-owner to read it anyway)",
            path.display(),
            meta.uid()
        ));
    }
    let mut map = MapBuilder::new();
    let mut bad_lines = 0;
    profkit_jitdump::perfmap::read_entries(std::io::BufReader::new(file), |e| match e {
        Ok(e) => map.load(e.start, e.size, e.name),
        Err(_) => bad_lines += 1,
    })
    .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(LoadedMap {
        path: path.to_path_buf(),
        map,
        bad_lines,
    })
}

/// The search as the format crates ask for it (perf.data's `info` lists each JIT process's
/// metadata through it).
impl profkit_common::format::JitFiles for JitSearch {
    fn jitdump(&self, pid: u32, marker: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>> {
        JitSearch::jitdump(self, pid, marker)
    }
    fn perf_map(&self, pid: u32) -> Result<PathBuf, Vec<PathBuf>> {
        JitSearch::perf_map(self, pid)
    }
}
