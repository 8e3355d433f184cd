//! The folded-stacks writer: a [`StackTree`] as `a;b;c VALUE` lines, in byte order, written
//! by walking the tree once (no line or path is materialised before it is written).
//!
//! Byte order of the lines is not the tree's order with each node's children sorted by name:
//! a frame name may continue with bytes below `;` (`f2` sorts before `f;…`, but `f 12` — the
//! line of `f` itself — sorts before `f2`), and two functions may share a name, so the lines
//! under them interleave. At each step the walk therefore sorts *entries* of a group of nodes
//! whose paths print the same (usually one node):
//!
//! * for every child with a value, its own line's rest: `name VALUE`;
//! * for every distinct child name, the lines below it, which all start `name;` — the children
//!   of that name form the next group.
//!
//! Entries compare by those bytes (a line's rest is compared whole; `name;` is a prefix of every
//! line below, and no other entry's bytes fall between them since names hold no `;`), so the
//! lines come out exactly as sorting them would put them.

use std::cmp::Ordering;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use super::{StackTree, Value};
use crate::func::{FuncId, FunctionTable};
use crate::trie;

/// What follows an entry's name.
#[derive(Clone, Copy)]
enum Rest {
    /// A line ends here: ` VALUE` (the value's decimal digits).
    Line { digits: [u8; 20], len: u8 },
    /// Lines continue below: `;…`, under these children.
    Below(Nodes),
}

/// The nodes of a group: nearly always one; several when functions share a name (then an
/// index into the walk's group storage).
#[derive(Clone, Copy)]
enum Nodes {
    One(u32),
    Many(u32),
}

/// A frame's name as written: escaped from the function table, or `#ID` for a function the
/// table does not name, made when it is needed (an input can name 12.5M functions no table
/// names: issue #23 B5).
#[derive(Clone, Copy)]
enum Name<'n> {
    Table(&'n [u8]),
    Id { text: [u8; 11], len: u8 },
}

impl<'n> Name<'n> {
    fn id(func: FuncId) -> Name<'n> {
        let mut text = [0u8; 11];
        text[0] = b'#';
        let mut itoa = itoa::Buffer::new();
        let digits = itoa.format(func.0).as_bytes();
        let len = 1 + digits.len();
        if let Some(d) = text.get_mut(1..len) {
            d.copy_from_slice(digits);
        }
        Name::Id {
            text,
            len: len as u8,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Name::Table(b) => b,
            Name::Id { text, len } => text.get(..usize::from(*len)).unwrap_or_default(),
        }
    }
}

#[derive(Clone, Copy)]
struct Entry<'n> {
    name: Name<'n>,
    rest: Rest,
}

impl Entry<'_> {
    fn tail(&self) -> &[u8] {
        match &self.rest {
            Rest::Line { digits, len } => digits.get(..usize::from(*len)).unwrap_or_default(),
            Rest::Below(_) => b"",
        }
    }

    /// The byte after the name: ` ` before a value, `;` before the lines below.
    fn separator(&self) -> u8 {
        match self.rest {
            Rest::Line { .. } => b' ',
            Rest::Below(_) => b';',
        }
    }

    /// Byte order of `name`, separator, tail.
    fn cmp_bytes(&self, other: &Entry<'_>) -> Ordering {
        let a = self.name.bytes().iter().copied().chain([self.separator()]);
        let b = other
            .name
            .bytes()
            .iter()
            .copied()
            .chain([other.separator()]);
        a.chain(self.tail().iter().copied())
            .cmp(b.chain(other.tail().iter().copied()))
    }
}

/// One level of the walk: its sorted entries and the next to write.
struct Level<'n> {
    entries: Vec<Entry<'n>>,
    next: usize,
    /// Length of the line prefix above this level's names.
    prefix_len: usize,
}

impl StackTree {
    /// Calls `line` with every folded line (`f;g;h VALUE`, no line feed), in byte order,
    /// optionally under a `prefix` frame such as `thread_123`. Frame names have `;` replaced
    /// by `:` and line breaks by spaces, so every name stays one frame; paths without a call
    /// or sample, and lines whose value is 0, are left out.
    pub fn for_each_folded_line(
        &self,
        names: &FunctionTable,
        value: Value,
        prefix: Option<&str>,
        to_output_units: &dyn Fn(u64) -> u64,
        line: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        // The escaped name of every function the table names, a range of one arena (one
        // escape per function); the others are `#ID`, made as they are written.
        let mut arena: Vec<u8> = Vec::new();
        let mut by_func: FxHashMap<FuncId, (usize, usize)> = FxHashMap::default();
        for n in self.nodes.iter() {
            if let Some(name) = names.get(n.func).and_then(|f| f.name.as_deref()) {
                by_func.entry(n.func).or_insert_with(|| {
                    let start = arena.len();
                    arena.extend(escape(name));
                    (start, arena.len())
                });
            }
        }
        let escaped = FuncNames {
            arena: &arena,
            by_func: &by_func,
        };
        let value_of = |n: &super::Node| -> u64 {
            if n.count == 0 {
                return 0;
            }
            match value {
                Value::Exclusive => to_output_units(n.exclusive),
                Value::Inclusive => to_output_units(n.inclusive),
                Value::Count => n.count,
            }
        };
        // Groups of several nodes whose paths print the same.
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        if let Some(p) = prefix {
            buf.extend(escape(p));
            buf.push(b';');
        }
        let mut levels: Vec<Level<'_>> = Vec::new();
        let root = self.level(Nodes::One(0), &mut groups, &escaped, &value_of, buf.len());
        levels.push(root);
        while let Some(top) = levels.last_mut() {
            let Some(entry) = top.entries.get(top.next).copied() else {
                levels.pop();
                continue;
            };
            top.next += 1;
            let prefix_len = top.prefix_len;
            let last = top.next == top.entries.len();
            buf.truncate(prefix_len);
            buf.extend_from_slice(entry.name.bytes());
            match entry.rest {
                Rest::Line { .. } => {
                    buf.push(b' ');
                    buf.extend_from_slice(entry.tail());
                    line(&buf)?;
                }
                Rest::Below(nodes) => {
                    buf.push(b';');
                    if last {
                        // Nothing left at this level: the level below takes its place, so a
                        // chain of 12.5M single calls keeps one level, not 12.5M.
                        levels.pop();
                    }
                    let next = self.level(nodes, &mut groups, &escaped, &value_of, buf.len());
                    levels.push(next);
                }
            }
        }
        Ok(())
    }

    /// The sorted entries below `parents` (their children).
    fn level<'n>(
        &self,
        parents: Nodes,
        groups: &mut Vec<Vec<u32>>,
        escaped: &FuncNames<'n>,
        value_of: &dyn Fn(&super::Node) -> u64,
        prefix_len: usize,
    ) -> Level<'n> {
        let (one, taken);
        let parents: &[u32] = match parents {
            Nodes::One(n) => {
                one = [n];
                &one
            }
            Nodes::Many(g) => {
                taken = groups
                    .get_mut(g as usize)
                    .map(std::mem::take)
                    .unwrap_or_default();
                &taken
            }
        };
        let mut entries: Vec<Entry<'n>> = Vec::new();
        // Children with lines below them, by name.
        let mut below: Vec<(Name<'n>, u32)> = Vec::new();
        for &p in parents {
            for c in trie::children(&self.nodes, p) {
                let Some(child) = self.nodes.get(c as usize) else {
                    continue;
                };
                let name = escaped.of(child.func);
                let v = value_of(child);
                if v != 0 {
                    let mut digits = [0u8; 20];
                    let mut itoa = itoa::Buffer::new();
                    let text = itoa.format(v).as_bytes();
                    if let Some(d) = digits.get_mut(..text.len()) {
                        d.copy_from_slice(text);
                    }
                    entries.push(Entry {
                        name,
                        rest: Rest::Line {
                            digits,
                            len: text.len() as u8,
                        },
                    });
                }
                if child.has_children() {
                    below.push((name, c));
                }
            }
        }
        below.sort_unstable_by(|a, b| a.0.bytes().cmp(b.0.bytes()));
        let mut rest = &below[..];
        while let Some(&(name, first)) = rest.first() {
            let same = rest
                .iter()
                .take_while(|(n, _)| n.bytes() == name.bytes())
                .count();
            let (group, tail) = rest.split_at(same);
            let nodes = if same == 1 {
                Nodes::One(first)
            } else {
                groups.push(group.iter().map(|&(_, c)| c).collect());
                Nodes::Many(groups.len() as u32 - 1)
            };
            entries.push(Entry {
                name,
                rest: Rest::Below(nodes),
            });
            rest = tail;
        }
        entries.sort_unstable_by(|a, b| {
            // Nearly always decided inside the names.
            let (an, bn) = (a.name.bytes(), b.name.bytes());
            let n = an.len().min(bn.len());
            match an.get(..n).cmp(&bn.get(..n)) {
                Ordering::Equal => a.cmp_bytes(b),
                order => order,
            }
        });
        Level {
            entries,
            next: 0,
            prefix_len,
        }
    }

    /// The folded lines (see [`StackTree::for_each_folded_line`]).
    pub fn folded_lines(
        &self,
        names: &FunctionTable,
        value: Value,
        prefix: Option<&str>,
        to_output_units: &dyn Fn(u64) -> u64,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        let _ = self.for_each_folded_line(names, value, prefix, to_output_units, &mut |l| {
            lines.push(String::from_utf8_lossy(l).into_owned());
            Ok(())
        });
        lines
    }

    /// Writes [`StackTree::folded_lines`] to `out`, one per line, as they are produced.
    ///
    /// Each line goes to `out` straight from the walk's line buffer: `out` is buffered (every
    /// caller's is), and a second buffer here would copy every byte once more (a folded file of
    /// deep stacks is ~100 MB: lines of thousands of bytes, where two calls per line cost
    /// nothing).
    pub fn write_folded(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        value: Value,
        prefix: Option<&str>,
        to_output_units: &dyn Fn(u64) -> u64,
    ) -> io::Result<()> {
        self.for_each_folded_line(names, value, prefix, to_output_units, &mut |l| {
            out.write_all(l)?;
            out.write_all(b"\n")
        })
    }
}

/// The escaped names of a tree's functions.
struct FuncNames<'n> {
    arena: &'n [u8],
    /// The functions the table names: their name's range of `arena`.
    by_func: &'n FxHashMap<FuncId, (usize, usize)>,
}

impl<'n> FuncNames<'n> {
    fn of(&self, func: FuncId) -> Name<'n> {
        match self.by_func.get(&func) {
            Some(&(start, end)) => Name::Table(self.arena.get(start..end).unwrap_or(b"?")),
            None => Name::id(func),
        }
    }
}

/// A frame name with `;` → `:` and control characters escaped (`\n`, `\u001b`: profkit's one
/// control escaper, `profkit_common::json::push_controls`), so a line is one stack and the SVG
/// drawn from the lines is well-formed XML (an empty name becomes `?`).
fn escape(name: &str) -> Vec<u8> {
    if name.is_empty() {
        return b"?".to_vec();
    }
    let mut out = Vec::with_capacity(name.len());
    profkit_common::json::push_controls(&mut out, name);
    for b in &mut out {
        if *b == b';' {
            *b = b':';
        }
    }
    out
}

#[cfg(test)]
mod escape_tests {
    /// A JIT name with ESC, a newline and a C1 CSI stays one well-formed frame (B9).
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            super::escape("a;b\u{1b}[31m\nc\u{9b}"),
            b"a:b\\u001b[31m\\nc\\u009b".to_vec()
        );
        assert_eq!(super::escape(""), b"?".to_vec());
    }
}
