//! pprof output: a gzip-compressed `perftools.profiles.Profile` protobuf (`.pb.gz`; a path
//! ending in `.pb` gets the raw protobuf), encoded with [`crate::protobuf`].
//!
//! Stacks are aggregated in a trie (one root per thread) while the events stream in, so the
//! memory is the number of distinct stacks, not the number of calls. At the end the profile is
//! written with these sample types, in this order, each present only when the trace has the
//! data:
//! * `calls/count` and `time/nanoseconds` for traced calls: each completed call adds 1 and
//!   its **exclusive** (self) time — its duration minus its callees' durations — to the stack
//!   that ends with it, so pprof's *flat* column is self time and *cum* is inclusive time
//!   (recursion counted once per stack, as pprof does);
//! * for sampled stacks, their weights: what the input says they measure (perf.data:
//!   `cpu/nanoseconds` for cpu-clock and task-clock, else the event's name and `count`, with
//!   its period), else `samples/count` (Mono sample hits).
//!
//! Call-path totals (XRay profiling mode) count as traced calls: a path adds its calls and its
//! exclusive time to its stack. When the trace's clock is unknown (a profiling-mode file
//! without `--tsc-hz`) the time type is `time/ticks`.
//!
//! `default_sample_type` is `time` (or `calls` with [`Options::counts`]) when calls were
//! traced, else `samples`. Each sample has a `thread` (name) string label and `pid` / `tid`
//! numeric labels, so `pprof -tagfocus` selects threads. There is one function per function of
//! the trace (name, file and start line from the [`FunctionTable`]) and one location per
//! function and sampled line (a sample's per-frame line, else the function's start line; the
//! entry address when known), so `pprof -lines` shows source lines. The
//! string table starts with `""` as the format requires. `duration_nanos` is the last event
//! time; `time_nanos` stays 0 (the trace clock is not wall time).

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use profkit_model::events::{CallPath, Enter, EventSink, Sample, ThreadInfo, TraceInfo};
use profkit_model::span::Span;
use profkit_model::{FuncId, FuncInfo, FunctionTable};

use crate::call_tree::CallTree;
use crate::protobuf::Message;
use crate::{Dest, Options, Output};

/// A writer into `output`.
pub fn sink(output: &Output, options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    let gzip = match output.dest() {
        Dest::Stdout => true,
        Dest::Path(p) => !p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.to_ascii_lowercase().ends_with(".pb")),
    };
    let w = output.create()?;
    Ok(Box::new(PprofSink::new(w, gzip, options.counts)))
}

/// Stack frames (call-tree nodes) a profile may hold: the profile is built in memory before it
/// is written, ~250 bytes a frame, so an input naming millions of distinct functions (an XRay
/// profiling-mode file of 50 MB names up to 12.5M in one path) would need several GB; 4M
/// frames stay under ~1 GB (issue #23, B5: `ulimit -v 2000000` must not trip on an input under
/// 50 MB).
pub const MAX_NODES: usize = 4_000_000;

/// Aggregates stacks and writes a pprof profile at [`EventSink::finish`].
pub struct PprofSink<W: Write> {
    out: Option<W>,
    gzip: bool,
    counts: bool,
    functions: FunctionTable,
    /// The stacks, with each one's calls, self time and summed sample weights.
    tree: CallTree<u64>,
    /// The unit of `time` values: `nanoseconds`, or `ticks` when the trace's clock is unknown.
    time_unit: &'static str,
    /// What a sample's weight measures (type, unit, period), when the input says
    /// ([`TraceInfo::samples`]); else samples count `samples/count`.
    sample_weight: Option<(String, &'static str, u64)>,
}

impl<W: Write> PprofSink<W> {
    /// A writer into `out`, gzip-compressed when `gzip`; `counts` makes `calls` the default
    /// sample type.
    pub fn new(out: W, gzip: bool, counts: bool) -> Self {
        PprofSink {
            out: Some(out),
            gzip,
            counts,
            functions: FunctionTable::new(),
            tree: CallTree::new(MAX_NODES, "pprof"),
            time_unit: "nanoseconds",
            sample_weight: None,
        }
    }

    /// Writes the profile to `out`: its top-level fields are independent, so the encoded bytes
    /// go out every 1 MiB instead of making one buffer of the whole profile.
    fn encode(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut strings = Strings::default();
        let mut p = Message::with_capacity(1 << 16);
        let spill = |p: &mut Message, out: &mut dyn Write| -> io::Result<()> {
            if p.len() >= 1 << 20 {
                out.write_all(p.as_bytes())?;
                p.clear();
            }
            Ok(())
        };

        // Sample types.
        let mut types: Vec<(&str, &str)> = Vec::new();
        if self.tree.traced {
            types.push(("calls", "count"));
            types.push(("time", self.time_unit));
        }
        let (sample_type, sample_unit, sample_period) = match &self.sample_weight {
            Some((t, u, p)) => (t.as_str(), *u, *p),
            None => ("samples", "count", 0),
        };
        if self.tree.sampled || !self.tree.traced {
            types.push((sample_type, sample_unit));
        }
        let type_ids: Vec<(u64, u64)> = types
            .iter()
            .map(|(t, u)| (strings.id(t), strings.id(u)))
            .collect();
        for (t, u) in &type_ids {
            p.message(1, |m| {
                m.uint64(1, *t);
                m.uint64(2, *u);
            });
        }

        // Locations (one per function and line used) and functions, in first-use order.
        let mut loc_of: FxHashMap<(FuncId, u32), u64> = FxHashMap::default();
        let mut locations: Vec<(FuncId, u32)> = Vec::new();
        let mut func_of: FxHashMap<FuncId, u64> = FxHashMap::default();
        let mut funcs: Vec<FuncId> = Vec::new();
        for n in &self.tree.nodes {
            if let Some(f) = n.func {
                loc_of.entry((f, n.line)).or_insert_with(|| {
                    locations.push((f, n.line));
                    locations.len() as u64
                });
                func_of.entry(f).or_insert_with(|| {
                    funcs.push(f);
                    funcs.len() as u64
                });
            }
        }

        // Samples: every node with a value, leaf first.
        let k_thread = strings.id("thread");
        let k_pid = strings.id("pid");
        let k_tid = strings.id("tid");
        let mut locs: Vec<u64> = Vec::with_capacity(64);
        for (i, n) in self.tree.nodes.iter().enumerate() {
            if n.func.is_none() || n.is_empty() {
                continue;
            }
            locs.clear();
            let mut cur = i as u32;
            while let Some(node) = self.tree.nodes.get(cur as usize) {
                match node.func {
                    Some(f) => locs.push(loc_of.get(&(f, node.line)).copied().unwrap_or(0)),
                    None => break,
                }
                cur = node.parent;
            }
            let mut values: Vec<u64> = Vec::with_capacity(3);
            if self.tree.traced {
                values.push(n.calls);
                values.push(n.time);
            }
            if self.tree.sampled || !self.tree.traced {
                values.push(n.samples);
            }
            let meta = self.tree.meta.get(&n.thread);
            let tname = meta.map_or_else(|| format!("thread {}", n.thread), |m| m.name.clone());
            let tname_id = strings.id(&tname);
            p.message(2, |m| {
                m.packed_uint64(1, locs.iter().copied());
                m.packed_uint64(2, values.iter().copied());
                m.message(3, |l| {
                    l.uint64(1, k_thread);
                    l.uint64(2, tname_id);
                });
                if let Some(meta) = meta {
                    m.message(3, |l| {
                        l.uint64(1, k_pid);
                        l.uint64(3, u64::from(meta.pid));
                    });
                    m.message(3, |l| {
                        l.uint64(1, k_tid);
                        l.uint64(3, meta.tid);
                    });
                }
            });
            spill(&mut p, out)?;
        }

        for (i, &(f, sample_line)) in locations.iter().enumerate() {
            let id = i as u64 + 1;
            let info = self.functions.get(f);
            let line = match sample_line {
                0 => info.map_or(0, |f| f.line),
                l => l,
            };
            let address = info.and_then(|f| f.address).unwrap_or(0);
            let function = func_of.get(&f).copied().unwrap_or(0);
            p.message(4, |m| {
                m.uint64(1, id);
                if address != 0 {
                    m.uint64(3, address);
                }
                m.message(4, |l| {
                    l.uint64(1, function);
                    if line != 0 {
                        l.int64(2, i64::from(line));
                    }
                });
            });
            spill(&mut p, out)?;
        }
        for (i, f) in funcs.iter().enumerate() {
            let id = i as u64 + 1;
            let info = self.functions.get(*f);
            let name = strings.func_name(&self.functions, *f);
            let file = info
                .and_then(|f| f.file.as_deref())
                .map_or(0, |s| strings.id(s));
            let line = info.map_or(0, |f| f.line);
            p.message(5, |m| {
                m.uint64(1, id);
                m.uint64(2, name);
                m.uint64(3, name);
                if file != 0 {
                    m.uint64(4, file);
                }
                if line != 0 {
                    m.int64(5, i64::from(line));
                }
            });
            spill(&mut p, out)?;
        }

        let default_type = if self.tree.traced {
            if self.counts {
                "calls"
            } else {
                "time"
            }
        } else {
            sample_type
        };
        let default_id = strings.id(default_type);
        let period_type = type_ids.iter().find(|(t, _)| *t == default_id).copied();
        // Fields 6 (strings) and the scalars may come in any order.
        p.uint64(10, self.tree.last_time);
        if let Some((t, u)) = period_type {
            p.message(11, |m| {
                m.uint64(1, t);
                m.uint64(2, u);
            });
            let period = if self.tree.traced || sample_period == 0 {
                1
            } else {
                sample_period
            };
            p.uint64(12, period);
        }
        p.uint64(14, default_id);
        let mut id = [0u8; 11];
        for s in &strings.list {
            match s {
                Str::Text(s) => p.string(6, s),
                Str::Id(f) => p.bytes(6, profkit_model::func::unnamed(&mut id, *f).as_bytes()),
            }
            spill(&mut p, out)?;
        }
        out.write_all(p.as_bytes())
    }
}

/// The profile's string table: index 0 is `""`.
#[derive(Debug)]
struct Strings {
    list: Vec<Str>,
    ids: HashMap<String, u64>,
}

/// A string of the table: text, or the name `#ID` of a function the function table does not
/// name, written when the table is (an input can name 12.5M functions: issue #23 B5).
#[derive(Debug)]
enum Str {
    Text(Box<str>),
    Id(u32),
}

impl Default for Strings {
    fn default() -> Self {
        let mut ids = HashMap::new();
        ids.insert(String::new(), 0);
        Strings {
            list: vec![Str::Text("".into())],
            ids,
        }
    }
}

impl Strings {
    fn id(&mut self, s: &str) -> u64 {
        if let Some(id) = self.ids.get(s) {
            return *id;
        }
        let id = self.list.len() as u64;
        self.list.push(Str::Text(s.into()));
        self.ids.insert(s.to_string(), id);
        id
    }

    /// The name of `f` (as [`FunctionTable::name`] gives it). `#ID` is not looked up again
    /// (each function has its own; only the thread names, files and sample types before it
    /// could be the same text, and those are looked up).
    fn func_name(&mut self, names: &FunctionTable, f: FuncId) -> u64 {
        if let Some(name) = names.get(f).and_then(|i| i.name.as_deref()) {
            return self.id(name);
        }
        let mut buf = [0u8; 11];
        let text = profkit_model::func::unnamed(&mut buf, f.0).as_bytes();
        if let Some(id) = std::str::from_utf8(text).ok().and_then(|t| self.ids.get(t)) {
            return *id;
        }
        let id = self.list.len() as u64;
        self.list.push(Str::Id(f.0));
        id
    }
}

impl<W: Write + Send> EventSink for PprofSink<W> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.functions = trace.functions.clone();
        if trace.clock.ticks_per_second == 0 {
            self.time_unit = "ticks";
        }
        self.sample_weight = trace
            .samples
            .map(|w| (w.kind.to_string(), w.unit, w.period));
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions.insert(id, info.clone());
        Ok(())
    }

    crate::call_tree::tree_events!();

    fn finish(&mut self) -> io::Result<()> {
        let Some(mut out) = self.out.take() else {
            return Ok(());
        };
        if self.gzip {
            let mut gz = GzEncoder::new(&mut out, Compression::default());
            self.encode(&mut gz)?;
            gz.finish()?;
        } else {
            self.encode(&mut out)?;
        }
        out.flush()
    }
}
