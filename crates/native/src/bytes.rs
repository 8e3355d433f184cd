//! The bytes of a file (mapped or owned) and shared views into them.

use std::ops::{Deref, Range};
use std::sync::Arc;

/// A whole file's bytes: a read-only mapping or a buffer.
pub(crate) enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A section's bytes, kept alive by a reference count: a range of a file's [`Bytes`] (no
/// copy) or an owned buffer (a decompressed section, JIT unwind data). This is the data type
/// the unwinder's modules hold.
#[derive(Clone)]
pub struct SectionBytes(Repr);

#[derive(Clone)]
enum Repr {
    Shared(Arc<Bytes>, Range<usize>),
    Owned(Arc<[u8]>),
}

impl SectionBytes {
    pub(crate) fn shared(bytes: Arc<Bytes>, range: Range<usize>) -> SectionBytes {
        SectionBytes(Repr::Shared(bytes, range))
    }

    pub(crate) fn owned(bytes: impl Into<Arc<[u8]>>) -> SectionBytes {
        SectionBytes(Repr::Owned(bytes.into()))
    }
}

impl Default for SectionBytes {
    fn default() -> Self {
        SectionBytes::owned(Vec::new())
    }
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            // The range was checked against the file when the view was made; an empty slice
            // is the safe answer should it not fit.
            Repr::Shared(b, r) => b.get(r.clone()).unwrap_or(&[]),
            Repr::Owned(b) => b,
        }
    }
}

impl std::fmt::Debug for SectionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SectionBytes({} bytes)", self.len())
    }
}
