//! Bounds-checked little/big-endian reads from byte slices.

/// The byte order of a perf.data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// `PERFILE2`.
    Little,
    /// `2ELIFREP`.
    Big,
}

impl Endian {
    /// `"little"` or `"big"`.
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }

    pub(crate) fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    pub(crate) fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    pub(crate) fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }

    pub(crate) fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    pub(crate) fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    pub(crate) fn u64_bytes(self, v: u64) -> [u8; 8] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
}

/// `N` bytes at `off`, if they are inside `data`.
#[inline]
pub(crate) fn array<const N: usize>(data: &[u8], off: usize) -> Option<[u8; N]> {
    let end = off.checked_add(N)?;
    data.get(off..end)?.try_into().ok()
}

#[inline]
pub(crate) fn u16_at(data: &[u8], off: usize, e: Endian) -> Option<u16> {
    array::<2>(data, off).map(|b| e.u16(b))
}

#[inline]
pub(crate) fn u32_at(data: &[u8], off: usize, e: Endian) -> Option<u32> {
    array::<4>(data, off).map(|b| e.u32(b))
}

#[inline]
pub(crate) fn u64_at(data: &[u8], off: usize, e: Endian) -> Option<u64> {
    array::<8>(data, off).map(|b| e.u64(b))
}

/// `data[off..off + len]` with checked arithmetic (u64 offsets from the file).
#[inline]
pub(crate) fn range(data: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    data.get(start..end)
}

/// The bytes before the first NUL (all of them without one).
pub(crate) fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => b.get(..n).unwrap_or(b),
        None => b,
    }
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
    }
}
