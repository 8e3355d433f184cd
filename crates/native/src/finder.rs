//! Finding the binaries a recording names, once each.
//!
//! [`Binaries::find`] takes the path perf recorded and the build id it recorded (from an
//! `MMAP2` record with a build id, or the file's `HEADER_BUILD_ID` feature section) and
//! tries, in order, the first file whose build id matches (any file when no build id was
//! recorded):
//!
//! 1. the recorded path itself (if it [is a file](crate::paths::is_file_backed); a
//!    ` (deleted)` suffix is dropped);
//! 2. perf's build-id cache (`$PERF_BUILDID_DIR`, default `~/.debug`), which `perf record`
//!    fills at the end of a recording: `.build-id/<xx>/<rest of the hex>` is a directory
//!    (a symlink to `../../<path>/<hex>`) holding `elf` (or `vdso` for `[vdso]`); older perf
//!    made it a symlink to the file itself;
//! 3. the same cache by path: `<cache>/<recorded path>/<hex>/elf` (`…/[vdso]/<hex>/vdso`);
//! 4. the distribution's debug files: `/usr/lib/debug/.build-id/<xx>/<rest>.debug` (symbols
//!    and DWARF, but usually no unwind sections);
//! 5. each search directory given with [`Binaries::add_search_dir`], by file name.
//!
//! A binary found without DWARF gets a separate debug file if one is found: the cache's
//! `<hex>/debug`, `/usr/lib/debug/.build-id/<xx>/<rest>.debug`, or its `.gnu_debuglink` name
//! in the binary's directory, its `.debug/` subdirectory, or `/usr/lib/debug/<directory>/`
//! (the build ids must match; the link's CRC is not checked).
//!
//! Answers, misses included, are remembered per (file, build id): a recorded path that names
//! an existing file is known by its (device, inode), so the many spellings a recording may
//! use for one binary (`…/release/../release/…`) share one search and one copy. At most
//! [`MAX_LOADERS`] searches run on threads of their own; the others wait their turn. Misses
//! are listed in [`Binaries::problems`] for the caller to print as warnings.

use std::collections::VecDeque;
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::binary::Binary;
use crate::build_id::BuildId;
use crate::paths;

/// Why a binary was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// No candidate file exists.
    NotFound,
    /// A file exists (the first such candidate is named) but it is another build.
    BuildIdMismatch {
        /// The file that was checked.
        candidate: PathBuf,
        /// Its build id (`None`: it has none).
        found: Option<BuildId>,
    },
    /// A candidate exists but cannot be read as ELF (and no other candidate matched).
    Unreadable {
        /// The file.
        candidate: PathBuf,
        /// The error.
        error: String,
    },
}

/// A binary the recording names that was not found (see [`Binaries::problems`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The path as recorded.
    pub path: PathBuf,
    /// The build id as recorded.
    pub build_id: Option<BuildId>,
    /// Why.
    pub kind: ProblemKind,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(id) = &self.build_id {
            write!(f, " (build id {id})")?;
        }
        match &self.kind {
            ProblemKind::NotFound => write!(f, ": not found"),
            ProblemKind::BuildIdMismatch { candidate, found } => {
                write!(f, ": {} is another build (", candidate.display())?;
                match found {
                    Some(id) => write!(f, "build id {id})"),
                    None => write!(f, "no build id)"),
                }
            }
            ProblemKind::Unreadable { candidate, error } => {
                write!(f, ": {} cannot be read: {error}", candidate.display())
            }
        }
    }
}

/// Searches running on threads of their own at most (see [`Binaries::prefetch`]).
pub const MAX_LOADERS: usize = 4;

/// What a recorded path is: the file it names (device, inode), or only its spelling.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Ident {
    File(u64, u64),
    Path(PathBuf),
}

type Key = (Ident, Option<BuildId>);

/// Finds and caches binaries (see the [module docs](self)).
#[derive(Debug)]
pub struct Binaries {
    buildid_dir: Option<PathBuf>,
    debug_dirs: Vec<PathBuf>,
    search_dirs: Vec<PathBuf>,
    found: FxHashMap<Key, Option<Arc<Binary>>>,
    problems: Vec<Problem>,
    /// Searches started by [`Binaries::prefetch`], running on their own threads.
    pending: FxHashMap<Key, std::thread::JoinHandle<Searched>>,
    /// Prefetches waiting for a thread.
    queue: VecDeque<(Key, PathBuf, Option<BuildId>)>,
    /// What each recorded spelling names.
    idents: FxHashMap<PathBuf, Ident>,
}

/// What a background search found, and its problems.
type Searched = (Option<Binary>, Vec<Problem>);

impl Default for Binaries {
    fn default() -> Self {
        Self::new()
    }
}

impl Binaries {
    /// The system's places: perf's build-id cache (`$PERF_BUILDID_DIR`, else `$HOME/.debug`)
    /// and `/usr/lib/debug`.
    pub fn new() -> Binaries {
        let buildid_dir = std::env::var_os("PERF_BUILDID_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")));
        Binaries {
            buildid_dir,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            ..Binaries::empty()
        }
    }

    /// No places but the recorded paths (and those added later).
    pub fn empty() -> Binaries {
        Binaries {
            buildid_dir: None,
            debug_dirs: Vec::new(),
            search_dirs: Vec::new(),
            found: FxHashMap::default(),
            problems: Vec::new(),
            pending: FxHashMap::default(),
            queue: VecDeque::new(),
            idents: FxHashMap::default(),
        }
    }

    /// The key of a recorded path and build id: the file's (device, inode) when it names one.
    fn key(&mut self, path: &Path, build_id: Option<&BuildId>) -> Key {
        let ident = match self.idents.get(path) {
            Some(i) => i.clone(),
            None => {
                let real = paths::strip_deleted(path);
                let i = match std::fs::metadata(real) {
                    Ok(m) if paths::is_file_backed(real) && m.is_file() => {
                        Ident::File(m.dev(), m.ino())
                    }
                    _ => Ident::Path(path.to_path_buf()),
                };
                self.idents.insert(path.to_path_buf(), i.clone());
                i
            }
        };
        (ident, build_id.cloned())
    }

    /// Takes the answers of finished searches and starts waiting ones while fewer than
    /// [`MAX_LOADERS`] run.
    fn reap(&mut self) {
        let done: Vec<Key> = self
            .pending
            .iter()
            .filter(|(_, h)| h.is_finished())
            .map(|(k, _)| k.clone())
            .collect();
        for k in done {
            if let Some(h) = self.pending.remove(&k) {
                let answer = match h.join() {
                    Ok((b, problems)) => {
                        self.problems.extend(problems);
                        b.map(Arc::new)
                    }
                    // The thread failed: `find` searches here.
                    Err(_) => continue,
                };
                self.found.insert(k, answer);
            }
        }
        while self.pending.len() < MAX_LOADERS {
            let Some((key, path, id)) = self.queue.pop_front() else {
                break;
            };
            self.spawn(key, path, id);
        }
    }

    fn spawn(&mut self, key: Key, path: PathBuf, id: Option<BuildId>) {
        let mut places = self.places();
        let spawned = std::thread::Builder::new()
            .name("binary".into())
            .spawn(move || {
                let b = places.search(&path, id.as_ref());
                if let Some(b) = &b {
                    b.warm();
                }
                (b, places.problems)
            });
        // No thread (address space or a thread limit): `find` searches on its caller's.
        if let Ok(h) = spawned {
            self.pending.insert(key, h);
        }
    }

    /// The same places, nothing found yet (for a search on another thread).
    fn places(&self) -> Binaries {
        Binaries {
            buildid_dir: self.buildid_dir.clone(),
            debug_dirs: self.debug_dirs.clone(),
            search_dirs: self.search_dirs.clone(),
            ..Binaries::empty()
        }
    }

    /// Starts finding and opening a binary on another thread, with its DWARF loaded, so that
    /// [`Binaries::find`] later has it at hand (a recording's mappings come long before the
    /// samples that need them). At most [`MAX_LOADERS`] run at once; the rest wait in order.
    pub fn prefetch(&mut self, path: &Path, build_id: Option<&BuildId>) {
        let key = self.key(path, build_id);
        if self.found.contains_key(&key)
            || self.pending.contains_key(&key)
            || self.queue.iter().any(|q| q.0 == key)
        {
            return;
        }
        self.queue
            .push_back((key, path.to_path_buf(), build_id.cloned()));
        self.reap();
    }

    /// Uses `dir` as perf's build-id cache (`None`: none).
    pub fn with_buildid_dir(mut self, dir: Option<PathBuf>) -> Binaries {
        self.buildid_dir = dir;
        self
    }

    /// Uses these directories for `.build-id/xx/rest.debug` and debug links
    /// (default: `/usr/lib/debug`).
    pub fn with_debug_dirs(mut self, dirs: Vec<PathBuf>) -> Binaries {
        self.debug_dirs = dirs;
        self
    }

    /// Also looks for binaries by file name in `dir` (after the recorded path and the
    /// caches).
    pub fn add_search_dir(&mut self, dir: impl Into<PathBuf>) {
        self.search_dirs.push(dir.into());
    }

    /// The binary for a recorded path and build id (see the [module docs](self)); `None`
    /// when none is found (then [`Binaries::problems`] says why), or when the path is not a
    /// file and the build id finds nothing in the caches.
    pub fn find(&mut self, path: &Path, build_id: Option<&BuildId>) -> Option<Arc<Binary>> {
        let key = self.key(path, build_id);
        if let Some(hit) = self.found.get(&key) {
            return hit.clone();
        }
        self.queue.retain(|q| q.0 != key);
        let answer = match self.pending.remove(&key).map(|h| h.join()) {
            Some(Ok((b, problems))) => {
                self.problems.extend(problems);
                b
            }
            // Not prefetched (or the thread failed): search here.
            _ => self.search(path, build_id),
        }
        .map(Arc::new);
        self.found.insert(key, answer.clone());
        self.reap();
        answer
    }

    /// The misses so far, one per (path, build id), in the order they were found.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Where the kernel's symbols are: the build-id cache's
    /// `[kernel.kallsyms]/<hex>/kallsyms` (perf record copies /proc/kallsyms there), else
    /// `/proc/kallsyms` when no build id is given or it is the running kernel's (read from
    /// `/sys/kernel/notes`). `Err` says why there are none.
    ///
    /// A cache entry of another kernel that holds exactly this machine's /proc/kallsyms is not
    /// that kernel's: `perf inject` (perf 6.1) of a recording made on another kernel caches the
    /// *running* kernel's kallsyms under the *recorded* kernel's build id, and perf report then
    /// names every kernel frame from the wrong symbol table. Such an entry is passed over.
    pub fn kallsyms_path(&self, kernel_build_id: Option<&BuildId>) -> Result<PathBuf, String> {
        let running = crate::kernel::running_kernel_build_id();
        let is_running = |want: &BuildId| running.as_ref().is_some_and(|r| want.matches(r));
        let proc = Path::new("/proc/kallsyms");
        let mut passed_over = None;
        if let (Some(dir), Some(id)) = (&self.buildid_dir, kernel_build_id) {
            let p = dir
                .join("[kernel.kallsyms]")
                .join(id.to_hex())
                .join("kallsyms");
            if p.is_file() {
                if is_running(id) || !same_contents(&p, proc) {
                    return Ok(p);
                }
                passed_over = Some(p);
            }
        }
        let ok = kernel_build_id.is_none_or(is_running);
        if ok && proc.is_file() {
            return Ok(proc.to_path_buf());
        }
        Err(match passed_over {
            Some(p) => format!(
                "{} is this machine's /proc/kallsyms filed under the recorded kernel's build id (perf inject writes such a copy for a recording from another kernel), not the recorded kernel's symbols; pass that kernel's kallsyms with --kallsyms FILE",
                p.display()
            ),
            None => "no kallsyms of the recorded kernel (not in ~/.debug, and not the running kernel); pass --kallsyms FILE".into(),
        })
    }

    fn candidates(&self, path: &Path, build_id: Option<&BuildId>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let path = paths::strip_deleted(path);
        if paths::is_file_backed(path) {
            out.push(path.to_path_buf());
        }
        let split = build_id.and_then(BuildId::split_hex);
        if let (Some(cache), Some(id), Some((xx, rest))) = (&self.buildid_dir, build_id, &split) {
            let link = cache.join(".build-id").join(xx).join(rest);
            out.push(link.join("elf"));
            out.push(link.join("vdso"));
            out.push(link);
            let rel = path.strip_prefix("/").unwrap_or(path);
            if !rel.as_os_str().is_empty() && !rel.starts_with("..") {
                let dir = cache.join(rel).join(id.to_hex());
                out.push(dir.join("elf"));
                out.push(dir.join("vdso"));
            }
        }
        if let Some((xx, rest)) = &split {
            for d in &self.debug_dirs {
                out.push(d.join(".build-id").join(xx).join(format!("{rest}.debug")));
            }
        }
        if let Some(name) = paths::basename(path) {
            if paths::is_file_backed(path) {
                for d in &self.search_dirs {
                    out.push(d.join(name));
                }
            }
        }
        out
    }

    fn search(&mut self, path: &Path, build_id: Option<&BuildId>) -> Option<Binary> {
        let candidates = self.candidates(path, build_id);
        if candidates.is_empty() {
            // A pseudo-path with no build id: nothing to look for, nothing to report.
            return None;
        }
        let mut first_problem = None;
        for cand in candidates {
            if !cand.is_file() {
                continue;
            }
            match Binary::open(&cand) {
                Ok(b) => {
                    let ok = match build_id {
                        None => true,
                        Some(want) => b.build_id().is_some_and(|have| have.matches(want)),
                    };
                    if ok {
                        return Some(self.with_debug_file(b, path));
                    }
                    first_problem.get_or_insert(ProblemKind::BuildIdMismatch {
                        candidate: cand,
                        found: b.build_id().cloned(),
                    });
                }
                Err(e) => {
                    first_problem.get_or_insert(ProblemKind::Unreadable {
                        candidate: cand,
                        error: e.kind.to_string(),
                    });
                }
            }
        }
        self.problems.push(Problem {
            path: path.to_path_buf(),
            build_id: build_id.cloned(),
            kind: first_problem.unwrap_or(ProblemKind::NotFound),
        });
        None
    }

    /// Attaches a debug file to a binary without DWARF, if one is found.
    fn with_debug_file(&self, mut b: Binary, recorded: &Path) -> Binary {
        if b.has_dwarf() {
            return b;
        }
        let mut cands = Vec::new();
        if let Some((xx, rest)) = b.build_id().and_then(BuildId::split_hex) {
            if let Some(cache) = &self.buildid_dir {
                cands.push(cache.join(".build-id").join(&xx).join(&rest).join("debug"));
                let rel = recorded.strip_prefix("/").unwrap_or(recorded);
                if let Some(id) = b.build_id() {
                    cands.push(cache.join(rel).join(id.to_hex()).join("debug"));
                }
            }
            for d in &self.debug_dirs {
                cands.push(d.join(".build-id").join(&xx).join(format!("{rest}.debug")));
            }
        }
        if let Some((link, _crc)) = b.debuglink() {
            let link = Path::new(link);
            // Only a plain file name: a link must not point elsewhere.
            if link.file_name() == Some(link.as_os_str()) {
                for dir in [b.path().parent(), recorded.parent()].into_iter().flatten() {
                    cands.push(dir.join(link));
                    cands.push(dir.join(".debug").join(link));
                    let rel = dir.strip_prefix("/").unwrap_or(dir);
                    for d in &self.debug_dirs {
                        cands.push(d.join(rel).join(link));
                    }
                }
            }
        }
        for c in cands {
            if c == b.path() || !c.is_file() {
                continue;
            }
            if b.attach_debug_file(&c) {
                break;
            }
        }
        b
    }
}

/// Whether two files hold the same bytes (read in pieces; false if either cannot be read).
fn same_contents(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (Ok(fa), Ok(fb)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let (mut ra, mut rb) = (std::io::BufReader::new(fa), std::io::BufReader::new(fb));
    let (mut ba, mut bb) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        // /proc files return short reads: fill each buffer as far as the file goes.
        let fill = |r: &mut dyn Read, buf: &mut [u8]| -> Option<usize> {
            let mut n = 0;
            while n < buf.len() {
                match r.read(buf.get_mut(n..)?) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return None,
                }
            }
            Some(n)
        };
        let (Some(na), Some(nb)) = (fill(&mut ra, &mut ba), fill(&mut rb, &mut bb)) else {
            return false;
        };
        if na != nb || ba.get(..na) != bb.get(..nb) {
            return false;
        }
        if na == 0 {
            return true;
        }
    }
}
