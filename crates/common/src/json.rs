//! JSON string escaping: the one escaper every hand-written JSON writer of the workspace uses.
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
            out.extend_from_slice(b"\\u00");
            out.push(hex_digit(c >> 4));
            out.push(hex_digit(c));
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
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
