//! What the driver knows of each recorded process while it walks the events in time order:
//! its name, its threads' names, its memory mappings as they are now, its JIT metadata and its
//! unwinder.
//!
//! Because perf.data events arrive sorted by time, the state at a sample is simply the state
//! after every earlier event: an MMAP adds a mapping (replacing what it overlaps, as the kernel
//! does), COMM renames a thread (with `exec`, the process), FORK copies the parent's mappings
//! to a new process, EXIT is ignored (samples after it cannot come).

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
    pub maps: Maps,
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
    /// Answers for the user addresses of this generation ([`Process::answers`]).
    user_answers: HashMap<u64, Resolved>,
    /// Answers for its kernel addresses.
    kernel_answers: HashMap<u64, Resolved>,
    /// The generation the answers belong to.
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
    /// Whether the helper names its samples (this is then the walk's record of its name and
    /// threads; the helper has the rest: see `split.rs`).
    pub remote: bool,
}

/// A process's mappings, sorted by start address, never overlapping.
///
/// Every caller a sample's frames have is looked up here (is it held? what holds it?), and a
/// process has tens of mappings that change at start-up and at `dlopen`: the starts are one
/// array searched by bisection (a `BTreeMap` range search descended the tree twice, 4% of a
/// walk's instructions).
#[derive(Clone, Debug, Default)]
pub struct Maps {
    starts: Vec<u64>,
    maps: Vec<Map>,
}

impl Maps {
    /// The index of the mapping holding `addr`.
    fn index_of(&self, addr: u64) -> Option<usize> {
        let i = self.starts.partition_point(|&s| s <= addr).checked_sub(1)?;
        self.maps.get(i).filter(|m| addr < m.end).map(|_| i)
    }

    /// The mapping holding `addr`, with its start.
    pub fn find(&self, addr: u64) -> Option<(u64, &Map)> {
        let i = self.index_of(addr)?;
        Some((*self.starts.get(i)?, self.maps.get(i)?))
    }

    /// Like [`Maps::find`], mutable.
    pub fn find_mut(&mut self, addr: u64) -> Option<(u64, &mut Map)> {
        let i = self.index_of(addr)?;
        Some((*self.starts.get(i)?, self.maps.get_mut(i)?))
    }

    /// The mapping that starts at `start`.
    pub fn get_mut(&mut self, start: u64) -> Option<&mut Map> {
        let i = self.starts.binary_search(&start).ok()?;
        self.maps.get_mut(i)
    }

    /// Every mapping with its start, by start address.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Map)> {
        self.starts.iter().copied().zip(&self.maps)
    }

    /// Adds a mapping, cutting what it overlaps (the parts outside it stay); returns whether a
    /// file mapping was cut.
    fn insert(&mut self, start: u64, map: Map) -> bool {
        let end = map.end;
        // Mappings from `first` to `last` (exclusive) overlap [start, end).
        let first = self.starts.partition_point(|&s| s < start);
        let first = match first.checked_sub(1) {
            Some(before) if self.maps.get(before).is_some_and(|m| m.end > start) => before,
            _ => first,
        };
        let last = self.starts.partition_point(|&s| s < end).max(first);
        let mut kept: Vec<(u64, Map)> = Vec::new();
        let mut files_cut = false;
        let cut: Vec<(u64, Map)> = self
            .starts
            .drain(first..last)
            .zip(self.maps.drain(first..last))
            .collect();
        for (s, m) in cut {
            files_cut |= m.kind == MapKind::File;
            if s < start {
                let mut left = m.clone();
                left.end = start;
                left.binary = None;
                kept.push((s, left));
            }
            if m.end > end {
                let mut right = m;
                right.pgoff = right.pgoff.saturating_add(end - s);
                right.binary = None;
                kept.push((end, right));
            }
        }
        // The left part, the new mapping, the right part: in order, at `first`.
        let (left, right): (Vec<_>, Vec<_>) = kept.into_iter().partition(|(s, _)| *s < start);
        let new = left.into_iter().chain([(start, map)]).chain(right);
        for (k, (s, m)) in new.enumerate() {
            self.starts.insert(first + k, s);
            self.maps.insert(first + k, m);
        }
        files_cut
    }
}

impl Process {
    /// Adds a mapping, cutting what it overlaps.
    pub fn map(&mut self, start: u64, map: Map) {
        let file = map.kind == MapKind::File;
        let files_cut = self.maps.insert(start, map);
        self.layout += 1;
        if file || files_cut {
            self.generation += 1;
        }
    }

    /// The mapping holding `addr`, with its start.
    pub fn find(&self, addr: u64) -> Option<(u64, &Map)> {
        self.maps.find(addr)
    }

    /// Like [`Process::find`], mutable.
    pub fn find_mut(&mut self, addr: u64) -> Option<(u64, &mut Map)> {
        self.maps.find_mut(addr)
    }

    /// The answers for the (kernel or user) addresses of this generation: what
    /// [`Symbols`](super::symbols::Symbols) said, reused while the sample time is before its
    /// `until`. Two maps keyed by the address, not one keyed by (address, is kernel): 32-byte
    /// entries rather than 40, so that a busy process's answers stay in the core's cache longer.
    pub fn answers(&mut self, kernel: bool) -> &mut HashMap<u64, Resolved> {
        if kernel {
            &mut self.kernel_answers
        } else {
            &mut self.user_answers
        }
    }

    /// Forgets every answer (the mappings or JIT metadata changed).
    pub fn clear_answers(&mut self) {
        self.user_answers.clear();
        self.kernel_answers.clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn map(end: u64, pgoff: u64, file: bool, path: &str) -> Map {
        Map {
            end,
            pgoff,
            path: Arc::from(path),
            build_id: None,
            kind: if file { MapKind::File } else { MapKind::Anon },
            executable: true,
            binary: None,
        }
    }

    /// Mappings added at random over 96 addresses hold, at every address, what the newest
    /// mapping there says (its path, and the file offset of that address), as the kernel's
    /// would; a file mapping added or cut bumps the generation.
    #[test]
    fn a_mapping_replaces_what_it_overlaps() {
        let mut rng = profkit_testkit::Xorshift::new(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |n: u64| rng.below(n);
        for _ in 0..300 {
            let mut p = Process::default();
            // Per address: (path, file offset, is a file).
            let mut model: Vec<Option<(String, u64, bool)>> = vec![None; 96];
            for k in 0..12 {
                let start = next(90);
                let len = 1 + next(20);
                let end = (start + len).min(96);
                let (pgoff, file) = (next(1000), next(2) == 0);
                let path = format!("m{k}");
                let generation = p.generation;
                let file_cut = model[start as usize..end as usize]
                    .iter()
                    .any(|m| m.as_ref().is_some_and(|m| m.2));
                p.map(start, map(end, pgoff, file, &path));
                assert_eq!(p.generation > generation, file || file_cut);
                for a in start..end {
                    model[a as usize] = Some((path.clone(), pgoff + (a - start), file));
                }
                for (a, want) in model.iter().enumerate() {
                    let a = a as u64;
                    let got = p.find(a).map(|(s, m)| {
                        (
                            m.path.to_string(),
                            m.pgoff + (a - s),
                            m.kind == MapKind::File,
                        )
                    });
                    assert_eq!(&got, want, "address {a}");
                }
                let starts: Vec<u64> = p.maps.iter().map(|(s, _)| s).collect();
                assert!(starts.windows(2).all(|w| w[0] < w[1]));
                assert!(p.maps.iter().all(|(s, m)| s < m.end));
            }
        }
    }
}
