//! The file header, checked before linux-perf-data reads it, and the [`Overlay`] that shows
//! linux-perf-data a consistent file.
//!
//! linux-perf-data trusts the header: it allocates each feature section at its recorded size,
//! reads the feature table at `data.offset + data.size` (garbage when `perf record` was killed
//! and left `data.size` 0), divides by `attr_size` (a panic when it is 0) and sizes vectors from
//! EVENT_DESC counts. [`plan`] checks all of it against the bytes, walks the data section's
//! record headers ([`scan_slice`]), and lists patches: the data size ends at the last complete
//! record, feature sections that are out of bounds or malformed are dropped (their bit cleared
//! and the feature table rewritten where linux-perf-data will look for it). Every patch is
//! reported as a problem, so nothing is dropped silently.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Error;
use crate::raw::{
    feature_name, ATTR_SIZE_VER0, FEATURE_EVENT_DESC, FEATURE_SIMPLEPERF_META_INFO,
    FILE_HEADER_SIZE, MAGIC_BE, MAGIC_LE, PIPE_HEADER_SIZE,
};
use crate::read::bytes::{range, u32_at, u64_at, Endian};
use crate::read::frame::{scan_slice, FrameEnd, FrameLog};

/// Whether the file was written by `perf record -o FILE` or to a pipe (`-o -`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A seekable file: header, attrs, data, feature sections.
    File,
    /// A stream: a 16-byte header, then records (attrs and features as records).
    Pipe,
}

impl Mode {
    /// `"file"` or `"pipe"`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::File => "file",
            Mode::Pipe => "pipe",
        }
    }
}

/// A `perf_file_section`: where a part of the file is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// Offset from the start of the file.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

/// One entry of the feature table (file mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureSection {
    /// The feature bit (`HEADER_*`).
    pub bit: u32,
    /// Where its data is.
    pub section: Section,
    /// Whether profkit kept it (in bounds and well formed); dropped ones are problems.
    pub kept: bool,
}

/// The file header as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// File or pipe mode.
    pub mode: Mode,
    /// Byte order (from the magic).
    pub endian: Endian,
    /// `size` of the header (104 in file mode, 16 in pipe mode).
    pub header_size: u64,
    /// `attr_size`: bytes per entry of the attrs section (file mode).
    pub attr_size: u64,
    /// The attrs section (file mode).
    pub attrs: Section,
    /// The data section (file mode; in pipe mode it starts at 16 and runs to the end).
    pub data: Section,
    /// The legacy event_types section (file mode).
    pub event_types: Section,
    /// The feature bitmap as recorded (file mode; pipe mode has features as records).
    pub feature_bits: [u64; 4],
    /// The feature table (file mode), in bit order.
    pub feature_sections: Vec<FeatureSection>,
}

impl Header {
    /// Feature bits set in the recorded bitmap.
    pub fn recorded_features(&self) -> Vec<u32> {
        let mut v = Vec::new();
        for (word, bits) in self.feature_bits.iter().enumerate() {
            for b in 0..64u32 {
                if bits & (1u64 << b) != 0 {
                    v.push(word as u32 * 64 + b);
                }
            }
        }
        v
    }
}

/// What [`plan`] found and how linux-perf-data is to see the file.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub header: Header,
    /// The data section's record walk (file mode only; pipe mode frames while reading).
    pub frames: FrameLog,
    /// Byte patches: `(offset, bytes)`, applied in order by the [`Overlay`].
    pub patches: Vec<(u64, Vec<u8>)>,
    /// What was patched or dropped, and other non-fatal header problems.
    pub problems: Vec<Error>,
}

/// Reads the magic and the mode of `data`.
pub(crate) fn detect(data: &[u8]) -> Result<(Endian, Mode, u64), Error> {
    let magic: Option<[u8; 8]> = crate::read::bytes::array(data, 0);
    let endian = match magic {
        Some(m) if m == MAGIC_LE => Endian::Little,
        Some(m) if m == MAGIC_BE => Endian::Big,
        Some(m) => {
            return Err(Error::header(
                0,
                format!(
                    "magic {:?} is neither PERFILE2 nor 2ELIFREP",
                    String::from_utf8_lossy(&m)
                ),
            ))
        }
        None => {
            return Err(Error::header(
                0,
                format!("the magic needs 8 bytes, {} present", data.len()),
            ))
        }
    };
    let Some(size) = u64_at(data, 8, endian) else {
        return Err(Error::header(
            8,
            format!("the header size needs 16 bytes, {} present", data.len()),
        ));
    };
    let mode = if size == PIPE_HEADER_SIZE {
        Mode::Pipe
    } else if size >= FILE_HEADER_SIZE {
        Mode::File
    } else {
        return Err(Error::header(
            8,
            format!("header size {size} is neither 16 (pipe mode) nor at least 104 (file mode)"),
        ));
    };
    Ok((endian, mode, size))
}

fn section(data: &[u8], off: usize, e: Endian) -> Section {
    Section {
        offset: u64_at(data, off, e).unwrap_or(0),
        size: u64_at(data, off + 8, e).unwrap_or(0),
    }
}

fn in_bounds(s: Section, len: u64) -> bool {
    s.offset.checked_add(s.size).is_some_and(|end| end <= len)
}

/// Checks and plans a file-mode `data`.
pub(crate) fn plan(
    data: &[u8],
    release: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Result<Plan, Error> {
    match begin(data)? {
        Begun::Pipe(plan) => Ok(plan),
        Begun::File(early) => {
            let frames = early.scan(data, release);
            Ok(early.finish(frames))
        }
    }
}

/// A header checked: a pipe's plan, or a file's [`Early`] plan before its records are walked.
pub(crate) enum Begun {
    Pipe(Plan),
    File(Early),
}

/// Checks the header of `data` and, in file mode, its attrs and feature sections.
pub(crate) fn begin(data: &[u8]) -> Result<Begun, Error> {
    let (e, mode, header_size) = detect(data)?;
    let len = data.len() as u64;
    if mode == Mode::Pipe {
        return Ok(Begun::Pipe(Plan {
            header: Header {
                mode,
                endian: e,
                header_size,
                attr_size: 0,
                attrs: Section::default(),
                data: Section {
                    offset: PIPE_HEADER_SIZE,
                    size: len.saturating_sub(PIPE_HEADER_SIZE),
                },
                event_types: Section::default(),
                feature_bits: [0; 4],
                feature_sections: Vec::new(),
            },
            frames: FrameLog::default(),
            patches: Vec::new(),
            problems: Vec::new(),
        }));
    }
    if len < FILE_HEADER_SIZE {
        return Err(Error::header(
            0,
            format!("the file header needs {FILE_HEADER_SIZE} bytes, {len} present"),
        ));
    }
    if header_size > len {
        return Err(Error::header(
            8,
            format!("header size {header_size} is past the end of the file ({len} bytes)"),
        ));
    }
    let attr_size = u64_at(data, 16, e).unwrap_or(0);
    let mut header = Header {
        mode,
        endian: e,
        header_size,
        attr_size,
        attrs: section(data, 24, e),
        data: section(data, 40, e),
        event_types: section(data, 56, e),
        feature_bits: [
            u64_at(data, 72, e).unwrap_or(0),
            u64_at(data, 80, e).unwrap_or(0),
            u64_at(data, 88, e).unwrap_or(0),
            u64_at(data, 96, e).unwrap_or(0),
        ],
        feature_sections: Vec::new(),
    };
    if !(ATTR_SIZE_VER0..=(1 << 16)).contains(&attr_size) {
        return Err(Error::header(
            16,
            format!("attr_size {attr_size} is outside 64 ..= 65536"),
        ));
    }
    if !in_bounds(header.attrs, len) {
        return Err(Error::header(
            24,
            format!(
                "attrs section {:#x} + {} is past the end of the file ({len} bytes)",
                header.attrs.offset, header.attrs.size
            ),
        ));
    }
    if header.event_types.size != 0 {
        check_id_table(data, header.event_types, attr_size, 56, e)?;
    }
    // The data section: a killed `perf record` leaves size 0; a cut file ends before it does.
    let d = header.data;
    if d.offset < header_size || d.offset > len {
        return Err(Error::header(
            40,
            format!("data section offset {:#x} is outside the file", d.offset),
        ));
    }
    let claimed_end = d.offset.checked_add(d.size);
    let complete = d.size != 0 && claimed_end.is_some_and(|end| end <= len);

    // The feature table follows the recorded data section; it is usable only when that is whole.
    let bits = header.recorded_features();
    let simpleperf = bits.contains(&FEATURE_SIMPLEPERF_META_INFO);
    let mut keep: Vec<(u32, Section)> = Vec::new();
    let mut feature_problems = Vec::new();
    if !bits.is_empty() {
        let table_at = claimed_end.filter(|_| complete);
        let table_len = bits.len() as u64 * 16;
        match table_at {
            Some(at) if at.checked_add(table_len).is_some_and(|end| end <= len) => {
                for (i, &bit) in bits.iter().enumerate() {
                    let entry_off = at + i as u64 * 16;
                    let s = Section {
                        offset: u64_at(data, entry_off as usize, e).unwrap_or(0),
                        size: u64_at(data, entry_off as usize + 8, e).unwrap_or(0),
                    };
                    let verdict = if !in_bounds(s, len) {
                        Err(format!(
                            "its section {:#x} + {} is past the end of the file",
                            s.offset, s.size
                        ))
                    } else if bit == FEATURE_EVENT_DESC {
                        check_event_desc(range(data, s.offset, s.size).unwrap_or_default(), e)
                    } else {
                        Ok(())
                    };
                    match verdict {
                        Ok(()) => keep.push((bit, s)),
                        Err(m) => feature_problems.push(Error::header(
                            entry_off,
                            format!("feature {} dropped: {m}", feature_name(bit)),
                        )),
                    }
                    header.feature_sections.push(FeatureSection {
                        bit,
                        section: s,
                        kept: keep.last().is_some_and(|k| k.0 == bit),
                    });
                }
            }
            _ => feature_problems.push(Error::header(
                72,
                format!(
                    "{} feature sections dropped: the feature table is not in the file",
                    bits.len()
                ),
            )),
        }
    }
    if simpleperf
        && keep.iter().any(|k| k.0 == FEATURE_SIMPLEPERF_META_INFO)
        && header.event_types.size == 0
    {
        // simpleperf packs an id section into each attrs entry (attr_size includes it).
        check_id_table(data, header.attrs, attr_size.saturating_sub(16), 24, e)?;
    }
    if !keep.iter().any(|k| k.0 == FEATURE_EVENT_DESC)
        && header.event_types.size == 0
        && !simpleperf
        && header.attrs.size / attr_size == 0
    {
        return Err(Error::header(
            24,
            "no attrs: the attrs section is empty and there is no EVENT_DESC",
        ));
    }
    Ok(Begun::File(Early {
        header,
        len,
        complete,
        keep,
        features_recorded: bits.len(),
        feature_problems,
    }))
}

/// A file-mode header checked, before the data section's records are walked.
#[derive(Clone, Debug)]
pub(crate) struct Early {
    header: Header,
    len: u64,
    /// Whether the header says where the data ends, inside the file: the feature sections
    /// can then be read before the records are walked.
    complete: bool,
    /// The feature sections kept.
    keep: Vec<(u32, Section)>,
    /// How many feature bits the header sets.
    features_recorded: usize,
    feature_problems: Vec<Error>,
}

impl Early {
    /// Whether the header says where the data ends, inside the file: then the attrs and
    /// features are what [`Early::finish`] will say whatever the records' walk finds.
    pub(crate) fn complete(&self) -> bool {
        self.complete
    }

    /// Whether the one-pass reader (`direct.rs`) can read the records: the header says where
    /// they end, and lists no COMPRESSED feature (zstd windows) and no simpleperf metadata
    /// (windows without FINISHED_ROUND), which only linux-perf-data's iterator reads.
    pub(crate) fn one_pass(&self) -> bool {
        let has = |bit: u32| {
            self.header
                .feature_bits
                .get((bit / 64) as usize)
                .is_some_and(|w| w >> (bit % 64) & 1 == 1)
        };
        self.complete
            && !has(crate::raw::FEATURE_COMPRESSED)
            && !has(crate::raw::FEATURE_SIMPLEPERF_META_INFO)
    }

    /// The walk of the data section's records (see [`scan_slice`]).
    pub(crate) fn scan(
        &self,
        data: &[u8],
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
    ) -> FrameLog {
        let d = self.header.data;
        let end = if self.complete {
            d.offset + d.size
        } else {
            self.len
        };
        scan_slice(data, d.offset, end, self.header.endian, release)
    }

    /// The plan as it is when the records are whole up to the header's data size (a
    /// [`complete`](Early::complete) header): to read the attrs and features before the walk.
    pub(crate) fn assuming_clean_records(&self) -> Plan {
        let d = self.header.data;
        self.clone().finish(FrameLog {
            clean_end: d.offset + d.size,
            finished: true,
            ..FrameLog::default()
        })
    }

    /// The plan, with what the walk of the records found.
    pub(crate) fn finish(self, mut frames: FrameLog) -> Plan {
        let Early {
            header,
            len,
            complete,
            keep,
            features_recorded,
            feature_problems,
        } = self;
        let e = header.endian;
        let d = header.data;
        let mut problems = Vec::new();
        let mut patches = Vec::new();
        if d.size != 0 && !complete && matches!(frames.end, FrameEnd::Clean) {
            // Cut between two records: the header still says how much data there was.
            frames.end = FrameEnd::Truncated(crate::error::Truncation::new(
                frames.clean_end,
                Some(frames.records),
                format!(
                    "the data section ends after {} of its {} bytes",
                    frames.clean_end.saturating_sub(d.offset),
                    d.size
                ),
            ));
        }
        if d.size == 0 {
            problems.push(Error::header(
                48,
                format!(
                    "data size is 0 (perf record did not finish); {} bytes of records after offset {:#x} are read",
                    frames.clean_end - d.offset,
                    d.offset
                ),
            ));
        } else if !complete {
            problems.push(Error::header(
                48,
                format!(
                    "data section {:#x} + {} runs past the end of the file ({len} bytes)",
                    d.offset, d.size
                ),
            ));
        }
        // Whole records inflated from a COMPRESSED record the file cuts follow the clean data.
        let tail = std::mem::take(&mut frames.tail);
        let tail_len = tail.len() as u64;
        if !tail.is_empty() {
            patches.push((frames.clean_end, tail));
        }
        let new_size = frames.clean_end - d.offset + tail_len;
        if new_size != d.size {
            patches.push((48, e.u64_bytes(new_size).to_vec()));
        }
        problems.extend(feature_problems);
        let moved = new_size != d.size;
        if keep.len() != features_recorded || moved {
            let mut fb = [0u64; 4];
            for &(bit, _) in &keep {
                if let Some(w) = fb.get_mut((bit / 64) as usize) {
                    *w |= 1u64 << (bit % 64);
                }
            }
            let mut b = Vec::with_capacity(32);
            for w in fb {
                b.extend_from_slice(&e.u64_bytes(w));
            }
            patches.push((72, b));
            if !keep.is_empty() {
                let mut table = Vec::with_capacity(keep.len() * 16);
                for &(_, s) in &keep {
                    table.extend_from_slice(&e.u64_bytes(s.offset));
                    table.extend_from_slice(&e.u64_bytes(s.size));
                }
                patches.push((frames.clean_end + tail_len, table));
            }
        }
        if let FrameEnd::Corrupt(err) = &frames.end {
            problems.push(err.clone());
        }
        Plan {
            header,
            frames,
            patches,
            problems,
        }
    }
}

/// Checks a table of `(perf_event_attr of attr_size bytes, perf_file_section ids)` entries.
fn check_id_table(
    data: &[u8],
    table: Section,
    attr_size: u64,
    field: u64,
    e: Endian,
) -> Result<(), Error> {
    if !in_bounds(table, data.len() as u64) {
        return Err(Error::header(
            field,
            "attr/id table is past the end of the file",
        ));
    }
    let entry = attr_size + 16;
    if attr_size < ATTR_SIZE_VER0 {
        return Err(Error::header(
            field,
            format!("attr size {attr_size} is below 64"),
        ));
    }
    let n = table.size / entry;
    for i in 0..n {
        let at = table.offset + i * entry + attr_size;
        let ids = Section {
            offset: u64_at(data, at as usize, e).unwrap_or(u64::MAX),
            size: u64_at(data, at as usize + 8, e).unwrap_or(u64::MAX),
        };
        if !in_bounds(ids, data.len() as u64) {
            return Err(Error::header(
                at,
                format!(
                    "attr #{i}: its id section {:#x} + {} is past the end of the file",
                    ids.offset, ids.size
                ),
            ));
        }
    }
    Ok(())
}

/// Checks an EVENT_DESC section so that linux-perf-data can size its vectors from it: every
/// count and length must fit in the bytes that follow.
pub(crate) fn check_event_desc(s: &[u8], e: Endian) -> Result<(), String> {
    let (Some(nr), Some(attr_size)) = (u32_at(s, 0, e), u32_at(s, 4, e)) else {
        return Err(format!(
            "{} bytes, below the 8-byte count and attr size",
            s.len()
        ));
    };
    let attr_size = attr_size as usize;
    if (attr_size as u64) < ATTR_SIZE_VER0 {
        return Err(format!("attr size {attr_size} is below 64"));
    }
    let mut off = 8usize;
    for i in 0..nr {
        let attr_own = u32_at(s, off + 4, e).map(|v| v as usize);
        match attr_own {
            Some(a) if (64..=attr_size).contains(&a) => {}
            _ => {
                return Err(format!(
                    "event #{i}: attr size field is not within 64 ..= {attr_size}"
                ))
            }
        }
        off = off
            .checked_add(attr_size)
            .filter(|&o| o <= s.len())
            .ok_or_else(|| format!("event #{i}: its attr runs past the section"))?;
        let nr_ids = u32_at(s, off, e).ok_or_else(|| format!("event #{i}: no id count"))? as usize;
        let str_len =
            u32_at(s, off + 4, e).ok_or_else(|| format!("event #{i}: no name length"))? as usize;
        off = off
            .checked_add(8)
            .and_then(|o| o.checked_add(str_len))
            .filter(|&o| o <= s.len())
            .ok_or_else(|| format!("event #{i}: name of {str_len} bytes runs past the section"))?;
        off = nr_ids
            .checked_mul(8)
            .and_then(|n| off.checked_add(n))
            .filter(|&o| o <= s.len())
            .ok_or_else(|| format!("event #{i}: {nr_ids} ids run past the section"))?;
    }
    Ok(())
}

/// A `Read + Seek` view of a file in memory with byte patches applied.
pub(crate) struct Overlay<'a> {
    data: &'a [u8],
    pos: u64,
    /// The furthest byte read, for [`crate::Events::read_offset`] and the reading thread's
    /// release of the bytes behind it, told every [`Overlay::PROGRESS_STEP`] bytes: a write
    /// per read would move its cache line between threads each time.
    progress: Arc<AtomicU64>,
    /// Where the next read tells `progress` how far it got.
    next_progress: u64,
    patches: Vec<(u64, Vec<u8>)>,
    /// Reads end here (the end of the clean data for file mode is not needed: patches do it).
    len: u64,
}

impl<'a> Overlay<'a> {
    const PROGRESS_STEP: u64 = 64 << 10;

    pub(crate) fn new(
        data: &'a [u8],
        patches: Vec<(u64, Vec<u8>)>,
        progress: Arc<AtomicU64>,
    ) -> Overlay<'a> {
        let mut len = data.len() as u64;
        for (off, b) in &patches {
            len = len.max(off.saturating_add(b.len() as u64));
        }
        Overlay {
            data,
            pos: 0,
            progress,
            next_progress: 0,
            patches,
            len,
        }
    }
}

impl Read for Overlay<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len {
            return Ok(0);
        }
        let n = (out.len() as u64).min(self.len - self.pos) as usize;
        let Some(out) = out.get_mut(..n) else {
            return Ok(0);
        };
        let start = self.pos;
        // Base bytes (zero past the end of the data: only patches live there).
        let avail = usize::try_from(start)
            .ok()
            .and_then(|s| self.data.get(s..))
            .unwrap_or_default();
        let m = avail.len().min(n);
        if let (Some(dst), Some(src)) = (out.get_mut(..m), avail.get(..m)) {
            dst.copy_from_slice(src);
        }
        if let Some(rest) = out.get_mut(m..) {
            rest.fill(0);
        }
        let end = start + n as u64;
        for (off, bytes) in &self.patches {
            let p_end = off.saturating_add(bytes.len() as u64);
            if p_end <= start || *off >= end {
                continue;
            }
            let from = (*off).max(start);
            let to = p_end.min(end);
            let src = bytes.get((from - off) as usize..(to - off) as usize);
            let dst = out.get_mut((from - start) as usize..(to - start) as usize);
            if let (Some(dst), Some(src)) = (dst, src) {
                dst.copy_from_slice(src);
            }
        }
        self.pos = end;
        if end >= self.next_progress {
            self.progress.fetch_max(end, Ordering::Relaxed);
            self.next_progress = end.saturating_add(Self::PROGRESS_STEP);
        }
        Ok(n)
    }
}

impl Seek for Overlay<'_> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let new = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match new {
            Some(p) => {
                self.pos = p;
                // The first read after a seek says where it got.
                self.next_progress = 0;
                Ok(p)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_patches() {
        let data = b"0123456789";
        let patches = vec![(2u64, b"ab".to_vec()), (9, b"XYZ".to_vec())];
        let mut o = Overlay::new(data, patches, Arc::default());
        let mut out = Vec::new();
        o.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"01ab45678XYZ");
        o.seek(SeekFrom::Start(3)).unwrap();
        let mut b = [0u8; 2];
        o.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"b4");
        assert!(o.seek(SeekFrom::Current(-100)).is_err());
    }

    #[test]
    fn event_desc_checks() {
        let e = Endian::Little;
        assert!(check_event_desc(&[], e).is_err());
        // nr = 1000000, attr_size 128, nothing else.
        let mut s = 1_000_000u32.to_le_bytes().to_vec();
        s.extend_from_slice(&128u32.to_le_bytes());
        assert!(check_event_desc(&s, e).is_err());
        // One event: attr of 128 bytes (size field 128), 1 id, name "x".
        let mut s = 1u32.to_le_bytes().to_vec();
        s.extend_from_slice(&128u32.to_le_bytes());
        let mut attr = vec![0u8; 128];
        attr[4..8].copy_from_slice(&128u32.to_le_bytes());
        s.extend_from_slice(&attr);
        s.extend_from_slice(&1u32.to_le_bytes());
        s.extend_from_slice(&4u32.to_le_bytes());
        s.extend_from_slice(b"x\0\0\0");
        s.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(check_event_desc(&s, e), Ok(()));
        let mut bad = s.clone();
        bad[8 + 128] = 9; // 9 ids
        assert!(check_event_desc(&bad, e).is_err());
        let mut bad = s.clone();
        bad[8 + 128 + 4] = 0xff; // name length 255
        assert!(check_event_desc(&bad, e).is_err());
    }
}
