//! The vocabulary every profkit format crate shares to describe a file, so that `profkit
//! validate` and `profkit info` say the same things the same way for every format.
//!
//! * [`finding`]: [`Finding`] (a stable code, a [`Severity`], the byte offset, the record index
//!   and a message), [`Findings`] (collects them, capping each code) and [`Validation`] (what a
//!   format's `validate` returns).
//! * [`truncation`]: [`Truncation`], the outcome of a file that ends inside a record: everything
//!   before [`Truncation::offset`] was used.
//! * [`summary`]: [`Summary`], what `profkit info` shows of a file, one shape for every format.
//! * [`json`]: the one JSON string escaper of the workspace.
//! * [`bytes`]: [`FileBytes`], the one way files are mapped (or read) whole.
//! * [`output`]: [`output::Output`], the one way files are written: standard output or staged
//!   files (new, unpredictably named temporaries renamed over their names on success, removed on
//!   failure), written behind by a thread, large ones with `O_DIRECT`.
//! * [`anon`]: [`anon::is_anonymous_memory`], which recorded mapping names are anonymous memory.
//! * [`handoff`]: the bounded queue between two stages of a pipeline, waking each side once
//!   per run of batches rather than at every one.
//! * [`release`]: letting go of a run's large structures (freed, or left to the process's exit).
//! * [`error`]: [`Error`], the one-word parse error (offset, record, [`ErrorKind`], message).
//! * [`open_tag!`]: on-disk tags as open newtypes (unknown values pass through).
//! * [`endian`]: [`Endian`] and the bounds-checked field reads over borrowed bytes.
//! * [`json::Object`]: the NDJSON object builder of every `dump --json`.
//! * [`format`]: [`InputFormat`], the trait every format crate implements (detect, summary,
//!   validate, dump) and the CLI's registry lists.
//!
//! This crate is a leaf: it depends on nothing but `memmap2`, `libc`, `memchr` and `itoa`, and
//! the format crates depend on it alone.
//!
//! ```
//! use profkit_common::{Findings, Severity, Truncation};
//! const CODES: &[(&str, Severity, &str)] = &[("bad-magic", Severity::Error, "the magic is wrong")];
//! let mut f = Findings::new(CODES);
//! f.push("bad-magic", 0, None, "expected DTiJ");
//! let v = f.finish(0, Some(Truncation::new(40, Some(0), "record header needs 16 bytes, 3 remain")));
//! assert_eq!(v.errors().count(), 2); // bad-magic, and the cut as `truncated`
//! assert!(v.has_errors());
//! ```

pub mod anon;
pub mod bytes;
pub mod endian;
pub mod error;
pub mod finding;
pub mod format;
pub mod handoff;
pub mod json;
pub mod output;
pub mod release;
pub mod summary;
pub mod tag;
pub mod truncation;

pub use bytes::FileBytes;
pub use endian::Endian;
pub use error::{Error, ErrorKind};
pub use finding::{Finding, Findings, Severity, Validation};
pub use format::InputFormat;
pub use summary::{Summary, ThreadSummary, TimeSpan, Value};
pub use truncation::Truncation;
