//! DWARF lines and inline frames through addr2line.
//!
//! The sections addr2line reads are views of the mapped file, or buffers decompressed once,
//! when the first lookup of a binary needs them; the context is then kept for the life of
//! the [`Binary`](super::Binary). Location lists, macros and name indexes are not loaded
//! (addr2line does not use them).
//!
//! **One unit at a time.** addr2line's context parses the first entry (and so the whole
//! abbreviation table) of every compilation unit before it answers anything: for glibc's
//! debug file, 2,063 units, that is most of the time the first lookup waits (about twice the
//! inflating of `.debug_info`), while a profile's samples touch a few dozen units. When the
//! file allows it, [`Context`] therefore finds a probe's unit through `.debug_aranges` and
//! builds a context of that unit alone the first time one of its addresses is asked: its bytes
//! of `.debug_info` as the section, and its own `.debug_aranges` sets with their unit offset
//! set to 0, so that addr2line finds its ranges as it would in the whole file. A unit taken
//! out of its section reads the same as in it as long as nothing in it points into another
//! unit; that holds unless the abbreviations use a form that names a `.debug_info` offset
//! (`DW_FORM_ref_addr`, `DW_FORM_indirect`, the supplementary-file forms) or the file has
//! partial units (dwz). Such files and files without `.debug_aranges` use the context of the
//! whole file, and so does a probe outside every aranges entry when some unit has none.

use std::sync::Arc;

use object::Object;
use profkit_common::FileBytes;

use super::Frame;
use crate::bytes::SectionBytes;

type Reader = gimli::EndianReader<gimli::RunTimeEndian, SectionBytes>;
type A2l = addr2line::Context<Reader>;

/// At most this many frames per address (inline depth is small in practice; this bounds
/// hostile DWARF).
const MAX_FRAMES: usize = 256;

/// A line-table position: file, line, column.
pub(crate) type Location = (Option<Arc<str>>, Option<u32>, Option<u32>);

/// The sections addr2line reads.
const WANTED: [gimli::SectionId; 11] = {
    use gimli::SectionId as S;
    [
        S::DebugAbbrev,
        S::DebugAddr,
        S::DebugAranges,
        S::DebugInfo,
        S::DebugLine,
        S::DebugLineStr,
        S::DebugStr,
        S::DebugStrOffsets,
        S::DebugTypes,
        S::DebugRanges,
        S::DebugRngLists,
    ]
};

/// The DWARF of one file (see the [module docs](self)).
pub(crate) struct Context {
    sections: Vec<(gimli::SectionId, Reader)>,
    endian: gimli::RunTimeEndian,
    /// `None` when the file is read whole.
    units: Option<Units>,
    /// The whole file's context: `None` until needed, then `Some(None)` if it failed.
    whole: Option<Option<A2l>>,
}

/// The units `.debug_aranges` names, and their contexts once built.
struct Units {
    /// `(start, end, unit)` of every aranges entry, sorted.
    ranges: Vec<(u64, u64, usize)>,
    units: Vec<Unit>,
    /// Every compilation unit has aranges: a probe outside them all is in no unit.
    complete: bool,
}

struct Unit {
    /// Its bytes in `.debug_info`.
    span: std::ops::Range<usize>,
    /// Its `.debug_aranges` sets, their unit offset set to 0.
    aranges: Vec<u8>,
    /// `None` until needed, then `Some(None)` if it failed.
    context: Option<Option<A2l>>,
}

impl Context {
    /// The DWARF of the ELF file in `data`, or `None` without usable DWARF.
    pub fn load(data: &Arc<FileBytes>) -> Option<Context> {
        let file = object::File::parse(&***data).ok()?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        use gimli::SectionId as S;
        let get = |id: S| super::section(&file, data, id.name()).map(|s| s.data);
        // `.debug_info` is most of the bytes; when compressed, inflating it on a second thread
        // while the other sections are read halves the wait of the first lookup.
        let sections: Vec<(S, Reader)> = std::thread::scope(|scope| {
            // No thread to spare (an address-space or thread limit): read it here.
            let info = std::thread::Builder::new().spawn_scoped(scope, || get(S::DebugInfo));
            let mut v: Vec<_> = WANTED
                .iter()
                .filter(|&&id| id != S::DebugInfo)
                .map(|&id| (id, get(id)))
                .collect();
            let info = match info {
                Ok(h) => h.join().ok().flatten(),
                Err(_) => get(S::DebugInfo),
            };
            v.push((S::DebugInfo, info));
            v.into_iter()
                .map(|(id, bytes)| (id, Reader::new(bytes.unwrap_or_default(), endian)))
                .collect()
        });
        let mut ctx = Context {
            sections,
            endian,
            units: None,
            whole: None,
        };
        ctx.units = Units::index(&ctx);
        Some(ctx)
    }

    fn reader(&self, id: gimli::SectionId) -> Reader {
        self.sections
            .iter()
            .find(|(s, _)| *s == id)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| Reader::new(SectionBytes::default(), self.endian))
    }

    /// An addr2line context of the whole file, or of one unit (`.debug_info` and
    /// `.debug_aranges` replaced by the unit's).
    fn build(&self, unit: Option<(Reader, Reader)>) -> Option<A2l> {
        use gimli::SectionId as S;
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader, gimli::Error> {
            Ok(match (id, &unit) {
                (S::DebugInfo, Some((info, _))) => info.clone(),
                (S::DebugAranges, Some((_, aranges))) => aranges.clone(),
                (S::DebugTypes, Some(_)) => Reader::new(SectionBytes::default(), self.endian),
                _ => self.reader(id),
            })
        })
        .ok()?;
        addr2line::Context::from_dwarf(dwarf).ok()
    }

    /// The context that answers `probe`: its unit's, else (when the unit cannot be told)
    /// the whole file's; `None` for a probe in no unit.
    fn context_of(&mut self, probe: u64) -> Option<&A2l> {
        let Some(units) = &self.units else {
            return self.whole();
        };
        let Some(i) = units.unit_of(probe) else {
            return if units.complete { None } else { self.whole() };
        };
        let pending = units.units.get(i).filter(|u| u.context.is_none()).map(|u| {
            (
                self.reader(gimli::SectionId::DebugInfo)
                    .range(u.span.clone()),
                Reader::new(SectionBytes::owned(u.aranges.clone()), self.endian),
            )
        });
        if let Some(sections) = pending {
            let built = self.build(Some(sections));
            if let Some(u) = self.units.as_mut().and_then(|u| u.units.get_mut(i)) {
                u.context = Some(built);
            }
        }
        self.units
            .as_ref()
            .and_then(|u| u.units.get(i))
            .and_then(|u| u.context.as_ref())
            .and_then(Option::as_ref)
    }

    fn whole(&mut self) -> Option<&A2l> {
        if self.whole.is_none() {
            self.whole = Some(self.build(None));
        }
        self.whole.as_ref().and_then(Option::as_ref)
    }

    /// Appends the frames at `probe`, innermost first (nothing if DWARF does not cover it).
    pub fn frames(
        &mut self,
        probe: u64,
        out: &mut Vec<Frame>,
        intern: &mut dyn FnMut(&str) -> Arc<str>,
    ) {
        // addr2line computes `probe + 1` (an overflow panic in debug builds at u64::MAX).
        if probe == u64::MAX {
            return;
        }
        let Some(ctx) = self.context_of(probe) else {
            return;
        };
        let Ok(mut iter) = ctx.find_frames(probe).skip_all_loads() else {
            return;
        };
        while let Ok(Some(frame)) = iter.next() {
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.raw_name().ok())
                .map(|raw| intern(&crate::demangle(&raw)))
                .unwrap_or_else(|| intern("??"));
            let (file, line, column) = match frame.location {
                Some(l) => (l.file.map(&mut *intern), l.line, l.column),
                None => (None, None, None),
            };
            out.push(Frame {
                function,
                file,
                line,
                column,
            });
            if out.len() >= MAX_FRAMES {
                break;
            }
        }
    }

    /// The line-table position of `probe` (for code DWARF has lines but no function for).
    pub fn location(
        &mut self,
        probe: u64,
        intern: &mut dyn FnMut(&str) -> Arc<str>,
    ) -> Option<Location> {
        if probe == u64::MAX {
            return None;
        }
        let loc = self.context_of(probe)?.find_location(probe).ok()??;
        Some((loc.file.map(&mut *intern), loc.line, loc.column))
    }
}

impl Units {
    /// The unit index of `ctx`'s file, or `None` when it must be read whole (see the
    /// [module docs](self)).
    fn index(ctx: &Context) -> Option<Units> {
        use gimli::SectionId as S;
        if !abbreviations_stay_in_unit(&ctx.reader(S::DebugAbbrev)) {
            return None;
        }
        let info_reader = ctx.reader(S::DebugInfo);
        let info_len = gimli::Reader::len(&info_reader);
        let info = gimli::DebugInfo::from(info_reader);
        let mut units = Vec::new();
        // (offset in .debug_info, index), in section order.
        let mut by_offset = Vec::new();
        let mut headers = info.units();
        while let Ok(Some(h)) = headers.next() {
            match h.type_() {
                gimli::UnitType::Compilation | gimli::UnitType::Skeleton(_) => {}
                gimli::UnitType::Partial => return None,
                _ => continue,
            }
            let start = h.debug_info_offset()?.0;
            let end = start.checked_add(h.length_including_self())?;
            // gimli's `range` panics outside the section: the header parse keeps units inside
            // it, and this says so where the span is made.
            if end > info_len {
                return None;
            }
            by_offset.push((start, units.len()));
            units.push(Unit {
                span: start..end,
                aranges: Vec::new(),
                context: None,
            });
        }
        let section = ctx.reader(S::DebugAranges);
        let bytes: &[u8] = section.bytes();
        let aranges = gimli::DebugAranges::from(section.clone());
        let mut ranges = Vec::new();
        let mut headers = aranges.headers();
        while let Ok(Some(h)) = headers.next() {
            let unit = by_offset
                .binary_search_by_key(&h.debug_info_offset().0, |&(o, _)| o)
                .ok()
                .and_then(|at| by_offset.get(at))
                .map(|&(_, unit)| unit);
            let (Some(unit), Some(set)) = (unit, rebased_set(bytes, &h)) else {
                continue;
            };
            let mut entries = h.entries();
            while let Ok(Some(e)) = entries.next() {
                let r = e.range();
                if r.end > r.begin {
                    ranges.push((r.begin, r.end, unit));
                }
            }
            if let Some(u) = units.get_mut(unit) {
                u.aranges.extend_from_slice(&set);
            }
        }
        if ranges.is_empty() {
            return None;
        }
        ranges.sort_unstable();
        let complete = units.iter().all(|u| !u.aranges.is_empty());
        Some(Units {
            ranges,
            units,
            complete,
        })
    }

    /// The unit whose aranges entry covers `probe` (of overlapping entries, the one starting
    /// last).
    fn unit_of(&self, probe: u64) -> Option<usize> {
        let after = self.ranges.partition_point(|&(start, _, _)| start <= probe);
        let &(_, end, unit) = self.ranges.get(after.checked_sub(1)?)?;
        (probe < end).then_some(unit)
    }
}

/// The bytes of the aranges set `h` (in `section`), its `.debug_info` offset set to 0.
fn rebased_set(section: &[u8], h: &gimli::ArangeHeader<Reader>) -> Option<Vec<u8>> {
    // unit_length (4, or 12 for 64-bit DWARF), version (2), debug_info_offset (4 or 8).
    let (length_field, offset_size) = match h.encoding().format {
        gimli::Format::Dwarf32 => (4, 4),
        gimli::Format::Dwarf64 => (12, 8),
    };
    let start = h.offset().0;
    let end = start.checked_add(length_field)?.checked_add(h.length())?;
    let mut set = section.get(start..end)?.to_vec();
    let at = length_field + 2;
    set.get_mut(at..at + offset_size)?.fill(0);
    Some(set)
}

/// Whether no abbreviation of `.debug_abbrev` uses a form whose value is an offset into
/// `.debug_info` or another file, or declares a partial or imported unit: then each unit
/// reads the same out of its section. Anything that does not parse answers `false`.
fn abbreviations_stay_in_unit(abbrev: &Reader) -> bool {
    use gimli::Reader as _;
    const TAG_PARTIAL_UNIT: u64 = 0x3c;
    const TAG_IMPORTED_UNIT: u64 = 0x3d;
    const FORM_REF_ADDR: u64 = 0x10;
    const FORM_INDIRECT: u64 = 0x16;
    const FORM_REF_SUP4: u64 = 0x1c;
    const FORM_IMPLICIT_CONST: u64 = 0x21;
    const FORM_REF_SUP8: u64 = 0x24;
    const FORM_GNU_REF_ALT: u64 = 0x1f20;
    let mut r = abbrev.clone();
    while !r.is_empty() {
        // One entry: code (0 ends a table), tag, children flag, (attribute, form) pairs
        // ending in (0, 0).
        let Ok(code) = r.read_uleb128() else {
            return false;
        };
        if code == 0 {
            continue;
        }
        let Ok(tag) = r.read_uleb128() else {
            return false;
        };
        if tag == TAG_PARTIAL_UNIT || tag == TAG_IMPORTED_UNIT || r.read_u8().is_err() {
            return false;
        }
        loop {
            let (Ok(attr), Ok(form)) = (r.read_uleb128(), r.read_uleb128()) else {
                return false;
            };
            if attr == 0 && form == 0 {
                break;
            }
            match form {
                FORM_REF_ADDR | FORM_INDIRECT | FORM_REF_SUP4 | FORM_REF_SUP8
                | FORM_GNU_REF_ALT => return false,
                FORM_IMPLICIT_CONST if r.read_sleb128().is_err() => return false,
                _ => {}
            }
        }
    }
    true
}

/// What one probe gives: the frames (function, file, line, column) and the line-table position.
pub(crate) type Answer = (
    Vec<(String, Option<String>, Option<u32>, Option<u32>)>,
    Option<Location>,
);

/// Up to `max` probes of the ELF file in `data`: every function symbol's first, middle and
/// last byte, as the file states them.
pub(crate) fn probes(data: &[u8], max: usize) -> Vec<u64> {
    use object::{ObjectSymbol, SymbolKind};
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    for s in file.symbols().filter(|s| s.kind() == SymbolKind::Text) {
        let (a, n) = (s.address(), s.size().max(1));
        v.extend([a, a.saturating_add(n / 2), a.saturating_add(n - 1)]);
        if v.len() >= max {
            break;
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn answer(ctx: &mut Context, probe: u64) -> Answer {
    let mut intern = |s: &str| -> Arc<str> { s.into() };
    let mut frames = Vec::new();
    ctx.frames(probe, &mut frames, &mut intern);
    let frames = frames
        .into_iter()
        .map(|f| {
            (
                f.function.to_string(),
                f.file.map(|f| f.to_string()),
                f.line,
                f.column,
            )
        })
        .collect();
    (frames, ctx.location(probe, &mut intern))
}

/// Each probe with its answer read one unit at a time and its answer from the whole file.
pub(crate) type BothWays = Vec<(u64, Answer, Answer)>;

/// Whether the file in `data` is read one unit at a time, and every probe's answer read so
/// next to the whole file's (`None` without DWARF). A test and a fuzz target assert the two
/// agree.
pub(crate) fn both_ways(data: &Arc<FileBytes>, probes: &[u64]) -> Option<(bool, BothWays)> {
    let mut by_unit = Context::load(data)?;
    let mut whole = Context::load(data)?;
    whole.units = None;
    let answers = probes
        .iter()
        .map(|&p| (p, answer(&mut by_unit, p), answer(&mut whole, p)))
        .collect();
    Some((by_unit.units.is_some(), answers))
}

#[cfg(test)]
mod tests {
    use super::*;
    /// One unit at a time answers every probe as the whole file does; the number of probes
    /// when the file is read by unit (0 when whole).
    fn same_answers(path: &std::path::Path) -> usize {
        let file = std::fs::File::open(path).unwrap();
        let data = Arc::new(FileBytes::of_file(&file).unwrap());
        let probes = probes(&data, usize::MAX);
        assert!(
            !probes.is_empty(),
            "{}: no function symbols",
            path.display()
        );
        let (by_unit, answers) = both_ways(&data, &probes).unwrap();
        let mut with_frames = 0;
        for (p, a, b) in &answers {
            assert_eq!(a, b, "{} at {p:#x}", path.display());
            with_frames += usize::from(!a.0.is_empty());
        }
        assert!(with_frames > 0, "{}: DWARF named nothing", path.display());
        if by_unit {
            probes.len()
        } else {
            0
        }
    }

    /// glibc's detached debug file (libc6-dbg): 2,063 units with `.debug_aranges`, no
    /// cross-unit references, the case this mode is for.
    #[test]
    fn glibc_debug_file_by_unit_equals_whole() {
        let libc = std::path::Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let id = std::fs::read(libc).ok().and_then(|bytes| {
            let file = object::File::parse(&*bytes).ok()?;
            Some(file.build_id().ok()??.to_vec())
        });
        let debug = id.and_then(|id| {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let p = format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
            std::path::Path::new(&p)
                .exists()
                .then(|| std::path::PathBuf::from(p))
        });
        let Some(debug) = debug else {
            assert!(
                std::env::var_os("PROFKIT_REQUIRE_EXTERNAL").is_none(),
                "glibc's debug file is missing (apt-get install libc6-dbg)"
            );
            eprintln!("skipped: no glibc debug file (libc6-dbg)");
            return;
        };
        let probes = same_answers(&debug);
        assert!(probes > 1000, "{}: not read by unit", debug.display());
    }

    /// The committed gcc fixture (`.debug_aranges`: read by unit).
    #[test]
    fn gcc_fixture_by_unit_equals_whole() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/native/small-pie");
        assert!(same_answers(&path) > 0, "small-pie: not read by unit");
    }

    /// This test program (rustc's DWARF, whichever mode it allows).
    #[test]
    fn own_binary_by_unit_equals_whole() {
        same_answers(&std::env::current_exe().unwrap());
    }

    #[test]
    fn cross_unit_forms_read_the_file_whole() {
        let reader = |b: &[u8]| {
            Reader::new(
                SectionBytes::owned(b.to_vec()),
                gimli::RunTimeEndian::Little,
            )
        };
        // code 1, DW_TAG_compile_unit, children, (DW_AT_name, DW_FORM_string), end; table end.
        assert!(abbreviations_stay_in_unit(&reader(&[
            1, 0x11, 1, 3, 8, 0, 0, 0
        ])));
        // DW_AT_abstract_origin (0x31) as DW_FORM_ref_addr.
        assert!(!abbreviations_stay_in_unit(&reader(&[
            1, 0x2e, 0, 0x31, 0x10, 0, 0, 0
        ])));
        // A partial unit (dwz).
        assert!(!abbreviations_stay_in_unit(&reader(&[1, 0x3c, 1, 0, 0, 0])));
        // DW_FORM_implicit_const takes its value; then the table ends.
        assert!(abbreviations_stay_in_unit(&reader(&[
            1, 0x34, 0, 0x3a, 0x21, 0x7f, 0, 0, 0
        ])));
        // Cut inside an entry.
        assert!(!abbreviations_stay_in_unit(&reader(&[1, 0x11, 1, 3])));
    }
}
