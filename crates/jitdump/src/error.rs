//! Errors and the truncated-tail outcome.
//!
//! A file can end three ways: cleanly, with a **truncated tail** (a record header or body
//! runs past the end: the file is still being written or its writer was killed), or at a
//! **corrupt record** (its size field cannot be right). The first two are not errors: the
//! reader delivers every complete record and [`Truncation`] says where the cut is. The third
//! is an [`Error`] carrying the byte offset, the record index (0 = the first record after the
//! file header) and what was expected.
//!
//! Both are profkit-common's, shared by every format: [`Error`] is the one-word parse error
//! (`e.offset`, `e.record`, `e.message`; [`Error::kind`] to tell failures apart).

pub use profkit_common::error::{Error, ErrorKind, Result};
pub use profkit_common::Truncation;
