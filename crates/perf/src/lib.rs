//! Read and validate **perf.data** files (`perf record`, file and pipe mode), on the
//! linux-perf-data crate.
//!
//! A perf.data file is a header, the attrs (one `perf_event_attr` per event), a data section of
//! records (samples, mmaps, comms, forks …, in per-CPU order with FINISHED_ROUND markers) and
//! feature sections (build ids, cmdline, hostname, CLOCK_DATA …). Pipe mode (`perf record -o -`)
//! has a 16-byte header and sends attrs and features as records.
//!
//! * [`read`]: [`PerfData`] (a file in memory, either mode) and [`PerfStream`] (a pipe-mode
//!   stream) give the [`Meta`] ([`Header`], [`Attr`]s, [`Features`]) and a lending iterator of
//!   time-ordered [`Event`]s ([`Events::next_event`]) with borrowed, typed bodies: [`Sample`]
//!   (callchain with [`Callchain::frames`] / [`Callchain::split`], user regs and stack), [`Mmap`],
//!   [`Comm`], fork/exit [`Task`]s, [`Lost`]. A cut file yields every complete record and a
//!   [`Truncation`]; a corrupt record ends the walk with an [`Error`] at its offset.
//! * [`jit`]: per process, the jitdump marker mmaps and anonymous executable mappings.
//! * [`mod@validate`], [`summary()`] and [`mod@dump`]: what `profkit validate`, `info` and
//!   `dump` show; [`format`]: [`PERF`], the crate's face for `profkit` (profkit-common's
//!   [`InputFormat`](profkit_common::InputFormat)).
//! * [`mod@write`]: a file-mode perf.data from a recording with records merged in time order
//!   ([`Insert`], [`Mmap2`]) and build ids added ([`BuildIdEntry`]): what `profkit inject`
//!   writes.
//!
//! ```no_run
//! use profkit_perf::{EventData, PerfData};
//! # let bytes: Vec<u8> = Vec::new();
//! let data = PerfData::parse(&bytes)?;
//! let mut events = data.events()?;
//! let mut samples = 0;
//! while let Some(ev) = events.next_event() {
//!     if let EventData::Sample(s) = ev?.data {
//!         samples += 1;
//!         let _user_frames = s.callchain.map(|c| c.split().user);
//!     }
//! }
//! if let Some(cut) = events.truncation() {
//!     eprintln!("warning: {cut}");
//! }
//! # Ok::<(), profkit_perf::Error>(())
//! ```

pub mod dump;
pub mod error;
pub mod format;
pub mod jit;
pub mod raw;
pub mod read;
pub mod scan;
pub mod summary;
pub mod validate;
pub mod write;

pub use error::{Error, ErrorKind, Result, Truncation};
pub use format::PERF;
pub use jit::{JitMarker, JitScan, ProcessJit};
pub use raw::RecordType;
pub use read::{
    Attr, BuildId, Callchain, ClockData, Comm, Context, Endian, Event, EventData, Events, Features,
    Frame, Header, Lost, Meta, Mmap, Mode, Outcome, PerfData, PerfStream, Sample, SplitChain, Task,
    UserRegs, UserStack, MAX_WINDOW_INFLATED, MAX_WINDOW_RECORDS,
};
pub use scan::Scan;
pub use summary::summary;
pub use validate::{validate, Finding, Severity, Validation};
pub use write::{
    write, BuildIdEntry, FileWriter, Insert, Mmap2, SampleId, WriteOptions, WriteStats,
};

/// The JIT facts of a recording in memory: every process with a jitdump marker or anonymous
/// executable mappings (one pass over the events; the model can instead feed a [`JitScan`]
/// while it walks).
pub fn jit_processes(data: &PerfData<'_>) -> Result<(Vec<ProcessJit>, Outcome)> {
    let mut scan = JitScan::new();
    let outcome = data.events()?.for_each(|ev| scan.observe(ev));
    Ok((scan.processes(), outcome))
}
