//! Read, write and validate **perf jitdump** files and **perf map** files.
//!
//! A jitdump is a 40-byte file header (magic `JiTD`, in the writer's byte order) followed by
//! records, each a 16-byte header (id, total size, timestamp) and a body: JIT_CODE_LOAD (a
//! function's name and code), JIT_CODE_MOVE, JIT_CODE_DEBUG_INFO (a line table),
//! JIT_CODE_CLOSE, JIT_CODE_UNWINDING_INFO (`.eh_frame`), and samply's extension records
//! SAMPLY_JIT_CODE_DEBUG_INFO2 (line table + inline tree), SAMPLY_JIT_TIER and
//! SAMPLY_EMBEDDED_SOURCE_FILE. A perf map is text: `START SIZE name` per line.
//!
//! The crate is laid out like gimli and object:
//!
//! * [`raw`]: on-disk constants, [`Endian`], the open newtype [`RecordType`].
//! * [`read`]: zero-copy [`JitDump`] → [`Records`] → [`RawRecord`] → [`Record`], and a
//!   [`FollowReader`] for files still being written; [`RecordSource`] walks the records of a
//!   dump in memory or of a stream ([`StreamRecords`], one record in memory at a time). Nothing is allocated per record and no
//!   size field is trusted before it is checked against the bytes that remain; a cut-off file
//!   yields every complete record plus a [`Truncation`].
//! * [`mod@write`]: [`JitDumpWriter`] for every record kind, either byte order; [`JitDumpFile`]
//!   creates `jit-<pid>.dump` the way `perf record` expects; [`DebugInfo2Builder`] makes a
//!   DEBUG_INFO2 body from an inline tree.
//! * [`mod@validate`]: spec violations and named producer quirks, each with a stable code, as
//!   profkit-common's [`Validation`].
//! * [`lines`]: where DEBUG_INFO addresses really are — the one decision about a dump's
//!   address bias (V8's +0x40) and the producers' terminators and early entries.
//! * [`perfmap`]: perf map reader, writer, validator, and [`perfmap::MapBuilder`], the one
//!   meaning of a perf map profkit writes (the code live at the end).
//! * [`convert`]: jitdump ↔ perf map, jitdump → jitdump in the other byte order.
//! * [`summary()`] and [`mod@dump`]: what `profkit info` and `profkit dump` show.
//! * [`format`]: [`JITDUMP`] and [`PERF_MAP`], the crate's face for `profkit` (profkit-common's
//!   [`InputFormat`](profkit_common::InputFormat)).
//!
//! ```
//! use profkit_jitdump::{JitDump, Record};
//! # let bytes = profkit_jitdump::write::example_dump();
//! let dump = JitDump::parse(&bytes)?;
//! let loads = dump
//!     .records()
//!     .filter_map(|r| r.ok()?.parse().ok())
//!     .filter(|r| matches!(r, Record::CodeLoad(_)))
//!     .count();
//! assert_eq!(loads, 1);
//! # Ok::<(), profkit_jitdump::Error>(())
//! ```

pub mod convert;
pub mod dump;
pub mod error;
pub mod format;
pub mod lines;
pub mod perfmap;
pub mod raw;
pub mod read;
pub mod summary;
pub mod validate;
pub mod write;

pub use error::{Error, ErrorKind, Result, Truncation};
pub use format::{JITDUMP, PERF_MAP};
pub use raw::{Endian, RecordType};
pub use read::{
    CodeLoad, CodeMove, DebugEntry, DebugInfo, DebugInfo2, EmbeddedSourceFile, FollowReader,
    Header, JitDump, JitTier, RawRecord, Record, RecordSource, Records, StreamRecords,
    UnwindingInfo,
};
pub use summary::{summary, summary_of, Scan};
pub use validate::{validate, Finding, Severity, Validation};
pub use write::{
    CodeLoadData, DebugInfo2Builder, DebugInfo2Data, HeaderOptions, InlineCall, JitDumpFile,
    JitDumpWriter,
};
