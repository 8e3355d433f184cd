//! mprof-report's sections, computed in one parallel pass and printed as text close to
//! mprof-report 6.8 or as JSON (schema `profkit.mlpd-report/1`).
//!
//! The pass decodes buffers on worker threads and stitches them in file order: calls are
//! replayed inside each buffer against an unknown inherited stack, so one busy Mono thread
//! still keeps every core busy; a stream (gzip, a pipe) is read one buffer at a time, so memory
//! does not grow with the file.
//!
//! # Layout
//! * `pipeline`: the source thread, the workers, the tokens bounding the buffers in flight, and
//!   the in-order hand-over to the calling thread (a generic mechanism, and the report's use
//!   of it: thread filter, time window, the buffer scan's problems passed on in order).
//! * `worker`: decodes one buffer into a piece: order-free aggregates, and the ordered items
//!   whose effect depends on the order across buffers.
//! * `stitcher`: applies the pieces in file order (GC pauses, monitor waits, heap shots,
//!   handles, counters, names, backtraces, tracking).
//! * `calls`: the call replay, isolated behind a narrow interface (a worker side and a
//!   stitcher side); nothing else of the worker or the stitcher looks at call stacks except
//!   through it.
//! * `aggregate`: [`Report`] and its parts; binds names at the end and sorts every section.
//! * `text` ([`write_text`], [`write_tracking`]) and `json` ([`to_json`]): the outputs.
//!
//! Differences from mprof-report (docs/mono.md): forward references (vtables, classes, methods
//! defined later in the file) bind at the end, so no allocation stays "unresolved"; a method's
//! Total counts only its outermost activation (recursion is not counted several times); a leave
//! that matches a deeper frame closes the frames above it instead of being dropped; `--thread`
//! filters every event; monitor waits and traces count each contention once.

mod aggregate;
mod calls;
mod json;
mod pipeline;
mod stitcher;
mod text;
mod worker;

use std::io::Read;

use profkit_mlpd::read::File;
use profkit_mlpd::stream::StreamReader;
use profkit_mlpd::Result;

pub use aggregate::{Counter, HeapShot, MethodStats, Report, ReportTraces, Trace, TrackEvent};
pub use json::to_json;
pub use text::{write_text, write_tracking};

use pipeline::Job;

/// The report sections, in mprof-report's order.
pub const SECTIONS: [&str; 15] = [
    "header",
    "jit",
    "gc",
    "sample",
    "alloc",
    "call",
    "metadata",
    "exception",
    "monitor",
    "thread",
    "domain",
    "context",
    "heapshot",
    "counters",
    "stats",
];

/// How the call section is sorted (`--method-sort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MethodSort {
    /// By inclusive time (mprof-report's default).
    #[default]
    Total,
    /// By self time.
    SelfTime,
    /// By number of calls.
    Calls,
}

/// How allocations and heap-shot classes are sorted (`--alloc-sort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllocSort {
    /// By bytes (mprof-report's default).
    #[default]
    Bytes,
    /// By object count.
    Count,
}

/// `--find`: track the objects allocated with at least `min_size` bytes and/or whose class
/// name contains `name` (mprof-report's `S:size` and `T:name`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Find {
    /// Minimum size (0: any).
    pub min_size: u64,
    /// Part of the class name.
    pub name: Option<String>,
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct Options {
    /// Only this thread's buffers.
    pub thread: Option<u64>,
    /// Only events in this window (ns since the first buffer's time base).
    pub time: Option<(u64, u64)>,
    /// Decode on several threads.
    pub parallel: bool,
    /// Collect backtraces (`--traces`): callers of each method, allocation, throw, lock
    /// contention and GC handle sites, and heap-shot references.
    pub traces: bool,
    /// Frames kept per backtrace (`--maxframes`, 6 by default as in mprof-report).
    pub maxframes: usize,
    /// Call section order.
    pub method_sort: MethodSort,
    /// Allocation and heap-shot order.
    pub alloc_sort: AllocSort,
    /// Object addresses to track (`--track`).
    pub track: Vec<u64>,
    /// Objects to find and track (`--find`).
    pub find: Option<Find>,
    /// Skip the call replay (no call section, no call statistics): for a text report without
    /// the `call` and `stats` sections. Ignored with `traces` (backtraces need the stack).
    pub skip_calls: bool,
    /// Skip the allocation table (no alloc section): for a text report without it.
    pub skip_allocs: bool,
    /// The source thread has a worker's share of the work (it inflates a compressed stream):
    /// one core fewer decodes (at least one), so that the source, the pass's serial part, keeps
    /// a core. With as many workers as cores it shares one with two threads and gets two
    /// thirds of it (a gzip report on 2 cores: 208 ms instead of 197 ms).
    pub source_core: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            thread: None,
            time: None,
            parallel: false,
            traces: false,
            maxframes: 6,
            method_sort: MethodSort::Total,
            alloc_sort: AllocSort::Bytes,
            track: Vec::new(),
            find: None,
            skip_calls: false,
            skip_allocs: false,
            source_core: false,
        }
    }
}

/// Decodes a whole file in memory (or mapped) and computes every section.
pub fn compute(file: &File<'_>, opts: &Options) -> Report {
    compute_with(file, opts, &|_| {})
}

/// [`compute`], telling `consumed` the file offset below which the data is no longer needed
/// (every buffer before it has been decoded): a caller with a mapped file can drop those pages
/// to keep the resident memory flat.
pub fn compute_with(file: &File<'_>, opts: &Options, consumed: &(dyn Fn(u64) + Sync)) -> Report {
    let mut bufs = file.buffers();
    let mut truncation = None;
    let (agg, st, start) = pipeline::report(
        &file.header,
        opts,
        |_| match bufs.next() {
            Some(Ok(b)) => Some(Job::Slice(b)),
            Some(Err(e)) => Some(Job::Problem(e)),
            None => {
                truncation = bufs.truncation();
                None
            }
        },
        consumed,
    );
    let mut r = aggregate::finish(file.header.clone(), agg, st, start, opts);
    r.truncation = truncation;
    r
}

/// Reads a file from a stream (a gzip decoder, a pipe), one buffer at a time, and computes
/// every section. Memory holds a bounded number of buffers, not the file. Fails only when the
/// header cannot be read; later problems are in [`Report::problems`].
pub fn compute_stream<R: Read + Send>(r: R, opts: &Options) -> Result<Report> {
    let mut reader = StreamReader::new(r)?;
    let header = reader.header().clone();
    let mut truncation = None;
    let (agg, st, start) = pipeline::report(
        &header,
        opts,
        |v| match reader.next_buffer(v) {
            Some(Ok(b)) => Some(Job::Owned(b)),
            Some(Err(e)) => Some(Job::Problem(e)),
            None => {
                truncation = reader.truncation();
                None
            }
        },
        &|_| {},
    );
    let mut r = aggregate::finish(header, agg, st, start, opts);
    r.truncation = truncation;
    Ok(r)
}
