//! Errors: every one carries the absolute byte offset in the (decompressed) file and, inside a
//! buffer, the record it is about.
//!
//! # Records
//! A Mono file's records are its events. Buffers decode independently (in parallel), so a
//! decoder knows an event by its buffer's index in the file and its own index in that buffer,
//! not by its index in the whole file: an [`Error`] carries both (`buffer #3, event #17 at
//! offset 0x3f20: …`), counted from 0, errors and bad buffer magics not counted. Scans in file
//! order (`validate`, `summary`) also give the event's index in the file, the
//! [`Finding::record`](profkit_common::Finding::record) and
//! [`Truncation::record`](profkit_common::Truncation::record): the number of events decoded
//! before it.

use std::fmt;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file does not start with `01 5A 50 4D`.
    BadMagic(u32),
    /// A buffer does not start with `01 4C 50 4D`.
    BadBufferMagic(u32),
    /// The data ends inside a field, event or buffer (a file cut off while being written).
    Truncated(&'static str),
    /// A field runs past the end of its buffer.
    PastBuffer(&'static str),
    /// A LEB128 number longer than 10 bytes.
    LebTooLong,
    /// A string without its NUL terminator inside the buffer.
    UnterminatedString,
    /// An event byte whose (type, exinfo) this data version does not define.
    UnknownEvent {
        /// The event byte.
        byte: u8,
        /// Data version of the file.
        version: u8,
    },
    /// A field value out of its range (count larger than the bytes left, bad enum).
    BadValue(&'static str, u64),
    /// Data version outside 1-17 (or 7).
    UnsupportedVersion(u8),
    /// The underlying stream failed (a corrupt or cut-off gzip stream, an I/O error).
    Io(String),
}

/// An error at a file offset, in a buffer and an event when it is about one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    /// Absolute byte offset in the decompressed file.
    pub offset: u64,
    /// Index in the file of the buffer the error is in (or of the buffer expected where the
    /// scan found a bad magic); `None` for the file header.
    pub buffer: Option<u64>,
    /// Index in its buffer of the event the error is in; `None` outside events (the file and
    /// buffer headers).
    pub event: Option<u64>,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// An error at `offset`, in no buffer or event yet.
    #[cold]
    pub fn new(offset: u64, kind: ErrorKind) -> Self {
        Error {
            offset,
            buffer: None,
            event: None,
            kind,
        }
    }

    /// The same error, placed in buffer `buffer` (and event `event` of it).
    #[cold]
    pub(crate) fn at(mut self, buffer: u64, event: Option<u64>) -> Self {
        self.buffer = Some(buffer);
        self.event = event;
        self
    }

    /// True when the data simply ended (a truncated file), not corruption.
    pub fn is_truncation(&self) -> bool {
        matches!(self.kind, ErrorKind::Truncated(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.buffer, self.event) {
            (Some(b), Some(e)) => {
                write!(f, "buffer #{b}, event #{e} at offset {:#x}: ", self.offset)?
            }
            (Some(b), None) => write!(f, "buffer #{b} at offset {:#x}: ", self.offset)?,
            _ => write!(f, "offset {:#x}: ", self.offset)?,
        }
        self.kind.fmt(f)
    }
}

impl fmt::Display for ErrorKind {
    /// What went wrong, without the position.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::BadMagic(m) => write!(f, "bad file magic {m:#010x} (expected 0x4d505a01)"),
            ErrorKind::BadBufferMagic(m) => {
                write!(f, "bad buffer magic {m:#010x} (expected 0x4d504c01)")
            }
            ErrorKind::Truncated(what) => write!(f, "file ends inside {what}"),
            ErrorKind::PastBuffer(what) => write!(f, "{what} runs past the end of its buffer"),
            ErrorKind::LebTooLong => write!(f, "LEB128 number longer than 10 bytes"),
            ErrorKind::UnterminatedString => write!(f, "string has no NUL inside its buffer"),
            ErrorKind::UnknownEvent { byte, version } => write!(
                f,
                "unknown event byte {byte:#04x} (type {}, exinfo {:#04x}) for data version {version}; rest of buffer skipped",
                byte & crate::raw::TYPE_MASK,
                byte & crate::raw::EXINFO_MASK
            ),
            ErrorKind::BadValue(what, v) => write!(f, "bad {what}: {v}"),
            ErrorKind::UnsupportedVersion(v) => {
                write!(f, "unsupported data version {v} (profkit reads 1-17)")
            }
            ErrorKind::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

/// `Result<T, Error>`.
pub type Result<T> = std::result::Result<T, Error>;
