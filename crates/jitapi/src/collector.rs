//! The process-wide collector: one jitdump per process, one lock, deferred parents.
//!
//! Every entry point (iJIT drop-in, stub collector, ITT) lands in [`with_state`], which
//! initialises lazily, re-initialises after `fork` (the child writes its own
//! `jit-<childpid>.dump` and never flushes the parent's buffers), and serialises writers.
//!
//! **Deferred parents.** A LOAD_FINISHED (13/21/22) is not written at once: it waits, with the
//! timestamp taken when it arrived, so that INLINE_LOAD_FINISHED (16) reports for it can still
//! join its DEBUG_INFO2. A pending load is written when the *same thread* reports another
//! method (load, update or unload), when an unload names it, at SHUTDOWN, FinalizeProcess or
//! exit, or when any event arrives after it has waited longer than
//! `PROFKIT_JIT_INLINE_DELAY_MS` (default 50 ms). Inlines whose parent was already written are
//! kept in a bounded store
//! (65 536 entries) and never used; inlines that arrive before their parent wait for it there.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

use profkit_jitdump::write::{monotonic_ns, MAX_INLINE_DEPTH};
use profkit_jitdump::{
    CodeLoadData, DebugEntry, DebugInfo2Builder, DebugInfo2Data, HeaderOptions, InlineCall,
    JitDumpFile,
};

use crate::lines::{self, Convention, Row};

/// How the jitdump function name is formed (`PROFKIT_JIT_NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameFormat {
    /// `method_name` alone (default).
    Method,
    /// `class::method` when a class name is given.
    Class,
    /// `class::method [module]`.
    Full,
}

/// Settings read from the environment once per process (and again after fork).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Output directory (`PROFKIT_JITDUMP_DIR`, default `.`).
    pub dir: PathBuf,
    /// Line-table convention (`PROFKIT_JIT_LINE_CONVENTION`).
    pub convention: Convention,
    /// Function name format (`PROFKIT_JIT_NAME`).
    pub name_format: NameFormat,
    /// Also write `/tmp/perf-<pid>.map` (`PROFKIT_PERFMAP=1`).
    pub perfmap: bool,
    /// Longest wait for a parent's inlines, in ns (`PROFKIT_JIT_INLINE_DELAY_MS`).
    pub inline_delay_ns: u64,
}

impl Settings {
    /// Reads the environment.
    pub fn from_env() -> Settings {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Settings {
            dir: var("PROFKIT_JITDUMP_DIR").map_or_else(|| PathBuf::from("."), PathBuf::from),
            convention: Convention::from_env_value(var("PROFKIT_JIT_LINE_CONVENTION").as_deref()),
            name_format: match var("PROFKIT_JIT_NAME").as_deref() {
                Some("class") => NameFormat::Class,
                Some("full") => NameFormat::Full,
                _ => NameFormat::Method,
            },
            perfmap: var("PROFKIT_PERFMAP").is_some_and(|v| v != "0"),
            inline_delay_ns: var("PROFKIT_JIT_INLINE_DELAY_MS")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(50)
                .saturating_mul(1_000_000),
        }
    }
}

/// A borrowed view of any load-like event, already decoded from its C struct.
#[derive(Debug, Clone, Copy)]
pub struct LoadEvent<'a> {
    /// Method id.
    pub method_id: u32,
    /// Parent id (inline loads only).
    pub parent_id: u32,
    /// Method name bytes (no NUL), if given.
    pub name: Option<&'a [u8]>,
    /// Class name, if given.
    pub class: Option<&'a [u8]>,
    /// Source file, if given.
    pub source: Option<&'a [u8]>,
    /// Module name, if given.
    pub module: Option<&'a [u8]>,
    /// Code address.
    pub addr: u64,
    /// The code bytes (`size` of them at `addr`).
    pub code: &'a [u8],
    /// The raw line table.
    pub lines: &'a [crate::abi::LineNumberInfo],
}

#[derive(Debug, Default)]
struct Inline {
    id: u32,
    parent: u32,
    name: String,
    file: String,
    addr: u64,
    size: u32,
    rows: Vec<Row>,
}

#[derive(Debug, Default)]
struct Pending {
    tid: u32,
    timestamp: u64,
    method_id: u32,
    name: String,
    file: String,
    code_addr: u64,
    code: Vec<u8>,
    rows: Vec<Row>,
    inlines: Vec<Inline>,
}

enum Output {
    Untried,
    Open {
        file: Box<JitDumpFile>,
        perfmap: Option<BufWriter<File>>,
    },
    Failed,
}

/// Counters, for tests and diagnostics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// LOAD records written.
    pub loads_written: u64,
    /// Inline reports attached to a parent.
    pub inlines_attached: u64,
    /// Inline reports dropped (parent already written, or too many orphans).
    pub inlines_dropped: u64,
    /// Events rejected (id 0, NULL payload, no address, a record too big for a jitdump).
    pub rejected: u64,
}

/// Bytes of a JIT_CODE_LOAD record besides its name and code: the record header (16) and
/// the fixed fields (40), and the name's NUL.
const LOAD_RECORD_FIXED: u64 = 16 + 40 + 1;

/// Rejected oversized events reported on stderr, at most (the rest are only counted).
const MAX_OVERSIZE_NOTES: u64 = 16;

/// The collector state behind the lock.
pub struct State {
    settings: Settings,
    out: Output,
    next_code_index: u64,
    // Boxed so that moving a pending load between the lists moves a pointer.
    #[allow(clippy::vec_box)]
    pending: Vec<Box<Pending>>,
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Pending>>,
    orphans: HashMap<u32, Vec<Inline>>,
    orphan_count: usize,
    sort_buf: Vec<crate::abi::LineNumberInfo>,
    stats: Stats,
    pid: u32,
    /// Events rejected for their size ([`State::fits`]).
    oversized: u64,
}

const MAX_ORPHANS: usize = 1 << 16;

struct Shared {
    generation: u64,
    state: Mutex<State>,
}

static CURRENT: AtomicPtr<Shared> = AtomicPtr::new(core::ptr::null_mut());
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);
static HOOKS: Once = Once::new();
static METHOD_IDS: AtomicU64 = AtomicU64::new(1);

extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::AcqRel);
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| flush_all(true));
}

fn install_hooks() {
    HOOKS.call_once(|| {
        // SAFETY: registers plain `extern "C"` functions without arguments; both stay valid as
        // long as this library is mapped (glibc unregisters them when a dlopened copy is closed).
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
            libc::atexit(at_exit);
        }
    });
}

fn shared() -> &'static Shared {
    let generation = FORK_GENERATION.load(Ordering::Acquire);
    loop {
        let p = CURRENT.load(Ordering::Acquire);
        // SAFETY: pointers stored in CURRENT come from Box::leak and are never freed, so they
        // stay valid for the life of the process.
        if let Some(s) = unsafe { p.as_ref() } {
            if s.generation == generation {
                return s;
            }
        }
        install_hooks();
        let fresh = Box::into_raw(Box::new(Shared {
            generation,
            state: Mutex::new(State::new(Settings::from_env())),
        }));
        match CURRENT.compare_exchange(p, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // The replaced state (a parent's, after fork) is leaked on purpose: dropping it
            // would flush the parent's buffered records into the parent's file.
            Ok(_) => {}
            Err(_) => {
                // SAFETY: `fresh` was never published, so this is its only owner.
                drop(unsafe { Box::from_raw(fresh) });
            }
        }
    }
}

fn lock(s: &'static Shared) -> MutexGuard<'static, State> {
    s.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with the collector state locked.
pub fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let mut g = lock(shared());
    f(&mut g)
}

/// Writes every pending load and flushes the file (SHUTDOWN, FinalizeProcess, exit).
pub fn flush_all(at_exit: bool) {
    let s = shared();
    let mut guard = if at_exit {
        // Another thread may be stuck holding the lock while the process exits: give up
        // after about a second instead of hanging the exit.
        let mut tries = 0;
        loop {
            match s.state.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if tries < 1000 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(std::sync::TryLockError::WouldBlock) => return,
            }
        }
    } else {
        lock(s)
    };
    guard.flush_everything();
}

/// A new method id: a process-wide atomic counter from 1; 0 once it runs out.
pub fn new_method_id() -> u32 {
    let v = METHOD_IDS.fetch_add(1, Ordering::Relaxed);
    u32::try_from(v).unwrap_or(0)
}

thread_local! {
    static TID: core::cell::Cell<(u64, u32)> = const { core::cell::Cell::new((u64::MAX, 0)) };
}

/// The kernel thread id of the caller (cached per thread and fork generation).
pub fn current_tid() -> u32 {
    let generation = FORK_GENERATION.load(Ordering::Relaxed);
    TID.with(|c| {
        let (g, tid) = c.get();
        if g == generation {
            return tid;
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        c.set((generation, tid));
        tid
    })
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// The source file an event names, `<unknown>` when it names none.
fn source_file<'a>(e: &LoadEvent<'a>) -> std::borrow::Cow<'a, str> {
    e.source
        .filter(|s| !s.is_empty())
        .map_or("<unknown>".into(), lossy)
}

fn set_string(dst: &mut String, parts: &[&str]) {
    dst.clear();
    for p in parts {
        dst.push_str(p);
    }
}

impl State {
    fn new(settings: Settings) -> State {
        State {
            settings,
            out: Output::Untried,
            next_code_index: 0,
            pending: Vec::new(),
            spare: Vec::new(),
            orphans: HashMap::new(),
            orphan_count: 0,
            sort_buf: Vec::new(),
            stats: Stats::default(),
            oversized: 0,
            pid: std::process::id(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Opens the dump (once); false if it cannot be written.
    pub fn ensure_output(&mut self) -> bool {
        if let Output::Untried = self.out {
            let header = HeaderOptions::default();
            // The header goes to disk now: a disk that is full (or a file size limit) shows
            // at the first event, which then reports failure, instead of never.
            let created = JitDumpFile::create(&self.settings.dir, &header).and_then(|mut f| {
                f.flush()?;
                Ok(f)
            });
            match created {
                Ok(file) => {
                    let perfmap = if self.settings.perfmap {
                        let path = format!("/tmp/perf-{}.map", header.pid);
                        match OpenOptions::new().create(true).append(true).open(&path) {
                            Ok(f) => Some(BufWriter::new(f)),
                            Err(e) => {
                                eprintln!("profkit-jitapi: cannot write {path}: {e}");
                                None
                            }
                        }
                    } else {
                        None
                    };
                    self.out = Output::Open {
                        file: Box::new(file),
                        perfmap,
                    };
                }
                Err(e) => {
                    eprintln!(
                        "profkit-jitapi: cannot create {}/jit-{}.dump: {e}; JIT events are not recorded",
                        self.settings.dir.display(),
                        header.pid
                    );
                    self.out = Output::Failed;
                }
            }
        }
        matches!(self.out, Output::Open { .. })
    }

    fn format_name(&self, e: &LoadEvent<'_>, out: &mut String) {
        let name = match e.name {
            Some(n) if !n.is_empty() => lossy(n),
            _ => std::borrow::Cow::Owned(format!("jit_method_{}", e.method_id)),
        };
        let class = e.class.filter(|c| !c.is_empty()).map(lossy);
        match (self.settings.name_format, class) {
            (NameFormat::Method, _) | (_, None) => set_string(out, &[&name]),
            (_, Some(c)) => set_string(out, &[&c, "::", &name]),
        }
        if self.settings.name_format == NameFormat::Full {
            if let Some(m) = e.module.filter(|m| !m.is_empty()) {
                out.push_str(" [");
                out.push_str(&lossy(m));
                out.push(']');
            }
        }
    }

    /// Whether an event can be recorded: `valid` (else it is counted as rejected) and the dump
    /// open.
    fn accept(&mut self, valid: bool) -> bool {
        if !valid {
            self.stats.rejected += 1;
            return false;
        }
        self.ensure_output()
    }

    /// Whether a LOAD of `code` bytes named by `names` fits a jitdump record (its total_size is
    /// a u32); one that does not is rejected with a line on stderr, before anything is copied,
    /// and recording goes on.
    fn fits(&mut self, method_id: u32, code: u64, names: &[Option<&[u8]>]) -> bool {
        let name_bytes: u64 = names
            .iter()
            .map(|n| n.map_or(0, |n| n.len() as u64 + 4))
            .sum();
        let need = LOAD_RECORD_FIXED
            .saturating_add(name_bytes)
            .saturating_add(code);
        if need <= u64::from(u32::MAX) {
            return true;
        }
        self.stats.rejected += 1;
        self.oversized += 1;
        if self.oversized <= MAX_OVERSIZE_NOTES {
            eprintln!(
                "profkit-jitapi: method {method_id} not recorded: {code} bytes of code (and its names) do not fit a jitdump record (4 GiB at most)"
            );
        }
        false
    }

    /// The time and thread of an event that reports a method's code; writes the pendings it
    /// makes due (the thread's own, and those that waited too long).
    fn begin_event(&mut self) -> (u64, u32) {
        let now = monotonic_ns();
        let tid = current_tid();
        self.flush_due(now, Some(tid), None);
        (now, tid)
    }

    /// A pending load of `e`'s code (reusing a spare one's allocations), with no line table
    /// and no inlines yet.
    fn new_pending(&mut self, e: &LoadEvent<'_>, now: u64, tid: u32) -> Box<Pending> {
        let mut p = self.spare.pop().unwrap_or_default();
        p.tid = tid;
        p.timestamp = now;
        p.method_id = e.method_id;
        let mut name = std::mem::take(&mut p.name);
        self.format_name(e, &mut name);
        p.name = name;
        p.code_addr = e.addr;
        p.code.clear();
        p.code.extend_from_slice(e.code);
        p.rows.clear();
        p.inlines.clear();
        p
    }

    /// `e`'s line table as rows (into `rows`, under the settings' convention); returns the
    /// code size they are clipped to.
    fn rows(&mut self, e: &LoadEvent<'_>, rows: &mut Vec<Row>) -> u32 {
        let size = u32::try_from(e.code.len()).unwrap_or(u32::MAX);
        lines::to_rows(
            e.lines,
            size,
            self.settings.convention,
            &mut self.sort_buf,
            rows,
        );
        size
    }

    /// A LOAD of this process's code at `addr` (vma = `addr`) with the next code index and
    /// nothing attached.
    fn code_load<'a>(
        &mut self,
        timestamp: u64,
        tid: u32,
        addr: u64,
        size: u64,
        code: Option<&'a [u8]>,
        name: &'a [u8],
    ) -> CodeLoadData<'a> {
        let code_index = self.next_code_index;
        self.next_code_index += 1;
        CodeLoadData {
            timestamp,
            pid: self.pid,
            tid,
            vma: addr,
            code_addr: addr,
            code_size: size,
            code,
            code_index,
            name,
            debug_info: None,
            debug_info2: None,
            tier: None,
            unwinding: None,
        }
    }

    /// Writes `load` (with what is attached to it) and its perf map line; stops recording when
    /// writing fails.
    fn write_load(&mut self, load: &CodeLoadData<'_>) {
        let mut failed = false;
        if let Output::Open { file, perfmap } = &mut self.out {
            failed = file.writer().write_code_load(load).is_err();
            if let Some(m) = perfmap {
                failed |= profkit_jitdump::perfmap::write_entry(
                    m,
                    load.code_addr,
                    load.code_size,
                    load.name,
                )
                .is_err();
            }
            self.stats.loads_written += 1;
        }
        if failed {
            self.fail("writing");
        }
    }

    /// Flushes pendings that waited too long, and (with `tid`) the caller's own pending.
    fn flush_due(&mut self, now: u64, tid: Option<u32>, keep_id: Option<u32>) {
        let delay = self.settings.inline_delay_ns;
        let mut i = 0;
        while i < self.pending.len() {
            let due = self.pending.get(i).is_some_and(|p| {
                let own = tid == Some(p.tid) && keep_id != Some(p.method_id);
                own || now.saturating_sub(p.timestamp) > delay
            });
            if due {
                let p = self.pending.swap_remove(i);
                self.write_pending(p);
            } else {
                i += 1;
            }
        }
    }

    /// METHOD_LOAD_FINISHED (13, 21, 22). Returns 1 if recorded.
    pub fn load(&mut self, e: &LoadEvent<'_>) -> i32 {
        if !self.accept(e.method_id != 0 && e.addr != 0) || !self.fits_event(e) {
            return 0;
        }
        let (now, tid) = self.begin_event();
        let mut p = self.new_pending(e, now, tid);
        set_string(&mut p.file, &[&source_file(e)]);
        self.rows(e, &mut p.rows);
        if !self.orphans.is_empty() {
            self.adopt_orphans(&mut p, e.method_id);
        }
        self.pending.push(p);
        1
    }

    fn fits_event(&mut self, e: &LoadEvent<'_>) -> bool {
        let names = [e.name, e.class, e.module];
        self.fits(e.method_id, e.code.len() as u64, &names)
    }

    fn adopt_orphans(&mut self, p: &mut Box<Pending>, id: u32) {
        let mut stack = vec![id];
        while let Some(id) = stack.pop() {
            if let Some(list) = self.orphans.remove(&id) {
                self.orphan_count = self.orphan_count.saturating_sub(list.len());
                for i in list {
                    stack.push(i.id);
                    self.stats.inlines_attached += 1;
                    p.inlines.push(i);
                }
            }
        }
    }

    /// METHOD_INLINE_LOAD_FINISHED (16). Returns 1 if kept.
    pub fn inline_load(&mut self, e: &LoadEvent<'_>) -> i32 {
        if !self.accept(e.method_id != 0 && e.parent_id != 0) {
            return 0;
        }
        let mut name = String::new();
        self.format_name(e, &mut name);
        let mut rows = Vec::new();
        let size = self.rows(e, &mut rows);
        let inline = Inline {
            id: e.method_id,
            parent: e.parent_id,
            name,
            file: source_file(e).into_owned(),
            addr: e.addr,
            size,
            rows,
        };
        let parent = e.parent_id;
        let pos = self
            .pending
            .iter()
            .position(|p| p.method_id == parent || p.inlines.iter().any(|i| i.id == parent));
        if let Some(pos) = pos {
            let mut p = self.pending.swap_remove(pos);
            let id = inline.id;
            p.inlines.push(inline);
            self.stats.inlines_attached += 1;
            if !self.orphans.is_empty() {
                self.adopt_orphans(&mut p, id);
            }
            self.pending.push(p);
            return 1;
        }
        if self.orphan_count >= MAX_ORPHANS {
            self.stats.inlines_dropped += 1;
            return 0;
        }
        // The parent may come later, or may already be written (then the inline stays here,
        // unused: the store is bounded, and nothing in the API says which case it is).
        self.orphan_count += 1;
        self.orphans.entry(parent).or_default().push(inline);
        1
    }

    /// METHOD_UNLOAD_START (14).
    pub fn unload(&mut self, id: u32) -> i32 {
        let tid = current_tid();
        let now = monotonic_ns();
        if let Some(pos) = self.pending.iter().position(|p| p.method_id == id) {
            let p = self.pending.swap_remove(pos);
            self.write_pending(p);
        }
        self.flush_due(now, Some(tid), None);
        1
    }

    /// METHOD_UPDATE (15): the code of `[addr, addr + size)` changed; written at once as a new
    /// LOAD, which supersedes the overlapping old code. Its name is the event's `method_name`,
    /// else `jit_method_<id>` (the collector keeps no per-method table, so that a JIT that
    /// loads millions of methods costs no memory).
    pub fn update(&mut self, e: &LoadEvent<'_>) -> i32 {
        if !self.accept(e.method_id != 0 && e.addr != 0) || !self.fits_event(e) {
            return 0;
        }
        let (now, tid) = self.begin_event();
        let p = self.new_pending(e, now, tid);
        self.write_pending(p);
        1
    }

    /// Writes one function of an ITT module at once (its debug info is complete).
    pub fn write_function(&mut self, f: &crate::itt::ModuleFunction, code: Option<&[u8]>) {
        let code_len = code.map_or(0, |c| c.len() as u64);
        if !self.ensure_output() || !self.fits(0, code_len, &[Some(f.name.as_bytes())]) {
            return;
        }
        let (now, tid) = self.begin_event();
        let entries: Vec<DebugEntry<'_>> = f
            .lines
            .iter()
            .map(|(off, line, file)| DebugEntry {
                addr: f.addr + u64::from(*off),
                line: *line,
                discrim: 0,
                file: file.as_bytes(),
            })
            .collect();
        let mut load = self.code_load(now, tid, f.addr, f.size, code, f.name.as_bytes());
        load.debug_info = (!entries.is_empty()).then_some(entries.as_slice());
        load.debug_info2 = f.debug_info2.as_ref();
        self.write_load(&load);
    }

    /// SHUTDOWN (2) and FinalizeProcess: write pendings and flush; the file stays open.
    pub fn flush_everything(&mut self) {
        while let Some(p) = self.pending.pop() {
            self.write_pending(p);
        }
        if let Output::Open { file, perfmap } = &mut self.out {
            let mut failed = file.flush().is_err();
            if let Some(m) = perfmap {
                failed |= m.flush().is_err();
            }
            if failed {
                self.fail("flush");
            }
        }
    }

    fn fail(&mut self, what: &str) {
        eprintln!(
            "profkit-jitapi: {what} of the jitdump failed; JIT events are no longer recorded"
        );
        self.out = Output::Failed;
    }

    fn write_pending(&mut self, mut p: Box<Pending>) {
        let code_size = p.code.len() as u64;
        let file_bytes = p.file.as_bytes();
        let entries: Vec<DebugEntry<'_>> = p
            .rows
            .iter()
            .map(|r| DebugEntry {
                addr: p.code_addr + u64::from(r.offset),
                line: r.line,
                discrim: 0,
                file: file_bytes,
            })
            .collect();
        let di2 = if p.inlines.is_empty() {
            None
        } else {
            Some(build_debug_info2(&p))
        };
        let mut load = self.code_load(
            p.timestamp,
            p.tid,
            p.code_addr,
            code_size,
            Some(&p.code),
            p.name.as_bytes(),
        );
        load.debug_info = (!entries.is_empty()).then_some(entries.as_slice());
        load.debug_info2 = di2.as_ref();
        self.write_load(&load);
        drop(entries);
        if self.spare.len() < 64 && p.code.capacity() <= 1 << 20 {
            p.inlines.clear();
            self.spare.push(p);
        }
    }
}

/// Builds the DEBUG_INFO2 of a load with inlines: the outer function with its line table, and
/// the inline reports as a tree (a report joins the report whose id is its parent; each
/// report is used once, so parent cycles end). profkit-jitdump's [`DebugInfo2Builder`] lays
/// the tree out (depth-first, children by address, ranges clipped to the parent's, an inline
/// with nothing left or overlapping an earlier sibling left out with its subtree) and paints
/// each inline's rows over its caller's, giving the line table of the deepest frame at every
/// offset.
fn build_debug_info2(p: &Pending) -> DebugInfo2Data {
    let mut b = DebugInfo2Builder::new(
        &p.name,
        &p.file,
        p.rows.first().map_or(0, |r| r.line),
        0,
        p.code.len() as u64,
    );
    for r in &p.rows {
        b.line(r.offset, &p.file, r.line, 0);
    }
    let mut children: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, inl) in p.inlines.iter().enumerate() {
        children.entry(inl.parent).or_default().push(i);
    }
    let mut used = vec![false; p.inlines.len()];
    let tree = inline_tree(p, p.method_id, &p.rows, 0, &children, &mut used, 0);
    b.inline_calls(&tree);
    b.finish()
}

/// The inline calls whose parent is `parent` (whose rows are `caller_rows`, relative to
/// `caller_start`), with their subtrees; offsets are from the load's code address.
fn inline_tree(
    p: &Pending,
    parent: u32,
    caller_rows: &[Row],
    caller_start: u64,
    children: &HashMap<u32, Vec<usize>>,
    used: &mut [bool],
    depth: u32,
) -> Vec<InlineCall> {
    let Some(kids) = children.get(&parent) else {
        return Vec::new();
    };
    if depth >= MAX_INLINE_DEPTH {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(kids.len());
    for &k in kids {
        match used.get_mut(k) {
            Some(u) if !*u => *u = true,
            _ => continue,
        }
        let Some(inl) = p.inlines.get(k) else {
            continue;
        };
        // An inline before the code is outside its parent.
        let Some(start) = inl.addr.checked_sub(p.code_addr) else {
            continue;
        };
        let call_at = start.saturating_sub(caller_start);
        let call_line = caller_rows
            .iter()
            .take_while(|r| u64::from(r.offset) <= call_at)
            .last()
            .map_or(0, |r| r.line);
        let nested = inline_tree(p, inl.id, &inl.rows, start, children, used, depth + 1);
        out.push(InlineCall {
            name: inl.name.clone(),
            file: inl.file.clone(),
            start_line: inl.rows.first().map_or(0, |r| r.line),
            start_column: 0,
            call_line,
            call_column: 0,
            ranges: vec![(start, start.saturating_add(u64::from(inl.size)))],
            lines: inl
                .rows
                .iter()
                .map(|r| (start.saturating_add(u64::from(r.offset)), r.line))
                .collect(),
            children: nested,
        });
    }
    out
}
