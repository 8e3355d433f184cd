//! A bounds-checked little cursor over one buffer's bytes: LEB128, bytes, strings.

use profkit_common::endian::{self, Endian};

use crate::error::{self, Error, Result};

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
        if self.at_eof {
            error::truncated(self.offset(), what)
        } else {
            error::past_buffer(self.offset(), what)
        }
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

    /// `N` bytes as an array.
    fn fixed<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let b = self.bytes(N, what)?;
        // `bytes` gave exactly N bytes
        Ok(endian::array(b, 0).unwrap_or([0; N]))
    }

    /// A little-endian u16.
    pub fn u16le(&mut self, what: &'static str) -> Result<u16> {
        self.fixed(what).map(|b| Endian::Little.u16(b))
    }

    /// A little-endian u32.
    pub fn u32le(&mut self, what: &'static str) -> Result<u32> {
        self.fixed(what).map(|b| Endian::Little.u32(b))
    }

    /// A little-endian u64.
    pub fn u64le(&mut self, what: &'static str) -> Result<u64> {
        self.fixed(what).map(|b| Endian::Little.u64(b))
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
        // fast path: away from the end of the data, from one load
        if let Some(w) = self.data.get(self.pos..).and_then(|s| s.first_chunk::<8>()) {
            if let Some((v, n)) = leb_word::<SIGNED>(u64::from_le_bytes(*w)) {
                self.pos += n;
                return Ok(v);
            }
        }
        // anything else (nine or ten bytes, the end of the data, an error): byte by byte, on
        // plain values, so that a hot loop's cursor never has its address taken and can stay
        // in registers
        match leb_slow::<SIGNED>(self.data, self.pos) {
            Ok((v, pos)) => {
                self.pos = pos;
                Ok(v)
            }
            Err((pos, too_long)) => {
                self.pos = pos;
                Err(leb_error(self.base, pos, self.at_eof, too_long, what))
            }
        }
    }

    /// `v`, a LEB128's `bits` low bits, sign-extended from its top bit when `SIGNED`.
    #[inline(always)]
    fn extend<const SIGNED: bool>(v: u64, bits: u32) -> u64 {
        if SIGNED && bits < 64 {
            let s = 64 - bits;
            ((v << s) as i64 >> s) as u64
        } else {
            v
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
                    Err(error::truncated(self.offset(), what))
                } else {
                    Err(error::unterminated_string(self.offset()))
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
            return Err(error::bad_value(off, what, n));
        }
        Ok(n)
    }
}

/// The LEB128 at the start of `x` (eight bytes, little-endian), sign-extended when `SIGNED`:
/// its value and its length, or `None` when it is longer than eight bytes. One load for the
/// whole number and one well-predicted exit per common length: one to three bytes are nearly
/// every number of a `calls` file (time deltas, method and pointer deltas); four to eight
/// (deltas between distant regions, mostly seven bytes) are one branchless step. (A branchless decoder for every
/// length was tried: 40% slower on a `calls` file, its dependency chain costs more than the
/// predicted exits.)
#[inline(always)]
pub(crate) fn leb_word<const SIGNED: bool>(x: u64) -> Option<(u64, usize)> {
    if x & 0x80 == 0 {
        return Some((Cursor::extend::<SIGNED>(x & 0x7f, 7), 1));
    }
    let v = (x & 0x7f) | (x >> 1 & 0x3f80);
    if x & 0x8000 == 0 {
        return Some((Cursor::extend::<SIGNED>(v, 14), 2));
    }
    if x & 0x80_0000 == 0 {
        let v = v | (x >> 2 & 0x1f_c000);
        return Some((Cursor::extend::<SIGNED>(v, 21), 3));
    }
    // the first byte without its continuation bit ends the number
    let stops = !x & 0x8080_8080_8080_8080;
    if stops == 0 {
        return None;
    }
    let n = (stops.trailing_zeros() + 1) / 8;
    // the 7-bit groups packed two by two, then four by four, then all eight
    let v = x & 0x7f7f_7f7f_7f7f_7f7f;
    let v = (v & 0x007f_007f_007f_007f) | (v >> 1 & 0x3f80_3f80_3f80_3f80);
    let v = (v & 0x0000_3fff_0000_3fff) | (v >> 2 & 0x0fff_c000_0fff_c000);
    let v = (v & 0x0000_0000_0fff_ffff) | (v >> 4 & 0x00ff_ffff_f000_0000);
    // the number's 7n bits, sign-extended or not, by one pair of shifts (which drop the bytes
    // after it too)
    let s = 64 - 7 * n;
    let v = if SIGNED {
        ((v << s) as i64 >> s) as u64
    } else {
        (v << s) >> s
    };
    Some((v, n as usize))
}

/// The LEB128 at `pos` in `data`, byte by byte, sign-extended when `SIGNED`: the value and the
/// position after it, or the position of the problem and whether the number is too long (else
/// the data ends inside it).
#[inline(never)]
fn leb_slow<const SIGNED: bool>(
    data: &[u8],
    mut pos: usize,
) -> std::result::Result<(u64, usize), (usize, bool)> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = data.get(pos) else {
            return Err((pos, false));
        };
        pos += 1;
        if shift < 64 {
            v |= u64::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b & 0x80 == 0 {
            return Ok((Cursor::extend::<SIGNED>(v, shift), pos));
        }
        if shift >= 70 {
            return Err((pos, true));
        }
    }
}

/// The error of a LEB128 that is too long or cut off at `pos` (data at file offset `base`).
#[cold]
#[inline(never)]
fn leb_error(base: u64, pos: usize, at_eof: bool, too_long: bool, what: &'static str) -> Error {
    let c = Cursor {
        data: &[],
        pos,
        base,
        at_eof,
    };
    if too_long {
        error::leb_too_long(c.offset())
    } else {
        c.short(what)
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

    /// The one-load and the per-byte decoders agree on every length, at the end of the data
    /// (where only the per-byte one can run) and away from it.
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
                for pad in [0usize, 3, 7, 12] {
                    let mut data = bytes.clone();
                    data.extend(std::iter::repeat_n(0x55u8, pad));
                    let mut c = Cursor::new(&data, 0, false);
                    let got = if signed {
                        c.sleb("x").unwrap() as u64
                    } else {
                        c.uleb("x").unwrap()
                    };
                    assert_eq!((got, c.pos), (expect, bytes.len()), "{v:#x} pad {pad}");
                    let s = if signed {
                        leb_slow::<true>(&data, 0).unwrap().0
                    } else {
                        leb_slow::<false>(&data, 0).unwrap().0
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
