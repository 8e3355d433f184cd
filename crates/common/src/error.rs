//! The one parse error of the format crates: where it happened (the absolute byte offset and
//! the record), what kind of failure it is, and what was found and expected.
//!
//! As wasmparser's `BinaryReaderError`, an [`Error`] is one word (a box): `Result<T, Error>`
//! stays small on the hot paths that never fail, and building one is `#[cold]`. Its fields are
//! read through the box (`e.offset`, `e.record`, `e.message`); callers that must tell failures
//! apart match [`Error::kind`] (an [`ErrorKind`]), or, finer, the format's stable
//! [`code`](ErrorInner::code) when it sets one, never the text. Every format crate (jitdump,
//! perf, xray, mlpd) returns this error.
//!
//! A file cut inside its records is not an error: readers deliver every complete record and
//! report the cut as a [`Truncation`](crate::Truncation). An error ends what was being read.
//!
//! ```
//! use profkit_common::{Error, ErrorKind};
//! let e = Error::record(3, 0x40, "JIT_CODE_LOAD total_size 12 is below its 56-byte fixed part");
//! assert_eq!(e.to_string(), "record #3 at offset 0x40: JIT_CODE_LOAD total_size 12 is below its 56-byte fixed part");
//! assert_eq!((e.offset, e.record, e.kind), (0x40, Some(3), ErrorKind::Malformed));
//! ```

use core::fmt;
use core::ops::{Deref, DerefMut};

/// What kind of failure an [`Error`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are there but cannot be right (a bad magic, a size that does not fit).
    Malformed,
    /// The data ends inside what had to be read whole (a file header).
    Truncated,
    /// A version or variant this crate does not read.
    Unsupported,
    /// Reading the underlying stream failed.
    Io,
}

/// Where and what: the fields of an [`Error`], reached through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorInner {
    /// What kind of failure it is.
    pub kind: ErrorKind,
    /// Absolute byte offset of what is wrong (a record's start for record-level errors, the
    /// exact field for field-level ones); 0 when it is not known (see [`Error::known_offset`]).
    pub offset: u64,
    /// Index of the record the error is in, when it is in one (the format says how it counts).
    pub record: Option<u64>,
    /// What was found and what was expected, e.g. `total_size 12 is below its 56-byte fixed
    /// part`.
    pub message: String,
    /// Where, in the format's own words, when a record index does not say it (Mono's
    /// `buffer #3, event #17`: its buffers decode apart, so an event's index in the file is not
    /// known there). Shown in place of `record #N`; set with [`Error::within`].
    pub context: Option<String>,
    /// The format's stable code for this failure (the code its `validate` reports it under,
    /// e.g. `leb-too-long`), when it tells failures of one [`ErrorKind`] apart; set with
    /// [`Error::with_code`].
    pub code: Option<&'static str>,
    /// Whether `offset` is known (records delivered out of a compressed block have none).
    located: bool,
}

/// A parse error: one word, the details behind it (see the module docs).
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorInner>);

impl Error {
    /// A `kind` error at `offset` in record `record`.
    #[cold]
    pub fn new(
        kind: ErrorKind,
        offset: u64,
        record: Option<u64>,
        message: impl Into<String>,
    ) -> Error {
        Error(Box::new(ErrorInner {
            kind,
            offset,
            record,
            message: message.into(),
            context: None,
            code: None,
            located: true,
        }))
    }

    /// A malformed file header (or another part outside the records) at `offset`.
    #[cold]
    pub fn header(offset: u64, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Malformed, offset, None, message)
    }

    /// A malformed record `index` at `offset`.
    #[cold]
    pub fn record(index: u64, offset: u64, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Malformed, offset, Some(index), message)
    }

    /// An error in record `index` whose offset is not known.
    #[cold]
    pub fn unlocated(kind: ErrorKind, record: Option<u64>, message: impl Into<String>) -> Error {
        let mut e = Error::new(kind, 0, record, message);
        e.0.located = false;
        e
    }

    /// The same error as another kind.
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.0.kind = kind;
        self
    }

    /// The same error, placed by `context` (see [`ErrorInner::context`]).
    #[must_use]
    pub fn within(mut self, context: impl Into<String>) -> Error {
        self.0.context = Some(context.into());
        self
    }

    /// The same error with the format's code for it (see [`ErrorInner::code`]).
    #[must_use]
    pub fn with_code(mut self, code: &'static str) -> Error {
        self.0.code = Some(code);
        self
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The byte offset, `None` when it is not known.
    pub fn known_offset(&self) -> Option<u64> {
        self.0.located.then_some(self.0.offset)
    }

    /// Whether the data simply ended (a cut file), not corruption.
    pub fn is_truncation(&self) -> bool {
        self.0.kind == ErrorKind::Truncated
    }
}

impl Deref for Error {
    type Target = ErrorInner;
    fn deref(&self) -> &ErrorInner {
        &self.0
    }
}

impl DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorInner {
        &mut self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `record #N at offset 0x…: message` (the context in place of `record #N` when there is
/// one), leaving out what is not known.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = &self.context {
            return match self.known_offset() {
                Some(o) => write!(f, "{c} at offset {o:#x}: {}", self.message),
                None => write!(f, "{c}: {}", self.message),
            };
        }
        match (self.record, self.known_offset()) {
            (Some(i), Some(o)) => write!(f, "record #{i} at offset {o:#x}: {}", self.message),
            (Some(i), None) => write!(f, "record #{i}: {}", self.message),
            (None, Some(o)) => write!(f, "offset {o:#x}: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

/// `Result` with the common [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_size() {
        assert_eq!(size_of::<Error>(), size_of::<usize>());
        assert_eq!(
            Error::record(3, 0x40, "size 4 is below 8").to_string(),
            "record #3 at offset 0x40: size 4 is below 8"
        );
        let e = Error::unlocated(ErrorKind::Malformed, Some(3), "x");
        assert_eq!(e.to_string(), "record #3: x");
        assert_eq!(e.known_offset(), None);
        assert_eq!(Error::header(8, "bad").to_string(), "offset 0x8: bad");
        assert_eq!(
            Error::unlocated(ErrorKind::Unsupported, None, "plain").to_string(),
            "plain"
        );
        let t = Error::header(0, "cut").with_kind(ErrorKind::Truncated);
        assert!(t.is_truncation());
        let m = Error::header(0x3f20, "bad count: 9")
            .within("buffer #3, event #17")
            .with_code("bad-value");
        assert_eq!(
            m.to_string(),
            "buffer #3, event #17 at offset 0x3f20: bad count: 9"
        );
        assert_eq!(m.code, Some("bad-value"));
    }
}
