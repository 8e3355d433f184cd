//! Kernel symbols from `/proc/kallsyms` text.
//!
//! Each line is `<hex address> <type letter> <name>[\t[<module>]]`. Only code symbols are
//! kept (types `t`, `T`, `w`, `W`), sorted by address; a symbol extends to the next one.
//! When `kernel.kptr_restrict` hides addresses from the reader, every address reads 0:
//! [`Kallsyms::is_restricted`] says so, and a caller shows kernel frames as `[kernel]`.

use std::path::Path;

use profkit_common::FileBytes;
use rustc_hash::FxHashMap;

use crate::build_id::{build_id_from_notes, BuildId};
use crate::error::{Error, Result};

/// The last symbol covers at most this many bytes (nothing bounds it otherwise).
const LAST_SYMBOL_SPAN: u64 = 1 << 20;

/// 16 bytes: a kernel has ~120k code symbols, and on a VM every fresh page of a table costs
/// more than filling it.
#[derive(Debug, Clone, Copy)]
struct KSym {
    start: u64,
    /// Where its name is in the text.
    name_at: u32,
    name_len: u16,
    /// Its module's index in [`Kallsyms::modules`], or [`NO_MODULE`].
    module: u16,
}

const NO_MODULE: u16 = u16::MAX;

/// A kernel symbol (see [`Kallsyms::lookup`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSymbol<'a> {
    /// The name as kallsyms spells it.
    pub name: &'a str,
    /// Its address.
    pub start: u64,
    /// The module it belongs to (`None`: the kernel image).
    pub module: Option<&'a str>,
}

/// Parsed kallsyms (see the [module docs](self)).
pub struct Kallsyms {
    /// The file's bytes (mapped when it is a regular file), valid UTF-8.
    text: FileBytes,
    syms: Vec<KSym>,
    /// `(offset, length)` in the text of each module name, once per name.
    modules: Vec<(u32, u32)>,
    restricted: bool,
    text_address: Option<u64>,
}

impl Default for Kallsyms {
    fn default() -> Kallsyms {
        Kallsyms::from_text(FileBytes::Owned(Vec::new()))
    }
}

impl std::fmt::Debug for Kallsyms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kallsyms")
            .field("symbols", &self.syms.len())
            .field("modules", &self.modules.len())
            .field("restricted", &self.restricted)
            .field("text_address", &self.text_address)
            .finish()
    }
}

impl Kallsyms {
    /// Parses kallsyms text. Malformed lines are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms::from_text(FileBytes::Owned(text.as_bytes().to_vec()))
    }

    /// Parses kallsyms text it keeps (names are ranges of it, not copies); `text` must be
    /// valid UTF-8 (names are sliced out of it at ASCII separators).
    fn from_text(text: FileBytes) -> Kallsyms {
        let mut syms = Vec::new();
        let mut modules: Vec<(u32, u32)> = Vec::new();
        let mut module_index: FxHashMap<&[u8], u16> = FxHashMap::default();
        let mut text_address = None;
        let mut lines = 0usize;
        let mut zero = 0usize;
        let bytes: &[u8] = &text;
        // One pass finds every line's end and first tab (a module's name follows the tab after
        // the symbol's): a kernel's kallsyms is ~5 MB of ~45-byte lines, and three searches a
        // line (its end, the address's end, the name's) were most of the parse. A 64-bit
        // address is 16 digits and a space.
        let mut line_at = 0usize;
        let mut first_tab: Option<usize> = None;
        let ends = memchr::memchr2_iter(b'\t', b'\n', bytes).chain(std::iter::once(bytes.len()));
        for end in ends {
            if bytes.get(end) == Some(&b'\t') {
                first_tab.get_or_insert(end - line_at);
                continue;
            }
            let line = bytes.get(line_at..end).unwrap_or_default();
            let first_tab = first_tab.take();
            let line_at = std::mem::replace(&mut line_at, end + 1);
            // `<hex address> <type letter> <name>[\t[<module>]]`
            let fixed = line.get(..16).and_then(parse_hex);
            let (sp, addr) = match (line.get(16), fixed) {
                (Some(b' '), Some(addr)) => (16, addr),
                _ => {
                    let Some(sp) = memchr::memchr2(b' ', b'\t', line) else {
                        continue;
                    };
                    let Some(addr) = parse_hex(line.get(..sp).unwrap_or_default()) else {
                        continue;
                    };
                    (sp, addr)
                }
            };
            let (Some(&kind), Some(&sep)) = (line.get(sp + 1), line.get(sp + 2)) else {
                continue;
            };
            if sep != b' ' && sep != b'\t' {
                continue;
            }
            lines += 1;
            if addr == 0 {
                zero += 1;
                continue;
            }
            if !matches!(kind, b't' | b'T' | b'w' | b'W') {
                continue;
            }
            let rest_at = sp + 3;
            let rest = line.get(rest_at..).unwrap_or_default();
            // The first tab of the name's part: the one found with the line's end, unless that
            // one came before (a tab between the address, type and name).
            let tab = match first_tab {
                Some(t) if t >= rest_at => Some(t - rest_at),
                Some(_) => memchr::memchr(b'\t', rest),
                None => None,
            };
            let (name, module) = match tab {
                Some(tab) => (
                    (rest_at, rest.get(..tab).unwrap_or_default()),
                    Some((rest_at + tab + 1, rest.get(tab + 1..).unwrap_or_default())),
                ),
                None => ((rest_at, rest), None),
            };
            let (name_at, name) = trim(name.0, name.1, b"");
            if name.is_empty() {
                continue;
            }
            if name == b"_text" && module.is_none() {
                text_address.get_or_insert(addr);
            }
            let Ok(name_at) = u32::try_from(line_at + name_at) else {
                break; // past 4 GiB of text
            };
            let Ok(name_len) = u16::try_from(name.len()) else {
                continue; // a name over 64 KiB (the kernel's are at most 512 bytes)
            };
            let module = match module {
                None => NO_MODULE,
                Some((m_at, m)) => {
                    let (m_at, m) = trim(m_at, m, b"[]");
                    match module_index.get(m) {
                        Some(&i) => i,
                        None => match (
                            u16::try_from(modules.len()),
                            u32::try_from(line_at + m_at),
                            u32::try_from(m.len()),
                        ) {
                            (Ok(i), Ok(at), Ok(len)) if i != NO_MODULE => {
                                modules.push((at, len));
                                module_index.insert(m, i);
                                i
                            }
                            _ => break,
                        },
                    }
                }
            };
            syms.push(KSym {
                start: addr,
                name_at,
                name_len,
                module,
            });
        }
        drop(module_index);
        // Names grow with the line: an unstable sort on (start, name) keeps the first line of
        // each address, as a stable sort by address would, without its scratch buffer.
        syms.sort_unstable_by_key(|s| (s.start, s.name_at));
        syms.dedup_by_key(|s| s.start);
        // Parsed: the text's pages leave the resident set, and a name is read again (from the
        // page cache) when a kernel frame is named (a 5 MB file stayed resident all run).
        text.release(text.len() as u64);
        Kallsyms {
            text,
            syms,
            modules,
            restricted: lines > 0 && zero == lines,
            text_address,
        }
    }

    /// Reads and parses a kallsyms file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Kallsyms> {
        let path = path.as_ref();
        let bytes = FileBytes::open(path).map_err(|e| Error::path(path, e.into()))?;
        let text = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes,
            Err(_) => FileBytes::Owned(String::from_utf8_lossy(&bytes).into_owned().into_bytes()),
        };
        Ok(Kallsyms::from_text(text))
    }

    /// The address of `_text`, the kernel image's start (perf records it as the pgoff of
    /// the kernel's mapping): which kernel, booted where, these symbols are of.
    pub fn text_address(&self) -> Option<u64> {
        self.text_address
    }

    /// Whether every address was 0 (`kptr_restrict`): no kernel names can be given.
    pub fn is_restricted(&self) -> bool {
        self.restricted
    }

    /// The number of code symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether there are no code symbols (restricted, empty or not kallsyms).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol at or before `addr` (the last symbol covers at most 1 MiB).
    pub fn lookup(&self, addr: u64) -> Option<KernelSymbol<'_>> {
        let i = self
            .syms
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        let s = self.syms.get(i)?;
        if self.syms.get(i + 1).is_none() && addr - s.start >= LAST_SYMBOL_SPAN {
            return None;
        }
        let get = |at: u32, len: usize| {
            let at = usize::try_from(at).ok()?;
            std::str::from_utf8(self.text.get(at..at.checked_add(len)?)?).ok()
        };
        Some(KernelSymbol {
            name: get(s.name_at, usize::from(s.name_len))?,
            start: s.start,
            module: self
                .modules
                .get(usize::from(s.module))
                .and_then(|&(at, len)| get(at, len as usize)),
        })
    }
}

/// A hexadecimal number of at most 16 digits.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    // Branch-free over the digits: a byte that is no hex digit sets a high bit of `bad`
    // (every line's 16 digits went through a match per digit: most of the parse).
    let (mut v, mut bad) = (0u64, 0u8);
    for &c in digits {
        let d = HEX_DIGIT.get(usize::from(c)).copied().unwrap_or(NOT_HEX);
        bad |= d;
        v = v << 4 | u64::from(d & 0xf);
    }
    (bad & NOT_HEX == 0).then_some(v)
}

/// A byte that is no hex digit in [`HEX_DIGIT`].
const NOT_HEX: u8 = 0x80;

/// Each byte's value as a hex digit, or [`NOT_HEX`].
// Indices below 256 into a `[u8; 256]`, in a constant (where `get_mut` cannot be called yet).
#[allow(clippy::indexing_slicing)]
const HEX_DIGIT: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// `field` (at offset `at`) without surrounding whitespace and the bytes of `also`.
fn trim<'a>(at: usize, field: &'a [u8], also: &[u8]) -> (usize, &'a [u8]) {
    let strip = |c: &u8| c.is_ascii_whitespace() || also.contains(c);
    let start = field.iter().position(|c| !strip(c)).unwrap_or(field.len());
    let end = field
        .iter()
        .rposition(|c| !strip(c))
        .map_or(start, |e| e + 1);
    (at + start, field.get(start..end).unwrap_or_default())
}

/// The running kernel's build id, from `/sys/kernel/notes`.
pub fn running_kernel_build_id() -> Option<BuildId> {
    build_id_from_notes(&std::fs::read("/sys/kernel/notes").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hex fields of 0 to 17 bytes, digits of both cases and every other byte now and then,
    /// parse as `u64::from_str_radix` parses them (which also takes a leading `+`, and more
    /// than 16 digits when the first are zeros: a kallsyms address has at most 16).
    #[test]
    fn hex_fields_parse_as_the_standard_library_parses_them() {
        let mut rng = profkit_testkit::Xorshift::new(16);
        for _ in 0..50_000 {
            let len = rng.below(18) as usize;
            let field: Vec<u8> = (0..len)
                .map(|_| match rng.below(23) {
                    22 => rng.below(256) as u8,
                    n => b"0123456789abcdefABCDEF"[n as usize],
                })
                .collect();
            let std = std::str::from_utf8(&field)
                .ok()
                .filter(|f| f.len() <= 16 && !f.starts_with('+'))
                .and_then(|f| u64::from_str_radix(f, 16).ok());
            assert_eq!(parse_hex(&field), std, "{field:?}");
        }
    }

    #[test]
    fn parse_and_lookup() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000000 T _text\n\
             ffffffff81001000 t do_one\n\
             ffffffff81002000 D some_data\n\
             ffffffff81003000 W weak_fn\n\
             garbage line\n\
             ffffffffc0a01000 t ext4_fn\t[ext4]\n",
        );
        assert!(!k.is_restricted());
        assert_eq!(k.len(), 4);
        let s = k.lookup(0xffffffff81001234).unwrap();
        assert_eq!(
            (s.name, s.start, s.module),
            ("do_one", 0xffffffff81001000, None)
        );
        // Data symbols do not end the code symbol before them.
        assert_eq!(k.lookup(0xffffffff81002010).unwrap().name, "do_one");
        let m = k.lookup(0xffffffffc0a01010).unwrap();
        assert_eq!((m.name, m.module), ("ext4_fn", Some("ext4")));
        assert!(k.lookup(0xffffffffc0a01000 + (1 << 20)).is_none());
        assert!(k.lookup(0x1000).is_none());
    }

    #[test]
    fn lines_without_a_final_newline_or_with_empty_ones() {
        for text in [
            "ffffffff81000000 T a",
            "\n\nffffffff81000000 T a\n\n",
            "ffffffff81000000\tT\ta\r\n",
        ] {
            let k = Kallsyms::parse(text);
            assert_eq!(k.len(), 1, "{text:?}");
            assert_eq!(k.lookup(0xffffffff81000001).map(|s| s.name), Some("a"));
        }
        assert!(Kallsyms::parse("\n").is_empty());
    }

    /// Tabs where spaces usually are, short addresses, a module after tabs: the one search
    /// per line finds what three did.
    #[test]
    fn separators_and_modules_wherever_they_are() {
        let k = Kallsyms::parse(
            "ffffffff81000000\tT\tfirst\t[m1]\n\
             ffffffff81001000 T\tsecond\t[m2]\n\
             ffffffff81002000\tt third\n\
             81003000 t fourth\t[m3]\n\
             ffffffff8100400 t fifth\n\
             ffffffff81005000  t not_a_line\n\
             ffffffff81006000 t sixth\t\t[m4]\n",
        );
        let at = |a: u64| k.lookup(a).map(|s| (s.name, s.module));
        assert_eq!(at(0xffffffff81000000), Some(("first", Some("m1"))));
        assert_eq!(at(0xffffffff81001000), Some(("second", Some("m2"))));
        assert_eq!(at(0xffffffff81002000), Some(("third", None)));
        assert_eq!(at(0x81003000), Some(("fourth", Some("m3"))));
        assert_eq!(at(0xffffffff8100400), Some(("fifth", None)));
        // A double space: the type is not where it must be, the line is not one.
        assert_eq!(at(0xffffffff81005000), Some(("third", None)));
        assert_eq!(at(0xffffffff81006000), Some(("sixth", Some("m4"))));
        assert_eq!(k.len(), 6);
    }

    #[test]
    fn restricted() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t foo\n");
        assert!(k.is_restricted());
        assert!(k.is_empty());
        assert!(k.lookup(0xffffffff81000000).is_none());
        assert!(!Kallsyms::parse("").is_restricted());
    }

    #[test]
    fn from_a_file_mapped_or_mended() {
        let dir = std::env::temp_dir().join(format!("profkit-kallsyms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kallsyms");
        let mut text = b"ffffffff81000000 T _text\nffffffff81001000 t bad_\xff_name\n".to_vec();
        text.extend_from_slice(b"ffffffffc0a01000 t a\t[m1]\nffffffffc0a02000 t b\t[m1]\n");
        text.extend_from_slice(b"ffffffffc0a03000 t c\t[m2]\n");
        std::fs::write(&path, &text).unwrap();
        let k = Kallsyms::from_file(&path).unwrap();
        assert_eq!(
            k.lookup(0xffffffff81001001).unwrap().name,
            "bad_\u{fffd}_name"
        );
        assert_eq!(k.modules.len(), 2, "one entry per module name");
        let m = |a| k.lookup(a).and_then(|s| s.module);
        assert_eq!(
            (m(0xffffffffc0a02000), m(0xffffffffc0a03000)),
            (Some("m1"), Some("m2"))
        );
        text.retain(|&c| c != 0xff);
        std::fs::write(&path, &text).unwrap();
        let k = Kallsyms::from_file(&path).unwrap();
        assert!(matches!(k.text, FileBytes::Mapped(_)));
        assert_eq!(k.lookup(0xffffffff81001001).unwrap().name, "bad__name");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
