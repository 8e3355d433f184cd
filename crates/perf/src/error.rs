//! Errors and the truncated-tail outcome.
//!
//! A perf.data file ends one of three ways: cleanly, with a **truncated tail** (a record runs
//! past the end: `perf record` was killed, the file was cut, a pipe closed early), or at a
//! **corrupt record** (its size cannot be right). A cut is not an error: every complete record
//! before it is delivered and [`Truncation`] says where the cut is. Corruption is an [`Error`]
//! with the byte offset and the record index (in file order) where it was found.

use core::fmt;

/// profkit-common's truncation outcome: `offset` is the end of the last complete record,
/// `record` the file-order index the incomplete record would have had.
pub use profkit_common::Truncation;

/// A parse error: where it happened and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Absolute byte offset of what is wrong, when it is known (records delivered in time
    /// order out of a compressed block have none).
    pub offset: Option<u64>,
    /// Index of the record: file order for framing errors, delivery (time) order for errors
    /// in a record's body.
    pub record: Option<u64>,
    /// What was found and what was expected.
    pub message: String,
}

impl Error {
    /// An error in the file header, an attr or a feature section.
    #[cold]
    pub fn header(offset: u64, message: impl Into<String>) -> Error {
        Error {
            offset: Some(offset),
            record: None,
            message: message.into(),
        }
    }

    /// An error in record `index` at `offset`.
    #[cold]
    pub fn record(index: u64, offset: Option<u64>, message: impl Into<String>) -> Error {
        Error {
            offset,
            record: Some(index),
            message: message.into(),
        }
    }

    /// The offset for a [`profkit_common::Finding`] (0 when unknown).
    pub fn offset_or_zero(&self) -> u64 {
        self.offset.unwrap_or(0)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.record, self.offset) {
            (Some(i), Some(o)) => write!(f, "record #{i} at offset {o:#x}: {}", self.message),
            (Some(i), None) => write!(f, "record #{i}: {}", self.message),
            (None, Some(o)) => write!(f, "offset {o:#x}: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display() {
        assert_eq!(
            Error::record(3, Some(0x40), "size 4 is below 8").to_string(),
            "record #3 at offset 0x40: size 4 is below 8"
        );
        assert_eq!(Error::record(3, None, "x").to_string(), "record #3: x");
        assert_eq!(Error::header(8, "bad").to_string(), "offset 0x8: bad");
    }
}
