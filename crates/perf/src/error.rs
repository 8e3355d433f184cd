//! Errors and the truncated-tail outcome.
//!
//! A perf.data file ends one of three ways: cleanly, with a **truncated tail** (a record runs
//! past the end: `perf record` was killed, the file was cut, a pipe closed early), or at a
//! **corrupt record** (its size cannot be right). A cut is not an error: every complete record
//! before it is delivered and [`Truncation`] says where the cut is (`offset` is the end of the
//! last complete record, `record` the file-order index the incomplete record would have had).
//! Corruption is an [`Error`] with the byte offset and the record index: file order for
//! framing errors, delivery (time) order for errors in a record's body. Records delivered in
//! time order out of a compressed block have no offset ([`Error::known_offset`] is `None`).
//!
//! Both are profkit-common's, shared by every format.

pub use profkit_common::error::{Error, ErrorKind, Result};
pub use profkit_common::Truncation;
