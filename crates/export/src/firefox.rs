//! Firefox Profiler output: the *processed profile* format (`.json.gz`, or plain JSON when the
//! name ends in `.json` or the output is standard output), built with
//! `fxprof-processed-profile` 0.8.1 — none of its types appear in this API.
//!
//! What the profile holds:
//! * **one process per pid and one thread per thread** of the trace (a pid no `process` event
//!   named becomes `pid N`), with its markers; a second thread `<thread> (samples)` (or
//!   `<thread> (calls)`, when the samples came first) only for a thread with both traced calls
//!   and sampled stacks. The thread whose tid equals the pid is
//!   the process's main thread, which the Firefox Profiler labels with the process's name. The
//!   thread with the most traced or sampled time is the one selected when the profile opens
//!   (`meta.initialSelectedThreads`);
//! * **traced calls as weighted samples**: at every enter and exit, the stack that was running
//!   since the previous enter/exit of the thread becomes one sample weighted by that time. The
//!   thread's `weightType` is `tracing-ms` and the weights are milliseconds with their
//!   fractions (`firefox/lines.rs` writes fxprof's integer nanoseconds as such), so the call
//!   tree's *Running Time (ms)* is traced inclusive time and its *self* time exclusive time,
//!   exactly. The profile's interval is the trace's resolution: its clock's tick, at least
//!   1 ns;
//! * **call-path totals** (XRay profiling mode) as weighted samples on the traced thread: each
//!   path whose exclusive time is not 0 is one stack weighted by that time in nanoseconds, the
//!   paths laid end to end from time 0. The call tree (running and self time per path) and
//!   the flame graph are exact; the file has no times, so the timeline shows no order;
//! * **sampled stacks** (Mono sample hits, perf.data samples) counted: `weightType` `samples`,
//!   a sample's weight its hits (a Mono sample's weight; a perf.data sample is one hit — its
//!   period is in the event's unit, cycles or ns), so the call tree says *N samples* as `perf
//!   report -n` does. The profile's interval, and each sample's CPU time (`threadCPUDelta`),
//!   is the recording's sampling period: the median gap between the samples of the thread
//!   sampled most (1 ms when it cannot be estimated);
//! * **source lines of sampled stacks**: a frame per function *and line* (`frameTable.line`,
//!   null for line 0), and per function its file and start line (`funcTable.fileName`,
//!   `funcTable.lineNumber`), so the Firefox Profiler's source view shows the lines. The
//!   file is the path exactly as the input recorded it (jitdump DEBUG_INFO, V8's script name,
//!   the DWARF line table; a placeholder such as `<unknown>` is no file): the string the app
//!   sends to a source server (`/source/v1`, `profkit view`) for the text. Each
//!   sampled function belongs to a **synthetic library named after its module** (the
//!   binary, the jitdump, `[kernel.kallsyms]`; functions without a module share one named
//!   after their kind, e.g. `(managed)`), which the call tree shows as the function's
//!   library; functions of the same name in two modules are two functions;
//! * **instants as markers**: the instant's name, one marker type per category and argument
//!   layout, the arguments as marker fields (numbers as numbers, bytes as UTF-8 or hex text);
//! * **counters** as counter tracks of their process — but of Mono's ~240 performance
//!   counters only a handful (`firefox/counters.rs`: GC heap, working set, allocations, JIT
//!   compiled methods, GC collections); the others are `counter` markers (name: the counter's,
//!   field `value`) on their process's busiest thread, in the marker chart and table, so the
//!   threads are not buried under 240 tracks;
//! * **JIT code** (code events) as a library per process named `JIT` (several when the code
//!   spans more than 2 GiB) with a symbol table of every code region (name, relative address,
//!   size) and a mapping over the code's address range, so addresses in that range resolve to
//!   function names; each load or move is a `JIT code` marker whose stack is the code address
//!   (resolved through that library). The symbol table has no time: when an address was
//!   reused, one of its names wins;
//! * **categories** from function names and the input format: *JavaScript* (V8 `JS:` and the
//!   older `LazyCompile:`/`Function:`/`Script:`/`Eval:` prefixes, with the tier marker as
//!   subcategory: `*` optimized, `^` baseline (Sparkplug), `+` Maglev, `~` interpreted),
//!   *Builtin* (`Builtin:`, `BytecodeHandler:`, `Stub:`, `Handler:`, `RegExp:`), *Python*
//!   (`py::`), *Wasm* (`wasm`…), *Managed* (.NET/Mono names, mlpd input), *Native* (XRay
//!   input, ELF symbols), *Kernel*, *JIT* (other JIT code), else *Other*; JIT code whose
//!   jitdump has a SAMPLY_JIT_TIER record gets a category named after its tier, in the tier's
//!   colour (its `JIT code` markers and their stacks, and sampled frames of that code).
//!
//! The profile is built in memory (the format is one JSON document) and written at
//! [`EventSink::finish`]; memory grows with the number of distinct stacks and samples.
//!
//! How the source lines get there, with fxprof 0.8.1 used as it is (it keys a label frame by
//! its name alone and writes the line and file columns as nulls):
//! 1. Every sampled (function, line) gets a relative address of its own in a **synthetic
//!    library** of its function's module (`firefox/synthetic.rs`), from one counter starting
//!    at `0x8000_0000` — the `JIT` libraries stay below it — when it is first sampled.
//!    Frames are fxprof's relative-address frames, with the category and flags a label frame
//!    had, interned as the samples stream (`firefox/sampled.rs`: the previous sample's stack
//!    is kept, so a sample costs what it did with label frames). fxprof makes one frame per
//!    (function, line).
//! 2. The libraries have **no symbol table**. A design with one (each function a symbol
//!    over a contiguous range of its lines) needs every line of a function before any of its
//!    frames is interned, because fxprof names a frame from the table when it interns it:
//!    all stacks were then interned after the input was read, which made the conversion of
//!    a 35,000-sample perf.data 9–13% slower in wall time (the interning no longer overlapped
//!    the decoding). Republishing growing tables instead kept about 40% of the stacks
//!    waiting and cost 10% more CPU. So fxprof makes a func per address, named after it.
//! 3. A serde_json formatter (`firefox/lines.rs`) completes the profile while fxprof's
//!    serialization streams out, from a table of what each synthetic address stands for: it
//!    points every frame of a function at one func (the first of the function's in the
//!    thread; the others are left unreferenced, as the Firefox Profiler's own symbolication
//!    leaves funcs), gives that func the function's name, file (`funcTable.fileName`) and
//!    start line (`funcTable.lineNumber`), and writes each frame's line (`frameTable.line`).
//!    The call tree then has one entry per function, with its module as its library;
//!    functions of the same name in two modules are two functions. The profile says it is
//!    symbolicated (`meta.symbolicated`), so the Firefox Profiler does not symbolicate it on
//!    load; a re-symbolication asked for in its menu finds no symbols for these libraries
//!    (nil debug id) and leaves their frames.
//! 4. The gzip-compressed profile is compressed on a thread of its own while serialized
//!    (`firefox/gzip.rs`).
//! 5. The `samples` table of each sampled thread is written by profkit, not by fxprof's
//!    serializer (`firefox/sample_table.rs`: a fourth of the time serializing took): fxprof
//!    holds a stand-in sample that says which table goes in its place.
//!
//! Traced calls (enter/exit, call paths) and `JIT code` marker stacks keep label and `JIT`
//! library frames, whose line and file stay null.

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use fx::{
    CategoryHandle, CategoryPairHandle, CounterHandle, CpuDelta, Frame, FrameFlags, FrameHandle,
    FrameInfo, LibraryInfo, MarkerFieldFlags, MarkerFieldFormat, MarkerLocations, MarkerTiming,
    MarkerTypeHandle, ProcessHandle, Profile, ReferenceTimestamp, RuntimeSchemaMarkerField,
    RuntimeSchemaMarkerSchema, SamplingInterval, StackHandle, StringHandle, Symbol, SymbolTable,
    ThreadHandle, Timestamp, WeightType,
};
use fxprof_processed_profile as fx;
use profkit_model::events::{
    ArgValue, CallPath, CodeEvent, CodeRegion, Counter, Enter, EventSink, Instant, ProcessInfo,
    Sample, ThreadInfo, TraceInfo,
};
use profkit_model::span::Span;
use profkit_model::{Clock, FuncId, FuncInfo, FunctionTable};

use crate::{Dest, Options, Output};

mod categories;
mod code;
mod counters;
mod gzip;
mod lines;
mod sample_table;
mod sampled;
mod synthetic;

pub use categories::{classify, CodeKind, JsTier};
use categories::{classify_func, tier_color, tier_flags, Categories};
use counters::counter_is_track;
use sample_table::SampleTables;

use sampled::SampledStacks;
use synthetic::{SampledFunc, Synthetic};

/// A writer into `output`.
pub fn sink(output: &Output, options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    let gzip = match output.dest() {
        Dest::Stdout => false,
        Dest::Path(p) => !p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.to_ascii_lowercase().ends_with(".json")),
    };
    let w = output.create()?;
    Ok(Box::new(FirefoxSink::new(w, gzip, options.title.clone())))
}

/// Default sampling period of sampled stacks when it cannot be estimated: 1 ms.
const DEFAULT_PERIOD_NS: u64 = 1_000_000;

/// A marker field value.
#[derive(Clone, Copy, Debug)]
enum FieldValue {
    Str(StringHandle),
    Num(f64),
}

/// A marker with fields laid out by its runtime schema.
#[derive(Clone, Debug)]
struct FxMarker {
    ty: MarkerTypeHandle,
    name: StringHandle,
    category: CategoryHandle,
    empty: StringHandle,
    fields: Vec<FieldValue>,
}

impl fx::Marker for FxMarker {
    fn marker_type(&self, _profile: &mut Profile) -> MarkerTypeHandle {
        self.ty
    }
    fn name(&self, _profile: &mut Profile) -> StringHandle {
        self.name
    }
    fn category(&self, _profile: &mut Profile) -> CategoryHandle {
        self.category
    }
    fn string_field_value(&self, field_index: u32) -> StringHandle {
        match self.fields.get(field_index as usize) {
            Some(FieldValue::Str(s)) => *s,
            _ => self.empty,
        }
    }
    fn number_field_value(&self, field_index: u32) -> f64 {
        match self.fields.get(field_index as usize) {
            Some(FieldValue::Num(n)) => *n,
            _ => 0.0,
        }
    }
}

/// A buffered code event (libraries are built at the end, when every region is known).
#[derive(Clone, Debug)]
struct CodeRec {
    pid: u32,
    thread: Option<u32>,
    time: u64,
    address: u64,
    size: u64,
    name: String,
    moved: bool,
    /// JIT tier (name, colour index, runs JS).
    tier: Option<(String, u32, bool)>,
}

/// What a trace thread's first Firefox thread carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Markers only (so far).
    Markers,
    /// Traced calls (and markers).
    Calls,
    /// Sampled stacks (and markers).
    Samples,
}

#[derive(Debug)]
struct ThreadState {
    pid: u32,
    tid: u64,
    name: String,
    /// The thread's first Firefox thread (its markers go there) and what it carries: a trace
    /// thread is one Firefox thread, and a second only when it has both calls and samples.
    primary: Option<(ThreadHandle, Role)>,
    traced: Option<ThreadHandle>,
    sampled: Option<ThreadHandle>,
    /// Traced time (ns) of the traced thread, to pick the busiest thread.
    traced_ns: u64,
    /// Sampled time (ns: hits x period) of the sampled thread.
    sampled_ns: u64,
    stack: Vec<StackHandle>,
    last: u64,
    /// Frames of the traced thread.
    frames: HashMap<FuncId, FrameHandle>,
    /// Sampled stacks, kept until the end, when the sampling period is estimated and the
    /// synthetic libraries are built.
    sampled_stacks: SampledStacks,
}

/// Builds a Firefox Profiler profile in memory and writes it at [`EventSink::finish`].
pub struct FirefoxSink<W: Write> {
    out: Option<W>,
    gzip: bool,
    title: Option<String>,
    format: &'static str,
    profile: Option<Profile>,
    cats: Option<Categories>,
    functions: FunctionTable,
    func_info: HashMap<FuncId, (StringHandle, CategoryPairHandle, FrameFlags)>,
    processes: HashMap<u32, (ProcessHandle, bool)>,
    threads: HashMap<u32, ThreadState>,
    code_threads: HashMap<u32, ThreadHandle>,
    marker_types: HashMap<(String, Vec<(String, bool)>), MarkerTypeHandle>,
    counters: HashMap<(u32, String), (CounterHandle, f64)>,
    code: Vec<CodeRec>,
    /// A category per JIT tier name.
    tiers: HashMap<String, CategoryHandle>,
    /// The sampled functions' synthetic libraries.
    synthetic: Synthetic,
    /// The trace's clock (its tick is a trace's resolution).
    clock: Clock,
    /// Counters that are not tracks ([`counter_is_track`]): their samples, written as markers
    /// at the end (pid, index into `other_counter_names`, time, value).
    other_counters: Vec<(u32, u32, u64, f64)>,
    other_counter_names: Vec<String>,
    other_counter_ids: HashMap<String, u32>,
    /// Frames of traced threads made so far (at most [`MAX_TRACED_FRAMES`]).
    traced_frames: usize,
    /// The sampled threads' samples, written without fxprof.
    sample_tables: SampleTables,
    /// Every sample goes through fxprof (the reference the tables are checked against).
    fxprof_samples: bool,
}

/// Frames (a function on a thread) of traced calls and call paths a profile may hold: the
/// profile is built in memory by fxprof-processed-profile before it is written, at ~500 bytes
/// a frame (its string, function, frame and stack tables, and this sink's maps), so an input
/// naming millions of distinct functions (an XRay profiling-mode file of 50 MB names up to
/// 12.5M) would need several GB. Measured under `ulimit -v 2000000` (issue #23, B5: no input
/// under 50 MB may trip it), the worst case being the bound reached with a 50 MB file's whole
/// call tree (~11M nodes, 350 MB) beside the tables (`xray-profile-gen.py paths`): 1.8M frames
/// fit (1.13 GB RSS), 1.9M do not (a hash table of frames doubles past 1,835,008 entries: out of
/// memory at 1.6 GB RSS). 1.8M holds 50 MB of one-call paths `main;f_i` (1,785,714 frames:
/// 1.07 GB). A path with more functions than are left is refused before any of its frames is
/// made ([`FirefoxSink::check_room`]).
pub const MAX_TRACED_FRAMES: usize = 1_800_000;

/// A profile of one process with one thread, for tests.
#[cfg(test)]
fn one_thread_profile() -> (Profile, ThreadHandle) {
    let mut p = Profile::new(
        "t",
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_nanos(1),
    );
    let process = p.add_process("p", 1, Timestamp::from_nanos_since_reference(0));
    let th = p.add_thread(process, 1, Timestamp::from_nanos_since_reference(0), true);
    (p, th)
}

fn too_many_frames() -> io::Error {
    io::Error::other(format!(
        "firefox output: more than {MAX_TRACED_FRAMES} distinct frames (functions of a thread): the Firefox profile is built whole in memory (~500 bytes a frame) before it is written; convert to folded, speedscope or pprof instead"
    ))
}

impl<W: Write> FirefoxSink<W> {
    /// A writer into `out`, gzip-compressed when `gzip`; `title` names the profile (default:
    /// the trace's name).
    pub fn new(out: W, gzip: bool, title: Option<String>) -> Self {
        FirefoxSink {
            out: Some(out),
            gzip,
            title,
            format: "",
            profile: None,
            cats: None,
            functions: FunctionTable::new(),
            func_info: HashMap::default(),
            processes: HashMap::default(),
            threads: HashMap::default(),
            code_threads: HashMap::default(),
            marker_types: HashMap::default(),
            counters: HashMap::default(),
            code: Vec::new(),
            tiers: HashMap::default(),
            synthetic: Synthetic::default(),
            clock: Clock::NANOSECONDS,
            other_counters: Vec::new(),
            other_counter_names: Vec::new(),
            other_counter_ids: HashMap::default(),
            traced_frames: 0,
            sample_tables: SampleTables::default(),
            fxprof_samples: false,
        }
    }

    /// Has fxprof write every `samples` table, as before profkit wrote the sampled threads'
    /// own (`firefox/sample_table.rs`): the same bytes, slower. For tests and the fuzz harness,
    /// which check the two against each other.
    pub fn samples_through_fxprof(mut self) -> Self {
        self.fxprof_samples = true;
        self
    }
}

fn not_begun() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "firefox output: event before begin",
    )
}

fn ts(ns: u64) -> Timestamp {
    Timestamp::from_nanos_since_reference(ns)
}

/// The most samples one time gap (or one weight) becomes: ~9 minutes of `i32::MAX`-ns
/// samples. Longer gaps are clipped, so that the output stays bounded by the input's events
/// whatever its times say (a corrupt TSC jump of 10^18 ns would otherwise be 4.7 x 10^8 samples).
pub const MAX_SAMPLES_PER_GAP: u64 = 256;

/// Splits `weight` ns into `i32`-sized sample weights, at most [`MAX_SAMPLES_PER_GAP`] of them.
fn chunks(weight: u64) -> impl Iterator<Item = i32> {
    let max = i32::MAX as u64;
    let full = (weight / max).min(MAX_SAMPLES_PER_GAP);
    let rest = if full == MAX_SAMPLES_PER_GAP {
        0
    } else {
        weight % max
    };
    std::iter::repeat_n(i32::MAX, full as usize).chain((rest > 0).then_some(rest as i32))
}

impl<W: Write + Send> FirefoxSink<W> {
    fn process_handle(&mut self, pid: u32) -> io::Result<ProcessHandle> {
        if let Some((h, _)) = self.processes.get(&pid) {
            return Ok(*h);
        }
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let h = p.add_process(&format!("pid {pid}"), pid, ts(0));
        self.processes.insert(pid, (h, false));
        Ok(h)
    }

    /// A new fxprof thread. The thread whose tid is the pid (Linux's main thread) is the
    /// process's main thread, which the Firefox Profiler shows under the process's name;
    /// `may_be_main` is false for the synthetic JIT thread.
    fn new_fx_thread(
        &mut self,
        pid: u32,
        tid: u64,
        name: &str,
        may_be_main: bool,
    ) -> io::Result<ThreadHandle> {
        let process = self.process_handle(pid)?;
        let is_main = may_be_main
            && tid == u64::from(pid)
            && match self.processes.get_mut(&pid) {
                Some((_, has_main)) => !std::mem::replace(has_main, true),
                None => false,
            };
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let th = p.add_thread(process, tid as u32, ts(0), is_main);
        p.set_thread_name(th, name);
        p.set_thread_show_markers_in_timeline(th, true);
        Ok(th)
    }

    fn state(&mut self, thread: u32) -> &mut ThreadState {
        self.threads.entry(thread).or_insert_with(|| ThreadState {
            pid: 0,
            tid: u64::from(thread),
            name: format!("thread {thread}"),
            primary: None,
            traced: None,
            sampled: None,
            traced_ns: 0,
            sampled_ns: 0,
            stack: Vec::new(),
            last: 0,
            frames: HashMap::default(),
            sampled_stacks: SampledStacks::default(),
        })
    }

    /// The Firefox thread of trace thread `thread` that carries `role` (calls or samples):
    /// its primary thread when that has no other role yet, else a second thread (same tid:
    /// fxprof makes it unique as `tid.1`).
    fn role_thread(&mut self, thread: u32, role: Role) -> io::Result<ThreadHandle> {
        let st = self.state(thread);
        let have = match role {
            Role::Calls => st.traced,
            _ => st.sampled,
        };
        if let Some(h) = have {
            return Ok(h);
        }
        let (pid, tid, name, primary) = (st.pid, st.tid, st.name.clone(), st.primary);
        let h = match primary {
            Some((h, Role::Markers)) => {
                self.state(thread).primary = Some((h, role));
                h
            }
            // The second thread of a trace thread says what it shows.
            Some(_) => {
                let what = if role == Role::Calls {
                    "calls"
                } else {
                    "samples"
                };
                self.new_fx_thread(pid, tid, &format!("{name} ({what})"), true)?
            }
            None => {
                let h = self.new_fx_thread(pid, tid, &name, true)?;
                self.state(thread).primary = Some((h, role));
                h
            }
        };
        let st = self.state(thread);
        match role {
            Role::Calls => st.traced = Some(h),
            _ => st.sampled = Some(h),
        }
        if role == Role::Calls {
            // Traced time, written in milliseconds (`lines::write`).
            let p = self.profile.as_mut().ok_or_else(not_begun)?;
            p.set_thread_samples_weight_type(h, WeightType::TracingMs);
        }
        Ok(h)
    }

    fn traced_thread(&mut self, thread: u32) -> io::Result<ThreadHandle> {
        self.role_thread(thread, Role::Calls)
    }

    fn sampled_thread(&mut self, thread: u32) -> io::Result<ThreadHandle> {
        self.role_thread(thread, Role::Samples)
    }

    /// The thread markers of trace thread `thread` go to: its first Firefox thread.
    fn marker_thread(&mut self, thread: u32) -> io::Result<ThreadHandle> {
        let st = self.state(thread);
        if let Some((h, _)) = st.primary {
            return Ok(h);
        }
        let (pid, tid, name) = (st.pid, st.tid, st.name.clone());
        let h = self.new_fx_thread(pid, tid, &name, true)?;
        self.state(thread).primary = Some((h, Role::Markers));
        Ok(h)
    }

    /// The category of JIT tier `name` (SAMPLY_JIT_TIER / a function's tier), in the tier's
    /// colour, made on first use.
    fn tier_category(&mut self, name: &str, color: u32) -> io::Result<CategoryHandle> {
        if let Some(c) = self.tiers.get(name) {
            return Ok(*c);
        }
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let c = p.add_category(name, tier_color(color));
        self.tiers.insert(name.to_string(), c);
        Ok(c)
    }

    fn func(&mut self, func: FuncId) -> io::Result<(StringHandle, CategoryPairHandle, FrameFlags)> {
        if let Some(f) = self.func_info.get(&func) {
            return Ok(*f);
        }
        let name = self.functions.name(func);
        let cats = self.cats.ok_or_else(not_begun)?;
        let info = self.functions.get(func);
        let (cat, flags) = match info.and_then(|f| f.tier.as_ref()) {
            Some(t) => {
                let (name, color, js) = (t.name.clone(), t.color, t.js);
                (self.tier_category(&name, color)?.into(), tier_flags(js))
            }
            None => cats.frame(classify_func(&name, info, self.format)),
        };
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let s = p.intern_string(&name);
        self.func_info.insert(func, (s, cat, flags));
        Ok((s, cat, flags))
    }

    /// The label frame of `func` on the traced thread `th` of trace thread `thread`.
    fn frame(&mut self, thread: u32, th: ThreadHandle, func: FuncId) -> io::Result<FrameHandle> {
        if let Some(f) = self.state(thread).frames.get(&func) {
            return Ok(*f);
        }
        if self.traced_frames >= MAX_TRACED_FRAMES {
            return Err(too_many_frames());
        }
        self.traced_frames += 1;
        let (s, category_pair, flags) = self.func(func)?;
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let fh = p.intern_frame(
            th,
            FrameInfo {
                frame: Frame::Label(s),
                category_pair,
                flags,
            },
        );
        self.state(thread).frames.insert(func, fh);
        Ok(fh)
    }

    /// Refuses a call path whose functions without a frame on trace thread `thread` would take
    /// the frames past [`MAX_TRACED_FRAMES`], before any of them is made: a path millions of
    /// functions deep (an XRay profiling-mode file of 50 MB holds one 12.5M deep) would otherwise
    /// fill the profile's tables up to the bound first, beside the input's call tree. The ids are
    /// copied and counted once each only when the path could be too long (4 bytes an id).
    fn check_room(&mut self, thread: u32, stack: &[FuncId]) -> io::Result<()> {
        let room = MAX_TRACED_FRAMES.saturating_sub(self.traced_frames);
        if stack.len() <= room {
            return Ok(());
        }
        let frames = &self.state(thread).frames;
        let mut missing: Vec<FuncId> = stack
            .iter()
            .filter(|f| !frames.contains_key(f))
            .copied()
            .collect();
        if missing.len() <= room {
            return Ok(());
        }
        missing.sort_unstable();
        missing.dedup();
        if missing.len() > room {
            return Err(too_many_frames());
        }
        Ok(())
    }

    /// Emits the sample of the running stack for the time since the thread's last boundary.
    fn advance(&mut self, thread: u32, th: ThreadHandle, time: u64) -> io::Result<()> {
        let st = self.state(thread);
        let (top, last) = (st.stack.last().copied(), st.last);
        if time > last {
            st.last = time;
            if top.is_some() {
                st.traced_ns = st.traced_ns.saturating_add(time - last);
            }
            if let Some(top) = top {
                let p = self.profile.as_mut().ok_or_else(not_begun)?;
                let mut at = last;
                for w in chunks(time - last) {
                    let w64 = u64::try_from(w).unwrap_or(0);
                    p.add_sample(th, ts(at), Some(top), CpuDelta::from_nanos(w64), w);
                    at += w64;
                }
            }
        }
        Ok(())
    }

    fn marker_type(
        &mut self,
        category: &str,
        layout: Vec<(String, bool)>,
    ) -> io::Result<MarkerTypeHandle> {
        let key = (category.to_string(), layout);
        if let Some(h) = self.marker_types.get(&key) {
            return Ok(*h);
        }
        let n = self
            .marker_types
            .keys()
            .filter(|(c, _)| c == category)
            .count();
        let base = if category.is_empty() {
            "instant"
        } else {
            category
        };
        let type_name = if n == 0 {
            base.to_string()
        } else {
            format!("{base}#{}", n + 1)
        };
        let fields = key
            .1
            .iter()
            .map(|(k, num)| RuntimeSchemaMarkerField {
                key: k.clone(),
                label: k.clone(),
                format: if *num {
                    MarkerFieldFormat::Decimal
                } else {
                    MarkerFieldFormat::String
                },
                flags: MarkerFieldFlags::SEARCHABLE,
            })
            .collect();
        let schema = RuntimeSchemaMarkerSchema {
            type_name,
            description: Some(format!("{base} events")),
            locations: MarkerLocations::MARKER_CHART
                | MarkerLocations::MARKER_TABLE
                | MarkerLocations::TIMELINE_OVERVIEW,
            chart_label: None,
            tooltip_label: None,
            table_label: None,
            fields,
            graphs: Vec::new(),
        };
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let h = p.register_marker_type(schema);
        self.marker_types.insert(key, h);
        Ok(h)
    }

    /// Declares sampled function `func` to the synthetic libraries (on its first sample).
    fn declare_sampled(&mut self, func: FuncId) -> io::Result<()> {
        let (name, category, flags) = self.func(func)?;
        let symbol = self.functions.name(func);
        let info = self.functions.get(func);
        let module = match info.and_then(|f| f.module.as_deref()) {
            Some(m) => m.to_string(),
            None => kind_library(classify_func(&symbol, info, self.format)).to_string(),
        };
        let f = SampledFunc {
            name,
            category,
            flags,
            display: symbol,
            module,
            file: info
                .and_then(|f| f.file.as_deref())
                .and_then(source_path)
                .map(str::to_string),
            start_line: info.map_or(0, |f| f.line),
        };
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        self.synthetic.declare(p, func, f);
        Ok(())
    }

    /// Adds the buffered samples: each weighs its hits (`"weightType":"samples"`) and has the
    /// recording's sampling period as its CPU time. That period, the median time between two
    /// samples of the thread with the most hits, is returned if any thread was sampled (one
    /// period for every thread: a recording samples all threads at one rate, and a thread
    /// sampled thrice has no median worth the name).
    fn finish_samples(&mut self) -> io::Result<Option<u64>> {
        let mut order: Vec<u32> = self
            .threads
            .iter()
            .filter(|(_, st)| st.sampled.is_some())
            .map(|(&i, _)| i)
            .collect();
        order.sort_unstable();
        // (hits, index) of the thread with the most hits.
        let mut busiest: Option<(u64, u32)> = None;
        for &index in &order {
            let Some(st) = self.threads.get(&index) else {
                continue;
            };
            let hits = st
                .sampled_stacks
                .samples
                .iter()
                .fold(0u64, |a, s| a.saturating_add(s.2));
            if busiest.is_none_or(|(h, _)| hits > h) {
                busiest = Some((hits, index));
            }
        }
        let Some((_, busiest)) = busiest else {
            return Ok(None);
        };
        let period = match self.threads.get(&busiest) {
            Some(st) => {
                let samples = &st.sampled_stacks.samples;
                let mut deltas: Vec<u64> = samples
                    .windows(2)
                    .filter_map(|w| match w {
                        [a, b] if b.0 > a.0 => Some(b.0 - a.0),
                        _ => None,
                    })
                    .collect();
                // The median without sorting them all (the value sorting would put there).
                let middle = deltas.len() / 2;
                match deltas.get(middle) {
                    Some(_) => *deltas.select_nth_unstable(middle).1,
                    None => DEFAULT_PERIOD_NS,
                }
            }
            None => DEFAULT_PERIOD_NS,
        };
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        for index in order {
            let Some(st) = self.threads.get_mut(&index) else {
                continue;
            };
            let Some(th) = st.sampled else { continue };
            let samples = std::mem::take(&mut st.sampled_stacks.samples);
            let total = samples.iter().fold(0u64, |a, s| a.saturating_add(s.2));
            st.sampled_ns = total.saturating_mul(period);
            // Written by `sample_table` where fxprof writes the stand-in, when in time order.
            let table = match self.fxprof_samples {
                true => Err(samples),
                false => self.sample_tables.add(samples, period),
            };
            let samples = match table {
                Ok(stand_in) => {
                    p.add_sample(th, ts(0), None, CpuDelta::ZERO, stand_in);
                    continue;
                }
                Err(samples) => samples,
            };
            let handles = &st.sampled_stacks.handles;
            for (time, stack, hits) in samples {
                let stack = stack.and_then(|s| handles.get(s as usize).copied());
                for (i, w) in (0..).zip(chunks(hits)) {
                    let cpu = u64::try_from(w).unwrap_or(0).saturating_mul(period);
                    let at = time.saturating_add(i);
                    p.add_sample(th, ts(at), stack, CpuDelta::from_nanos(cpu), w);
                }
            }
        }
        Ok(Some(period))
    }

    /// The Firefox thread with the most traced or sampled time (per process, and overall).
    fn busiest_threads(&self) -> (Option<ThreadHandle>, HashMap<u32, ThreadHandle>) {
        let mut per_pid: HashMap<u32, (u64, u32, ThreadHandle)> = HashMap::default();
        let mut best: Option<(u64, u32, ThreadHandle)> = None;
        for (&index, st) in &self.threads {
            let roles = [(st.traced, st.traced_ns), (st.sampled, st.sampled_ns)];
            for (h, ns) in roles {
                let Some(h) = h else { continue };
                // The most time; among equals, the first thread of the trace.
                let better = |cur: &Option<(u64, u32, ThreadHandle)>| {
                    cur.is_none_or(|(n, i, _)| ns > n || (ns == n && index < i))
                };
                let cur = per_pid.get(&st.pid).copied();
                if better(&cur) {
                    per_pid.insert(st.pid, (ns, index, h));
                }
                if ns > 0 && better(&best) {
                    best = Some((ns, index, h));
                }
            }
        }
        (
            best.map(|(_, _, h)| h),
            per_pid
                .into_iter()
                .map(|(pid, (_, _, h))| (pid, h))
                .collect(),
        )
    }
}

/// The source path a function's file is written as: exactly as the input recorded it (the
/// jitdump's DEBUG_INFO name, V8's script name, the DWARF line table's path), which is what
/// the Firefox Profiler sends to a symbol server's `/source/v1` to get the text; `None` for a
/// placeholder that names no file (`<unknown>`, `<anonymous>`, empty).
fn source_path(file: &str) -> Option<&str> {
    let placeholder = file.is_empty() || (file.starts_with('<') && file.ends_with('>'));
    (!placeholder).then_some(file)
}

/// The synthetic library of the sampled functions that have no module.
fn kind_library(kind: CodeKind) -> &'static str {
    match kind {
        CodeKind::JavaScript(_) => "(JavaScript)",
        CodeKind::Builtin => "(builtins)",
        CodeKind::Python => "(Python)",
        CodeKind::Wasm => "(Wasm)",
        CodeKind::Managed => "(managed)",
        CodeKind::Native => "(native)",
        CodeKind::Kernel => "(kernel)",
        CodeKind::Jit => "(JIT code)",
        CodeKind::Other => "(unknown)",
    }
}

impl<W: Write + Send> EventSink for FirefoxSink<W> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        let title = self.title.clone().unwrap_or_else(|| trace.name.to_string());
        let mut p = Profile::new(
            &title,
            ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
            SamplingInterval::from_nanos(1),
        );
        self.cats = Some(Categories::new(&mut p));
        p.set_symbolicated(true);
        self.profile = Some(p);
        self.format = trace.format;
        self.clock = trace.clock;
        self.functions = trace.functions.clone();
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions.insert(id, info.clone());
        Ok(())
    }

    fn process(&mut self, process: &ProcessInfo<'_>) -> io::Result<()> {
        match self.processes.get(&process.pid) {
            Some((h, _)) => {
                let h = *h;
                let p = self.profile.as_mut().ok_or_else(not_begun)?;
                p.set_process_name(h, process.name);
            }
            None => {
                let p = self.profile.as_mut().ok_or_else(not_begun)?;
                let h = p.add_process(process.name, process.pid, ts(0));
                self.processes.insert(process.pid, (h, false));
            }
        }
        Ok(())
    }

    fn thread(&mut self, thread: &ThreadInfo<'_>) -> io::Result<()> {
        let st = self.state(thread.index);
        st.pid = thread.pid;
        st.tid = thread.tid;
        st.name = thread.name.to_string();
        Ok(())
    }

    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        let th = self.traced_thread(call.thread)?;
        self.advance(call.thread, th, call.time)?;
        let frame = self.frame(call.thread, th, call.func)?;
        let parent = self.state(call.thread).stack.last().copied();
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let stack = p.intern_stack(th, parent, frame);
        self.state(call.thread).stack.push(stack);
        Ok(())
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        let th = self.traced_thread(span.thread)?;
        self.advance(span.thread, th, span.end)?;
        self.state(span.thread).stack.pop();
        Ok(())
    }

    fn call_path(&mut self, path: &CallPath<'_>) -> io::Result<()> {
        if path.exclusive == 0 || path.stack.is_empty() {
            return Ok(());
        }
        let th = self.traced_thread(path.thread)?;
        self.check_room(path.thread, path.stack)?;
        let mut stack = None;
        for &f in path.stack {
            let frame = self.frame(path.thread, th, f)?;
            let p = self.profile.as_mut().ok_or_else(not_begun)?;
            stack = Some(p.intern_stack(th, stack, frame));
        }
        // No times: the paths follow each other on the thread's timeline.
        let st = self.state(path.thread);
        st.traced_ns = st.traced_ns.saturating_add(path.exclusive);
        let mut at = st.last;
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        for w in chunks(path.exclusive) {
            let w64 = u64::try_from(w).unwrap_or(0);
            p.add_sample(th, ts(at), stack, CpuDelta::from_nanos(w64), w);
            at = at.saturating_add(w64);
        }
        self.state(path.thread).last = at;
        Ok(())
    }

    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()> {
        let th = self.marker_thread(instant.thread)?;
        let layout: Vec<(String, bool)> = instant
            .args
            .iter()
            .map(|(k, v)| {
                let num = matches!(v, ArgValue::U64(_) | ArgValue::I64(_) | ArgValue::F64(_));
                (k.to_string(), num)
            })
            .collect();
        let ty = self.marker_type(instant.category, layout)?;
        let cats = self.cats.ok_or_else(not_begun)?;
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        let fields = instant
            .args
            .iter()
            .map(|(_, v)| match *v {
                ArgValue::U64(n) => FieldValue::Num(n as f64),
                ArgValue::I64(n) => FieldValue::Num(n as f64),
                ArgValue::F64(n) => FieldValue::Num(n),
                ArgValue::Str(_) | ArgValue::Bytes(_) => {
                    FieldValue::Str(p.intern_string(&v.to_text()))
                }
            })
            .collect();
        let marker = FxMarker {
            ty,
            name: p.intern_string(instant.name),
            category: cats.marker(instant.category),
            empty: p.intern_string(""),
            fields,
        };
        p.add_marker(th, MarkerTiming::Instant(ts(instant.time)), marker);
        Ok(())
    }

    fn counter(&mut self, counter: &Counter<'_>) -> io::Result<()> {
        if !counter_is_track(self.format, counter.name) {
            let id = match self.other_counter_ids.get(counter.name) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(self.other_counter_names.len()).unwrap_or(u32::MAX);
                    self.other_counter_names.push(counter.name.to_string());
                    self.other_counter_ids.insert(counter.name.to_string(), id);
                    id
                }
            };
            self.other_counters
                .push((counter.pid, id, counter.time, counter.value));
            return Ok(());
        }
        let key = (counter.pid, counter.name.to_string());
        let (h, last) = match self.counters.get(&key) {
            Some(c) => *c,
            None => {
                let process = self.process_handle(counter.pid)?;
                let p = self.profile.as_mut().ok_or_else(not_begun)?;
                let h = p.add_counter(process, counter.name, "profkit", counter.name);
                (h, 0.0)
            }
        };
        let p = self.profile.as_mut().ok_or_else(not_begun)?;
        p.add_counter_sample(h, ts(counter.time), counter.value - last, 1);
        self.counters.insert(key, (h, counter.value));
        Ok(())
    }

    fn sample(&mut self, sample: &Sample<'_>) -> io::Result<()> {
        let th = self.sampled_thread(sample.thread)?;
        // Hits: a Mono sample's weight; a perf.data sample is one hit (its weight is its
        // period, in the event's unit).
        let hits = if self.format == "perf" {
            1
        } else {
            sample.weight
        };
        loop {
            let p = self.profile.as_mut().ok_or_else(not_begun)?;
            let Some(st) = self.threads.get_mut(&sample.thread) else {
                return Ok(());
            };
            let pushed = st.sampled_stacks.push(
                sample.time,
                sample.stack,
                sample.lines,
                hits,
                p,
                th,
                &mut self.synthetic,
            );
            match pushed {
                Ok(()) => break,
                // A function's first sample: declared, the sample goes on where it stopped.
                Err(func) if !self.synthetic.knows(func) => self.declare_sampled(func)?,
                // (Cannot be kept: more frames than memory holds.)
                Err(_) => break,
            }
        }
        Ok(())
    }

    fn code(&mut self, code: &CodeRegion<'_>) -> io::Result<()> {
        self.code.push(CodeRec {
            pid: code.pid,
            thread: code.thread,
            time: code.time,
            address: code.address,
            size: code.size,
            name: code.name.to_string(),
            moved: matches!(code.event, CodeEvent::Move { .. }),
            tier: code.tier.map(|t| (t.name.to_string(), t.color, t.js)),
        });
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.finish_code()?;
        let sampling = self.finish_samples()?;
        let (busiest, per_pid) = self.busiest_threads();
        self.finish_other_counters(&per_pid)?;
        let traced = self.threads.values().any(|st| st.traced.is_some());
        let Some(mut profile) = self.profile.take() else {
            return Ok(());
        };
        // The interval: the sampling period (of the thread sampled most), else the trace's
        // resolution: its clock's tick, at least the nanosecond its times are in.
        let interval = sampling.unwrap_or_else(|| match self.clock.ticks_per_second {
            0 => 1,
            tps => (1_000_000_000 / tps).max(1),
        });
        profile.set_interval(SamplingInterval::from_nanos(interval));
        if let Some(th) = busiest {
            profile.add_initial_selected_thread(th);
        }
        let Some(mut out) = self.out.take() else {
            return Ok(());
        };
        let fill = lines::Fill {
            lines: self.synthetic.lines(),
            traced,
            samples: &self.sample_tables,
        };
        if self.gzip {
            // Compressed on a second thread while serialized.
            gzip::write(&mut out, &profile, &fill)?;
        } else {
            lines::write(&mut out, &profile, &fill)?;
        }
        out.flush()
    }
}
