//! The event vocabulary every exporter consumes: a trace as a stream of calls, instants,
//! counters, samples and code regions, in nanoseconds since the trace's origin.
//!
//! A format's driver ([`crate::feed`]) reads a file and calls an [`EventSink`]; each output
//! format (Perfetto, Chrome JSON, speedscope, Parquet, …) implements the sink once and so works
//! for every input format. The order of calls is:
//!
//! 1. [`EventSink::begin`] once, with the [`TraceInfo`] (function table, origin, format);
//! 2. [`EventSink::process`] and [`EventSink::thread`] declare a process or thread before any
//!    event refers to it;
//! 3. events: [`EventSink::enter`] / [`EventSink::exit`] (calls), [`EventSink::instant`],
//!    [`EventSink::counter`], [`EventSink::sample`], [`EventSink::code`], or
//!    [`EventSink::call_path`] (totals of the calls of one call path, from a format that keeps
//!    no single calls: XRay profiling mode);
//! 4. [`EventSink::finish`] once.
//!
//! Ordering guarantees (what lets exporters stream): the events of one thread arrive in time
//! order, and a thread's enters and exits are balanced and properly nested (every `exit` closes
//! the innermost open `enter` of its thread; calls still open when the thread's events end are
//! closed at the thread's last time, calls whose enter was never seen are not reported). Events
//! of different threads may interleave in any way — drivers usually emit one thread after
//! another. Counters of one name arrive in time order. Times are `u64` nanoseconds since
//! [`TraceInfo::origin_ns`]; events before the origin are clamped to 0.

use std::any::Any;
use std::io;

pub mod threaded;
pub use threaded::Threaded;

use crate::clock::Clock;
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::span::Span;

/// What an exporter needs to know about the trace before its events.
#[derive(Clone, Copy, Debug)]
pub struct TraceInfo<'a> {
    /// The input format, e.g. `"xray"`, `"mlpd"`, `"jitdump"`.
    pub format: &'static str,
    /// Names and locations of every [`FuncId`] the events use.
    pub functions: &'a FunctionTable,
    /// The trace's own clock (raw units → ns) — kept for outputs that show raw values.
    pub clock: Clock,
    /// Absolute time of time 0 in nanoseconds on the trace's clock (XRay: TSC converted; mlpd:
    /// the profiler's clock; jitdump: the header timestamp's clock).
    pub origin_ns: u64,
    /// A human name for the trace (usually the input file name).
    pub name: &'a str,
    /// What the samples' weights measure, when the input says (perf.data's event); `None`:
    /// a weight counts samples.
    pub samples: Option<SampleWeight<'a>>,
    /// The origin as UNIX time (ns since the epoch), when the input ties its clock to the wall
    /// clock (perf.data's CLOCK_DATA, or a recording on CLOCK_REALTIME).
    pub origin_unix_ns: Option<u64>,
}

/// What the weights of a trace's samples measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleWeight<'a> {
    /// What is counted: `cpu` (time on a CPU: the cpu-clock and task-clock events) or the
    /// event's name (`cycles`, `instructions`, …).
    pub kind: &'a str,
    /// `nanoseconds` or `count`.
    pub unit: &'static str,
    /// The period between samples in `unit`: fixed, or the mean one of a frequency (`-F`)
    /// for a time event; 0 when it varies (`-F` on a counter).
    pub period: u64,
}

/// A process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessInfo<'a> {
    /// Process id (0 when the format does not record one).
    pub pid: u32,
    /// Display name (the program, the command line, or a synthetic `"xray pid 12"`).
    pub name: &'a str,
}

/// A thread as every format can name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ThreadId {
    /// Process id (0 when the format records none).
    pub pid: u32,
    /// Thread id as the format records it.
    pub tid: u64,
}

/// A call entered: `func` on `thread` at `time`, at `depth` (0 = outermost), with the
/// arguments the format logged for this call (XRay's `xray_log_args`; usually empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enter<'a> {
    /// The thread's [`ThreadInfo::index`].
    pub thread: u32,
    /// The function entered.
    pub func: FuncId,
    /// When, in ns since the trace's origin.
    pub time: u64,
    /// How many calls are open under it on its thread.
    pub depth: u32,
    /// The call's logged arguments.
    pub args: &'a [u64],
}

impl Enter<'static> {
    /// A call with no logged arguments.
    pub fn new(thread: u32, func: FuncId, time: u64, depth: u32) -> Self {
        Enter {
            thread,
            func,
            time,
            depth,
            args: &[],
        }
    }
}

/// A thread. Events name a thread by its `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadInfo<'a> {
    /// Dense index, unique in the trace (the [`Span::thread`] and event `thread` field).
    pub index: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id as the format records it.
    pub tid: u64,
    /// Display name (a name the trace gives, or `"thread <tid>"`).
    pub name: &'a str,
}

/// An argument value of an instant event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgValue<'a> {
    /// Text.
    Str(&'a str),
    /// Unsigned integer.
    U64(u64),
    /// Signed integer.
    I64(i64),
    /// Floating point.
    F64(f64),
    /// Opaque bytes (XRay custom event payloads); text outputs show them as UTF-8 when they
    /// are valid UTF-8, else as hex.
    Bytes(&'a [u8]),
}

/// A named argument.
pub type Arg<'a> = (&'a str, ArgValue<'a>);

/// A point event: an XRay custom or typed event, an exception, a GC phase, a JIT code load.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instant<'a> {
    /// The thread it happened on.
    pub thread: u32,
    /// When (ns since the origin).
    pub time: u64,
    /// Display name.
    pub name: &'a str,
    /// Category (`"xray.custom"`, `"xray.typed"`, `"exception"`, `"gc"`, `"jit"`, …).
    pub category: &'a str,
    /// Payload.
    pub args: &'a [Arg<'a>],
}

/// A counter value at a time (Mono performance counters, GC heap size).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counter<'a> {
    /// The process it belongs to.
    pub pid: u32,
    /// Counter name, unique in the process.
    pub name: &'a str,
    /// When (ns since the origin).
    pub time: u64,
    /// Value.
    pub value: f64,
}

/// A sampled stack (Mono sample hits with their managed backtraces, perf.data samples).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample<'a> {
    /// The thread sampled.
    pub thread: u32,
    /// When (ns since the origin).
    pub time: u64,
    /// Frames, outermost first, leaf last. An address inside inlined code gives several
    /// frames (the inlined functions after their caller).
    pub stack: &'a [FuncId],
    /// The source line each frame was at (0 = unknown), parallel to `stack`; empty when the
    /// format has no lines.
    pub lines: &'a [u32],
    /// Weight: 1 per hit (Mono), the sample's period (perf.data: cycles, ns of cpu-clock …).
    pub weight: u64,
    /// How many outermost frames (and their lines) are known to be those of the thread's
    /// previous sample (0: none known). A thread's samples mostly share their outer frames;
    /// a sink may take them as they were (the writer thread's transport sends only the rest).
    pub shared: usize,
}

impl Sample<'_> {
    /// The line of frame `i` (0 = unknown).
    pub fn line(&self, i: usize) -> u32 {
        self.lines.get(i).copied().unwrap_or(0)
    }
}

/// The totals of the calls of one call path, from a format that aggregates calls per path and
/// keeps no single call (XRay profiling mode). No time is attached: the path's calls happened
/// somewhere in the trace.
///
/// In a stream ([`EventSink::call_path`]) times are nanoseconds (durations, not instants); a
/// fold ([`crate::replay::Fold::call_path`]) sees the format's raw units and ignores `thread`
/// (each thread has its own fold). A call path comes after its thread is declared, and a
/// thread's paths may come in any order (a caller's before or after its callees').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallPath<'a> {
    /// The thread whose calls these are.
    pub thread: u32,
    /// Functions, outermost first; the last one is the function whose calls these are.
    pub stack: &'a [FuncId],
    /// Calls on this path that returned.
    pub calls: u64,
    /// Their total duration, callees included.
    pub inclusive: u64,
    /// Their total duration less their callees' on the paths below this one (self time).
    pub exclusive: u64,
}

/// One thread's call paths as a tree (XRay profiling mode), for a sink that can take them
/// whole ([`EventSink::call_trees`]) instead of path by path: a profile of 50 MB can hold one
/// path 12.5M functions deep, and a consumer that needs only the tree's structure then keeps
/// no tree (nor path) of its own (issue #23 B5).
pub trait CallTree {
    /// Number of nodes (call paths, with calls or not).
    fn len(&self) -> usize;
    /// Whether the tree has no node.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Calls `visit` with every node, depth first (a node's subtree before its next sibling),
    /// callers before callees. The order of siblings is not defined.
    fn walk(&self, visit: &mut dyn FnMut(&TreeNode));
}

/// A node of a [`CallTree`]: a call path, named by its depth and its last function, with the
/// values [`EventSink::call_path`] would give it (0 calls and 0 times for a path that is only
/// a caller of others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeNode {
    /// Depth: 1 for a root call.
    pub depth: u32,
    /// The path's last function.
    pub func: FuncId,
    /// Calls on this path that returned.
    pub calls: u64,
    /// Their total duration, callees included (ns, as in [`CallPath`]).
    pub inclusive: u64,
    /// Their self time (ns, as in [`CallPath`]).
    pub exclusive: u64,
}

/// What happened to a region of JIT code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeEvent {
    /// Code was loaded at the region's address.
    Load,
    /// Code moved from `old_address` to the region's address.
    Move {
        /// Where it was before.
        old_address: u64,
    },
}

/// The JIT tier that produced a code region (jitdump SAMPLY_JIT_TIER, see
/// docs/extension-records.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeTier<'a> {
    /// Tier name ("Baseline", "Turbofan", "Tier0" …).
    pub name: &'a str,
    /// Colour index into the Firefox Profiler's category colours (0 transparent … 13
    /// darkgray; larger values mean grey).
    pub color: u32,
    /// Whether the tier runs JavaScript-like source (flag bit 0).
    pub js: bool,
}

/// A region of JIT or instrumented code (jitdump loads and moves, Mono JIT events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeRegion<'a> {
    /// The thread that loaded it (`None` when unknown).
    pub thread: Option<u32>,
    /// Process id.
    pub pid: u32,
    /// When (ns since the origin).
    pub time: u64,
    /// Start address.
    pub address: u64,
    /// Size in bytes.
    pub size: u64,
    /// Function name.
    pub name: &'a str,
    /// Load or move.
    pub event: CodeEvent,
    /// The producer's code index (jitdump), if any.
    pub code_index: Option<u64>,
    /// The JIT tier that produced it, when the producer says (jitdump JIT_TIER).
    pub tier: Option<CodeTier<'a>>,
}

/// A file (or pseudo file) mapped into a process's memory, as the input recorded it (perf.data
/// MMAP/MMAP2 records of executable mappings): what a profile's mapping table is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappingInfo<'a> {
    /// Process id.
    pub pid: u32,
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the file of `start`.
    pub file_offset: u64,
    /// The path as recorded (`/usr/bin/node`, `[vdso]` …).
    pub path: &'a str,
    /// The file's GNU build id, when the input recorded it.
    pub build_id: Option<&'a [u8]>,
}

/// Names some of a driver's samples on the thread of the sink it is given to
/// ([`EventSink::helper`]; see [`threaded`]).
pub trait Helper: Send {
    /// A change the driver handed over ([`EventSink::hand_over`]).
    fn change(&mut self, change: Box<dyn Any + Send>);
    /// Names the sample `work` describes into `sink`: the functions it declares, then the
    /// sample.
    fn sample(&mut self, work: &[u8], sink: &mut dyn EventSink) -> io::Result<()>;
    /// The driver finished: the last call, before the sink finishes.
    fn end(self: Box<Self>);
}

fn no_helper() -> io::Error {
    io::Error::other("this sink takes no helper")
}

/// Receives a trace as events. See the [module docs](self) for the order of calls. Every
/// method but [`EventSink::begin`] and [`EventSink::finish`] has a default that ignores the
/// event, so an exporter implements what its output can show.
pub trait EventSink {
    /// Called once before anything else.
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()>;
    /// Declares a process.
    fn process(&mut self, _process: &ProcessInfo<'_>) -> io::Result<()> {
        Ok(())
    }
    /// Declares a thread.
    fn thread(&mut self, _thread: &ThreadInfo<'_>) -> io::Result<()> {
        Ok(())
    }
    /// Declares a function [`TraceInfo::functions`] did not have, before the first event that
    /// uses `id` (drivers that discover functions while reading, like perf.data's symbolizer,
    /// declare them here; an id is declared at most once).
    fn function(&mut self, _id: FuncId, _info: &FuncInfo) -> io::Result<()> {
        Ok(())
    }
    /// A call was entered (see [`Enter`]).
    fn enter(&mut self, _call: &Enter<'_>) -> io::Result<()> {
        Ok(())
    }
    /// The innermost open call of `span.thread` returned; `span` holds its start, end, depth
    /// and self time, in ns since the origin.
    fn exit(&mut self, _span: &Span) -> io::Result<()> {
        Ok(())
    }
    /// A point event.
    fn instant(&mut self, _instant: &Instant<'_>) -> io::Result<()> {
        Ok(())
    }
    /// A counter value.
    fn counter(&mut self, _counter: &Counter<'_>) -> io::Result<()> {
        Ok(())
    }
    /// A sampled stack.
    fn sample(&mut self, _sample: &Sample<'_>) -> io::Result<()> {
        Ok(())
    }
    /// A code region was loaded or moved.
    fn code(&mut self, _code: &CodeRegion<'_>) -> io::Result<()> {
        Ok(())
    }
    /// A process mapped a file (see [`MappingInfo`]); before the samples whose frames it
    /// holds. Writers that keep no mapping table ignore it.
    fn mapping(&mut self, _mapping: &MappingInfo<'_>) -> io::Result<()> {
        Ok(())
    }
    /// The totals of one call path (XRay profiling mode). Unlike the other events, the
    /// default is a [`CannotShow`] error: an output that cannot show them must not silently
    /// write an empty file.
    fn call_path(&mut self, _path: &CallPath<'_>) -> io::Result<()> {
        Err(call_paths_unsupported())
    }
    /// Every thread's call paths at once, one tree per thread (`trees[i]` is thread `i`'s), by
    /// a driver that has them as trees (XRay profiling mode), before any
    /// [`EventSink::call_path`]: a sink that takes them answers `true`, and the driver gives it
    /// no path one by one. The default answers `false` (the paths come one by one).
    fn call_trees(&mut self, _trees: &[&dyn CallTree]) -> io::Result<bool> {
        Ok(false)
    }
    /// Takes a helper that names some of the driver's samples on the sink's thread (see
    /// [`threaded`]); asked before any function is declared. The default gives it back: the
    /// driver names every sample itself.
    fn helper(&mut self, helper: Box<dyn Helper>) -> Result<(), Box<dyn Helper>> {
        Err(helper)
    }
    /// Hands the helper a change of what it names with, in the driver's order.
    fn hand_over(&mut self, _change: Box<dyn Any + Send>) -> io::Result<()> {
        Err(no_helper())
    }
    /// The helper names a sample here; `work` appends what it needs to its work.
    fn helpers_sample(&mut self, _work: &mut dyn FnMut(&mut Vec<u8>)) -> io::Result<()> {
        Err(no_helper())
    }
    /// Called once after the last event; writers flush here.
    fn finish(&mut self) -> io::Result<()>;
}

/// Why an output cannot show what its input holds (call-path totals on a timeline, Parquet on
/// stdout, a flame graph without the `svg` feature): the one error a writer returns for input
/// its format cannot represent. It travels inside the `io::Error` every [`EventSink`] method
/// returns (kind [`io::ErrorKind::Unsupported`]); [`CannotShow::of`] finds it again, so a
/// caller tells it from a failed write by its type, not by an error kind a library may also
/// use.
#[derive(Debug)]
pub struct CannotShow(pub String);

impl CannotShow {
    /// The `io::Error` carrying `why`.
    pub fn error(why: impl Into<String>) -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, CannotShow(why.into()))
    }

    /// The [`CannotShow`] inside `e`, if that is what `e` is.
    pub fn of(e: &io::Error) -> Option<&CannotShow> {
        e.get_ref()?.downcast_ref()
    }
}

impl std::fmt::Display for CannotShow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CannotShow {}

/// The error of an output that cannot show [`CallPath`]s.
pub fn call_paths_unsupported() -> io::Error {
    CannotShow::error(
        "this output cannot show call-path totals (an XRay profiling-mode file has no single calls or times); convert to folded, svg, speedscope, pprof or firefox",
    )
}

/// Forwards every method to the sink behind a pointer type.
macro_rules! forward_sink {
    ($($ty:ty),*) => {$(
        impl<S: EventSink + ?Sized> EventSink for $ty {
            fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
                (**self).begin(trace)
            }
            fn process(&mut self, process: &ProcessInfo<'_>) -> io::Result<()> {
                (**self).process(process)
            }
            fn thread(&mut self, thread: &ThreadInfo<'_>) -> io::Result<()> {
                (**self).thread(thread)
            }
            fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
                (**self).function(id, info)
            }
            fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
                (**self).enter(call)
            }
            fn exit(&mut self, span: &Span) -> io::Result<()> {
                (**self).exit(span)
            }
            fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()> {
                (**self).instant(instant)
            }
            fn counter(&mut self, counter: &Counter<'_>) -> io::Result<()> {
                (**self).counter(counter)
            }
            fn sample(&mut self, sample: &Sample<'_>) -> io::Result<()> {
                (**self).sample(sample)
            }
            fn code(&mut self, code: &CodeRegion<'_>) -> io::Result<()> {
                (**self).code(code)
            }
            fn mapping(&mut self, mapping: &MappingInfo<'_>) -> io::Result<()> {
                (**self).mapping(mapping)
            }
            fn call_path(&mut self, path: &CallPath<'_>) -> io::Result<()> {
                (**self).call_path(path)
            }
            fn call_trees(&mut self, trees: &[&dyn CallTree]) -> io::Result<bool> {
                (**self).call_trees(trees)
            }
            fn helper(&mut self, helper: Box<dyn Helper>) -> Result<(), Box<dyn Helper>> {
                (**self).helper(helper)
            }
            fn hand_over(&mut self, change: Box<dyn Any + Send>) -> io::Result<()> {
                (**self).hand_over(change)
            }
            fn helpers_sample(&mut self, work: &mut dyn FnMut(&mut Vec<u8>)) -> io::Result<()> {
                (**self).helpers_sample(work)
            }
            fn finish(&mut self) -> io::Result<()> {
                (**self).finish()
            }
        }
    )*};
}

forward_sink!(&mut S, Box<S>);

/// A sink that records every event in memory, in order — for tests and small inputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// The function table given to `begin` (cloned), with the functions declared later.
    pub functions: Option<FunctionTable>,
    /// Format and origin from `begin`.
    pub format: &'static str,
    /// Origin from `begin`.
    pub origin_ns: u64,
    /// Everything after `begin`, in order.
    pub events: Vec<RecordedEvent>,
    /// Whether `finish` was called.
    pub finished: bool,
}

/// One event kept by [`Recorded`], owning its strings.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordedEvent {
    /// [`EventSink::process`].
    Process {
        /// Pid.
        pid: u32,
        /// Name.
        name: String,
    },
    /// [`EventSink::thread`].
    Thread {
        /// Index.
        index: u32,
        /// Pid.
        pid: u32,
        /// Tid.
        tid: u64,
        /// Name.
        name: String,
    },
    /// [`EventSink::enter`].
    Enter {
        /// Thread index.
        thread: u32,
        /// Function.
        func: FuncId,
        /// Time.
        time: u64,
        /// Depth.
        depth: u32,
        /// Logged arguments.
        args: Vec<u64>,
    },
    /// [`EventSink::exit`].
    Exit(Span),
    /// [`EventSink::instant`].
    Instant {
        /// Thread index.
        thread: u32,
        /// Time.
        time: u64,
        /// Name.
        name: String,
        /// Category.
        category: String,
        /// Arguments, values rendered as text.
        args: Vec<(String, String)>,
    },
    /// [`EventSink::counter`].
    Counter {
        /// Pid.
        pid: u32,
        /// Name.
        name: String,
        /// Time.
        time: u64,
        /// Value.
        value: f64,
    },
    /// [`EventSink::sample`].
    Sample {
        /// Thread index.
        thread: u32,
        /// Time.
        time: u64,
        /// Frames, outermost first.
        stack: Vec<FuncId>,
        /// Lines per frame (empty when the format has none).
        lines: Vec<u32>,
        /// Weight.
        weight: u64,
    },
    /// [`EventSink::call_path`].
    CallPath {
        /// Thread index.
        thread: u32,
        /// Frames, outermost first.
        stack: Vec<FuncId>,
        /// Calls.
        calls: u64,
        /// Inclusive time.
        inclusive: u64,
        /// Exclusive time.
        exclusive: u64,
    },
    /// [`EventSink::code`].
    Code {
        /// Time.
        time: u64,
        /// Address.
        address: u64,
        /// Size.
        size: u64,
        /// Name.
        name: String,
        /// Load or move.
        event: CodeEvent,
        /// Tier name, if any.
        tier: Option<String>,
    },
}

impl ArgValue<'_> {
    /// The value as text: numbers in decimal, bytes as UTF-8 when valid, else lowercase hex.
    pub fn to_text(&self) -> String {
        match *self {
            ArgValue::Str(s) => s.to_string(),
            ArgValue::U64(v) => v.to_string(),
            ArgValue::I64(v) => v.to_string(),
            ArgValue::F64(v) => v.to_string(),
            ArgValue::Bytes(b) => match std::str::from_utf8(b) {
                Ok(s) => s.to_string(),
                Err(_) => b.iter().map(|x| format!("{x:02x}")).collect(),
            },
        }
    }
}

impl EventSink for Recorded {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.functions = Some(trace.functions.clone());
        self.format = trace.format;
        self.origin_ns = trace.origin_ns;
        Ok(())
    }
    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions
            .get_or_insert_with(FunctionTable::new)
            .insert(id, info.clone());
        Ok(())
    }
    fn process(&mut self, p: &ProcessInfo<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::Process {
            pid: p.pid,
            name: p.name.to_string(),
        });
        Ok(())
    }
    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::Thread {
            index: t.index,
            pid: t.pid,
            tid: t.tid,
            name: t.name.to_string(),
        });
        Ok(())
    }
    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::Enter {
            thread: call.thread,
            func: call.func,
            time: call.time,
            depth: call.depth,
            args: call.args.to_vec(),
        });
        Ok(())
    }
    fn exit(&mut self, span: &Span) -> io::Result<()> {
        self.events.push(RecordedEvent::Exit(*span));
        Ok(())
    }
    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::Instant {
            thread: i.thread,
            time: i.time,
            name: i.name.to_string(),
            category: i.category.to_string(),
            args: i
                .args
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_text()))
                .collect(),
        });
        Ok(())
    }
    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::Counter {
            pid: c.pid,
            name: c.name.to_string(),
            time: c.time,
            value: c.value,
        });
        Ok(())
    }
    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::Sample {
            thread: s.thread,
            time: s.time,
            stack: s.stack.to_vec(),
            lines: s.lines.to_vec(),
            weight: s.weight,
        });
        Ok(())
    }
    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::Code {
            time: c.time,
            address: c.address,
            size: c.size,
            name: c.name.to_string(),
            event: c.event,
            tier: c.tier.map(|t| t.name.to_string()),
        });
        Ok(())
    }
    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        self.events.push(RecordedEvent::CallPath {
            thread: p.thread,
            stack: p.stack.to_vec(),
            calls: p.calls,
            inclusive: p.inclusive,
            exclusive: p.exclusive,
        });
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        Ok(())
    }
}
