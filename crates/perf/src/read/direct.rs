//! One pass over the records of a file in memory: framing checked as they are read, each
//! FINISHED_ROUND window sorted by time, records handed on as slices of the file.
//!
//! linux-perf-data's iterator reads a file through `Read` (a copy into a buffer per record,
//! then into its sorter), and it needs every record framed first (see `frame.rs`), a second
//! walk over every page. For a file-mode recording whose header says where the data ends, with
//! no COMPRESSED records and no simpleperf windows, this reader does both in one walk: it
//! frames a record with the check's own rules ([`frame::check`]), notes its sort key
//! (timestamp, file offset) and its attr with linux-perf-event-reader's functions, and sorts
//! only small index entries, in linux-perf-data's windows (see [`Window`]). The order of the
//! records and the way the walk ends (a cut or a corrupt record, in the framing log) are
//! those of linux-perf-data over the checked file: the keys are unique (offsets), so the
//! order does not depend on how they are sorted.
//!
//! The read-ahead thread (`ahead.rs`) copies each body once, into its batch.
//!
//! It also notes the jitdump marker mmaps as it reads, so a walk can start loading a dump one
//! window before it reaches the marker's records. A COMPRESSED record (which a header without
//! the COMPRESSED feature does not announce, and perf never writes so) ends the walk there, as a
//! corrupt record: linux-perf-data would inflate it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use byteorder::{BigEndian, LittleEndian};
use linux_perf_data::linux_perf_event_reader::{
    get_record_id, get_record_identifier, AttrFlags, RawData, RawEventRecord, RecordIdParseInfo,
    RecordParseInfo, RecordType as LpdType, SampleFormat,
};
use linux_perf_data::PerfFile;
use rustc_hash::FxHashMap;

use crate::error::{Error, Truncation};
use crate::raw::{RecordType, RECORD_HEADER_SIZE};
use crate::read::ahead::Rec;
use crate::read::bytes::u64_at;
use crate::read::bytes::Endian;
use crate::read::frame::{self, FrameEnd, FrameLog, MAX_MARKERS};

/// How a record's attr is found (linux-perf-data's rules for a file's attrs).
enum AttrOf {
    /// One attr.
    Only,
    /// Every attr puts the id in the same place.
    Same(RecordIdParseInfo),
    /// Every attr has IDENTIFIER (`bool`: sample_id_all).
    Identifier(bool),
}

/// A record read, waiting in a window: where it is and what sorting and decoding need.
#[derive(Clone, Copy)]
struct Entry {
    /// Sort key: timestamp (`None` first), then file offset.
    time: Option<u64>,
    offset: u64,
    /// Body length (an AUXTRACE payload included).
    len: u32,
    record_type: u32,
    misc: u16,
    /// `u32::MAX` for a user record.
    attr: u32,
}

impl Entry {
    fn key(&self) -> (Option<u64>, u64) {
        (self.time, self.offset)
    }
}

/// linux-perf-data's sorter, over entries: a window's records leave once no later window can
/// come before them (round N cannot overlap round N + 2; see its `Sorter`).
#[derive(Default)]
struct Window {
    /// The records that leave, in order, from `next_out` on (a vector refilled once it is all
    /// handed on: moving them through a deque was a fifth of the reader's instructions).
    outgoing: Vec<Entry>,
    next_out: usize,
    incoming: Vec<Entry>,
    prev_max: Option<(Option<u64>, u64)>,
    cur_max: Option<(Option<u64>, u64)>,
    incoming_lte_prev_max: usize,
}

impl Window {
    fn insert(&mut self, e: Entry) {
        let key = Some(e.key());
        if key <= self.prev_max {
            self.incoming_lte_prev_max += 1;
        } else if key > self.cur_max {
            self.cur_max = key;
        }
        self.incoming.push(e);
    }

    fn finish_round(&mut self) {
        if let Some(n) = self.incoming_lte_prev_max.checked_sub(1) {
            if n < self.incoming.len() {
                // The n + 1 smallest keys, in order (the keys are unique: which ones leave
                // does not depend on how they are found). A window is a few sorted runs (one
                // per CPU's buffer, and what the last window left, already sorted), which a
                // stable sort merges: selecting first and sorting the part that leaves with
                // quicksort cost twice as many instructions.
                self.incoming.sort_by_key(Entry::key);
                self.leave(n + 1);
            }
        }
        self.prev_max = self.cur_max;
        self.incoming_lte_prev_max = self.incoming.len();
    }

    fn finish(&mut self) {
        self.incoming.sort_by_key(Entry::key);
        self.leave(self.incoming.len());
        self.prev_max = self.cur_max;
    }

    /// Moves the first `n` incoming records to the end of the outgoing ones.
    fn leave(&mut self, n: usize) {
        if self.next_out == self.outgoing.len() {
            self.outgoing.clear();
            self.next_out = 0;
        }
        let n = n.min(self.incoming.len());
        self.outgoing
            .extend_from_slice(self.incoming.get(..n).unwrap_or_default());
        self.incoming.drain(..n);
    }

    /// Whether every outgoing record was handed on.
    fn drained(&self) -> bool {
        self.next_out >= self.outgoing.len()
    }

    /// The next outgoing record.
    fn pop(&mut self) -> Option<Entry> {
        let e = self.outgoing.get(self.next_out).copied()?;
        self.next_out += 1;
        Some(e)
    }

    /// The lowest offset of a record not yet handed on (`None`: all were).
    fn low_water(&self) -> Option<u64> {
        self.incoming
            .iter()
            .chain(self.outgoing.get(self.next_out..).unwrap_or_default())
            .map(|e| e.offset)
            .min()
    }
}

/// The one-pass reader of `data[start..end]` (the data section of a file whose header is
/// complete).
pub(crate) struct Direct<'a> {
    data: &'a [u8],
    end: u64,
    off: u64,
    e: Endian,
    /// Outer records framed (file order, FINISHED_ROUND included).
    records: u64,
    /// Records per type below 128 (the log's map is filled at the end).
    counts: [u64; 128],
    /// Records of other types.
    other_counts: std::collections::BTreeMap<RecordType, u64>,
    attr_of: AttrOf,
    ids: FxHashMap<u64, usize>,
    parse_infos: Vec<RecordParseInfo>,
    window: Window,
    /// The walk is over (the end, a cut or a corrupt record): only `window` is left.
    done: bool,
    log: Arc<Mutex<FrameLog>>,
    progress: Arc<AtomicU64>,
    /// Offset below which every record has been handed on, told at the next call.
    handed: Option<u64>,
    ahead: profkit_common::bytes::ReadAhead,
    markers: Vec<(u32, Vec<u8>)>,
    /// Markers not yet taken by [`Direct::take_markers`].
    new_markers: usize,
}

impl<'a> Direct<'a> {
    /// A reader of the records of `data[start..end]`, with the attrs of `file`. `None` when
    /// linux-perf-data would not know a record's attr (several attrs without IDENTIFIER:
    /// its iterator refuses the file when it is opened, so this is not reached).
    pub(crate) fn new(
        data: &'a [u8],
        start: u64,
        end: u64,
        e: Endian,
        file: &PerfFile,
        log: Arc<Mutex<FrameLog>>,
        progress: Arc<AtomicU64>,
    ) -> Option<Direct<'a>> {
        let attrs = file.event_attributes();
        let endian = file.endian();
        let parse_infos: Vec<RecordParseInfo> = attrs
            .iter()
            .map(|a| RecordParseInfo::new(&a.attr, endian))
            .collect();
        let (first, rest) = parse_infos.split_first()?;
        let attr_of = if rest.is_empty() {
            AttrOf::Only
        } else if rest.iter().all(|p| p.id_parse_info == first.id_parse_info) {
            AttrOf::Same(first.id_parse_info)
        } else {
            let sample_id_all = attrs.first()?.attr.flags.contains(AttrFlags::SAMPLE_ID_ALL);
            let consistent = attrs.iter().all(|a| {
                a.attr.sample_format.contains(SampleFormat::IDENTIFIER)
                    && a.attr.flags.contains(AttrFlags::SAMPLE_ID_ALL) == sample_id_all
            });
            if !consistent {
                return None;
            }
            AttrOf::Identifier(sample_id_all)
        };
        let mut ids = FxHashMap::default();
        for (i, a) in attrs.iter().enumerate() {
            for &id in &a.event_ids {
                ids.insert(id, i);
            }
        }
        if let Ok(mut l) = log.lock() {
            l.clean_end = start;
        }
        Some(Direct {
            data,
            end,
            off: start,
            e,
            records: 0,
            counts: [0; 128],
            other_counts: std::collections::BTreeMap::new(),
            attr_of,
            ids,
            parse_infos,
            window: Window::default(),
            done: false,
            log,
            progress,
            handed: None,
            ahead: profkit_common::bytes::ReadAhead::new(usize::try_from(start).unwrap_or(0)),
            markers: Vec::new(),
            new_markers: 0,
        })
    }

    /// Jitdump markers (`(pid, path)`) read since the last call: their windows' records come
    /// after the records handed on so far.
    pub(crate) fn take_markers(&mut self, into: &mut Vec<(u32, Vec<u8>)>) {
        // Asked after every record; there is rarely a new one.
        if self.new_markers < self.markers.len() {
            if let Some(new) = self.markers.get(self.new_markers..) {
                into.extend_from_slice(new);
            }
            self.new_markers = self.markers.len();
        }
    }

    /// The next record in time order; `None` at the end of the records, at a cut or at a
    /// corrupt record (the framing log says which).
    pub(crate) fn next_record(&mut self) -> Option<Rec<'a>> {
        if let Some(at) = self.handed.take() {
            self.progress.store(at, Ordering::Relaxed);
        }
        while self.window.drained() {
            if self.done {
                return None;
            }
            self.read_round();
        }
        let e = self.window.pop()?;
        if self.window.drained() {
            self.handed = Some(self.window.low_water().unwrap_or(self.off));
        }
        let start = usize::try_from(e.offset).ok()? + RECORD_HEADER_SIZE;
        let body = self.data.get(start..start.checked_add(e.len as usize)?)?;
        Some(if e.attr == u32::MAX {
            Rec::User {
                record_type: RecordType(e.record_type),
                misc: e.misc,
                body,
            }
        } else {
            let attr_index = e.attr as usize;
            Rec::Event {
                attr_index,
                record: RawEventRecord {
                    record_type: LpdType(e.record_type),
                    misc: e.misc,
                    data: RawData::Single(body),
                    parse_info: *self.parse_infos.get(attr_index)?,
                },
            }
        })
    }

    /// Reads records until a FINISHED_ROUND leaves some ready, or the walk ends.
    fn read_round(&mut self) {
        while self.off < self.end {
            let off = self.off;
            let Some(at) = usize::try_from(off).ok() else {
                break;
            };
            self.ahead.reached(self.data, at);
            let avail = self.end - off;
            let rest = self.data.get(at..).unwrap_or_default();
            let body = rest
                .get(RECORD_HEADER_SIZE..)
                .map(|b| b.get(..b.len().min(usize::try_from(avail).unwrap_or(usize::MAX))))
                .unwrap_or_default();
            let f = match frame::check(self.e, rest, body, Some(avail), self.records, off) {
                Ok(Some(f)) => f,
                Ok(None) => {
                    let reason = frame::cut_reason(self.e, rest, avail);
                    self.end_walk(FrameEnd::Truncated(Truncation::new(
                        off,
                        Some(self.records),
                        reason,
                    )));
                    return;
                }
                Err(err) => {
                    self.end_walk(FrameEnd::Corrupt(err));
                    return;
                }
            };
            let own = body
                .and_then(|b| {
                    b.get(
                        ..usize::try_from(f.total)
                            .ok()?
                            .checked_sub(RECORD_HEADER_SIZE)?,
                    )
                })
                .unwrap_or_default();
            match f.record_type {
                RecordType::FINISHED_ROUND => {
                    self.framed(f.record_type, f.total);
                    self.window.finish_round();
                    if !self.window.drained() {
                        return;
                    }
                    continue;
                }
                RecordType::COMPRESSED | RecordType::COMPRESSED2 => {
                    self.end_walk(FrameEnd::Corrupt(Error::record(
                        self.records,
                        off,
                        format!(
                            "{} record in a recording whose header lists no COMPRESSED feature",
                            f.record_type
                        ),
                    )));
                    return;
                }
                _ => {}
            }
            if self.markers.len() < MAX_MARKERS {
                if let Some(m) = frame::jitdump_marker(f.record_type, own, self.e) {
                    if !self.markers.contains(&m) {
                        self.markers.push(m);
                    }
                }
            }
            let Ok(len) = u32::try_from(own.len()) else {
                // A body over 4 GiB (an AUXTRACE payload): said as corrupt, not wrapped.
                self.end_walk(FrameEnd::Corrupt(Error::record(
                    self.records,
                    off,
                    format!(
                        "{} record of {} bytes is over 4 GiB",
                        f.record_type, f.total
                    ),
                )));
                return;
            };
            let (attr, time) = self.attr_and_time(f.record_type, own);
            self.window.insert(Entry {
                time,
                offset: off,
                len,
                record_type: f.record_type.0,
                misc: crate::read::bytes::u16_at(rest, 4, self.e).unwrap_or(0),
                attr,
            });
            self.framed(f.record_type, f.total);
        }
        self.end_walk(FrameEnd::Clean);
    }

    /// A whole record of `total` bytes was framed.
    fn framed(&mut self, ty: RecordType, total: u64) {
        match self.counts.get_mut(ty.0 as usize) {
            Some(c) => *c += 1,
            None => *self.other_counts.entry(ty).or_insert(0) += 1,
        }
        self.records += 1;
        self.off += total;
    }

    /// The record walk ends: the window's records all leave, and the log says how it ended.
    fn end_walk(&mut self, end: FrameEnd) {
        self.done = true;
        self.window.finish();
        if let Ok(mut l) = self.log.lock() {
            l.records = self.records;
            l.clean_end = self.off;
            l.end = end;
            l.finished = true;
            l.jitdump_markers.clone_from(&self.markers);
            l.counts = std::mem::take(&mut self.other_counts);
            for (ty, &n) in self.counts.iter().enumerate() {
                if n > 0 {
                    l.counts.insert(RecordType(ty as u32), n);
                }
            }
        }
    }

    /// The attr index (`u32::MAX`: a user record) and timestamp of a record, as
    /// linux-perf-data finds them.
    fn attr_and_time(&self, ty: RecordType, body: &[u8]) -> (u32, Option<u64>) {
        let lpd_type = LpdType(ty.0);
        if !lpd_type.is_builtin_type() {
            return (u32::MAX, None);
        }
        let data = RawData::Single(body);
        let id = match (&self.attr_of, self.e) {
            (AttrOf::Only, _) => None,
            (AttrOf::Same(p), Endian::Little) => get_record_id::<LittleEndian>(lpd_type, data, p),
            (AttrOf::Same(p), Endian::Big) => get_record_id::<BigEndian>(lpd_type, data, p),
            (AttrOf::Identifier(all), Endian::Little) => {
                get_record_identifier::<LittleEndian>(lpd_type, data, *all)
            }
            (AttrOf::Identifier(all), Endian::Big) => {
                get_record_identifier::<BigEndian>(lpd_type, data, *all)
            }
        };
        let attr = id.and_then(|id| self.ids.get(&id).copied()).unwrap_or(0);
        // linux-perf-event-reader's `get_record_timestamp`, read straight from the body: a
        // sample's time is at a fixed offset from its start, another record's (sample_id_all)
        // from its end.
        let time = self.parse_infos.get(attr).and_then(|p| {
            let at = if ty == RecordType::SAMPLE {
                usize::from(p.sample_record_time_offset_from_start?)
            } else {
                body.len()
                    .checked_sub(usize::from(p.nonsample_record_time_offset_from_end?))?
            };
            u64_at(body, at, self.e)
        });
        (u32::try_from(attr).unwrap_or(0), time)
    }
}
