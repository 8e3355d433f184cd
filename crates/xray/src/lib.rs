//! LLVM XRay traces and instrumentation maps: read, write, verify.
//!
//! # The formats
//! Every trace starts with a 32-byte [`FileHeader`]: `u16 version`, `u16 type` (0 basic, 1 FDR),
//! a bitfield (bit 0 constant TSC, bit 1 non-stop TSC), the cycle frequency, and for FDR the
//! per-thread buffer size. **Basic mode** (versions 1–3) follows with 32-byte records holding an
//! absolute TSC, thread, pid (v3) and function id, plus arg-payload records. **Flight Data Recorder
//! mode** (versions 1–5) follows with buffers: since version 2 each is announced by a
//! `BufferExtents` record, then a block `NewBuffer, WalltimeMarker, [Pid], NewCPUId, …` of 8-byte
//! function records (28-bit function id, kind, 32-bit TSC delta) and 16-byte metadata records
//! (`NewCPUId`, `TSCWrap`, `CallArgument`, `CustomEventMarker` + payload, `TypedEventMarker` +
//! payload, …). The **instrumentation map** (`xray_instr_map` in the ELF binary) lists the sleds;
//! function ids count the distinct functions in section order from 1.
//!
//! # API layout
//! * [`raw`]: constants and open tag newtypes ([`MetadataKind`], [`FunctionKind`], [`SledKind`] …);
//!   unknown values pass through and are reported, never a panic.
//! * [`read`]: the borrowed, zero-copy layer over `&[u8]`: [`FileHeader::parse`],
//!   [`BasicRecords`], [`FdrLayout::scan`] (buffers, junk skips, the cut of a truncated file)
//!   and [`FdrRecords`] (every record with its absolute offset), and [`Trace`], whose
//!   [`Trace::decode`] gives per-thread [`Event`]s (enter / exit / tail exit / enter-arg /
//!   custom / typed, with absolute TSC, cpu, pid, args, payloads), decoding FDR buffers in
//!   parallel.
//! * The fast path for analyses: [`Trace::thread_buffers`] groups FDR buffers per thread (in
//!   file order); [`Trace::buffer_events`] decodes one buffer lazily from a [`ThreadState`], and
//!   [`BufferEvents::visit_calls`] hands its function records to a closure as [`CallRecord`]s
//!   (one 8-byte load each), returning anything else as a [`BufferItem`].
//! * A file cut inside its records is an outcome, not an error: every complete record is read
//!   and [`Trace::truncation`] / [`Decoded::truncation`] (a [`Truncation`] of profkit-common)
//!   say where the cut is.
//! * [`verify()`]: the FDR block grammar and per-version checks, with offsets and record
//!   indices, as a [`Validation`] whose codes are [`verify::codes::ALL`].
//! * [`summary()`]: what `profkit info` shows (a [`Summary`]); [`dump`](mod@dump): one line per
//!   record (`llvm-xray fdr-dump` text, llvm's YAML record lines, NDJSON).
//! * [`format`]: [`XRAY`], [`XRAY_PROFILE`] and [`XRAY_YAML`], the crate's faces for `profkit`
//!   (profkit-common's [`InputFormat`](profkit_common::InputFormat)).
//! * [`write`](mod@write): writers for FDR v1–v5 and basic v1–v3 (raw records and whole traces).
//! * [`instr_map`]: the instrumentation map from an ELF file (x86-64, aarch64, …; sled
//!   versions 0–2; relocations in PIE), symbolization (DWARF, then the symbol table; demangled:
//!   profkit-native's llvm-symbolizer mode), and llvm-xray `extract` YAML in and out.
//! * [`profile`]: **profiling mode** (`xray_mode=xray-profiling`), a format of its own:
//!   per-thread call trees with call counts and inclusive TSC time per call path. Read
//!   ([`profile::Profile`]), write, verify, summary, dump.
//! * [`yaml`]: traces as llvm-xray's YAML ([`yaml::write_yaml`], parallel and streaming; read
//!   back with [`yaml::read_yaml`], payloads lossless), and the flow-map subset of YAML
//!   llvm-xray writes, with LLVM's quoting rules.
//!
//! # Where this differs from llvm-xray 14 (on purpose)
//! * A thread's FDR blocks stay in file order (llvm sorts them with an invalid comparator).
//! * Custom and typed events have function id 0 and event type only on typed events (llvm
//!   repeats the previous function's id and lets a typed event's type stick to later records).
//! * Version 1–3 custom events read their own layout (llvm reads them with the v5 layout).
//! * FDR v2 blocks have pid 0 (unknown); llvm sets pid = tid.
//! * Kind-5 (typed event) sleds load; a header-only basic file is an empty trace, not an error.
//! * Junk between buffers is reported with offset and length; a resync needs a BufferExtents
//!   followed by a NewBuffer, not just any `0x0F` byte.
//!
//! ```
//! use profkit_xray::{write, FileHeader, Trace, EventKind};
//! let mut w = write::FdrTraceWriter::new(FileHeader::fdr(5));
//! let ev = write::OwnedEvent::function(EventKind::Enter, 1, 100);
//! w.thread(7, 42, &[ev]);
//! let bytes = w.finish();
//! let trace = Trace::parse(&bytes).unwrap();
//! let decoded = trace.decode();
//! assert_eq!(decoded.threads[0].events[0].func_id, 1);
//! ```

pub mod dump;
pub mod error;
pub mod format;
#[doc(hidden)]
pub mod harness;
pub mod instr_map;
pub mod profile;
pub mod raw;
pub mod read;
mod summary;
pub mod verify;
pub mod write;
pub mod yaml;

pub use error::{Error, ErrorKind, Result, Truncation};
pub use format::{XRAY, XRAY_PROFILE, XRAY_YAML};
pub use instr_map::{InstrMap, Sled, SymbolInfo, Symbolizer};
pub use profkit_common::{Finding, Severity, Summary, Validation};
pub use raw::{BasicRecordType, Endian, FunctionKind, MetadataKind, SledKind, TraceType};
pub use read::basic::{BasicItem, BasicRecord, BasicRecords};
pub use read::basic_layout::{BasicChunk, BasicLayout, ChunkItem, CHUNK_RECORDS};
pub use read::events::{
    Args, BufferEvents, BufferItem, CallRecord, Decoded, Event, EventKind, ThreadEvents, ThreadKey,
    ThreadState, Trace,
};
pub use read::fdr::{
    split_packed_id, Buffer, CustomEventTime, FdrEntry, FdrItem, FdrLayout, FdrRecord, FdrRecords,
    Segment, Skip, SkipKind,
};
pub use read::header::FileHeader;
pub use summary::summary;
pub use verify::{verify, BlockState};
