//! A minimal protocol-buffers encoder: varints, fixed-width and length-delimited fields, nested
//! messages — what Perfetto traces and pprof profiles need, without a code generator.
//!
//! Messages are built into a [`Message`] buffer; a nested message is written with
//! [`Message::message`], which reserves room for its length and patches it afterwards, so no
//! message is encoded twice.
//!
//! ```
//! use profkit_export::protobuf::Message;
//! let mut m = Message::new();
//! m.uint64(1, 150);
//! assert_eq!(m.as_bytes(), &[0x08, 0x96, 0x01]);
//! ```

/// Wire type of a varint field.
const VARINT: u32 = 0;
/// Wire type of a 64-bit field.
const FIXED64: u32 = 1;
/// Wire type of a length-delimited field.
const LEN: u32 = 2;

/// Appends `v` as a base-128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Number of bytes `v` takes as a varint.
#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 + floor(bits / 7), with 0 taking one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// A protobuf message being encoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    buf: Vec<u8>,
}

impl Message {
    /// An empty message.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty message with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        Message {
            buf: Vec::with_capacity(n),
        }
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The encoded bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Encoded length.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Forgets the content, keeping the allocation.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    #[inline]
    fn key(&mut self, field: u32, wire: u32) {
        put_varint(&mut self.buf, (u64::from(field) << 3) | u64::from(wire));
    }

    /// A `uint64`/`uint32`/`int64` (non-negative)/`enum`/`bool` field.
    #[inline]
    pub fn uint64(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        put_varint(&mut self.buf, v);
    }

    /// An `int64` field (two's complement varint, as protobuf encodes `int64`).
    #[inline]
    pub fn int64(&mut self, field: u32, v: i64) {
        self.uint64(field, v as u64);
    }

    /// A `sint64` field (zig-zag).
    #[inline]
    pub fn sint64(&mut self, field: u32, v: i64) {
        self.uint64(field, ((v << 1) ^ (v >> 63)) as u64);
    }

    /// A `bool` field.
    #[inline]
    pub fn bool(&mut self, field: u32, v: bool) {
        self.uint64(field, u64::from(v));
    }

    /// A `double` field.
    #[inline]
    pub fn double(&mut self, field: u32, v: f64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `fixed64` field.
    #[inline]
    pub fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `bytes` field.
    #[inline]
    pub fn bytes(&mut self, field: u32, v: &[u8]) {
        self.key(field, LEN);
        put_varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    /// A `string` field.
    #[inline]
    pub fn string(&mut self, field: u32, v: &str) {
        self.bytes(field, v.as_bytes());
    }

    /// A packed `repeated uint64` (or other varint type) field.
    pub fn packed_uint64(&mut self, field: u32, values: impl IntoIterator<Item = u64> + Clone) {
        let len: usize = values.clone().into_iter().map(varint_len).sum();
        self.key(field, LEN);
        put_varint(&mut self.buf, len as u64);
        for v in values {
            put_varint(&mut self.buf, v);
        }
    }

    /// A nested message written by `f` into this buffer (its length is patched in afterwards).
    pub fn message(&mut self, field: u32, f: impl FnOnce(&mut Message)) {
        self.key(field, LEN);
        // Reserve 2 length bytes (enough for < 16 KiB, the usual case); move the body if the
        // length needs more.
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        let start = self.buf.len();
        f(self);
        let len = self.buf.len() - start;
        let need = varint_len(len as u64);
        if need != 2 {
            let mut lenbuf = Vec::with_capacity(10);
            put_varint(&mut lenbuf, len as u64);
            self.buf.splice(at..start, lenbuf);
        } else if let Some(slot) = self.buf.get_mut(at..at + 2) {
            slot.copy_from_slice(&[(len as u8) | 0x80, (len >> 7) as u8]);
        }
    }

    /// A nested message already encoded.
    pub fn embed(&mut self, field: u32, m: &Message) {
        self.bytes(field, m.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
        }
        let mut m = Message::new();
        m.uint64(1, 300);
        assert_eq!(m.as_bytes(), &[0x08, 0xac, 0x02]);
        let mut m = Message::new();
        m.sint64(1, -1);
        assert_eq!(m.as_bytes(), &[0x08, 0x01]);
        let mut m = Message::new();
        m.string(2, "testing");
        assert_eq!(m.as_bytes(), b"\x12\x07testing");
    }

    #[test]
    fn nested_lengths() {
        for n in [0usize, 1, 127, 128, 16383, 16384, 3_000_000] {
            let mut m = Message::new();
            m.message(3, |inner| inner.bytes(1, &vec![7u8; n]));
            let mut expect = Message::new();
            let mut inner = Message::new();
            inner.bytes(1, &vec![7u8; n]);
            expect.embed(3, &inner);
            assert_eq!(m, expect, "{n}");
        }
    }
}
