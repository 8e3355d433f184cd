//! What a recorded process's JIT code was, for every crate that names JIT addresses: the
//! model's perf.data driver, `profkit inject` and a recorder.
//!
//! * [`codemap`]: [`CodeMap`], the timeline of JIT code regions of a jitdump (loads, moves,
//!   address reuse, close) or of perf map entries, answering address@time → function, inline
//!   frames, file:line, JIT tier and unwinding info.
//! * [`discovery`]: where a recording's `jit-<pid>.dump` and `perf-<pid>.map` are
//!   ([`JitSearch`]: the marker mmap's path, beside perf.data, `/tmp`, `--jit-dir`, files
//!   named on the command line) and loading them ([`load_jitdump`], with each region's code
//!   bytes [`load_jitdump_with_code`]; [`load_perf_map`], owner-checked and streamed).
//!
//! The format itself (records, perf map lines, the DEBUG_INFO bias decision) is
//! profkit-jitdump's; this crate knows what the records mean over time and where a
//! recording's files are.

pub mod codemap;
pub mod discovery;

pub use codemap::{CodeMap, Frame, FuncTier, Region, Symbolized};
pub use discovery::{
    load_jitdump, load_jitdump_with_code, load_perf_map, JitSearch, LoadedDump, LoadedMap,
};
