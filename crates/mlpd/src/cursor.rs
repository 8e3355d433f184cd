//! A bounds-checked little cursor over one buffer's bytes: LEB128, bytes, strings.

use crate::error::{Error, ErrorKind, Result};

/// Reads fields from `data`, reporting absolute offsets (`base` is `data`'s file offset).
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) base: u64,
    /// Whether the end of `data` is the end of the file (→ truncation) or of a buffer.
    pub(crate) at_eof: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data` at file offset `base`.
    pub fn new(data: &'a [u8], base: u64, at_eof: bool) -> Self {
        Cursor {
            data,
            pos: 0,
            base,
            at_eof,
        }
    }

    /// Absolute offset of the next byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// True when nothing is left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    #[cold]
    pub(crate) fn short(&self, what: &'static str) -> Error {
        let kind = if self.at_eof {
            ErrorKind::Truncated(what)
        } else {
            ErrorKind::PastBuffer(what)
        };
        Error::new(self.offset(), kind)
    }

    /// One byte.
    #[inline]
    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.short(what)),
        }
    }

    /// `n` raw bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.short(what))?;
        match self.data.get(self.pos..end) {
            Some(s) => {
                self.pos = end;
                Ok(s)
            }
            None => Err(self.short(what)),
        }
    }

    /// A little-endian u16.
    pub fn u16le(&mut self, what: &'static str) -> Result<u16> {
        let b = self.bytes(2, what)?;
        let mut a = [0u8; 2];
        a.copy_from_slice(b);
        Ok(u16::from_le_bytes(a))
    }

    /// A little-endian u32.
    pub fn u32le(&mut self, what: &'static str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    /// A little-endian u64.
    pub fn u64le(&mut self, what: &'static str) -> Result<u64> {
        let b = self.bytes(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// ULEB128 (at most 10 bytes; bits past 64 are dropped as Mono's decoder does).
    #[inline(always)]
    pub fn uleb(&mut self, what: &'static str) -> Result<u64> {
        self.leb::<false>(what)
    }

    /// SLEB128 (at most 10 bytes), as i64.
    #[inline(always)]
    pub fn sleb(&mut self, what: &'static str) -> Result<i64> {
        self.leb::<true>(what).map(|v| v as i64)
    }

    /// LEB128, sign-extended from the last byte's bit 6 when `SIGNED`; the bits as a u64.
    /// Monomorphized: each of [`Cursor::uleb`] and [`Cursor::sleb`] keeps its own tight loop.
    #[inline(always)]
    fn leb<const SIGNED: bool>(&mut self, what: &'static str) -> Result<u64> {
        // fast path: away from the end of the data, decode without per-byte bounds checks
        // (a one-load branchless decoder was tried: 40% slower on a `calls` file, its longer
        // dependency chain costs more than the well-predicted loop exits)
        if let Some(chunk) = self.data.get(self.pos..self.pos + 10) {
            let mut v: u64 = 0;
            let mut shift = 0u32;
            for &b in chunk {
                v |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    self.pos += (shift / 7 + 1) as usize;
                    return Ok(Self::sign_extend::<SIGNED>(v, shift + 7, b));
                }
                shift += 7;
            }
        }
        self.leb_slow::<SIGNED>(what)
    }

    /// The value of a LEB128 whose last byte `last` ended at bit `shift`.
    #[inline(always)]
    fn sign_extend<const SIGNED: bool>(v: u64, shift: u32, last: u8) -> u64 {
        if SIGNED && shift < 64 && last & 0x40 != 0 {
            v | (u64::MAX << shift)
        } else {
            v
        }
    }

    #[inline(never)]
    fn leb_slow<const SIGNED: bool>(&mut self, what: &'static str) -> Result<u64> {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.data.get(self.pos) else {
                return Err(self.short(what));
            };
            self.pos += 1;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                return Ok(Self::sign_extend::<SIGNED>(v, shift, b));
            }
            if shift >= 70 {
                return Err(Error::new(self.offset(), ErrorKind::LebTooLong));
            }
        }
    }

    /// A NUL-terminated string (bytes without the NUL; not checked for UTF-8 here).
    #[inline]
    pub fn cstr(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = rest.get(..n).unwrap_or(&[]);
                self.pos += n + 1;
                Ok(s)
            }
            None => {
                if self.at_eof {
                    Err(Error::new(self.offset(), ErrorKind::Truncated(what)))
                } else {
                    Err(Error::new(self.offset(), ErrorKind::UnterminatedString))
                }
            }
        }
    }

    /// This cursor (at its position) limited to the bytes before `end`'s position: the bytes
    /// of a list validated by reading it with a copy of the cursor.
    #[inline]
    pub(crate) fn up_to(self, end: &Cursor<'a>) -> Cursor<'a> {
        Cursor {
            data: self.data.get(..end.pos).unwrap_or(&[]),
            ..self
        }
    }

    /// A count that must not exceed the bytes left (each item takes at least `min_item` bytes).
    #[inline]
    pub fn count(&mut self, what: &'static str, min_item: usize) -> Result<u64> {
        let off = self.offset();
        let n = self.uleb(what)?;
        let max = (self.remaining() / min_item.max(1)) as u64;
        if n > max {
            return Err(Error::new(off, ErrorKind::BadValue(what, n)));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uleb(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn sleb(mut v: i64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if (v == 0 && b & 0x40 == 0) || (v == -1 && b & 0x40 != 0) {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    /// The one-load decoder and the per-byte decoder agree on every length, at the end of
    /// the data (where only the per-byte one can run) and away from it.
    #[test]
    fn fast_and_slow_leb_agree() {
        let mut values: Vec<u64> = vec![0, 1, 63, 64, 127, 128, u64::MAX, u64::MAX - 5];
        for shift in 0..64 {
            values.push(1 << shift);
            values.push((1u64 << shift).wrapping_sub(1));
            values.push((1u64 << shift) + 12345);
            values.push(0u64.wrapping_sub(1 << shift));
        }
        for &v in &values {
            for (bytes, expect) in [(uleb(v), v), (sleb(v as i64), v)] {
                let signed = bytes == sleb(v as i64);
                for pad in [0usize, 3, 12] {
                    let mut data = bytes.clone();
                    data.extend(std::iter::repeat_n(0x55u8, pad));
                    let mut c = Cursor::new(&data, 0, false);
                    let got = if signed {
                        c.sleb("x").unwrap() as u64
                    } else {
                        c.uleb("x").unwrap()
                    };
                    assert_eq!((got, c.pos), (expect, bytes.len()), "{v:#x} pad {pad}");
                    let mut slow = Cursor::new(&data, 0, false);
                    let s = if signed {
                        slow.leb_slow::<true>("x").unwrap()
                    } else {
                        slow.leb_slow::<false>("x").unwrap()
                    };
                    assert_eq!(s, expect);
                }
            }
        }
        // a cut number is an error either way
        let mut c = Cursor::new(&[0x80, 0x80], 0, true);
        assert!(c.uleb("x").is_err());
    }
}
