//! What the driver knows of each recorded process while it walks the events in time order:
//! its name, its threads' names, its memory mappings as they are now, its JIT metadata and its
//! unwinder.
//!
//! Because perf.data events arrive sorted by time, the state at a sample is simply the state
//! after every earlier event: an MMAP adds a mapping (replacing what it overlaps, as the kernel
//! does), COMM renames a thread (with `exec`, the process), FORK copies the parent's mappings
//! to a new process, EXIT is ignored (samples after it cannot come).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use profkit_native::{Binary, Mapping, Unwinder};

use super::jit::{LoadedDump, LoadedMap};
use super::symbols::Resolved;

/// What a mapping holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// A file on disk (an executable, a shared library).
    File,
    /// Anonymous memory, `//anon`, `[anon:…]`, `/memfd:…`: where JIT code lives.
    Anon,
    /// A jitdump mapped as the runtime's marker (not code).
    JitMarker,
    /// `[vdso]`, `[vsyscall]`, `[stack]`, `[heap]` …
    Special,
}

/// One mapping of a process.
#[derive(Clone, Debug)]
pub struct Map {
    /// One past the last address.
    pub end: u64,
    /// File offset of the start.
    pub pgoff: u64,
    /// Path as recorded.
    pub path: Arc<str>,
    /// Build id the MMAP2 record carried.
    pub build_id: Option<Vec<u8>>,
    /// What it holds.
    pub kind: MapKind,
    /// Whether it is executable (MMAP2 prot, or an MMAP record's exec flag).
    pub executable: bool,
    /// The binary behind a file mapping, once looked up (`Some(None)`: not found).
    pub binary: Option<Option<(Arc<Binary>, Mapping)>>,
}

/// JIT metadata of a process, loaded on first need.
#[derive(Debug, Default)]
pub struct Jit {
    /// Whether the search was done.
    pub searched: bool,
    /// The marker path perf recorded, if any.
    pub marker: Option<PathBuf>,
    /// The loaded jitdump.
    pub dump: Option<LoadedDump>,
    /// Paths tried for a jitdump, when none was found.
    pub dump_tried: Vec<PathBuf>,
    /// A jitdump that was found but did not load.
    pub dump_error: Option<String>,
    /// The loaded perf map.
    pub map: Option<LoadedMap>,
    /// Paths tried for a perf map, when none was found.
    pub map_tried: Vec<PathBuf>,
    /// A jitdump being loaded in the background since its marker was recorded.
    pub loading: Option<std::thread::JoinHandle<DumpSearch>>,
}

/// What a jitdump search found: the dump, the paths tried, or why the dump did not load.
pub type DumpSearch = Result<LoadedDump, Result<String, Vec<PathBuf>>>;

/// A recorded process.
#[derive(Default)]
pub struct Process {
    /// Its name (the main thread's comm).
    pub comm: Option<String>,
    /// Mappings by start address; they never overlap.
    pub maps: BTreeMap<u64, Map>,
    /// Bumped whenever a file mapping is added or cut (the native symbol cache's key, and when
    /// the unwinder is rebuilt); anonymous mappings come and go without it.
    pub generation: u64,
    /// Bumped whenever anything a callchain's addresses are checked against changes: any
    /// mapping added or cut, the jitdump or perf map loaded (see `chain.rs`).
    pub layout: u64,
    /// The generation the unwinder was built at.
    pub unwinder_generation: u64,
    /// JIT metadata.
    pub jit: Jit,
    /// The unwinder, with every module added so far (`--call-graph dwarf` recordings).
    pub unwinder: Option<Unwinder>,
    /// Starts of the JIT regions the unwinder has, by code-map region index.
    pub jit_modules: HashMap<usize, u64>,
    /// Answers for the addresses of this generation: (address, is kernel) → what
    /// [`Symbols`](super::symbols::Symbols) said, reused while the sample time is before its
    /// `until`.
    pub answers: HashMap<(u64, bool), Resolved>,
    /// The generation `answers` belong to.
    pub answers_generation: u64,
    /// Next code-map region (by load order) to offer the unwinder.
    pub jit_cursor: usize,
    /// Samples taken in it.
    pub samples: u64,
    /// Samples whose leaf is in anonymous memory no jitdump or perf map names.
    pub unnamed_jit_samples: u64,
    /// Samples whose leaf is in JIT code (named or not).
    pub jit_samples: u64,
    /// Whether it was declared to the sink.
    pub declared: bool,
}

impl Process {
    /// Adds a mapping, cutting what it overlaps.
    pub fn map(&mut self, start: u64, map: Map) {
        let end = map.end;
        let mut files_changed = map.kind == MapKind::File;
        let mut cut: Vec<(u64, Map)> = Vec::new();
        if let Some((&s, m)) = self.maps.range(..start).next_back() {
            if m.end > start {
                cut.push((s, m.clone()));
            }
        }
        let inside: Vec<u64> = self.maps.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some(m) = self.maps.remove(&s) {
                cut.push((s, m));
            }
        }
        for (s, m) in cut {
            files_changed |= m.kind == MapKind::File;
            self.maps.remove(&s);
            // Keep the parts outside [start, end).
            if s < start {
                let mut left = m.clone();
                left.end = start;
                left.binary = None;
                self.maps.insert(s, left);
            }
            if m.end > end {
                let mut right = m.clone();
                right.pgoff = right.pgoff.saturating_add(end - s);
                right.end = m.end;
                right.binary = None;
                self.maps.insert(end, right);
            }
        }
        self.maps.insert(start, map);
        self.layout += 1;
        if files_changed {
            self.generation += 1;
        }
    }

    /// The mapping holding `addr`, with its start.
    pub fn find(&self, addr: u64) -> Option<(u64, &Map)> {
        self.maps
            .range(..=addr)
            .next_back()
            .filter(|(_, m)| addr < m.end)
            .map(|(&s, m)| (s, m))
    }

    /// Like [`Process::find`], mutable.
    pub fn find_mut(&mut self, addr: u64) -> Option<(u64, &mut Map)> {
        self.maps
            .range_mut(..=addr)
            .next_back()
            .filter(|(_, m)| addr < m.end)
            .map(|(&s, m)| (s, m))
    }

    /// A child's copy after FORK: the mappings (the address space), not the JIT state.
    pub fn fork(&self) -> Process {
        Process {
            comm: self.comm.clone(),
            maps: self.maps.clone(),
            ..Process::default()
        }
    }
}
