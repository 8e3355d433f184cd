//! The one endian byte reader: a file's byte order ([`Endian`]) and bounds-checked reads of
//! fixed-size fields from borrowed bytes. Every read returns `None` instead of panicking when
//! the bytes are not all there, and offset arithmetic is checked.
//!
//! ```
//! use profkit_common::endian::{u32_at, Endian};
//! let d = [1u8, 2, 3, 4, 5];
//! assert_eq!(u32_at(&d, 0, Endian::Little), Some(0x0403_0201));
//! assert_eq!(u32_at(&d, 0, Endian::Big), Some(0x0102_0304));
//! assert_eq!(u32_at(&d, 2, Endian::Little), None);
//! ```

/// The byte order of a file (or of the machine that wrote it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first (x86-64, aarch64).
    #[default]
    Little,
    /// Most significant byte first.
    Big,
}

macro_rules! conversions {
    ($($read:ident $write:ident $ty:ty;)*) => {
        $(
            #[doc = concat!("Decodes a `", stringify!($ty), "` from its bytes.")]
            #[inline]
            pub fn $read(self, b: [u8; size_of::<$ty>()]) -> $ty {
                match self {
                    Endian::Little => <$ty>::from_le_bytes(b),
                    Endian::Big => <$ty>::from_be_bytes(b),
                }
            }

            #[doc = concat!("Encodes a `", stringify!($ty), "`.")]
            #[inline]
            pub fn $write(self, v: $ty) -> [u8; size_of::<$ty>()] {
                match self {
                    Endian::Little => v.to_le_bytes(),
                    Endian::Big => v.to_be_bytes(),
                }
            }
        )*
    };
}

impl Endian {
    /// The byte order of the machine running this code.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    /// `"little"` or `"big"`.
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }

    conversions! {
        u16 u16_bytes u16;
        u32 u32_bytes u32;
        u64 u64_bytes u64;
        i32 i32_bytes i32;
        i64 i64_bytes i64;
    }
}

/// `N` bytes at `off`, if they are all inside `data`.
#[inline]
pub fn array<const N: usize>(data: &[u8], off: usize) -> Option<[u8; N]> {
    let end = off.checked_add(N)?;
    data.get(off..end)?.try_into().ok()
}

/// The `u16` at `off`.
#[inline]
pub fn u16_at(data: &[u8], off: usize, e: Endian) -> Option<u16> {
    array(data, off).map(|b| e.u16(b))
}

/// The `u32` at `off`.
#[inline]
pub fn u32_at(data: &[u8], off: usize, e: Endian) -> Option<u32> {
    array(data, off).map(|b| e.u32(b))
}

/// The `u64` at `off`.
#[inline]
pub fn u64_at(data: &[u8], off: usize, e: Endian) -> Option<u64> {
    array(data, off).map(|b| e.u64(b))
}

/// `data[off..off + len]` with checked arithmetic (`u64` offsets and sizes from the file).
#[inline]
pub fn range(data: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    data.get(start..end)
}

/// The bytes before the first NUL (all of them without one).
#[inline]
pub fn until_nul(b: &[u8]) -> &[u8] {
    match memchr::memchr(0, b) {
        Some(n) => b.get(..n).unwrap_or(b),
        None => b,
    }
}

/// Splits a NUL-terminated string off the front of `data`: `(the string without its NUL, the
/// rest after it)`; `None` without a NUL.
#[inline]
pub fn split_cstr(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let nul = memchr::memchr(0, data)?;
    Some((data.get(..nul)?, data.get(nul + 1..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads() {
        let d = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(u16_at(&d, 0, Endian::Little), Some(0x0201));
        assert_eq!(u16_at(&d, 0, Endian::Big), Some(0x0102));
        assert_eq!(u32_at(&d, 5, Endian::Little), Some(0x0908_0706));
        assert_eq!(u32_at(&d, 6, Endian::Little), None);
        assert_eq!(u64_at(&d, 1, Endian::Little), Some(0x0908_0706_0504_0302));
        assert_eq!(u64_at(&d, usize::MAX, Endian::Little), None);
        assert_eq!(range(&d, 7, 2), Some(&d[7..9]));
        assert_eq!(range(&d, 7, 3), None);
        assert_eq!(range(&d, u64::MAX, 1), None);
        assert_eq!(until_nul(b"ab\0c"), b"ab");
        assert_eq!(until_nul(b"abc"), b"abc");
        assert_eq!(split_cstr(b"ab\0cd"), Some((&b"ab"[..], &b"cd"[..])));
        assert_eq!(split_cstr(b"ab"), None);
        assert_eq!(Endian::Big.u32_bytes(0x0102_0304), [1, 2, 3, 4]);
        assert_eq!(Endian::Little.i64(Endian::Little.i64_bytes(-5)), -5);
    }
}
