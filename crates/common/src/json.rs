//! JSON string escaping: the one escaper every hand-written JSON writer of the workspace uses,
//! and its control-character half for text outputs ([`push_controls`], [`controls_escaped`]).
//!
//! `"`, `\` and the control characters `\n`, `\r`, `\t` get their short escapes; every other
//! byte below 0x20, and 0x7f, becomes `\u00XX`; everything else (UTF-8 included) is copied.

/// Appends `s` as a JSON string literal (with quotes) to `out`.
#[inline]
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    push_str_body(out, s);
    out.push(b'"');
}

/// Appends `s` escaped for the inside of a JSON string (without quotes) to `out`.
pub fn push_str_body(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f | 0x7f => b"",
            _ => continue,
        };
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        if esc.is_empty() {
            push_control(out, c);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

/// Appends `s` to `out` with only its control characters escaped as JSON escapes them (`\n`,
/// `\r`, `\t`, else `\u00XX`), C1 controls (U+0080..U+009F) too: for text outputs (folded
/// stacks, DOT, SVG through folded stacks, the terminal), where a raw ESC or line break in a
/// name would be taken for markup, a terminal escape sequence or the end of a line.
pub fn push_controls(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        let next = bytes.get(i + 1).copied();
        let (code, len) = match (c, next) {
            (0..=0x1f | 0x7f, _) => (c, 1),
            (0xc2, Some(n @ 0x80..=0x9f)) => (n, 2),
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        push_control(out, code);
        i += len;
        start = i;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

/// `s` with its control characters escaped (see [`push_controls`]); borrowed when it has none.
pub fn controls_escaped(s: &str) -> std::borrow::Cow<'_, str> {
    let clean = !s
        .bytes()
        .zip(s.bytes().skip(1).chain([0]))
        .any(|(c, n)| c < 0x20 || c == 0x7f || (c == 0xc2 && (0x80..=0x9f).contains(&n)));
    if clean {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut v = Vec::with_capacity(s.len() + 8);
    push_controls(&mut v, s);
    // Only ASCII replaced whole characters.
    std::borrow::Cow::Owned(String::from_utf8(v).unwrap_or_default())
}

/// The escape of the control character `c` (a C0 byte, 0x7f or a C1 code point below 0xa0).
pub fn push_control(out: &mut Vec<u8>, c: u8) {
    match c {
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        _ => {
            out.extend_from_slice(b"\\u00");
            out.push(hex_digit(c >> 4));
            out.push(hex_digit(c));
        }
    }
}

/// `s` as a JSON string literal (with quotes).
pub fn quoted(s: &str) -> String {
    let mut v = Vec::with_capacity(s.len() + 2);
    push_str(&mut v, s);
    // The escaper copies UTF-8 sequences whole and adds only ASCII.
    String::from_utf8(v).unwrap_or_default()
}

/// Appends `s` as a JSON string literal (with quotes) to a `String`.
pub fn push_string(out: &mut String, s: &str) {
    out.push_str(&quoted(s));
}

/// One JSON object written key by key into a buffer (NDJSON dumps build a line with it). Keys
/// are written in the order given: callers give them sorted. Up to two "pending" numbers (a
/// record's `index` and `offset`, which every record of a format has) go in among the keys
/// where they sort ([`Object::with_pending`]).
///
/// ```
/// let mut b = Vec::new();
/// let mut o = profkit_common::json::Object::with_pending(&mut b, [("index", 3), ("offset", 64)]);
/// o.str("kind", "load").num("size", 8u32).bool("valid", true);
/// o.end_line();
/// assert_eq!(b, b"{\"index\":3,\"kind\":\"load\",\"offset\":64,\"size\":8,\"valid\":true}\n");
/// ```
pub struct Object<'b> {
    buf: &'b mut Vec<u8>,
    first: bool,
    pending: [Option<(&'static str, u64)>; 2],
}

impl<'b> Object<'b> {
    /// Opens an object at the end of `buf`.
    #[inline]
    pub fn new(buf: &'b mut Vec<u8>) -> Object<'b> {
        buf.push(b'{');
        Object {
            buf,
            first: true,
            pending: [None; 2],
        }
    }

    /// Opens an object whose `pending` numbers (in key order) go in before the first key that
    /// sorts after them, or at the end.
    #[inline]
    pub fn with_pending(buf: &'b mut Vec<u8>, pending: [(&'static str, u64); 2]) -> Object<'b> {
        let mut o = Object::new(buf);
        o.pending = pending.map(Some);
        o
    }

    /// Writes the pending numbers whose keys sort before `key` (all of them with `None`).
    fn flush_pending(&mut self, key: Option<&str>) {
        for slot in &mut self.pending {
            if let Some((k, v)) = *slot {
                if key.is_none_or(|key| k < key) {
                    *slot = None;
                    push_key(self.buf, &mut self.first, k);
                    self.buf
                        .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
                }
            }
        }
    }

    /// Writes `"k":` and returns the buffer for the value.
    #[inline]
    pub fn key(&mut self, k: &str) -> &mut Vec<u8> {
        if self.pending[0].is_some() || self.pending[1].is_some() {
            self.flush_pending(Some(k));
        }
        push_key(self.buf, &mut self.first, k);
        self.buf
    }

    /// A value written by `value`.
    #[inline]
    pub fn raw(&mut self, k: &str, value: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        value(self.key(k));
        self
    }

    /// An integer.
    #[inline]
    pub fn num(&mut self, k: &str, v: impl itoa::Integer) -> &mut Self {
        let b = self.key(k);
        b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        self
    }

    /// An integer, or `null`.
    #[inline]
    pub fn opt(&mut self, k: &str, v: Option<impl itoa::Integer>) -> &mut Self {
        match v {
            Some(v) => self.num(k, v),
            None => {
                self.key(k).extend_from_slice(b"null");
                self
            }
        }
    }

    /// A string.
    #[inline]
    pub fn str(&mut self, k: &str, v: &str) -> &mut Self {
        push_str(self.key(k), v);
        self
    }

    /// `true` or `false`.
    #[inline]
    pub fn bool(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k)
            .extend_from_slice(if v { b"true" } else { b"false" });
        self
    }

    /// An array of integers.
    #[inline]
    pub fn nums<T: itoa::Integer>(&mut self, k: &str, v: impl IntoIterator<Item = T>) -> &mut Self {
        let b = self.key(k);
        b.push(b'[');
        let mut itoa = itoa::Buffer::new();
        for (i, x) in v.into_iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            b.extend_from_slice(itoa.format(x).as_bytes());
        }
        b.push(b']');
        self
    }

    /// Bytes as a string of lowercase hex digits.
    #[inline]
    pub fn hex(&mut self, k: &str, v: &[u8]) -> &mut Self {
        let b = self.key(k);
        b.push(b'"');
        push_hex(b, v);
        b.push(b'"');
        self
    }

    /// Closes the object.
    #[inline]
    pub fn end(mut self) {
        self.flush_pending(None);
        self.buf.push(b'}');
    }

    /// Closes the object and ends the line.
    #[inline]
    pub fn end_line(mut self) {
        self.flush_pending(None);
        self.buf.extend_from_slice(b"}\n");
    }
}

/// Appends `"key":`, after a comma unless it is the object's first.
#[inline]
fn push_key(buf: &mut Vec<u8>, first: &mut bool, key: &str) {
    if !*first {
        buf.push(b',');
    }
    *first = false;
    push_str(buf, key);
    buf.push(b':');
}

/// Appends `bytes` as lowercase hex digits.
pub fn push_hex(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.reserve(bytes.len() * 2);
    for &b in bytes {
        buf.push(hex_digit(b >> 4));
        buf.push(hex_digit(b));
    }
}

#[cfg(test)]
mod controls_tests {
    #[test]
    fn controls_are_escaped_and_text_kept() {
        let s = "evil\u{1b}[31mRED\nline\u{9b}2\tü\u{7f}";
        assert_eq!(
            super::controls_escaped(s),
            "evil\\u001b[31mRED\\nline\\u009b2\\tü\\u007f"
        );
        assert!(matches!(
            super::controls_escaped("plain ü"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

#[inline]
fn hex_digit(n: u8) -> u8 {
    b"0123456789abcdef"
        .get(usize::from(n & 0xf))
        .copied()
        .unwrap_or(b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            quoted("a\"b\\c\nd\u{1}e\u{7f}é\t\r"),
            "\"a\\\"b\\\\c\\nd\\u0001e\\u007fé\\t\\r\""
        );
        assert_eq!(quoted(""), "\"\"");
        let mut s = String::from("x=");
        push_string(&mut s, "y");
        assert_eq!(s, "x=\"y\"");
    }
}
