//! Mono log profiler files (`.mlpd`): read every header major (0-3) and data version (1-17),
//! write any data version, validate, summarize and dump (mprof-report's sections are
//! computed by profkit-model's `mono_report`, on the model's buffer-parallel replay).
//!
//! # The format in five lines
//! A file is a header (layout by major version) then buffers; each buffer is a 48-byte header
//! (`BUF_ID`, length, time/pointer/object/method bases, thread id) and events of one thread.
//! An event is a byte (`exinfo | type`), usually a ULEB time delta, then ULEB/SLEB fields,
//! bytes and NUL-terminated strings. Pointers are SLEB deltas from the buffer's bases; methods
//! use a running cursor shared with backtraces; objects are `(addr >> 3) - obj_base`.
//!
//! # API layout
//! * [`raw`]: on-disk constants with log.h's names (`TYPE_METHOD | TYPE_ENTER`, or
//!   `raw::event::METHOD_ENTER` in patterns) and the per-version table of defined events.
//! * [`read`]: [`File`] → [`Buffers`] → [`Buffer::events`] → [`Event`] (borrowed, lazy lists);
//!   a file cut inside a buffer is a [`Truncation`](profkit_common::Truncation)
//!   ([`Buffers::truncation`]); errors name their offset, buffer and event ([`Error`]).
//! * [`write`](mod@write): [`write::Writer`] encodes any data version.
//! * [`validate`]: spec violations and producer quirks as [`profkit_common::Validation`], with
//!   stable codes ([`validate::codes::ALL`]).
//! * [`summary`]: what `profkit info` shows, as a [`profkit_common::Summary`].
//! * [`dump`]: the text and NDJSON lines of `profkit dump`.
//! * [`open`]: gzip detection and decompression.
//! * [`stream`]: [`stream::StreamReader`] reads a file (e.g. a gzip stream) one buffer at a time.
//! * [`source`]: [`source::BufferSource`] walks the buffers of a [`File`] in memory or of a
//!   stream with one interface (what `summary`, `validate` and `dump` take).
//! * [`format`]: [`MLPD`], the crate's face for `profkit` (profkit-common's
//!   [`InputFormat`](profkit_common::InputFormat)).
//!
//! ```
//! use profkit_mlpd::{write::Writer, File, EventKind, Header};
//! let mut w = Writer::new(Header { major: 3, data_version: 17, ptrsize: 8, ..Header::default() });
//! let mut b = w.buffer(0x7f00, 1000);
//! b.enter(1010, 0x5000);
//! b.leave(1020, 0x5000);
//! b.finish();
//! let bytes = w.into_bytes();
//! let f = File::parse(&bytes).unwrap();
//! let buf = f.buffers().next().unwrap().unwrap();
//! let evs: Vec<_> = buf.events().map(|e| e.unwrap()).collect();
//! assert!(matches!(evs[1].kind, EventKind::Leave { method: 0x5000 }));
//! assert_eq!(evs[1].time, 1020);
//! ```

pub mod cursor;
pub mod dump;
pub mod error;
pub mod format;
pub mod header;
pub mod open;
pub mod raw;
pub mod read;
pub mod source;
pub mod stream;
pub mod summary;
pub mod validate;
pub mod write;

pub use error::{Error, ErrorKind, Result};
pub use format::MLPD;
pub use header::Header;
pub use read::{
    Buffer, BufferHeader, Buffers, ClassRef, Event, EventKind, Events, File, Frames, MetaAction,
    Metadata,
};
