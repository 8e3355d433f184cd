//! Kernel symbols from `/proc/kallsyms` text.
//!
//! Each line is `<hex address> <type letter> <name>[\t[<module>]]`. Only code symbols are
//! kept (types `t`, `T`, `w`, `W`), sorted by address; a symbol extends to the next one.
//! When `kernel.kptr_restrict` hides addresses from the reader, every address reads 0:
//! [`Kallsyms::is_restricted`] says so, and a caller shows kernel frames as `[kernel]`.

use std::path::Path;

use crate::build_id::{build_id_from_notes, BuildId};
use crate::error::{Error, Result};

/// The last symbol covers at most this many bytes (nothing bounds it otherwise).
const LAST_SYMBOL_SPAN: u64 = 1 << 20;

#[derive(Debug, Clone, Copy)]
struct KSym {
    start: u64,
    name: (u32, u32),
    module: Option<(u32, u32)>,
}

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
#[derive(Debug, Default)]
pub struct Kallsyms {
    text: String,
    syms: Vec<KSym>,
    restricted: bool,
    text_address: Option<u64>,
}

impl Kallsyms {
    /// Parses kallsyms text. Malformed lines are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms::from_text(text.to_string())
    }

    /// Parses kallsyms text it keeps (names are ranges of it, not copies).
    fn from_text(text: String) -> Kallsyms {
        let mut syms = Vec::new();
        let mut text_address = None;
        let mut lines = 0usize;
        let mut zero = 0usize;
        let bytes = text.as_bytes();
        let range = |start: usize, field: &[u8]| -> Option<(u32, u32)> {
            Some((u32::try_from(start).ok()?, u32::try_from(field.len()).ok()?))
        };
        let mut at = 0usize;
        for line in bytes.split(|&c| c == b'\n') {
            let line_at = at;
            at += line.len() + 1;
            // `<hex address> <type letter> <name>[\t[<module>]]`
            let Some(sp) = line.iter().position(|&c| c == b' ' || c == b'\t') else {
                continue;
            };
            let Some(addr) = parse_hex(line.get(..sp).unwrap_or_default()) else {
                continue;
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
            let (name, module) = match rest.iter().position(|&c| c == b'\t') {
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
            let Some(name) = range(line_at + name_at, name) else {
                break;
            };
            let module = module.and_then(|(m_at, m)| {
                let (m_at, m) = trim(m_at, m, b"[]");
                range(line_at + m_at, m)
            });
            syms.push(KSym {
                start: addr,
                name,
                module,
            });
        }
        syms.sort_by_key(|s| s.start);
        syms.dedup_by_key(|s| s.start);
        Kallsyms {
            text,
            syms,
            restricted: lines > 0 && zero == lines,
            text_address,
        }
    }

    /// Reads and parses a kallsyms file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Kallsyms> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::path(path, e.into()))?;
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
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
        let get = |(off, len): (u32, u32)| {
            let off = usize::try_from(off).ok()?;
            self.text
                .get(off..off.checked_add(usize::try_from(len).ok()?)?)
        };
        Some(KernelSymbol {
            name: get(s.name)?,
            start: s.start,
            module: s.module.and_then(get),
        })
    }
}

/// A hexadecimal number of at most 16 digits.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(16)?;
        Some(v << 4 | u64::from(d))
    })
}

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
    fn restricted() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t foo\n");
        assert!(k.is_restricted());
        assert!(k.is_empty());
        assert!(k.lookup(0xffffffff81000000).is_none());
        assert!(!Kallsyms::parse("").is_restricted());
    }
}
