//! Bounds-checked field access over borrowed bytes: profkit-common's endian reads, and the
//! one check of this crate's own.

pub(crate) use profkit_common::endian::{split_cstr, u32_at, u64_at};

/// Whether every byte is zero.
#[inline]
pub(crate) fn all_zero(data: &[u8]) -> bool {
    data.iter().all(|&b| b == 0)
}
