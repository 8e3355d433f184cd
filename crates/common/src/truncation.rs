//! A file that ends inside a record (still being written, or its writer was killed).
//!
//! Readers treat a cut as an outcome, not an error: every complete record before the cut is
//! delivered, and the [`Truncation`] says where the cut is and what was incomplete. Every
//! command reports it the same way (a note on stderr, `"truncated"` in JSON, the error
//! `truncated` in `validate`).

use core::fmt;

/// Where a file is cut off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Truncation {
    /// Offset of the first byte that is not part of a complete record (the incomplete
    /// record's start).
    pub offset: u64,
    /// Index the incomplete record would have had, when the format counts records.
    pub record: Option<u64>,
    /// What was incomplete, e.g. `record header needs 16 bytes, 7 remain`.
    pub reason: String,
}

impl Truncation {
    /// A cut at `offset` in record `record`.
    #[cold]
    pub fn new(offset: u64, record: Option<u64>, reason: impl Into<String>) -> Truncation {
        Truncation {
            offset,
            record,
            reason: reason.into(),
        }
    }
}

/// The `"truncated"` value of every JSON output: `{"offset":N,"record":N|null,"reason":"…"}`,
/// or `null` for a complete file.
pub fn push_json(out: &mut Vec<u8>, t: Option<&Truncation>) {
    let Some(t) = t else {
        out.extend_from_slice(b"null");
        return;
    };
    out.extend_from_slice(b"{\"offset\":");
    out.extend_from_slice(t.offset.to_string().as_bytes());
    out.extend_from_slice(b",\"record\":");
    match t.record {
        Some(r) => out.extend_from_slice(r.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"reason\":");
    crate::json::push_str(out, &t.reason);
    out.push(b'}');
}

/// [`push_json`] as a string.
pub fn json(t: Option<&Truncation>) -> String {
    let mut v = Vec::new();
    push_json(&mut v, t);
    String::from_utf8_lossy(&v).into_owned()
}

impl fmt::Display for Truncation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record {
            Some(r) => write!(
                f,
                "truncated at offset {:#x} (record #{r}): {}",
                self.offset, self.reason
            ),
            None => write!(f, "truncated at offset {:#x}: {}", self.offset, self.reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display() {
        let t = Truncation::new(0x40, Some(3), "record header needs 16 bytes, 7 remain");
        assert_eq!(
            t.to_string(),
            "truncated at offset 0x40 (record #3): record header needs 16 bytes, 7 remain"
        );
        let t = Truncation::new(0x40, None, "gzip stream ends early");
        assert_eq!(
            t.to_string(),
            "truncated at offset 0x40: gzip stream ends early"
        );
    }
}
