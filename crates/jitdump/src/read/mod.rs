//! The read layer: zero-copy views over a jitdump in memory, and a streaming reader for a
//! file that is still being written.
//!
//! * [`JitDump::parse`] decodes the [`Header`]; [`JitDump::records`] iterates
//!   [`RawRecord`]s, each borrowing its body and carrying its index and byte offset.
//! * [`RawRecord::parse`] decodes a body into a [`Record`]; variable-length parts (DEBUG_INFO
//!   entries, DEBUG_INFO2 lists) are decoded lazily by iterators.
//! * [`FollowReader`] reads a growing file: "not enough bytes yet" is distinct from corruption.

mod bytes;
mod debug_info2;
mod follow;
mod header;
mod records;

pub use debug_info2::{
    DebugInfo2, DebugInfo2Counts, FunctionRecord, InlineCallRecord, LineRecord, Range, StringList,
};
pub use follow::FollowReader;
pub use header::{Header, JitDump};
pub use records::{
    CodeLoad, CodeMove, DebugEntries, DebugEntry, DebugInfo, DebugWalkEnd, EmbeddedSourceFile,
    JitTier, RawRecord, Record, RecordHeader, Records, UnwindingInfo,
};

pub(crate) use bytes::all_zero;
