//! Errors: each carries the absolute byte offset and what was expected.
//!
//! A file cut off inside its records is not an error: readers deliver every complete record and
//! report the cut as a [`Truncation`] (`Trace::truncation`, `Decoded::truncation`, …). Only a
//! file too short for its 32-byte header, where nothing can be read, is [`Error::Truncated`].

pub use profkit_common::Truncation;

use core::fmt;

/// Result alias of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Record index suffix for messages: `" (record #N)"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordIndex(pub Option<u64>);

impl fmt::Display for RecordIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(i) => write!(f, "record #{i} at "),
            None => Ok(()),
        }
    }
}

/// Everything that can go wrong reading XRay data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The data ends inside the 32-byte file header: nothing can be read. (A file cut inside
    /// its records is a [`Truncation`] outcome, not this error.)
    #[error("{}offset {offset:#x}: truncated {what}: needs {needed} bytes, {available} available", RecordIndex(*record))]
    Truncated {
        /// Absolute offset of the incomplete record.
        offset: u64,
        /// Index of the record in the file, when known.
        record: Option<u64>,
        /// What was being read.
        what: &'static str,
        /// Bytes the record needs.
        needed: u64,
        /// Bytes left in the file.
        available: u64,
    },
    /// The bytes are there but do not make sense.
    #[error("{}offset {offset:#x}: expected {expected}, found {found}", RecordIndex(*record))]
    Invalid {
        /// Absolute offset.
        offset: u64,
        /// Index of the record in the file, when known.
        record: Option<u64>,
        /// What the format requires here.
        expected: &'static str,
        /// What the data holds.
        found: String,
    },
    /// A header this crate does not read (unknown type or version).
    #[error("offset 0x0: unsupported XRay header: {0}")]
    Unsupported(String),
    /// The ELF file or its instrumentation map cannot be read.
    #[error("instrumentation map: {0}")]
    InstrMap(String),
    /// A YAML trace that is not UTF-8 text.
    #[error("not UTF-8 text: {0}")]
    NotText(String),
    /// The YAML text cannot be read.
    #[error("YAML line {line}: {message}")]
    Yaml {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// Absolute byte offset of the problem, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Truncated { offset, .. } | Error::Invalid { offset, .. } => Some(*offset),
            Error::Unsupported(_) => Some(0),
            _ => None,
        }
    }

    /// Whether the data ends inside what was being read (for a whole file: inside its header).
    pub fn is_truncation(&self) -> bool {
        matches!(self, Error::Truncated { .. })
    }

    /// Index of the record, when known.
    pub fn record(&self) -> Option<u64> {
        match self {
            Error::Truncated { record, .. } | Error::Invalid { record, .. } => *record,
            _ => None,
        }
    }

    pub(crate) fn with_record(mut self, index: u64) -> Self {
        match &mut self {
            Error::Truncated { record, .. } | Error::Invalid { record, .. } => {
                *record = Some(index)
            }
            _ => {}
        }
        self
    }

    #[cold]
    pub(crate) fn truncated(
        offset: usize,
        what: &'static str,
        needed: usize,
        available: usize,
    ) -> Self {
        Error::Truncated {
            offset: offset as u64,
            record: None,
            what,
            needed: needed as u64,
            available: available as u64,
        }
    }

    /// The outcome for a read that ran into the end of the file: where the cut is and what was
    /// incomplete (`None` for other errors).
    pub(crate) fn to_truncation(&self) -> Option<Truncation> {
        match self {
            Error::Truncated {
                offset,
                record,
                what,
                needed,
                available,
            } => Some(Truncation::new(
                *offset,
                *record,
                format!("{what} needs {needed} bytes, {available} remain"),
            )),
            _ => None,
        }
    }

    /// This error as met inside a buffer whose end is known: running out of bytes there means
    /// the record over-reads the buffer, not that the file is cut.
    pub(crate) fn in_buffer(self) -> Self {
        match self {
            Error::Truncated {
                offset,
                record,
                what,
                needed,
                available,
            } => Error::Invalid {
                offset,
                record,
                expected: "a record inside its buffer's extents",
                found: format!("{what} needs {needed} bytes, {available} remain in the buffer"),
            },
            e => e,
        }
    }

    #[cold]
    pub(crate) fn invalid(offset: usize, expected: &'static str, found: impl Into<String>) -> Self {
        Error::Invalid {
            offset: offset as u64,
            record: None,
            expected,
            found: found.into(),
        }
    }
}

/// The common error of every format, for callers that treat formats alike (`profkit`'s
/// registry): the same text, the kind of failure kept.
impl From<Error> for profkit_common::Error {
    fn from(e: Error) -> profkit_common::Error {
        use profkit_common::ErrorKind as K;
        let kind = match &e {
            Error::Truncated { .. } => K::Truncated,
            Error::Unsupported(_) => K::Unsupported,
            _ => K::Malformed,
        };
        profkit_common::Error::unlocated(kind, None, e.to_string())
    }
}
