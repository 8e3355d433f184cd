//! Errors: every one names the file (or the JIT code) it is about.

use std::fmt;
use std::path::PathBuf;

/// An error about one file or one piece of JIT code.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", .subject)]
pub struct Error {
    /// What the error is about (a path, or `JIT code at 0x…`).
    pub subject: Subject,
    /// What went wrong.
    pub kind: ErrorKind,
}

/// What an [`Error`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A file on disk (or the name given to bytes opened from memory).
    Path(PathBuf),
    /// JIT code starting at this address.
    JitCode(u64),
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Path(p) => write!(f, "{}", p.display()),
            Subject::JitCode(a) => write!(f, "JIT code at {a:#x}"),
        }
    }
}

/// The kinds of [`Error`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Opening, reading or mapping the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The bytes are not an ELF file this crate can read (or are cut or corrupt).
    #[error("not a readable ELF file: {0}")]
    Elf(String),
    /// JIT unwind data (`.eh_frame_hdr` + `.eh_frame`) that cannot be used.
    #[error("unusable JIT unwind information: {0}")]
    JitUnwind(String),
}

impl Error {
    pub(crate) fn path(path: impl Into<PathBuf>, kind: ErrorKind) -> Error {
        Error {
            subject: Subject::Path(path.into()),
            kind,
        }
    }

    pub(crate) fn jit(code_addr: u64, why: impl Into<String>) -> Error {
        Error {
            subject: Subject::JitCode(code_addr),
            kind: ErrorKind::JitUnwind(why.into()),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
