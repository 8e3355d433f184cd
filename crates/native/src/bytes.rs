//! Shared views into a file's bytes ([`profkit_common::FileBytes`]).

use std::ops::{Deref, Range};
use std::sync::Arc;

use profkit_common::FileBytes;

/// A section's bytes, kept alive by a reference count: a range of a file's [`Bytes`] (no
/// copy) or an owned buffer (a decompressed section, JIT unwind data). This is the data type
/// the unwinder's modules hold.
#[derive(Clone)]
pub struct SectionBytes(Repr);

#[derive(Clone)]
enum Repr {
    Shared(Arc<FileBytes>, Range<usize>),
    Owned(Arc<Vec<u8>>),
}

impl SectionBytes {
    pub(crate) fn shared(bytes: Arc<FileBytes>, range: Range<usize>) -> SectionBytes {
        SectionBytes(Repr::Shared(bytes, range))
    }

    pub(crate) fn owned(bytes: Vec<u8>) -> SectionBytes {
        SectionBytes(Repr::Owned(Arc::new(bytes)))
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

// SAFETY: the bytes a `SectionBytes` derefs to live in a file mapping or a heap buffer behind
// an `Arc`: moving or cloning the handle does not move them, and they are never mutated.
unsafe impl stable_deref_trait::StableDeref for SectionBytes {}
// SAFETY: a clone shares the same `Arc`, so it derefs to the same bytes.
unsafe impl stable_deref_trait::CloneStableDeref for SectionBytes {}

impl std::fmt::Debug for SectionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SectionBytes({} bytes)", self.len())
    }
}
