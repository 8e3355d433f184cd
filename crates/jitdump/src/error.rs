//! Errors and the truncated-tail outcome.
//!
//! A file can end three ways: cleanly, with a **truncated tail** (a record header or body
//! runs past the end: the file is still being written or its writer was killed), or at a
//! **corrupt record** (its size field cannot be right). The first two are not errors: the
//! reader delivers every complete record and [`Truncation`] says where the cut is. The third
//! is an [`Error`] carrying the byte offset, the record index and what was expected.
//! [`Truncation`] is profkit-common's, shared by every format.

use core::fmt;

/// A parse error: where it happened and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Absolute byte offset in the file of the thing that is wrong (a record's start for
    /// record-level errors, the exact field for field-level ones).
    pub offset: u64,
    /// Index of the record (0 = first record after the file header), if the error is in a record.
    pub record: Option<u64>,
    /// What was found and what was expected, e.g.
    /// `JIT_CODE_LOAD total_size 12 is below its 56-byte fixed part`.
    pub message: String,
}

impl Error {
    /// An error in the file header.
    #[cold]
    pub fn header(offset: u64, message: impl Into<String>) -> Error {
        Error {
            offset,
            record: None,
            message: message.into(),
        }
    }

    /// An error in record `index`.
    #[cold]
    pub fn record(index: u64, offset: u64, message: impl Into<String>) -> Error {
        Error {
            offset,
            record: Some(index),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record {
            Some(index) => write!(
                f,
                "record #{index} at offset {:#x}: {}",
                self.offset, self.message
            ),
            None => write!(f, "offset {:#x}: {}", self.offset, self.message),
        }
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

/// The file ends inside a record: everything before `offset` was delivered (profkit-common's
/// `Truncation`; `record` is the index the incomplete record would have had).
pub use profkit_common::Truncation;
