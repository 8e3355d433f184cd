//! The code map: a timeline of JIT code regions answering "which function was at this address
//! at this time", with line tables and inline frames.
//!
//! Built from a jitdump ([`CodeMap::from_jitdump`]): every JIT_CODE_LOAD opens a region; a
//! later load that overlaps a live region (address reuse after the runtime freed the code)
//! ends it at that time; JIT_CODE_MOVE ends the region at its old address and opens one at the
//! new address; JIT_CODE_CLOSE ends everything. DEBUG_INFO and DEBUG_INFO2 records attach to
//! the next load of the same code address (line tables; the inline tree). V8 and LLVM write
//! DEBUG_INFO addresses biased by +0x40 (+0x34 on 32-bit); the bias is decided over the
//! whole dump by [`profkit_jitdump::lines::BiasDecision`] (the one decision `validate` makes
//! too) and removed. Rows that are not in their code once it is removed are dropped: the
//! terminator Erlang and QEMU put at the code's end (line 0), and OTP's first entry before
//! the function. V8's corrupt DEBUG_INFO records are recovered (fixed-stride walk) so their
//! lines are kept.
//!
//! A large dump is built by two threads: one reads each record and builds what it can alone
//! (line tables, names, unwind info), the other lays the records on the timeline in order; a
//! small one is built on the caller's thread. Both give the same map.
//!
//! Lookups ([`CodeMap::lookup`]) binary-search the regions by start address and walk back
//! only as far as a region could still cover the address (a running maximum of end
//! addresses bounds the walk).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use std::sync::Arc;

use profkit_common::handoff::{self, Wake};
use profkit_jitdump::lines::{BiasDecision, TableSpan};
use profkit_jitdump::read::{DebugInfo, DebugInfo2};
use profkit_jitdump::{JitDump, Record};

/// A JIT tier (from a SAMPLY_JIT_TIER record; the owned form of the model's `CodeTier`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FuncTier {
    /// Tier name ("Baseline", "Turbofan", "Tier0" …).
    pub name: String,
    /// Colour index into the Firefox Profiler's category colours.
    pub color: u32,
    /// Whether the tier runs JavaScript-like source.
    pub js: bool,
}

/// One line-table row: code from `offset` (bytes from the region's start) on is `file:line`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRow {
    /// Offset from the region's start.
    pub offset: u64,
    /// Index into the region's file list.
    pub file: u32,
    /// Line, 1-based (0 = unknown).
    pub line: u32,
    /// Column (0 = unknown).
    pub column: u32,
}

/// An inlined call (DEBUG_INFO2): `function` was inlined at `call_line` of its parent and
/// covers `ranges` (offsets from the region's start).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineCall {
    /// Depth: 0 = called from the outer function.
    pub depth: u32,
    /// Name of the inlined function.
    pub function: String,
    /// File of the inlined function, if known.
    pub function_file: Option<String>,
    /// Where the parent calls it.
    pub call_line: u32,
    /// Column of the call.
    pub call_column: u32,
    /// `(start, size)` offset ranges.
    pub ranges: Vec<(u64, u64)>,
}

/// Debug information of a region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugTable {
    /// Source files.
    pub files: Vec<String>,
    /// Rows sorted by offset; for DEBUG_INFO2, locations inside the deepest inline.
    pub rows: Vec<LineRow>,
    /// Inline calls in depth-first order (DEBUG_INFO2 only).
    pub inlines: Vec<InlineCall>,
    /// File of the outer function (DEBUG_INFO2).
    pub outer_file: Option<String>,
    /// Where the table came from: `"DEBUG_INFO"`, `"DEBUG_INFO (recovered)"`, `"DEBUG_INFO2"`.
    pub source: &'static str,
}

/// A region of code, live from `load_time` until `end_time`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Start address.
    pub start: u64,
    /// Size in bytes (at least 1 for lookups).
    pub size: u64,
    /// Function name.
    pub name: String,
    /// When it became live (the record's timestamp).
    pub load_time: u64,
    /// When it stopped being live (`None` = still live at the end of the dump).
    pub end_time: Option<u64>,
    /// The producer's code index.
    pub code_index: u64,
    /// Thread that loaded it.
    pub tid: u32,
    /// Index of the record that opened it.
    pub record: usize,
    /// Line tables and inline tree, if the dump had them.
    pub debug: Option<DebugTable>,
    /// Why the region ended (`"address reused"`, `"moved"`, `"close"`).
    pub end_reason: Option<&'static str>,
    /// The JIT tier of a SAMPLY_JIT_TIER record for this load's address.
    pub tier: Option<FuncTier>,
    /// The JIT_CODE_UNWINDING_INFO record before the load (`.eh_frame` and `.eh_frame_hdr`).
    pub unwind: Option<Arc<Unwind>>,
}

/// A region's unwind tables, from JIT_CODE_UNWINDING_INFO: what perf and `perf inject` map
/// right after the code (the `.eh_frame_hdr`'s pointers are relative to that place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unwind {
    /// `.eh_frame`.
    pub eh_frame: Vec<u8>,
    /// `.eh_frame_hdr`.
    pub eh_frame_hdr: Vec<u8>,
    /// The record's `mapped_size`.
    pub mapped_size: u64,
}

impl Region {
    /// One past the last address.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size.max(1))
    }

    /// Whether the region was live at `time`.
    pub fn live_at(&self, time: u64) -> bool {
        self.load_time <= time && self.end_time.is_none_or(|e| time < e)
    }
}

/// A frame of a symbolized address, innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Function name.
    pub function: String,
    /// Source file, if known.
    pub file: Option<String>,
    /// Line (0 = unknown).
    pub line: u32,
    /// Column (0 = unknown).
    pub column: u32,
    /// Whether this frame was inlined into the next one.
    pub inlined: bool,
}

/// The answer to a lookup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbolized<'a> {
    /// The region.
    pub region: &'a Region,
    /// Offset of the address in the region.
    pub offset: u64,
    /// Frames, innermost first; the last is the region's own function.
    pub frames: Vec<Frame>,
}

/// The code map of a dump. See the [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct CodeMap {
    regions: Vec<Region>,
    /// Region indices sorted by start address.
    by_start: Vec<usize>,
    /// `starts[i]` = the start of region `by_start[i]`: the lookups' binary searches run over
    /// these packed addresses instead of following each index into `regions` (two cache
    /// misses a step; the sampler's hot loop).
    starts: Vec<u64>,
    /// The same addresses, hashed: whether an address starts a region, in one probe (asked of
    /// every return address of every sample).
    start_set: rustc_hash::FxHashSet<u64>,
    /// `max_end[i]` = the largest end among `by_start[..=i]`.
    max_end: Vec<u64>,
    /// Time of the last record.
    last_time: u64,
    /// Earliest and latest record times.
    time_range: Option<(u64, u64)>,
    /// Where the dump is cut, if it is (everything before was used).
    pub truncation: Option<profkit_common::Truncation>,
    /// The DEBUG_INFO address bias that was removed (0, 0x34 or 0x40).
    pub debug_bias: u64,
    /// Problems met while building (records that did not decode), as text with offsets.
    pub problems: Vec<String>,
}

struct PendingDebug {
    table: DebugTable,
    /// Raw DEBUG_INFO addresses, bias not yet removed.
    addrs: Vec<u64>,
}

impl CodeMap {
    /// Every region, in load order.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Time of the last record of the dump (the default lookup time).
    pub fn last_time(&self) -> u64 {
        self.last_time
    }

    /// The earliest and latest record times (`None`: no record).
    pub fn time_range(&self) -> Option<(u64, u64)> {
        self.time_range
    }

    /// A code map of perf map entries `(start, size, name, load time)` of process `pid`, e.g.
    /// a [`MapBuilder`](profkit_jitdump::perfmap::MapBuilder)'s (which never overlap): each is
    /// a region live from its load time on, loaded by the process's main thread, with no code
    /// bytes, lines or index of a record.
    pub fn from_entries(
        pid: u32,
        entries: impl IntoIterator<Item = (u64, u64, String, u64)>,
    ) -> CodeMap {
        let mut map = CodeMap::default();
        for (i, (start, size, name, time)) in entries.into_iter().enumerate() {
            map.time_range = Some(
                map.time_range
                    .map_or((time, time), |(a, b)| (a.min(time), b.max(time))),
            );
            map.last_time = map.last_time.max(time);
            map.regions.push(Region {
                start,
                size,
                name,
                load_time: time,
                end_time: None,
                code_index: i as u64,
                tid: pid,
                record: i,
                debug: None,
                end_reason: None,
                tier: None,
                unwind: None,
            });
        }
        map.index();
        map
    }

    /// Builds the code map of `dump`. A large dump is read on a second thread, which parses
    /// each record and builds what it needs by itself (line tables, names, unwind info:
    /// [`Prepared`]), while this thread lays the records on the timeline in order
    /// ([`Build::apply`]): on a dump of 30,000 V8 functions the two halves cost about the same.
    pub fn from_jitdump(dump: &JitDump<'_>) -> CodeMap {
        CodeMap::build(dump, dump.data().len() >= PARALLEL_BYTES, None)
    }

    /// [`CodeMap::from_jitdump`], telling `release(upto)` as it goes (in steps of 8 MiB) that
    /// the dump's bytes before offset `upto` will not be read again: a mapped dump's pages can
    /// leave the resident set (the map keeps copies of what it needs; jit14's 37 MB dump was
    /// 37 MB of peak RSS).
    pub fn from_jitdump_releasing(dump: &JitDump<'_>, release: &(dyn Fn(u64) + Sync)) -> CodeMap {
        CodeMap::build(dump, dump.data().len() >= PARALLEL_BYTES, Some(release))
    }

    /// [`CodeMap::from_jitdump`], reading on a second thread or not.
    fn build(
        dump: &JitDump<'_>,
        in_parallel: bool,
        release: Option<&(dyn Fn(u64) + Sync)>,
    ) -> CodeMap {
        let mut build = Build::default();
        let truncation = if in_parallel {
            build.apply_read_ahead(dump, release)
        } else {
            None
        };
        let truncation = match truncation {
            Some(t) => t,
            None => {
                let mut behind = Behind::new(release);
                let mut records = dump.records();
                for raw in records.by_ref() {
                    let p = Prepared::of(raw);
                    behind.reached(&p);
                    build.apply(p);
                }
                records.truncation().cloned()
            }
        };
        build.finish(truncation)
    }

    fn index(&mut self) {
        let mut order: Vec<usize> = (0..self.regions.len()).collect();
        order.sort_by_key(|&i| self.regions.get(i).map_or(0, |r| r.start));
        let mut run = 0u64;
        self.max_end = order
            .iter()
            .map(|&i| {
                run = run.max(self.regions.get(i).map_or(0, Region::end));
                run
            })
            .collect();
        self.starts = order
            .iter()
            .map(|&i| self.regions.get(i).map_or(0, |r| r.start))
            .collect();
        self.start_set = self.starts.iter().copied().collect();
        self.by_start = order;
    }

    /// The region `index` (an index into [`CodeMap::regions`]).
    pub fn region(&self, index: usize) -> Option<&Region> {
        self.regions.get(index)
    }

    /// Whether some region (of any time) starts at `addr` (every region holds its start: an
    /// empty one is one byte long): one hash probe, where [`CodeMap::region_at`] searches and
    /// may look at every region below `addr` whose code reaches past it. The region at `addr`,
    /// for any time, starts there only if this holds.
    pub fn starts_region(&self, addr: u64) -> bool {
        self.start_set.contains(&addr)
    }

    /// The index of the region at `addr` at `time` — the most recently loaded region live
    /// then — or, with `time` `None`, of the region live at the end (else the most recently
    /// loaded one). Allocates nothing: the lookup of a sampler's hot loop.
    pub fn region_at(&self, addr: u64, time: Option<u64>) -> Option<usize> {
        let n = self.starts.partition_point(|&s| s <= addr);
        // (load time, record, index) of the best candidate so far, for each rule.
        let mut best: Option<(u64, usize, usize)> = None;
        let mut best_live_at_end: Option<(u64, usize, usize)> = None;
        for k in (0..n).rev() {
            if self.max_end.get(k).is_none_or(|&e| e <= addr) {
                break;
            }
            let Some(&i) = self.by_start.get(k) else {
                continue;
            };
            let Some(r) = self.regions.get(i) else {
                continue;
            };
            if addr >= r.end() {
                continue;
            }
            let key = (r.load_time, r.record, i);
            let eligible = match time {
                Some(t) => r.live_at(t),
                None => true,
            };
            if eligible && best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
                best = Some(key);
            }
            if time.is_none()
                && r.end_time.is_none()
                && best_live_at_end.is_none_or(|b| (key.0, key.1) > (b.0, b.1))
            {
                best_live_at_end = Some(key);
            }
        }
        best_live_at_end.or(best).map(|b| b.2)
    }

    /// The frames at `offset` into region `index`, innermost first (see [`CodeMap::lookup`]).
    pub fn frames_at(&self, index: usize, offset: u64) -> Vec<Frame> {
        self.regions
            .get(index)
            .map_or_else(Vec::new, |r| frames(r, offset))
    }

    /// A key for the frames at `offset` into region `index`: two offsets with the same key
    /// have the same [`CodeMap::frames_at`]. Without inline calls the frames depend only on
    /// the line-table row covering the offset (the row's index, `u64::MAX - 1` before the
    /// first row or without a table), so a caller caching frames by key looks each line up
    /// once instead of once per return address; with inline calls the key is the offset
    /// (below `1 << 63`: offsets of real code are far smaller).
    pub fn location_key(&self, index: usize, offset: u64) -> u64 {
        let Some(region) = self.regions.get(index) else {
            return u64::MAX;
        };
        match &region.debug {
            None => u64::MAX - 1,
            Some(t) if t.inlines.is_empty() => {
                match t.rows.partition_point(|r| r.offset <= offset) {
                    0 => u64::MAX - 1,
                    n => (n - 1) as u64 | 1 << 63,
                }
            }
            Some(_) => offset & !(1 << 63),
        }
    }

    /// Every region that contains `addr` (at any time), most recently loaded first.
    pub fn regions_at(&self, addr: u64) -> Vec<&Region> {
        let n = self.starts.partition_point(|&s| s <= addr);
        let mut out = Vec::new();
        for k in (0..n).rev() {
            if self.max_end.get(k).is_none_or(|&e| e <= addr) {
                break;
            }
            if let Some(r) = self.by_start.get(k).and_then(|&i| self.regions.get(i)) {
                if addr < r.end() {
                    out.push(r);
                }
            }
        }
        out.sort_by(|a, b| b.load_time.cmp(&a.load_time).then(b.record.cmp(&a.record)));
        out
    }

    /// The function at `addr` at `time` (`None` = the end of the dump), with its inline frames
    /// and source location.
    pub fn lookup(&self, addr: u64, time: Option<u64>) -> Option<Symbolized<'_>> {
        let region = self.regions.get(self.region_at(addr, time)?)?;
        let offset = addr - region.start;
        Some(Symbolized {
            region,
            offset,
            frames: frames(region, offset),
        })
    }
}

/// V8 names its JS code `JS:*fib /path/script.js:7:13`; a recovered DEBUG_INFO file name is only
/// the tail of that path (its start was overwritten), so take the full path from the name when
/// it ends with the tail.
fn complete_recovered_files(t: &mut DebugTable, function: &str) {
    if t.source != "DEBUG_INFO (recovered)" {
        return;
    }
    for f in &mut t.files {
        if f.is_empty() {
            continue;
        }
        let full = function.split_whitespace().find_map(|tok| {
            // Strip a trailing `:line:col` / `:line`.
            let mut path = tok;
            for _ in 0..2 {
                if let Some((p, n)) = path.rsplit_once(':') {
                    if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                        path = p;
                    }
                }
            }
            (path.len() > f.len() && path.ends_with(f.as_str())).then(|| path.to_string())
        });
        if let Some(full) = full {
            *f = full;
        }
    }
}

/// A dump at least this large is read on a thread of its own ([`CodeMap::from_jitdump`]).
const PARALLEL_BYTES: usize = 1 << 20;
/// Records the reading thread hands over at once.
const BATCH: usize = 256;
/// Batches waiting at most.
const IN_FLIGHT: usize = 8;

/// Where the reading is, for the dump's owner ([`CodeMap::from_jitdump_releasing`]).
struct Behind<'r> {
    release: Option<&'r (dyn Fn(u64) + Sync)>,
    done: u64,
}

impl<'r> Behind<'r> {
    /// Bytes released at once at least.
    const STEP: u64 = 8 << 20;

    fn new(release: Option<&'r (dyn Fn(u64) + Sync)>) -> Self {
        Behind { release, done: 0 }
    }

    /// `p` is read (what is kept of it is copied): the bytes before it are not needed again.
    fn reached(&mut self, p: &Prepared<'_>) {
        if let (Some(release), Some(h)) = (self.release, &p.header) {
            if h.offset >= self.done.saturating_add(Self::STEP) {
                release(h.offset);
                self.done = h.offset;
            }
        }
    }
}

/// One record as far as it can be decoded without the records before it.
struct Prepared<'a> {
    /// The record's header, when it has one (else the iterator's error).
    header: Option<profkit_jitdump::read::RecordHeader>,
    item: Result<Item<'a>, String>,
}

enum Item<'a> {
    DebugInfo(u64, PendingDebug),
    DebugInfo2(DebugTable),
    Tier(u64, FuncTier),
    Unwind(Arc<Unwind>),
    Load(profkit_jitdump::read::CodeLoad<'a>, String),
    Move(profkit_jitdump::read::CodeMove),
    Close,
    Other,
}

impl<'a> Prepared<'a> {
    fn of(raw: profkit_jitdump::Result<profkit_jitdump::read::RawRecord<'a>>) -> Prepared<'a> {
        let raw = match raw {
            Ok(r) => r,
            Err(e) => {
                return Prepared {
                    header: None,
                    item: Err(e.to_string()),
                }
            }
        };
        let item = raw.parse().map_err(|e| e.to_string()).map(|rec| match rec {
            Record::DebugInfo(d) => Item::DebugInfo(d.code_addr, debug_info_table(&d)),
            Record::DebugInfo2(d) => Item::DebugInfo2(debug_info2_table(&d)),
            Record::JitTier(t) => Item::Tier(
                t.code_addr,
                FuncTier {
                    name: String::from_utf8_lossy(t.name).into_owned(),
                    color: t.color,
                    js: t.flags & 1 != 0,
                },
            ),
            Record::UnwindingInfo(u) => Item::Unwind(Arc::new(Unwind {
                eh_frame: u.eh_frame().to_vec(),
                eh_frame_hdr: u.eh_frame_hdr().to_vec(),
                mapped_size: u.mapped_size,
            })),
            Record::CodeLoad(l) => {
                let name = String::from_utf8_lossy(l.name).into_owned();
                Item::Load(l, name)
            }
            Record::CodeMove(m) => Item::Move(m),
            Record::CodeClose => Item::Close,
            _ => Item::Other,
        });
        Prepared {
            header: Some(raw.header()),
            item,
        }
    }
}

/// A code map being laid out, record by record in the dump's order.
#[derive(Default)]
struct Build {
    map: CodeMap,
    /// DEBUG_INFO tables waiting for the load of their address.
    pending: FxHashMap<u64, PendingDebug>,
    /// A DEBUG_INFO2 table waiting for the next load (it names no address).
    pending2: Option<DebugTable>,
    /// Live regions by start address (live regions never overlap).
    live: BTreeMap<u64, usize>,
    by_index: FxHashMap<u64, usize>,
    bias: BiasDecision,
    raw_debug: Vec<(usize, Vec<u64>)>,
    /// SAMPLY_JIT_TIER waits for the next load of its address, UNWINDING_INFO for the next
    /// load.
    pending_tiers: FxHashMap<u64, FuncTier>,
    pending_unwind: Option<Arc<Unwind>>,
}

impl Build {
    /// Reads `dump` on a second thread while laying its records out here; the dump's
    /// truncation, or `None` (nothing applied) when no thread could start.
    fn apply_read_ahead(
        &mut self,
        dump: &JitDump<'_>,
        release: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Option<Option<profkit_common::Truncation>> {
        std::thread::scope(|scope| {
            let (tx, rx) = handoff::bounded(
                IN_FLIGHT,
                Wake {
                    sender_at: IN_FLIGHT / 2,
                    receiver_at: 1,
                },
            );
            let reader = std::thread::Builder::new()
                .name("jitdump-read".into())
                .spawn_scoped(scope, move || {
                    let mut behind = Behind::new(release);
                    let mut records = dump.records();
                    let mut batch = Vec::with_capacity(BATCH);
                    for raw in records.by_ref() {
                        let p = Prepared::of(raw);
                        behind.reached(&p);
                        batch.push(p);
                        if batch.len() == BATCH
                            && tx
                                .send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                                .is_err()
                        {
                            return None;
                        }
                    }
                    let _ = tx.send(batch);
                    records.truncation().cloned()
                })
                .ok()?;
            while let Some(batch) = rx.recv() {
                for p in batch {
                    self.apply(p);
                }
            }
            Some(reader.join().unwrap_or_else(|_| {
                self.map
                    .problems
                    .push("the jitdump's reading thread failed".into());
                None
            }))
        })
    }

    /// Lays out the next record.
    fn apply(&mut self, p: Prepared<'_>) {
        let Some(h) = p.header else {
            if let Err(e) = p.item {
                self.map.problems.push(e);
            }
            return;
        };
        let map = &mut self.map;
        map.last_time = map.last_time.max(h.timestamp);
        let t = h.timestamp;
        map.time_range = Some(map.time_range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        let item = match p.item {
            Ok(item) => item,
            Err(e) => {
                map.problems.push(e);
                return;
            }
        };
        match item {
            Item::DebugInfo(code_addr, table) => {
                self.pending.insert(code_addr, table);
            }
            Item::DebugInfo2(table) => self.pending2 = Some(table),
            Item::Tier(code_addr, tier) => {
                self.pending_tiers.insert(code_addr, tier);
            }
            Item::Unwind(u) => self.pending_unwind = Some(u),
            Item::Load(l, name) => {
                let idx = map.regions.len();
                end_overlapping(
                    &mut map.regions,
                    &mut self.live,
                    l.code_addr,
                    l.code_size,
                    h.timestamp,
                    "address reused",
                );
                let mut debug = self.pending2.take();
                if let Some(p) = self.pending.remove(&l.code_addr) {
                    // The tables validate checks (walked exactly) decide, as there.
                    if p.table.source == "DEBUG_INFO" {
                        let mut span = TableSpan::default();
                        for (&a, row) in p.addrs.iter().zip(&p.table.rows) {
                            span.push(a, row.line);
                        }
                        self.bias.add(&span.place(l.code_addr, l.code_size));
                    }
                    self.raw_debug.push((idx, p.addrs));
                    if debug.is_none() {
                        debug = Some(p.table);
                    }
                }
                if let Some(t) = debug.as_mut() {
                    complete_recovered_files(t, &name);
                }
                map.regions.push(Region {
                    start: l.code_addr,
                    size: l.code_size,
                    name,
                    load_time: h.timestamp,
                    end_time: None,
                    code_index: l.code_index,
                    tid: l.tid,
                    record: h.index,
                    debug,
                    end_reason: None,
                    tier: self.pending_tiers.remove(&l.code_addr),
                    unwind: self.pending_unwind.take(),
                });
                self.live.insert(l.code_addr, idx);
                self.by_index.insert(l.code_index, idx);
            }
            Item::Move(m) => {
                let Some(&old) = self.by_index.get(&m.code_index) else {
                    return;
                };
                let Some(prev) = map.regions.get(old).cloned() else {
                    return;
                };
                if let Some(r) = map.regions.get_mut(old) {
                    if r.end_time.is_none() {
                        r.end_time = Some(h.timestamp);
                        r.end_reason = Some("moved");
                    }
                }
                self.live.remove(&prev.start);
                end_overlapping(
                    &mut map.regions,
                    &mut self.live,
                    m.new_code_addr,
                    m.code_size,
                    h.timestamp,
                    "address reused",
                );
                let idx = map.regions.len();
                map.regions.push(Region {
                    start: m.new_code_addr,
                    size: m.code_size,
                    load_time: h.timestamp,
                    end_time: None,
                    record: h.index,
                    end_reason: None,
                    ..prev
                });
                self.live.insert(m.new_code_addr, idx);
                self.by_index.insert(m.code_index, idx);
            }
            Item::Close => {
                for (_, i) in std::mem::take(&mut self.live) {
                    if let Some(r) = map.regions.get_mut(i) {
                        r.end_time = Some(h.timestamp);
                        r.end_reason = Some("close");
                    }
                }
            }
            Item::Other => {}
        }
    }

    /// The map, once every record is laid out: DEBUG_INFO rows as offsets with the dump's
    /// bias removed, and the index.
    fn finish(self, truncation: Option<profkit_common::Truncation>) -> CodeMap {
        let mut map = self.map;
        map.truncation = truncation;
        map.debug_bias = self.bias.bias();
        for (idx, addrs) in self.raw_debug {
            let Some(r) = map.regions.get_mut(idx) else {
                continue;
            };
            let (start, size) = (r.start, r.size);
            if let Some(t) = r.debug.as_mut().filter(|t| t.source != "DEBUG_INFO2") {
                for (row, a) in t.rows.iter_mut().zip(addrs) {
                    row.offset = a.wrapping_sub(start).wrapping_sub(map.debug_bias);
                }
                // Only rows inside the code: not a terminator at its end, not an entry
                // before it (wrapped to a huge offset).
                t.rows.retain(|r| r.offset < size.max(1));
                t.rows.sort_by_key(|r| r.offset);
            }
        }
        map.index();
        map
    }
}

/// Ends every live region overlapping `[start, start+size)` at `time`.
fn end_overlapping(
    regions: &mut [Region],
    live: &mut BTreeMap<u64, usize>,
    start: u64,
    size: u64,
    time: u64,
    why: &'static str,
) {
    let end = start.saturating_add(size.max(1));
    // Live regions never overlap: those starting in [start, end), then at most one starting
    // before `start` that reaches past it. One descent of the tree, from `end` down.
    let mut hit = Vec::new();
    for (&s, &i) in live.range(..end).rev() {
        if s >= start {
            hit.push(s);
            continue;
        }
        if regions.get(i).is_some_and(|r| r.end() > start) {
            hit.push(s);
        }
        break;
    }
    for s in hit {
        if let Some(i) = live.remove(&s) {
            if let Some(r) = regions.get_mut(i) {
                r.end_time = Some(time);
                r.end_reason = Some(why);
            }
        }
    }
}

/// A DEBUG_INFO table's file names, interned by their bytes (consecutive entries nearly always
/// share one).
#[derive(Default)]
struct FileNames<'a> {
    files: Vec<String>,
    ids: FxHashMap<&'a [u8], u32>,
    last: Option<(&'a [u8], u32)>,
}

impl<'a> FileNames<'a> {
    fn id(&mut self, file: &'a [u8], recovered: bool) -> u32 {
        if let Some((bytes, id)) = self.last {
            if bytes == file {
                return id;
            }
        }
        let files = &mut self.files;
        let id = *self.ids.entry(file).or_insert_with(|| {
            files.push(if recovered {
                profkit_jitdump::validate::recovered_name_tail(file)
            } else {
                String::from_utf8_lossy(file).into_owned()
            });
            (files.len() - 1) as u32
        });
        self.last = Some((file, id));
        id
    }
}

/// The rows of a DEBUG_INFO record being read.
#[derive(Default)]
struct DebugRows<'a> {
    names: FileNames<'a>,
    rows: Vec<LineRow>,
    addrs: Vec<u64>,
}

impl<'a> DebugRows<'a> {
    fn push(&mut self, e: profkit_jitdump::read::DebugEntry<'a>, recovered: bool) {
        self.addrs.push(e.addr);
        self.rows.push(LineRow {
            offset: 0,
            file: self.names.id(e.file, recovered),
            line: e.line,
            column: e.discrim,
        });
    }
}

fn debug_info_table<'a>(d: &DebugInfo<'a>) -> PendingDebug {
    // As many rows as the record's bytes can hold entries, at most.
    let fit = d.entries_data.len() / profkit_jitdump::read::DebugEntry::MIN_SIZE;
    let n = usize::try_from(d.nr_entry).unwrap_or(usize::MAX).min(fit);
    let mut t = DebugRows {
        rows: Vec::with_capacity(n),
        addrs: Vec::with_capacity(n),
        ..DebugRows::default()
    };
    // One walk: nearly every record is well formed.
    let mut walk = d.entries();
    for e in walk.by_ref() {
        t.push(e, false);
    }
    let source = if walk.ended_exactly() {
        "DEBUG_INFO"
    } else if let Some(stride) = d.fixed_stride() {
        t = DebugRows::default();
        for i in 0..usize::try_from(d.nr_entry).unwrap_or(0) {
            if let Some(e) = d.entry_at_stride(stride, i) {
                t.push(e, true);
            }
        }
        "DEBUG_INFO (recovered)"
    } else {
        "DEBUG_INFO (partial)"
    };
    PendingDebug {
        table: DebugTable {
            files: t.names.files,
            rows: t.rows,
            inlines: Vec::new(),
            outer_file: None,
            source,
        },
        addrs: t.addrs,
    }
}

fn debug_info2_table(d: &DebugInfo2<'_>) -> DebugTable {
    let files: Vec<String> = d
        .files()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let names: Vec<String> = d
        .function_names()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let functions: Vec<_> = d.functions().collect();
    let func_name = |i: u32| {
        functions
            .get(i as usize)
            .and_then(|f| names.get(f.function_name_index as usize))
            .cloned()
            .unwrap_or_else(|| format!("<function {i}>"))
    };
    let func_file = |i: u32| {
        functions
            .get(i as usize)
            .and_then(|f| files.get(f.file_index as usize))
            .cloned()
    };
    let mut ranges = d.ranges();
    let inlines = d
        .inline_calls()
        .map(|c| InlineCall {
            depth: c.depth,
            function: func_name(c.function_index),
            function_file: func_file(c.function_index),
            call_line: c.call_line_number,
            call_column: c.call_column_number,
            ranges: ranges
                .by_ref()
                .take(c.range_count as usize)
                .map(|r| (u64::from(r.start_offset), u64::from(r.size)))
                .collect(),
        })
        .collect();
    let mut rows: Vec<LineRow> = d
        .lines()
        .map(|l| LineRow {
            offset: u64::from(l.code_offset),
            file: l.file_index,
            line: l.line_number,
            column: l.column_number,
        })
        .collect();
    rows.sort_by_key(|r| r.offset);
    let outer_file = func_file(0);
    DebugTable {
        files,
        rows,
        inlines,
        outer_file,
        source: "DEBUG_INFO2",
    }
}

/// The frames at `offset` of `region`, innermost first.
fn frames(region: &Region, offset: u64) -> Vec<Frame> {
    let outer = |file: Option<String>, line: u32, column: u32, inlined: bool| Frame {
        function: region.name.clone(),
        file,
        line,
        column,
        inlined,
    };
    let Some(t) = &region.debug else {
        return vec![outer(None, 0, 0, false)];
    };
    let row = t
        .rows
        .get(..t.rows.partition_point(|r| r.offset <= offset))
        .and_then(|r| r.last());
    let (file, line, column) = match row {
        Some(r) => (t.files.get(r.file as usize).cloned(), r.line, r.column),
        None => (None, 0, 0),
    };
    // The chain of inline calls covering the offset.
    let mut chain: Vec<&InlineCall> = Vec::new();
    for c in &t.inlines {
        let d = c.depth as usize;
        if !chain.is_empty() && d < chain.len() {
            break;
        }
        if d == chain.len() && c.ranges.iter().any(|&(s, n)| s <= offset && offset < s + n) {
            chain.push(c);
        }
    }
    let mut out = Vec::with_capacity(chain.len() + 1);
    let (mut file, mut line, mut column) = (file, line, column);
    for (j, c) in chain.iter().enumerate().rev() {
        out.push(Frame {
            function: c.function.clone(),
            file: file.take(),
            line,
            column,
            inlined: true,
        });
        // The caller's location is the call site, in the caller's file.
        file = match j.checked_sub(1) {
            None => t.outer_file.clone(),
            Some(p) => chain.get(p).and_then(|c| c.function_file.clone()),
        };
        line = c.call_line;
        column = c.call_column;
    }
    out.push(outer(file, line, column, false));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a code map says, all of it (its index follows from the regions).
    fn said(map: &CodeMap) -> String {
        format!(
            "{:?}\n{:?}\n{:?}\n{:#x}\n{:?}\n{}",
            map.regions(),
            map.problems,
            map.truncation,
            map.debug_bias,
            map.time_range(),
            map.last_time()
        )
    }

    /// A dump read for a mapped file tells it what it has read, in order, in steps of at least
    /// 8 MiB, never past the dump's end, on one thread or two; the map is the same.
    #[test]
    fn what_is_read_is_released_in_steps() {
        use profkit_jitdump::write::{CodeLoadData, HeaderOptions, JitDumpWriter};
        let mut w = JitDumpWriter::new(Vec::new(), &HeaderOptions::default()).unwrap();
        let code = vec![0xc3u8; 4096];
        for i in 0..5_000u64 {
            let name = format!("f{i}");
            let mut load = CodeLoadData::new(i, 0x1000_0000 + i * 0x2000, &code, &name);
            load.timestamp = 1_000 + i;
            w.write_code_load(&load).unwrap();
        }
        let data = w.into_inner();
        assert!(data.len() > 16 << 20);
        let dump = JitDump::parse(&data).unwrap();
        for in_parallel in [false, true] {
            let released = std::sync::Mutex::new(Vec::new());
            let map = CodeMap::build(
                &dump,
                in_parallel,
                Some(&|upto| released.lock().unwrap().push(upto)),
            );
            assert_eq!(said(&map), said(&CodeMap::build(&dump, false, None)));
            let released = released.into_inner().unwrap();
            assert!(released.len() >= 2, "{released:?}");
            let mut last = 0;
            for &upto in &released {
                assert!(
                    upto >= last + (8 << 20) && upto <= data.len() as u64,
                    "{released:?}"
                );
                last = upto;
            }
        }
    }

    /// Read on a second thread or here, a dump gives the same map: a real V8 dump (address
    /// reuse, corrupt DEBUG_INFO recovered, unwinding info), the same cut in the middle of a
    /// record, and the hand-made dump of every record type (moves, close, DEBUG_INFO2, tiers).
    #[test]
    fn reading_on_a_second_thread_gives_the_same_map() {
        let node = profkit_testkit::read_fixture_gunzipped("jitdump/node-perf-prof.dump.gz");
        let handmade = profkit_testkit::read_fixture("jitdump/handmade/all-records-le.dump");
        let cut = node.get(..node.len() / 2 + 7).unwrap();
        for (name, data) in [
            ("node", &node[..]),
            ("cut", cut),
            ("handmade", &handmade[..]),
        ] {
            let dump = JitDump::parse(data).unwrap();
            let here = CodeMap::build(&dump, false, None);
            let ahead = CodeMap::build(&dump, true, None);
            assert!(!here.regions().is_empty(), "{name}");
            assert_eq!(said(&here), said(&ahead), "{name}");
        }
    }
}
