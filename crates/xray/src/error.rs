//! Errors: profkit-common's one [`Error`] (every format crate returns it), built here by small
//! helpers that keep XRay's wording; each carries the absolute byte offset and what was
//! expected, and callers tell failures apart by [`Error::kind`]:
//!
//! * [`ErrorKind::Truncated`]: the data ends inside the 32-byte file header, where nothing can
//!   be read (`truncated file header: needs 32 bytes, 3 available`);
//! * [`ErrorKind::Malformed`]: the bytes are there but do not make sense (`expected …, found
//!   …`), and also an instrumentation map that cannot be read, a YAML trace that is not UTF-8
//!   text or not valid YAML (these three have no offset: [`Error::known_offset`] is `None`);
//! * [`ErrorKind::Unsupported`]: a header of a type or version this crate does not read (at
//!   offset 0).
//!
//! A file cut off inside its records is not an error: readers deliver every complete record and
//! report the cut as a [`Truncation`] (`Trace::truncation`, `Decoded::truncation`, …). Only a
//! file too short for its header, where nothing can be read, is a `Truncated` error. Inside the
//! crate, an FDR record that runs past the end of the file is a `Truncated` error whose message
//! is the cut's reason (`function record needs 8 bytes, 5 remain`), which the reader turns
//! into the [`Truncation`] (`ErrorExt::to_truncation`) or, inside a buffer whose end is known,
//! into an over-read (`ErrorExt::in_buffer`).

pub use profkit_common::error::{Error, ErrorKind, Result};
pub use profkit_common::Truncation;

/// The data ends inside `what` (a file header: nothing can be read): `needed` bytes, of which
/// `available` are there.
#[cold]
pub(crate) fn truncated(
    offset: usize,
    what: &'static str,
    needed: usize,
    available: usize,
) -> Error {
    Error::new(
        ErrorKind::Truncated,
        offset as u64,
        None,
        format!("truncated {what}: needs {needed} bytes, {available} available"),
    )
}

/// A record cut by the end of the file at `offset` (see the module docs): the message is the
/// [`Truncation`]'s reason.
#[cold]
pub(crate) fn cut(offset: usize, what: &'static str, needed: usize, available: usize) -> Error {
    Error::new(
        ErrorKind::Truncated,
        offset as u64,
        None,
        format!("{what} needs {needed} bytes, {available} remain"),
    )
}

/// The bytes at `offset` do not make sense: the format requires `expected`, the data holds
/// `found`.
#[cold]
pub(crate) fn invalid(offset: usize, expected: &'static str, found: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Malformed,
        offset as u64,
        None,
        format!("expected {expected}, found {}", found.into()),
    )
}

/// A header (at offset 0) this crate does not read: unknown type or version.
#[cold]
pub(crate) fn unsupported(what: impl core::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        0,
        None,
        format!("unsupported XRay header: {what}"),
    )
}

/// The ELF file or its instrumentation map cannot be read.
#[cold]
pub(crate) fn instr_map(message: impl core::fmt::Display) -> Error {
    Error::unlocated(
        ErrorKind::Malformed,
        None,
        format!("instrumentation map: {message}"),
    )
}

/// A YAML trace that is not UTF-8 text.
#[cold]
pub(crate) fn not_text(message: impl core::fmt::Display) -> Error {
    Error::unlocated(
        ErrorKind::Malformed,
        None,
        format!("not UTF-8 text: {message}"),
    )
}

/// The YAML text cannot be read at (1-based) `line`.
#[cold]
pub(crate) fn yaml(line: usize, message: impl core::fmt::Display) -> Error {
    Error::unlocated(
        ErrorKind::Malformed,
        None,
        format!("YAML line {line}: {message}"),
    )
}

/// What XRay's readers do with an [`Error`] beyond the common face.
pub(crate) trait ErrorExt: Sized {
    /// The same error in record `index` (errors without a place in the data stay as they are).
    fn with_record(self, index: u64) -> Self;
    /// The outcome for a record that ran into the end of the file: where the cut is and what
    /// was incomplete (`None` for other errors).
    fn to_truncation(&self) -> Option<Truncation>;
    /// This error as met inside a buffer whose end is known: running out of bytes there means
    /// the record over-reads the buffer, not that the file is cut.
    fn in_buffer(self) -> Self;
}

impl ErrorExt for Error {
    fn with_record(mut self, index: u64) -> Error {
        if self.known_offset().is_some() && self.kind() != ErrorKind::Unsupported {
            self.record = Some(index);
        }
        self
    }

    fn to_truncation(&self) -> Option<Truncation> {
        self.is_truncation()
            .then(|| Truncation::new(self.offset, self.record, self.message.clone()))
    }

    fn in_buffer(self) -> Error {
        if !self.is_truncation() {
            return self;
        }
        Error::new(
            ErrorKind::Malformed,
            self.offset,
            self.record,
            format!(
                "expected a record inside its buffer's extents, found {} in the buffer",
                self.message
            ),
        )
    }
}
