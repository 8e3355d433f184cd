//! The small subset of YAML that llvm-xray writes: flow maps on one line, LLVM's quoting rules.

use crate::error::Result;

/// How LLVM's YAML writer quotes a scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Quoting {
    /// Plain.
    None,
    /// `'single'` (a `'` is doubled).
    Single,
    /// `"double"` with escapes.
    Double,
}

fn is_numeric(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    if t.is_empty() {
        return false;
    }
    if let Some(h) = t.strip_prefix("0x") {
        return !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit());
    }
    if let Some(o) = t.strip_prefix("0o") {
        return !o.is_empty() && o.chars().all(|c| ('0'..='7').contains(&c));
    }
    if matches!(t, ".inf" | ".Inf" | ".INF") || matches!(s, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let mut digits = 0;
    let mut chars = t.chars().peekable();
    while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
        chars.next();
        digits += 1;
    }
    if chars.peek() == Some(&'.') {
        chars.next();
        while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
            chars.next();
            digits += 1;
        }
    }
    if digits == 0 {
        return false;
    }
    if matches!(chars.peek(), Some('e' | 'E')) {
        chars.next();
        if matches!(chars.peek(), Some('+' | '-')) {
            chars.next();
        }
        let mut exp = 0;
        while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
            chars.next();
            exp += 1;
        }
        if exp == 0 {
            return false;
        }
    }
    chars.next().is_none()
}

/// LLVM's `needsQuotes` for a scalar.
pub(crate) fn needs_quotes(s: &str) -> Quoting {
    let Some(first) = s.bytes().next() else {
        return Quoting::Single;
    };
    let mut q = Quoting::None;
    let last = s.bytes().last().unwrap_or(first);
    if first.is_ascii_whitespace() || last.is_ascii_whitespace() {
        q = Quoting::Single;
    }
    if matches!(s, "null" | "Null" | "NULL" | "~")
        || matches!(
            s,
            "true"
                | "True"
                | "TRUE"
                | "false"
                | "False"
                | "FALSE"
                | "y"
                | "Y"
                | "yes"
                | "Yes"
                | "YES"
                | "n"
                | "N"
                | "no"
                | "No"
                | "NO"
                | "on"
                | "On"
                | "ON"
                | "off"
                | "Off"
                | "OFF"
        )
        || is_numeric(s)
    {
        q = Quoting::Single;
    }
    if br#"-?:\,[]{}#&*!|>'"%@`"#.contains(&first) {
        q = Quoting::Single;
    }
    for c in s.bytes() {
        if c.is_ascii_alphanumeric() {
            continue;
        }
        match c {
            b'_' | b'-' | b'^' | b'.' | b',' | b' ' | b'\t' => {}
            b'\n' | b'\r' => q = q.max(Quoting::Single),
            0x7f => return Quoting::Double,
            c if c <= 0x1f || c & 0x80 != 0 => return Quoting::Double,
            _ => q = q.max(Quoting::Single),
        }
    }
    q
}

/// The lines of `text` with quoted scalars that span lines joined: LLVM's writer puts a name's
/// line feed inside single quotes as is (YAML folds it: a line break in a quoted flow scalar
/// reads as one space, an empty line as a line feed). Each logical line comes with the 1-based
/// number of its first physical line.
pub fn logical_lines(text: &str) -> Vec<(usize, std::borrow::Cow<'_, str>)> {
    let mut out: Vec<(usize, std::borrow::Cow<'_, str>)> = Vec::new();
    // The quote a line left open: None, Some('\'') or Some('"').
    let mut open: Option<char> = None;
    for (i, line) in text.lines().enumerate() {
        match (open, out.last_mut()) {
            (Some(_), Some((_, joined))) => {
                let j = joined.to_mut();
                if line.trim().is_empty() {
                    j.push('\n');
                } else {
                    let kept = j.trim_end_matches([' ', '\t']).len();
                    j.truncate(kept);
                    if !j.ends_with('\n') {
                        j.push(' ');
                    }
                    j.push_str(line.trim_start_matches([' ', '\t']));
                }
            }
            _ => out.push((i + 1, std::borrow::Cow::Borrowed(line))),
        }
        open = quote_left_open(line, open);
    }
    out
}

/// The quote still open at the end of `line`, given the one open at its start.
fn quote_left_open(line: &str, mut open: Option<char>) -> Option<char> {
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (open, c) {
            (None, '\'' | '"') => open = Some(c),
            (Some('\''), '\'') if chars.peek() == Some(&'\'') => {
                chars.next();
            }
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => open = None,
            _ => {}
        }
    }
    open
}

/// A scalar as LLVM's YAML writer prints it.
pub fn scalar(s: &str) -> String {
    match needs_quotes(s) {
        Quoting::None => s.to_string(),
        Quoting::Single => format!("'{}'", s.replace('\'', "''")),
        Quoting::Double => {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                        out.push_str(&format!("\\x{:02X}", c as u32))
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
    }
}

/// Parses a one-line flow map `{ key: value, key: 'quoted', key: [ 1, 2 ] }` (with or without a
/// leading `- `) into (key, value) pairs. Quoted values are unquoted; flow sequences are kept
/// as their inner text.
pub fn parse_flow_map(line: &str, line_no: usize) -> Result<Vec<(String, String)>> {
    let err = |m: &str| crate::error::yaml(line_no, m);
    let t = line.trim();
    let t = t.strip_prefix("- ").unwrap_or(t).trim();
    let inner = t
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .ok_or_else(|| err("expected a flow map { ... }"))?;
    let chars: Vec<char> = inner.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let skip_ws = |i: &mut usize| {
        while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= chars.len() {
            break;
        }
        let mut key = String::new();
        while let Some(&c) = chars.get(i) {
            if c == ':' {
                break;
            }
            key.push(c);
            i += 1;
        }
        if chars.get(i) != Some(&':') {
            return Err(err("expected ':' after a key"));
        }
        i += 1;
        skip_ws(&mut i);
        let mut val = String::new();
        match chars.get(i) {
            Some('\'') => {
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(err("unterminated single-quoted scalar")),
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            val.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(&c) => {
                            val.push(c);
                            i += 1;
                        }
                    }
                }
            }
            Some('"') => {
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(err("unterminated double-quoted scalar")),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') => {
                            let c = chars.get(i + 1).copied().unwrap_or('\\');
                            i += 2;
                            match c {
                                'n' => val.push('\n'),
                                'r' => val.push('\r'),
                                't' => val.push('\t'),
                                '0' => val.push('\0'),
                                'x' => {
                                    let h: String = chars.iter().skip(i).take(2).collect();
                                    i += 2;
                                    let v = u32::from_str_radix(&h, 16)
                                        .map_err(|_| err("bad \\x escape"))?;
                                    val.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                                }
                                c => val.push(c),
                            }
                        }
                        Some(&c) => {
                            val.push(c);
                            i += 1;
                        }
                    }
                }
            }
            Some('[') => {
                i += 1;
                while let Some(&c) = chars.get(i) {
                    i += 1;
                    if c == ']' {
                        break;
                    }
                    val.push(c);
                }
                val = val.trim().to_string();
            }
            _ => {
                // LLVM's writer leaves a scalar with ", " in it unquoted (its needsQuotes
                // allows ','), so a comma ends a plain value only before the next `key:`.
                while let Some(&c) = chars.get(i) {
                    if c == ',' && starts_key(&chars, i + 1) {
                        break;
                    }
                    val.push(c);
                    i += 1;
                }
                val = val.trim_end().to_string();
            }
        }
        out.push((key.trim().to_string(), val));
        skip_ws(&mut i);
        match chars.get(i) {
            Some(',') => i += 1,
            None => break,
            Some(_) => return Err(err("expected ',' between entries")),
        }
    }
    Ok(out)
}

/// Whether `chars[at..]` is (after blanks) a flow-map key: `name:` then a blank or the end.
fn starts_key(chars: &[char], at: usize) -> bool {
    let rest = chars.get(at..).unwrap_or(&[]);
    let start = rest.iter().take_while(|c| c.is_whitespace()).count();
    let name = rest
        .iter()
        .skip(start)
        .take_while(|&&c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        .count();
    name > 0
        && rest.get(start + name) == Some(&':')
        && rest.get(start + name + 1).is_none_or(|c| c.is_whitespace())
}

/// Parses an integer the way LLVM's YAML reader does (`0x` hex, decimal, optional sign).
pub fn parse_int(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if let Some(neg) = s.strip_prefix('-') {
        return neg.parse::<i64>().ok().map(|v| v.wrapping_neg() as u64);
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(needs_quotes("main"), Quoting::None);
        assert_eq!(needs_quotes("fib(int)"), Quoting::Single);
        assert_eq!(needs_quotes("1e5"), Quoting::Single);
        assert_eq!(needs_quotes("0x1F"), Quoting::Single);
        assert_eq!(needs_quotes("caf\u{e9}"), Quoting::Double);
    }

    #[test]
    fn flow_map() {
        let m = parse_flow_map(
            "  - { a: 1, b: 'x, ''y''', c: [ 1, 2 ], d: \"q\\n\", e: plain text }",
            1,
        )
        .unwrap();
        let v: Vec<(&str, &str)> = m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            v,
            vec![
                ("a", "1"),
                ("b", "x, 'y'"),
                ("c", "1, 2"),
                ("d", "q\n"),
                ("e", "plain text")
            ]
        );
        assert!(parse_flow_map("{ a 1 }", 3).is_err());
        // A plain scalar with ", " in it (LLVM leaves it unquoted).
        let kv = parse_flow_map("{ name: stack, any more., version: 2 }", 4).unwrap();
        assert_eq!(kv[0].1, "stack, any more.");
        assert_eq!(kv[1], ("version".to_string(), "2".to_string()));
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("-1"), Some(u64::MAX));
    }

    #[test]
    fn quoted_scalars_spanning_lines_are_folded() {
        let name = "two\nlines";
        let line = format!("- {{ id: 1, function-name: {} }}", scalar(name));
        let text = format!("---\n{line}\n- {{ id: 2, function-name: b }}\n...\n");
        let lines = logical_lines(&text);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1].0, 2);
        assert_eq!(lines[2].0, 4, "numbered by their first physical line");
        let kv = parse_flow_map(&lines[1].1, 2).unwrap();
        assert_eq!(kv[1].1, "two lines");
        // An empty line inside the quotes is a line feed; '' is an escaped quote.
        let lines = logical_lines("- { a: 'x''\n\ny' }\n- { b: c }");
        assert_eq!(parse_flow_map(&lines[0].1, 1).unwrap()[0].1, "x'\ny");
        assert_eq!(lines.len(), 2);
    }
}
