//! Helpers shared by profkit's hand-written writers (Chrome JSON, Perfetto, speedscope,
//! folded stacks): JSON text formatting into a byte buffer,
//! dense tables keyed by thread index or function id, and the thread id a viewer is shown.
//!
//! Everything here appends to a `Vec<u8>` so a writer formats an event without allocating
//! and hands the buffer to its output once it has grown past [`FLUSH_AT`] bytes.

use std::collections::HashMap;
use std::io::{self, Write};

use profkit_model::func::{FuncId, FuncInfo, FunctionTable};

/// A writer's buffer is handed to its output when it holds this many bytes.
pub(crate) const FLUSH_AT: usize = 256 * 1024;

pub(crate) use crate::output::OutStream;

/// Hands `buf` to `out` once it holds [`FLUSH_AT`] bytes.
#[inline]
pub(crate) fn flush_if_full(out: &mut impl Write, buf: &mut Vec<u8>) -> io::Result<()> {
    if buf.len() >= FLUSH_AT {
        out.write_all(buf)?;
        buf.clear();
    }
    Ok(())
}

/// Hands all of `buf` to `out` and flushes `out` (a writer's end).
pub(crate) fn flush_all(out: &mut impl Write, buf: &mut Vec<u8>) -> io::Result<()> {
    out.write_all(buf)?;
    buf.clear();
    out.flush()
}

/// Appends `v` in decimal.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, v: u64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

/// Appends `v` in decimal.
#[inline]
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

/// Appends `v` as a JSON number (shortest round-trip form); NaN and infinities, which JSON
/// cannot represent, become `null`.
#[inline]
pub(crate) fn push_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        let mut b = ryu::Buffer::new();
        let s = b.format_finite(v);
        // ryu writes integral values as `1.0`, which is valid JSON; keep it.
        out.extend_from_slice(s.as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Appends nanoseconds as microseconds with exactly three decimals (`12345` → `12.345`),
/// with integer arithmetic only.
#[inline]
pub(crate) fn push_us(out: &mut Vec<u8>, ns: u64) {
    push_u64(out, ns / 1000);
    let frac = (ns % 1000) as u16;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// The lowercase hex digit of `n & 15`.
#[inline]
fn hex_digit(n: u8) -> u8 {
    let n = n & 15;
    if n < 10 {
        b'0' + n
    } else {
        b'a' + n - 10
    }
}

pub(crate) use profkit_common::json::{
    push_str as push_json_str, push_str_body as push_json_str_body,
};

/// Appends `b` as lowercase hex.
pub(crate) fn push_hex(out: &mut Vec<u8>, b: &[u8]) {
    for &x in b {
        out.push(hex_digit(x >> 4));
        out.push(hex_digit(x));
    }
}

/// `b` as text: itself when valid UTF-8, else lowercase hex.
pub(crate) fn bytes_text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => {
            let mut v = Vec::with_capacity(b.len() * 2);
            push_hex(&mut v, b);
            std::borrow::Cow::Owned(String::from_utf8(v).unwrap_or_default())
        }
    }
}

/// Appends `v` as `"0x…"` (a JSON string holding a hex address).
pub(crate) fn push_hex_addr_str(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(b"\"0x");
    out.extend_from_slice(format_hex(v).as_bytes());
    out.push(b'"');
}

/// `v` in lowercase hex without leading zeros.
pub(crate) fn format_hex(v: u64) -> String {
    format!("{v:x}")
}

/// The thread id shown to viewers: the recorded tid when it fits a positive 32-bit integer
/// (what Perfetto's ThreadDescriptor and most viewers hold), else `2^30 + index`, which no
/// Linux tid reaches (Mono records `pthread_t` values, 64-bit addresses).
pub(crate) fn display_tid(tid: u64, index: u32) -> i64 {
    if tid <= i32::MAX as u64 {
        tid as i64
    } else {
        (1i64 << 30) + i64::from(index)
    }
}

/// Indices up to this are stored in a vector; larger ones in a hash map.
const DENSE_LIMIT: usize = 1 << 20;

/// A map from a small integer key (thread index, function id) to `T`, dense for the small
/// keys drivers use and sparse beyond [`DENSE_LIMIT`] so a hostile id cannot allocate much.
#[derive(Debug)]
pub(crate) struct IdMap<T> {
    dense: Vec<Option<T>>,
    sparse: HashMap<u32, T>,
}

impl<T> Default for IdMap<T> {
    fn default() -> Self {
        IdMap {
            dense: Vec::new(),
            sparse: HashMap::new(),
        }
    }
}

impl<T> IdMap<T> {
    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<&T> {
        match self.dense.get(key as usize) {
            Some(v) => v.as_ref(),
            None => self.sparse.get(&key),
        }
    }

    /// Sets the value of `key`.
    pub(crate) fn insert(&mut self, key: u32, value: T) {
        let k = key as usize;
        if k < DENSE_LIMIT {
            if self.dense.len() <= k {
                self.dense.resize_with(k + 1, || None);
            }
            if let Some(slot) = self.dense.get_mut(k) {
                *slot = Some(value);
            }
        } else {
            self.sparse.insert(key, value);
        }
    }

    /// The value of `key`, inserting `f()` first when there is none.
    pub(crate) fn get_or_insert_with(&mut self, key: u32, f: impl FnOnce() -> T) -> &mut T {
        let k = key as usize;
        if k < DENSE_LIMIT && self.dense.len() <= k {
            self.dense.resize_with(k + 1, || None);
        }
        match self.dense.get_mut(k) {
            Some(slot) => slot.get_or_insert_with(f),
            None => self.sparse.entry(key).or_insert_with(f),
        }
    }

    /// Every entry, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        let mut sparse: Vec<_> = self.sparse.iter().map(|(k, v)| (*k, v)).collect();
        sparse.sort_unstable_by_key(|e| e.0);
        self.dense
            .iter()
            .enumerate()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k as u32, v)))
            .chain(sparse)
    }
}

/// Display names of functions, copied from the [`FunctionTable`] at `begin` (the table is only
/// borrowed for that call).
#[derive(Debug, Default)]
pub(crate) struct Names {
    names: IdMap<Box<str>>,
}

impl Names {
    /// The names of every function in `table`.
    pub(crate) fn new(table: &FunctionTable) -> Names {
        let mut names = IdMap::default();
        for (id, info) in table.iter() {
            if let Some(n) = &info.name {
                names.insert(id.0, n.clone().into_boxed_str());
            }
        }
        Names { names }
    }

    /// Adds the name of a function declared after `begin`.
    pub(crate) fn insert(&mut self, id: FuncId, info: &FuncInfo) {
        if let Some(n) = &info.name {
            self.names.insert(id.0, n.as_str().into());
        }
    }

    /// The name of `id`: its known name, else `#N` (as llvm-xray prints unmapped ids).
    pub(crate) fn get(&self, id: FuncId) -> std::borrow::Cow<'_, str> {
        match self.names.get(id.0) {
            Some(n) => std::borrow::Cow::Borrowed(n),
            None => std::borrow::Cow::Owned(format!("#{}", id.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_keep_nanoseconds() {
        let mut v = Vec::new();
        for ns in [0u64, 1, 999, 1000, 12_345, 1_000_001, u64::MAX] {
            v.clear();
            push_us(&mut v, ns);
            let s = String::from_utf8(v.clone()).unwrap();
            let (int, frac) = s.split_once('.').unwrap();
            assert_eq!(frac.len(), 3, "{s}");
            assert_eq!(
                int.parse::<u64>().unwrap() * 1000 + frac.parse::<u64>().unwrap(),
                ns
            );
        }
    }

    #[test]
    fn json_escapes() {
        let mut v = Vec::new();
        push_json_str(&mut v, "a\"b\\c\nd\u{1}e\u{7f}é");
        assert_eq!(
            std::str::from_utf8(&v).unwrap(),
            "\"a\\\"b\\\\c\\nd\\u0001e\\u007fé\""
        );
        assert_eq!(bytes_text(b"hi"), "hi");
        assert_eq!(bytes_text(&[0xff, 0x01]), "ff01");
    }

    #[test]
    fn tids() {
        assert_eq!(display_tid(42, 3), 42);
        assert_eq!(display_tid(0x7f00_1234_5678, 3), (1 << 30) + 3);
    }

    #[test]
    fn id_map() {
        let mut m = IdMap::default();
        m.insert(3, "a");
        m.insert(u32::MAX, "b");
        assert_eq!(m.get(3), Some(&"a"));
        assert_eq!(m.get(2), None);
        assert_eq!(m.get(u32::MAX), Some(&"b"));
        let keys: Vec<u32> = m.iter().map(|e| e.0).collect();
        assert_eq!(keys, [3, u32::MAX]);
    }
}
