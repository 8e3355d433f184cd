//! The borrowed read layer: the file, its buffers, and each buffer's events.
//!
//! Every buffer restarts all delta state (time, pointer, object and method bases, the method
//! cursor) from its 48-byte header, so buffers decode independently (and in parallel).
//! Lists inside events (backtraces, GC moves, heap references, roots, sample IPs, counters)
//! are validated when the event is decoded and iterated lazily, without allocation.
//!
//! # Layout
//! * [`file`](mod@file): [`File`] (the header and the bytes) and the buffer scan, [`Buffers`] →
//!   [`Buffer`] with its [`BufferHeader`]; a bad buffer magic resyncs at the next `BUF_ID`, a
//!   cut-off buffer ends the scan.
//! * [`events`]: the event decoder, [`Events`] → [`Event`] / [`EventKind`]; the fast paths for
//!   calls ([`Events::next_call`]) and plain allocations ([`Events::next_alloc`]), and the same
//!   without their slow paths ([`Events::next_call_fast`], [`Events::next_alloc_fast`], and
//!   [`Events::next_leave_here`] for a leaf call's LEAVE) for a loop that must call nothing.
//! * [`lists`]: the lazy lists inside events: [`Frames`], [`List`] of [`Obj`], [`Ptr`],
//!   [`HeapRef`] or [`Root`].
//! * [`metadata`]: METADATA events ([`Metadata`], [`MetaAction`]).
//! * [`counters`]: COUNTERS_DESC and COUNTERS ([`CounterDesc`], [`CounterValue`]).
//!
//! Everything is re-exported here (`profkit_mlpd::read::Buffer`), and the main types at the
//! crate root (`profkit_mlpd::Buffer`).

pub mod counters;
pub mod events;
pub mod file;
pub mod lists;
pub mod metadata;

pub use counters::{CounterDesc, CounterDescs, CounterValue, CounterValues};
pub use events::{ClassRef, Event, EventKind, Events};
pub use file::{Buffer, BufferHeader, Buffers, File};
pub use lists::{Frames, HeapRef, List, Obj, Ptr, Root};
pub use metadata::{MetaAction, Metadata};
