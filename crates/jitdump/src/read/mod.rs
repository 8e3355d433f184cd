//! The read layer: zero-copy views over a jitdump in memory, and a streaming reader for a
//! file that is still being written.
//!
//! * [`JitDump::parse`] decodes the [`Header`]; [`JitDump::records`] iterates
//!   [`RawRecord`]s, each borrowing its body and carrying its index and byte offset.
//! * [`RawRecord::parse`] decodes a body into a [`Record`]; variable-length parts (DEBUG_INFO
//!   entries, DEBUG_INFO2 lists) are decoded lazily by iterators.
//! * [`FollowReader`] reads a growing file: "not enough bytes yet" is distinct from corruption.
//! * [`RecordSource`] walks the records of a dump in memory ([`JitDump::source`]) or of a
//!   stream ([`StreamRecords`]: a gzip file, a pipe) with one interface.

mod bytes;
mod debug_info2;
mod follow;
mod header;
mod records;
mod stream;

pub use debug_info2::{
    DebugInfo2, DebugInfo2Counts, FunctionRecord, InlineCallRecord, LineRecord, Range, StringList,
};
pub use follow::FollowReader;
pub use header::{Header, JitDump};
pub use records::{
    CodeLoad, CodeMove, DebugEntries, DebugEntry, DebugInfo, DebugWalkEnd, EmbeddedSourceFile,
    JitTier, RawRecord, Record, RecordHeader, Records, UnwindingInfo,
};

pub use stream::{RecordSource, SliceRecords, StreamRecords, MAX_STREAM_RECORD};

pub(crate) use bytes::all_zero;
