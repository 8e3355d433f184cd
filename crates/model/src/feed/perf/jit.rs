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
//! A jitdump becomes a [`CodeMap`] (address@time → function, lines, inline frames, tier,
//! unwinding info); a perf map a [`MapBuilder`] (no times: the last line for an address wins,
//! as in perf).

use std::path::{Path, PathBuf};

use profkit_common::FileBytes;
use profkit_jitdump::perfmap::{entries, MapBuilder};
use profkit_jitdump::JitDump;

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
}

impl JitSearch {
    /// A search beside `perf_data` (a file path) and in `dirs`.
    pub fn new(perf_data: Option<&Path>, dirs: Vec<PathBuf>) -> JitSearch {
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
        }
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
        first_file(self.candidates(marker, &name, false))
    }

    /// The perf map of process `pid`: the first candidate that exists, or every path tried.
    pub fn perf_map(&self, pid: u32) -> Result<PathBuf, Vec<PathBuf>> {
        first_file(self.candidates(None, &format!("perf-{pid}.map"), true))
    }
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
    /// Whether its timestamps are CLOCK_MONOTONIC ns (not ARCH_TIMESTAMP, i.e. TSC ticks).
    pub monotonic: bool,
    /// The earliest and latest record timestamps.
    pub time_range: Option<(u64, u64)>,
    /// Problems met while reading (a cut-off tail, records that did not decode).
    pub problems: Vec<String>,
}

/// Reads the jitdump at `path`.
pub fn load_jitdump(path: &Path) -> Result<LoadedDump, String> {
    // Mapped: the code map copies what it keeps, and most of a dump (the code bytes) is never
    // read.
    let bytes = FileBytes::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dump = JitDump::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let header = dump.header();
    let map = CodeMap::from_jitdump(&dump);
    let mut problems: Vec<String> = map
        .problems
        .iter()
        .map(|p| format!("{}: {p}", path.display()))
        .collect();
    if let Some(cut) = &map.truncation {
        problems.push(format!("{}: {cut}", path.display()));
    }
    Ok(LoadedDump {
        path: path.to_path_buf(),
        pid: header.pid,
        monotonic: header.flags & 1 == 0,
        time_range: map.time_range(),
        map,
        problems,
    })
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

/// Reads the perf map at `path`.
pub fn load_perf_map(path: &Path) -> Result<LoadedMap, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut map = MapBuilder::new();
    let mut bad_lines = 0;
    for e in entries(&bytes) {
        match e {
            Ok(e) => map.load(e.start, e.size, e.name),
            Err(_) => bad_lines += 1,
        }
    }
    Ok(LoadedMap {
        path: path.to_path_buf(),
        map,
        bad_lines,
    })
}
