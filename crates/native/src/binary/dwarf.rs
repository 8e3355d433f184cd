//! DWARF lines and inline frames through addr2line.
//!
//! The sections addr2line reads are views of the mapped file, or buffers decompressed once,
//! when the first lookup of a binary needs them; the context is then kept for the life of
//! the [`Binary`](super::Binary). Location lists, macros and name indexes are not loaded
//! (addr2line does not use them).

use std::sync::Arc;

use object::Object;
use profkit_common::FileBytes;

use super::Frame;
use crate::bytes::SectionBytes;

type Reader = gimli::EndianReader<gimli::RunTimeEndian, SectionBytes>;

/// At most this many frames per address (inline depth is small in practice; this bounds
/// hostile DWARF).
const MAX_FRAMES: usize = 256;

/// A line-table position: file, line, column.
pub(crate) type Location = (Option<Arc<str>>, Option<u32>, Option<u32>);

pub(crate) struct Context(addr2line::Context<Reader>);

impl Context {
    /// The context of the ELF file in `data`, or `None` without usable DWARF.
    pub fn load(data: &Arc<FileBytes>) -> Option<Context> {
        let file = object::File::parse(&***data).ok()?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        use gimli::SectionId as S;
        const WANTED: [S; 11] = [
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
        ];
        let get = |id: S| super::section(&file, data, id.name()).map(|s| s.data);
        // `.debug_info` is most of the bytes; when compressed, inflating it on a second thread
        // while the other sections are read halves the wait of the first lookup.
        let sections: Vec<(S, Option<SectionBytes>)> = std::thread::scope(|scope| {
            let info = scope.spawn(|| get(S::DebugInfo));
            let mut v: Vec<_> = WANTED
                .iter()
                .filter(|&&id| id != S::DebugInfo)
                .map(|&id| (id, get(id)))
                .collect();
            v.push((S::DebugInfo, info.join().ok().flatten()));
            v
        });
        let load = |id: S| -> Result<Reader, gimli::Error> {
            let bytes = sections
                .iter()
                .find(|(s, _)| *s == id)
                .and_then(|(_, b)| b.clone());
            Ok(gimli::EndianReader::new(bytes.unwrap_or_default(), endian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        addr2line::Context::from_dwarf(dwarf).ok().map(Context)
    }

    /// Appends the frames at `probe`, innermost first (nothing if DWARF does not cover it).
    pub fn frames(
        &self,
        probe: u64,
        out: &mut Vec<Frame>,
        intern: &mut dyn FnMut(&str) -> Arc<str>,
    ) {
        // addr2line computes `probe + 1` (an overflow panic in debug builds at u64::MAX).
        if probe == u64::MAX {
            return;
        }
        let Ok(mut iter) = self.0.find_frames(probe).skip_all_loads() else {
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
        &self,
        probe: u64,
        intern: &mut dyn FnMut(&str) -> Arc<str>,
    ) -> Option<Location> {
        if probe == u64::MAX {
            return None;
        }
        let loc = self.0.find_location(probe).ok()??;
        Some((loc.file.map(&mut *intern), loc.line, loc.column))
    }
}
