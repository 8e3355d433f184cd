//! Bounds-checked field access over borrowed bytes. Every accessor returns `None` instead of
//! panicking when the bytes are not there.

use crate::raw::Endian;

/// Reads a `u32` at `off`.
#[inline]
pub(crate) fn u32_at(data: &[u8], off: usize, endian: Endian) -> Option<u32> {
    let end = off.checked_add(4)?;
    let b: [u8; 4] = data.get(off..end)?.try_into().ok()?;
    Some(endian.u32(b))
}

/// Reads a `u64` at `off`.
#[inline]
pub(crate) fn u64_at(data: &[u8], off: usize, endian: Endian) -> Option<u64> {
    let end = off.checked_add(8)?;
    let b: [u8; 8] = data.get(off..end)?.try_into().ok()?;
    Some(endian.u64(b))
}

/// Splits a NUL-terminated string off the front of `data`: `(string without NUL, rest after NUL)`.
#[inline]
pub(crate) fn split_cstr(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let nul = memchr::memchr(0, data)?;
    let s = data.get(..nul)?;
    let rest = data.get(nul + 1..)?;
    Some((s, rest))
}

/// Whether every byte is zero.
#[inline]
pub(crate) fn all_zero(data: &[u8]) -> bool {
    data.iter().all(|&b| b == 0)
}
