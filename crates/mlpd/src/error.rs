//! Errors: profkit-common's one [`Error`] (every format crate returns it), built here by small
//! helpers that keep the Mono wording. Every one carries the absolute byte offset in the
//! (decompressed) file; callers tell failures apart by [`Error::kind`] (a cut file is
//! [`ErrorKind::Truncated`], a data version this crate does not read
//! [`ErrorKind::Unsupported`], a failing stream [`ErrorKind::Io`], the rest
//! [`ErrorKind::Malformed`]) and, finer, by [`code`](profkit_common::error::ErrorInner::code):
//! the [`validate` code](crate::validate::codes) the failure is reported under
//! (`leb-too-long`, `unknown-event`, …; none for [`ErrorKind::Io`]).
//!
//! # Records
//! A Mono file's records are its events. Buffers decode independently (in parallel), so a
//! decoder knows an event by its buffer's index in the file and its own index in that buffer,
//! not by its index in the whole file: an error inside a buffer carries both as its
//! [`context`](profkit_common::error::ErrorInner::context) (`buffer #3, event #17 at offset
//! 0x3f20: …`, or `buffer #3 at offset …` for its header), counted from 0, errors and bad
//! buffer magics not counted, and no [`record`](profkit_common::error::ErrorInner::record).
//! Scans in file order (`validate`, `summary`) also give the event's index in the file, the
//! [`Finding::record`](profkit_common::Finding::record) and
//! [`Truncation::record`](profkit_common::Truncation::record): the number of events decoded
//! before it.

pub use profkit_common::error::{Error, ErrorKind, Result};

use crate::validate::codes;

/// The message of a [`truncated`] error before its `what`.
const ENDS_INSIDE: &str = "file ends inside ";

/// The file does not start with `01 5A 50 4D` (`magic` is what it starts with).
#[cold]
pub fn bad_magic(magic: u32) -> Error {
    Error::header(
        0,
        format!("bad file magic {magic:#010x} (expected 0x4d505a01)"),
    )
    .with_code(codes::HEADER_INVALID)
}

/// The buffer at `offset` does not start with `01 4C 50 4D`.
#[cold]
pub fn bad_buffer_magic(offset: u64, magic: u32) -> Error {
    Error::header(
        offset,
        format!("bad buffer magic {magic:#010x} (expected 0x4d504c01)"),
    )
    .with_code(codes::BAD_BUFFER_MAGIC)
}

/// The data ends at `offset` inside `what` (a field, event or buffer: a file cut off while
/// being written).
#[cold]
pub fn truncated(offset: u64, what: &'static str) -> Error {
    Error::new(
        ErrorKind::Truncated,
        offset,
        None,
        format!("{ENDS_INSIDE}{what}"),
    )
    .with_code(codes::PAST_BUFFER)
}

/// A field (`what`) at `offset` runs past the end of its buffer.
#[cold]
pub fn past_buffer(offset: u64, what: &'static str) -> Error {
    Error::header(offset, format!("{what} runs past the end of its buffer"))
        .with_code(codes::PAST_BUFFER)
}

/// A LEB128 number at `offset` longer than 10 bytes.
#[cold]
pub fn leb_too_long(offset: u64) -> Error {
    Error::header(offset, "LEB128 number longer than 10 bytes").with_code(codes::LEB_TOO_LONG)
}

/// A string at `offset` without its NUL terminator inside the buffer.
#[cold]
pub fn unterminated_string(offset: u64) -> Error {
    Error::header(offset, "string has no NUL inside its buffer")
        .with_code(codes::UNTERMINATED_STRING)
}

/// An event byte at `offset` whose (type, exinfo) data version `version` does not define.
#[cold]
pub fn unknown_event(offset: u64, byte: u8, version: u8) -> Error {
    Error::header(
        offset,
        format!(
            "unknown event byte {byte:#04x} (type {}, exinfo {:#04x}) for data version {version}; rest of buffer skipped",
            byte & crate::raw::TYPE_MASK,
            byte & crate::raw::EXINFO_MASK
        ),
    )
    .with_code(codes::UNKNOWN_EVENT)
}

/// A field value out of its range (a count larger than the bytes left, a bad enum).
#[cold]
pub fn bad_value(offset: u64, what: &'static str, value: u64) -> Error {
    Error::header(offset, format!("bad {what}: {value}")).with_code(codes::BAD_VALUE)
}

/// A data version outside 1-17 (or 7), read at `offset`.
#[cold]
pub fn unsupported_version(offset: u64, version: u8) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        offset,
        None,
        format!("unsupported data version {version} (profkit reads 1-17)"),
    )
    .with_code(codes::UNSUPPORTED_VERSION)
}

/// The underlying stream failed at `offset` (a corrupt or cut-off gzip stream, an I/O error).
#[cold]
pub fn io(offset: u64, e: impl core::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, offset, None, format!("{READ_ERROR}{e}"))
}

/// The message of an [`io`] error before its cause.
const READ_ERROR: &str = "read error: ";

/// What an [`io`] error says failed.
pub(crate) fn io_cause(e: &Error) -> Option<&str> {
    if e.kind() == ErrorKind::Io {
        e.message.strip_prefix(READ_ERROR)
    } else {
        None
    }
}

/// What a [`truncated`] error says the file ends inside (`file header`, `header args`, …).
pub(crate) fn truncated_inside(e: &Error) -> Option<&str> {
    if e.is_truncation() {
        e.message.strip_prefix(ENDS_INSIDE)
    } else {
        None
    }
}

/// Placing an [`Error`] in a buffer.
pub(crate) trait ErrorExt {
    /// The same error, placed in buffer `buffer` (and event `event` of it).
    fn at(self, buffer: u64, event: Option<u64>) -> Self;
}

impl ErrorExt for Error {
    #[cold]
    fn at(self, buffer: u64, event: Option<u64>) -> Error {
        match event {
            Some(e) => self.within(format!("buffer #{buffer}, event #{e}")),
            None => self.within(format!("buffer #{buffer}")),
        }
    }
}
