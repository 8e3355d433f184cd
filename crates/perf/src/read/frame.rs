//! Record framing: where each record of the data stream starts and ends, checked before
//! linux-perf-data reads it.
//!
//! linux-perf-data turns a cut file into an I/O error in the middle of a round (losing the
//! records it had buffered for sorting) and trusts some size fields (AUXTRACE payloads,
//! EVENT_DESC counts). So profkit walks the record headers first and hands linux-perf-data only
//! the clean prefix: for a file in memory by [`scan_slice`] (the header is then patched to end
//! the data section there, see `header.rs`), for a stream by [`Framer`], a reader that serves
//! whole checked records and ends the stream before a cut or corrupt one. Both note what they
//! saw in a [`FrameLog`]. The one-pass reader (`direct.rs`) frames each record with [`check`]
//! as it reads it, instead of a walk before linux-perf-data's.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Truncation};
use crate::raw::{RecordType, FEATURE_EVENT_DESC, RECORD_HEADER_SIZE};
use crate::read::bytes::{u16_at, u32_at, u64_at, Endian};
use crate::read::header::check_event_desc;

/// The largest AUXTRACE payload a stream may announce (a file in memory is bounded by its size).
pub const MAX_STREAM_AUXTRACE: u64 = 1 << 30;

/// How the record stream ends.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FrameEnd {
    /// After the last record, at the data section's end (or the stream's).
    #[default]
    Clean,
    /// Inside a record: everything before it is usable.
    Truncated(Truncation),
    /// At a record whose header cannot be right.
    Corrupt(Error),
}

/// What the framing walk saw: records in file order (compressed blocks count as one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameLog {
    /// Complete records (outer, file order), FINISHED_ROUND included.
    pub records: u64,
    /// Complete records per type.
    pub counts: BTreeMap<RecordType, u64>,
    /// Offset just past the last complete record.
    pub clean_end: u64,
    /// How the stream ends (only final once the walk reached it).
    pub end: FrameEnd,
    /// Whether the walk reached the end.
    pub finished: bool,
    /// The jitdump marker mmaps seen (`(pid, path)`, file order, at most
    /// [`MAX_MARKERS`]): a walk can load those dumps before it reaches them.
    pub jitdump_markers: Vec<(u32, Vec<u8>)>,
    /// Records inflated from COMPRESSED records.
    pub inflated_records: u64,
    /// The whole records inflated from a COMPRESSED record the input cuts (file mode): they
    /// are handed on after the clean data (see `header.rs`).
    pub tail: Vec<u8>,
}

/// Jitdump markers noted by the framing scan at most.
pub const MAX_MARKERS: usize = 64;

/// The `(pid, path)` of an MMAP or MMAP2 record body that maps a `jit-<pid>.dump` file.
pub(crate) fn jitdump_marker(
    record_type: RecordType,
    body: &[u8],
    e: Endian,
) -> Option<(u32, Vec<u8>)> {
    // pid, tid, addr, len, pgoff; MMAP2 adds 24 bytes of inode or build id, prot and flags.
    let name_at = match record_type {
        RecordType::MMAP => 32,
        RecordType::MMAP2 => 64,
        _ => return None,
    };
    let name = body.get(name_at..)?;
    let path = name.get(..name.iter().position(|&c| c == 0)?)?;
    crate::read::records::jitdump_file_pid(path)?;
    Some((u32_at(body, 0, e)?, path.to_vec()))
}

/// Inflated bytes one sort window (the records between two outer FINISHED_ROUNDs) may hold.
/// linux-perf-data inflates a COMPRESSED record whole and keeps every record of a window for
/// sorting: a real window is one pass of `perf record` over its ring buffers (megabytes), a
/// zstd bomb is gigabytes in a few kilobytes.
pub const MAX_WINDOW_INFLATED: u64 = 64 << 20;
/// Records inflated into one sort window at most (each costs linux-perf-data a buffer).
pub const MAX_WINDOW_RECORDS: u64 = 1 << 20;

/// The zstd payload of a COMPRESSED or COMPRESSED2 record body (`None`: not one, or a
/// COMPRESSED2 whose data size does not fit its body).
fn compressed_payload(record_type: RecordType, body: &[u8], e: Endian) -> Option<&[u8]> {
    match record_type {
        RecordType::COMPRESSED => Some(body),
        RecordType::COMPRESSED2 => {
            let size = usize::try_from(u64_at(body, 0, e)?).ok()?;
            body.get(8..)?.get(..size)
        }
        _ => None,
    }
}

/// The framing check's own inflation of COMPRESSED records: streaming through a small buffer,
/// the inner records framed as they come out (a record may continue in the next COMPRESSED
/// record, as perf writes them), and each sort window bounded by [`MAX_WINDOW_INFLATED`] and
/// [`MAX_WINDOW_RECORDS`]. It keeps nothing but an unfinished inner record, so a record that
/// would inflate past the bound is refused before linux-perf-data allocates for it.
pub(crate) struct Inflater {
    dctx: Option<zstd_safe::DCtx<'static>>,
    /// Inflated bytes of an inner record not yet complete.
    carry: Vec<u8>,
    out: Vec<u8>,
    window_bytes: u64,
    window_records: u64,
    /// Inner records inflated so far.
    pub records: u64,
}

impl Inflater {
    pub(crate) fn new() -> Inflater {
        Inflater {
            dctx: None,
            carry: Vec::new(),
            out: Vec::new(),
            window_bytes: 0,
            window_records: 0,
            records: 0,
        }
    }

    /// An outer FINISHED_ROUND: linux-perf-data hands the window's records on.
    pub(crate) fn end_window(&mut self) {
        self.window_bytes = 0;
        self.window_records = 0;
    }

    /// Inflates `data` (one record's zstd payload, or the part of it before a cut) and calls
    /// `inner` with each complete inner record (type, whole record bytes). An `Err` says why
    /// the record cannot be used (a bomb, an inner record that cannot be right, zstd's error).
    pub(crate) fn feed(
        &mut self,
        data: &[u8],
        e: Endian,
        mut inner: impl FnMut(RecordType, &[u8]),
    ) -> Result<(), String> {
        let dctx = self.dctx.get_or_insert_with(zstd_safe::DCtx::create);
        if self.out.is_empty() {
            self.out.resize(256 << 10, 0);
        }
        let mut input = zstd_safe::InBuffer::around(data);
        loop {
            let before = input.pos();
            let mut out = zstd_safe::OutBuffer::around(self.out.as_mut_slice());
            if let Err(code) = dctx.decompress_stream(&mut out, &mut input) {
                return Err(format!("zstd: {}", zstd_safe::get_error_name(code)));
            }
            let n = out.pos();
            let full = n == self.out.len();
            self.window_bytes = self.window_bytes.saturating_add(n as u64);
            if self.window_bytes > MAX_WINDOW_INFLATED {
                return Err(format!(
                    "inflates past {MAX_WINDOW_INFLATED} bytes in one sort window (between two FINISHED_ROUNDs): a zstd bomb"
                ));
            }
            self.carry
                .extend_from_slice(self.out.get(..n).unwrap_or_default());
            let mut at = 0usize;
            while let Some(head) = self.carry.get(at..at + RECORD_HEADER_SIZE) {
                let size = usize::from(u16_at(head, 6, e).unwrap_or(0));
                let ty = RecordType(u32_at(head, 0, e).unwrap_or(0));
                if size < RECORD_HEADER_SIZE {
                    return Err(format!(
                        "inflated record #{} ({ty}) has size {size}, below the 8-byte record header",
                        self.records
                    ));
                }
                let Some(rec) = self.carry.get(at..at + size) else {
                    break;
                };
                self.records += 1;
                self.window_records += 1;
                if self.window_records > MAX_WINDOW_RECORDS {
                    return Err(format!(
                        "inflates more than {MAX_WINDOW_RECORDS} records in one sort window (between two FINISHED_ROUNDs): a zstd bomb"
                    ));
                }
                inner(ty, rec);
                at += size;
            }
            self.carry.drain(..at);
            if (!full && input.pos() == data.len()) || (n == 0 && input.pos() == before) {
                return Ok(());
            }
        }
    }
}

/// One record header, checked.
pub(crate) struct Frame {
    pub record_type: RecordType,
    /// Bytes of the record including an AUXTRACE payload.
    pub total: u64,
}

/// Checks the record starting at `offset` with `head` (at least its 8-byte header, and its
/// body when `body` is set). `avail` is how many bytes follow `offset` (`None`: a stream).
/// `Ok(None)` means more bytes are needed than `avail` has.
pub(crate) fn check(
    e: Endian,
    head: &[u8],
    body: Option<&[u8]>,
    avail: Option<u64>,
    index: u64,
    offset: u64,
) -> Result<Option<Frame>, Error> {
    let (Some(ty), Some(size)) = (u32_at(head, 0, e), u16_at(head, 6, e)) else {
        return Ok(None);
    };
    let record_type = RecordType(ty);
    let size = u64::from(size);
    if size < RECORD_HEADER_SIZE as u64 {
        return Err(Error::record(
            index,
            offset,
            format!("{record_type} record size {size} is below the 8-byte record header"),
        ));
    }
    // linux-perf-data reads a FINISHED_ROUND's header only and would take a body's bytes for
    // the next record's header.
    if record_type == RecordType::FINISHED_ROUND && size != RECORD_HEADER_SIZE as u64 {
        return Err(Error::record(
            index,
            offset,
            format!("FINISHED_ROUND record of {size} bytes: it is a bare 8-byte header"),
        ));
    }
    if avail.is_some_and(|a| a < size) {
        return Ok(None);
    }
    let mut total = size;
    if let Some(body) = body {
        if record_type == RecordType::AUXTRACE {
            let Some(payload) = u64_at(body, 0, e) else {
                return Err(Error::record(
                    index,
                    offset,
                    format!("AUXTRACE record size {size} has no room for its payload size"),
                ));
            };
            total = match size.checked_add(payload) {
                Some(t) => t,
                None => {
                    return Err(Error::record(
                        index,
                        offset,
                        format!("AUXTRACE payload size {payload} overflows"),
                    ))
                }
            };
            if avail.is_none() && payload > MAX_STREAM_AUXTRACE {
                return Err(Error::record(
                    index, offset,
                    format!("AUXTRACE payload size {payload} is over the {MAX_STREAM_AUXTRACE}-byte limit for streams"),
                ));
            }
            if avail.is_some_and(|a| a < total) {
                return Ok(None);
            }
        }
        // A pipe's attr: its size field (0: the first version's 64 bytes) must fit the record
        // (linux-perf-data reads what there is; the writer and `validate` need the whole attr).
        if record_type == RecordType::HEADER_ATTR {
            let attr_size = match u32_at(body, 4, e) {
                Some(0) => 64,
                Some(s) => u64::from(s),
                None => 0,
            };
            if attr_size < 64 || attr_size > body.len() as u64 {
                return Err(Error::record(
                    index, offset,
                    format!(
                        "HEADER_ATTR of {} bytes holds no attr of its size {attr_size} (64 ..= the record's body)",
                        body.len()
                    ),
                ));
            }
        }
        // linux-perf-data takes the feature id's low 32 bits (`as u32`): so must the check.
        if record_type == RecordType::HEADER_FEATURE
            && u64_at(body, 0, e).map(|id| id as u32) == Some(FEATURE_EVENT_DESC)
        {
            if let Err(m) = check_event_desc(body.get(8..).unwrap_or_default(), e) {
                return Err(Error::record(
                    index,
                    offset,
                    format!("HEADER_FEATURE EVENT_DESC: {m}"),
                ));
            }
        }
    }
    Ok(Some(Frame { record_type, total }))
}

/// How far behind the scan [`scan_slice`] tells its `release` callback what it has read.
const RELEASE_STEP: u64 = 8 << 20;

/// Walks the records of `data[start..end]` (offsets are absolute in `data`). `release` is told
/// the ranges it has walked past, every [`RELEASE_STEP`] bytes and at its end (a mapped input
/// drops their pages, so the check does not make the whole file resident).
pub(crate) fn scan_slice(
    data: &[u8],
    start: u64,
    end: u64,
    e: Endian,
    release: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> FrameLog {
    let mut log = FrameLog {
        clean_end: start,
        ..FrameLog::default()
    };
    let mut zstd = Inflater::new();
    let mut off = start;
    let mut released = 0u64;
    let mut ahead = profkit_common::bytes::ReadAhead::new(usize::try_from(start).unwrap_or(0));
    while off < end {
        ahead.reached(data, usize::try_from(off).unwrap_or(usize::MAX));
        if let Some(release) = release {
            if off >= released + RELEASE_STEP {
                release(released, off);
                released = off;
            }
        }
        let avail = end - off;
        let rest = usize::try_from(off)
            .ok()
            .and_then(|o| data.get(o..))
            .unwrap_or_default();
        let body = rest
            .get(RECORD_HEADER_SIZE..)
            .map(|b| b.get(..b.len().min(usize::try_from(avail).unwrap_or(usize::MAX))))
            .unwrap_or_default();
        match check(e, rest, body, Some(avail), log.records, off) {
            Ok(Some(f)) => {
                let size = usize::try_from(f.total).unwrap_or(0);
                let own = body
                    .and_then(|b| b.get(..size.saturating_sub(RECORD_HEADER_SIZE)))
                    .unwrap_or_default();
                if f.record_type == RecordType::FINISHED_ROUND {
                    zstd.end_window();
                }
                let mut markers = std::mem::take(&mut log.jitdump_markers);
                let mut note = |ty: RecordType, b: &[u8]| {
                    if markers.len() < MAX_MARKERS {
                        if let Some(m) = jitdump_marker(ty, b, e) {
                            if !markers.contains(&m) {
                                markers.push(m);
                            }
                        }
                    }
                };
                note(f.record_type, own);
                let inflated = match compressed_payload(f.record_type, own, e) {
                    Some(z) => zstd.feed(z, e, |ty, rec| {
                        note(ty, rec.get(RECORD_HEADER_SIZE..).unwrap_or_default())
                    }),
                    None if matches!(
                        f.record_type,
                        RecordType::COMPRESSED | RecordType::COMPRESSED2
                    ) =>
                    {
                        Err("its data size runs past the record".to_string())
                    }
                    None => Ok(()),
                };
                log.jitdump_markers = markers;
                log.inflated_records = zstd.records;
                if let Err(m) = inflated {
                    log.end = FrameEnd::Corrupt(Error::record(
                        log.records,
                        off,
                        format!("{} record: {m}", f.record_type),
                    ));
                    break;
                }
                log.records += 1;
                *log.counts.entry(f.record_type).or_insert(0) += 1;
                off += f.total;
                log.clean_end = off;
            }
            Ok(None) => {
                let mut reason = cut_reason(e, rest, avail);
                let (tail, n) = cut_compressed(&mut zstd, rest, avail, e);
                if n > 0 {
                    reason.push_str(&format!(
                        "; the {n} whole records it inflates to before the cut are kept"
                    ));
                }
                log.tail = tail;
                log.inflated_records = zstd.records;
                log.end = FrameEnd::Truncated(Truncation::new(off, Some(log.records), reason));
                break;
            }
            Err(err) => {
                log.end = FrameEnd::Corrupt(err);
                break;
            }
        }
    }
    if let Some(release) = release {
        release(released, off.min(end));
    }
    log.finished = true;
    log
}

/// The whole inner records a COMPRESSED record cut at `avail` bytes inflates to (those zstd can
/// decode before the cut, with what earlier records left unfinished), and how many.
fn cut_compressed(zstd: &mut Inflater, rest: &[u8], avail: u64, e: Endian) -> (Vec<u8>, u64) {
    let ty = RecordType(u32_at(rest, 0, e).unwrap_or(0));
    let have = rest
        .get(..usize::try_from(avail).unwrap_or(usize::MAX).min(rest.len()))
        .unwrap_or_default();
    let body = have.get(RECORD_HEADER_SIZE..).unwrap_or_default();
    let payload = match ty {
        RecordType::COMPRESSED => body,
        RecordType::COMPRESSED2 => body.get(8..).unwrap_or_default(),
        _ => return (Vec::new(), 0),
    };
    let mut tail = Vec::new();
    let mut n = 0u64;
    // What it inflated before zstd or a bound stopped it is kept either way, except records
    // that the reader treats differently at the top level than inside a COMPRESSED record: a
    // COMPRESSED record inside one (perf never nests them) would be inflated there whole,
    // past the window bound (a 93-byte cut record kept 134 MB of a nested bomb: 387 MB RSS),
    // and an AUXTRACE would take the bytes after it as its payload.
    let _ = zstd.feed(payload, e, |ty, rec| {
        if !matches!(
            ty,
            RecordType::COMPRESSED | RecordType::COMPRESSED2 | RecordType::AUXTRACE
        ) {
            tail.extend_from_slice(rec);
            n += 1;
        }
    });
    (tail, n)
}

pub(crate) fn cut_reason(e: Endian, rest: &[u8], avail: u64) -> String {
    let tail = rest
        .get(..usize::try_from(avail).unwrap_or(usize::MAX).min(rest.len()))
        .unwrap_or_default();
    if let Some(why) = trailing_text(tail) {
        return why;
    }
    match (u32_at(rest, 0, e), u16_at(rest, 6, e)) {
        (Some(ty), Some(size)) if avail >= RECORD_HEADER_SIZE as u64 => {
            format!("{} record of {size} bytes, {avail} remain", RecordType(ty))
        }
        _ => format!("record header needs 8 bytes, {avail} remain"),
    }
}

/// Text after the last record (perf's own `[ perf record: … ]` lines captured with a pipe's
/// output), said as such rather than decoded as a cut record of a made-up type: `None` when
/// `tail` (the bytes from the cut on) is not all printable text.
fn trailing_text(tail: &[u8]) -> Option<String> {
    let text = |b: &u8| matches!(b, b'\n' | b'\r' | b'\t' | 0x20..=0x7e);
    if tail.is_empty() || !tail.iter().take(4096).all(text) {
        return None;
    }
    let first = tail.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first.get(..first.len().min(60)).unwrap_or_default());
    Some(format!(
        "trailing garbage: {} bytes of text after the last record, not a record ({first:?}: console output captured with the data?)",
        tail.len()
    ))
}

/// A reader over a pipe-mode stream that serves whole, checked records (after the 16-byte
/// pipe header) and ends the stream cleanly before a cut or corrupt record, noting it in the
/// shared [`FrameLog`].
pub(crate) struct Framer<R> {
    inner: R,
    endian: Endian,
    log: Arc<Mutex<FrameLog>>,
    buf: Vec<u8>,
    pos: usize,
    /// File offset of the next record.
    next: u64,
    /// Bytes left in the input when known (a slice).
    remaining: Option<u64>,
    done: bool,
    zstd: Inflater,
}

impl<R: Read> Framer<R> {
    /// A framer that first serves `prefix` (the pipe header already read) and then the records
    /// of `inner`, which starts at file offset `start`.
    pub(crate) fn new(
        inner: R,
        endian: Endian,
        prefix: Vec<u8>,
        start: u64,
        remaining: Option<u64>,
        log: Arc<Mutex<FrameLog>>,
    ) -> Framer<R> {
        if let Ok(mut l) = log.lock() {
            l.clean_end = start;
        }
        Framer {
            inner,
            endian,
            log,
            buf: prefix,
            pos: 0,
            next: start,
            remaining,
            done: false,
            zstd: Inflater::new(),
        }
    }

    fn finish(&mut self, end: FrameEnd) {
        self.done = true;
        if let Ok(mut l) = self.log.lock() {
            l.end = end;
            l.finished = true;
        }
    }

    /// Reads as much of `buf` as the input has; returns how much.
    fn read_full(&mut self, from: usize) -> io::Result<usize> {
        let mut got = from;
        while got < self.buf.len() {
            let Some(dst) = self.buf.get_mut(got..) else {
                break;
            };
            match self.inner.read(dst) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }

    /// Loads the next record into `buf` (or ends the stream).
    fn fill(&mut self) -> io::Result<()> {
        let e = self.endian;
        let index = self.log.lock().map(|l| l.records).unwrap_or(0);
        let offset = self.next;
        self.buf.clear();
        self.buf.resize(RECORD_HEADER_SIZE, 0);
        self.pos = 0;
        let got = self.read_full(0)?;
        if got == 0 {
            self.buf.clear();
            self.finish(FrameEnd::Clean);
            return Ok(());
        }
        let cut =
            |reason: String| FrameEnd::Truncated(Truncation::new(offset, Some(index), reason));
        if got < RECORD_HEADER_SIZE {
            self.buf.clear();
            self.finish(cut(format!("record header needs 8 bytes, {got} remain")));
            return Ok(());
        }
        let size = u16_at(&self.buf, 6, e).unwrap_or(0);
        let head: Vec<u8> = self.buf.clone();
        // Header check first (size below 8 is corrupt whatever follows).
        if let Err(err) = check(e, &head, None, None, index, offset) {
            self.buf.clear();
            self.finish(FrameEnd::Corrupt(err));
            return Ok(());
        }
        self.buf.resize(usize::from(size), 0);
        let got = self.read_full(RECORD_HEADER_SIZE)?;
        let ty = RecordType(u32_at(&head, 0, e).unwrap_or(0));
        if got < usize::from(size) {
            self.buf.truncate(got);
            let (tail, n) = cut_compressed(&mut self.zstd, &self.buf, got as u64, e);
            let mut reason = trailing_text(self.buf.get(..got).unwrap_or_default())
                .unwrap_or_else(|| format!("{ty} record of {size} bytes, {got} remain"));
            if n > 0 {
                reason.push_str(&format!(
                    "; the {n} whole records it inflates to before the cut are kept"
                ));
            }
            // The records inflated before the cut are served as plain records.
            self.buf = tail;
            self.finish(cut(reason));
            return Ok(());
        }
        let body = self.buf.get(RECORD_HEADER_SIZE..).unwrap_or_default();
        let remaining = self.remaining.map(|r| r.saturating_sub(offset));
        let frame = match check(e, &head, Some(body), None, index, offset) {
            Ok(Some(f)) => f,
            Ok(None) => {
                self.buf.clear();
                self.finish(cut(format!("{ty} record of {size} bytes")));
                return Ok(());
            }
            Err(err) => {
                self.buf.clear();
                self.finish(FrameEnd::Corrupt(err));
                return Ok(());
            }
        };
        if frame.total > u64::from(size) {
            // An AUXTRACE payload: bounded by what the input has when that is known.
            if remaining.is_some_and(|r| r < frame.total) {
                self.buf.clear();
                self.finish(cut(format!(
                    "AUXTRACE record with a {}-byte payload, {} remain",
                    frame.total - u64::from(size),
                    remaining.unwrap_or(0).saturating_sub(u64::from(size))
                )));
                return Ok(());
            }
            let total = usize::try_from(frame.total).unwrap_or(usize::MAX);
            self.buf.resize(total, 0);
            let got = self.read_full(usize::from(size))?;
            if got < total {
                self.buf.clear();
                self.finish(cut(format!(
                    "AUXTRACE payload of {} bytes, {} remain",
                    total - usize::from(size),
                    got - usize::from(size)
                )));
                return Ok(());
            }
        }
        if frame.record_type == RecordType::FINISHED_ROUND {
            self.zstd.end_window();
        }
        let body = self.buf.get(RECORD_HEADER_SIZE..).unwrap_or_default();
        let inflated = match compressed_payload(frame.record_type, body, e) {
            Some(z) => self.zstd.feed(z, e, |_, _| {}),
            None if matches!(
                frame.record_type,
                RecordType::COMPRESSED | RecordType::COMPRESSED2
            ) =>
            {
                Err("its data size runs past the record".to_string())
            }
            None => Ok(()),
        };
        if let Err(m) = inflated {
            self.buf.clear();
            self.finish(FrameEnd::Corrupt(Error::record(
                index,
                offset,
                format!("{} record: {m}", frame.record_type),
            )));
            return Ok(());
        }
        self.next = offset.saturating_add(frame.total);
        if let Ok(mut l) = self.log.lock() {
            l.inflated_records = self.zstd.records;
            l.records += 1;
            *l.counts.entry(frame.record_type).or_insert(0) += 1;
            l.clean_end = self.next;
        }
        Ok(())
    }
}

impl<R: Read> Read for Framer<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.buf.len() {
            if self.done {
                return Ok(0);
            }
            self.fill()?;
        }
        let avail = self.buf.get(self.pos..).unwrap_or_default();
        let n = avail.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), avail.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ty: u32, body: &[u8]) -> Vec<u8> {
        let mut v = ty.to_le_bytes().to_vec();
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn slice_scan_clean_cut_corrupt() {
        let mut d = rec(9, &[0; 16]);
        d.extend(rec(68, &[]));
        let log = scan_slice(&d, 0, d.len() as u64, Endian::Little, None);
        assert_eq!(log.records, 2);
        assert_eq!(log.end, FrameEnd::Clean);
        assert_eq!(log.clean_end, 32);
        for cut in 1..d.len() {
            let log = scan_slice(&d[..cut], 0, cut as u64, Endian::Little, None);
            let want = if cut < 24 { 0 } else { 24 };
            assert_eq!(log.clean_end, want, "cut {cut}");
            if cut != 24 {
                assert!(matches!(log.end, FrameEnd::Truncated(ref t) if t.offset == want));
            }
        }
        let mut bad = d.clone();
        bad[24 + 6] = 4; // FINISHED_ROUND of size 4
        let log = scan_slice(&bad, 0, bad.len() as u64, Endian::Little, None);
        assert!(
            matches!(log.end, FrameEnd::Corrupt(ref e) if e.known_offset() == Some(24) && e.record == Some(1))
        );
        assert_eq!(log.clean_end, 24);
    }

    #[test]
    fn hostile_auxtrace() {
        let mut body = u64::MAX.to_le_bytes().to_vec();
        body.extend_from_slice(&[0; 40]);
        let d = rec(71, &body);
        let log = scan_slice(&d, 0, d.len() as u64, Endian::Little, None);
        assert!(matches!(log.end, FrameEnd::Corrupt(_)));
        let mut body = 1_000u64.to_le_bytes().to_vec();
        body.extend_from_slice(&[0; 40]);
        let d = rec(71, &body);
        let log = scan_slice(&d, 0, d.len() as u64, Endian::Little, None);
        assert!(matches!(log.end, FrameEnd::Truncated(_)));
        // A stream refuses a huge payload before allocating it.
        let mut body = (MAX_STREAM_AUXTRACE + 1).to_le_bytes().to_vec();
        body.extend_from_slice(&[0; 40]);
        let d = rec(71, &body);
        let log = Arc::new(Mutex::new(FrameLog::default()));
        let mut f = Framer::new(&d[..], Endian::Little, Vec::new(), 0, None, log.clone());
        let mut out = Vec::new();
        f.read_to_end(&mut out).unwrap();
        assert!(out.is_empty());
        assert!(matches!(log.lock().unwrap().end, FrameEnd::Corrupt(_)));
    }

    #[test]
    fn framer_serves_whole_records() {
        let mut d = rec(9, &[1; 16]);
        d.extend(rec(3, &[2; 8]));
        for cut in 0..=d.len() {
            let log = Arc::new(Mutex::new(FrameLog::default()));
            let mut f = Framer::new(
                &d[..cut],
                Endian::Little,
                b"HDR".to_vec(),
                16,
                None,
                log.clone(),
            );
            let mut out = Vec::new();
            f.read_to_end(&mut out).unwrap();
            let whole = if cut >= d.len() {
                d.len()
            } else if cut >= 24 {
                24
            } else {
                0
            };
            assert_eq!(&out[3..], &d[..whole], "cut {cut}");
            let l = log.lock().unwrap();
            assert_eq!(l.clean_end, 16 + whole as u64);
            assert!(l.finished);
            assert_eq!(matches!(l.end, FrameEnd::Clean), cut == whole);
        }
    }
}
