//! The write layer: a file-mode perf.data made from a recording in memory ([`PerfData`]) with
//! new records merged in time order — what `profkit inject` needs.
//!
//! [`write()`] copies the input's attrs (with their ids), its records in time order (as
//! [`crate::Events`] delivers them: FINISHED_ROUND markers are written anew every
//! [`WriteOptions::round_every`] records, COMPRESSED blocks are written out inflated) and its
//! feature sections, and merges in [`Insert`]s: each goes before the first input record whose
//! time is later than its own. [`BuildIdEntry`]s are added to the BUILD_ID feature. A pipe-mode
//! input becomes a file-mode output: its HEADER_ATTR records become the attrs section, its
//! HEADER_FEATURE and HEADER_BUILD_ID records feature sections.
//!
//! [`Mmap2`] builds an MMAP2 record with the `sample_id_all` trailer ([`SampleId`]) its attr
//! asks for.
//!
//! The output streams through the writer: memory holds the attrs, the feature sections and
//! linux-perf-data's sorting window, not the records.

use std::collections::BTreeMap;
use std::io::{self, Seek, SeekFrom, Write};

use crate::error::{Error, Result};
use crate::raw::{
    RecordType, FEATURE_BUILD_ID, FILE_HEADER_SIZE, MAGIC_BE, MAGIC_LE, MISC_BUILD_ID_SIZE,
    PERF_SAMPLE_CPU, PERF_SAMPLE_ID, PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_STREAM_ID,
    PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PIPE_HEADER_SIZE, RECORD_HEADER_SIZE,
};
use crate::read::bytes::{range, u16_at, u32_at, u64_at, Endian};
use crate::read::{Attr, EventData, Mode, PerfData};

/// The feature bit of COMPRESSED (dropped when compressed records are written inflated).
pub const FEATURE_COMPRESSED: u32 = 27;

/// A record to merge into the output: a complete record (8-byte header included) and its time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insert {
    /// When it happens, on the recording's clock.
    pub time: u64,
    /// The record's bytes, header included, in the file's byte order.
    pub record: Vec<u8>,
}

/// An entry for the BUILD_ID feature: the build id of the file at `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// The process (perf writes -1, the host machine, for every entry).
    pub pid: i32,
    /// `PERF_RECORD_MISC_USER` or `PERF_RECORD_MISC_KERNEL`.
    pub misc: u16,
    /// The build id (at most 20 bytes).
    pub build_id: Vec<u8>,
    /// The file's path as MMAP records name it.
    pub path: String,
}

impl BuildIdEntry {
    /// The entry as perf writes it: `perf_event_header`, pid, 24 bytes of build id (byte 20 its
    /// length, flagged by `PERF_RECORD_MISC_BUILD_ID_SIZE`), the path padded with NULs to a
    /// multiple of 64.
    pub fn bytes(&self, e: Endian) -> Result<Vec<u8>> {
        let path = self.path.as_bytes();
        let name_len = (path.len() + 1).div_ceil(64) * 64;
        let size = 36 + name_len;
        let size16 = u16::try_from(size).map_err(|_| {
            Error::header(
                0,
                format!("build-id path of {} bytes is too long", path.len()),
            )
        })?;
        let mut b = Vec::with_capacity(size);
        b.extend_from_slice(&e.u32_bytes(0));
        b.extend_from_slice(&e.u16_bytes(self.misc | MISC_BUILD_ID_SIZE));
        b.extend_from_slice(&e.u16_bytes(size16));
        b.extend_from_slice(&e.u32_bytes(self.pid as u32));
        let mut id = [0u8; 24];
        let n = self.build_id.len().min(20);
        if let (Some(dst), Some(src)) = (id.get_mut(..n), self.build_id.get(..n)) {
            dst.copy_from_slice(src);
        }
        if let Some(len) = id.get_mut(20) {
            *len = n as u8;
        }
        b.extend_from_slice(&id);
        b.extend_from_slice(path);
        b.resize(size, 0);
        Ok(b)
    }
}

/// The `sample_id_all` fields of a non-sample record (only those its attr's `sample_type` has
/// are written).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time on the recording's clock.
    pub time: u64,
    /// The sample id (`PERF_SAMPLE_ID` / `IDENTIFIER`): one of the attr's ids.
    pub id: u64,
    /// `PERF_SAMPLE_STREAM_ID`.
    pub stream_id: u64,
    /// `PERF_SAMPLE_CPU`.
    pub cpu: u32,
}

impl SampleId {
    /// The trailer `attr` asks for (empty without `sample_id_all`), in perf's field order.
    pub fn bytes(&self, attr: &Attr, e: Endian) -> Vec<u8> {
        let mut b = Vec::new();
        if !attr.sample_id_all {
            return b;
        }
        let st = attr.sample_type;
        if st & PERF_SAMPLE_TID != 0 {
            b.extend_from_slice(&e.u32_bytes(self.pid));
            b.extend_from_slice(&e.u32_bytes(self.tid));
        }
        if st & PERF_SAMPLE_TIME != 0 {
            b.extend_from_slice(&e.u64_bytes(self.time));
        }
        if st & PERF_SAMPLE_ID != 0 {
            b.extend_from_slice(&e.u64_bytes(self.id));
        }
        if st & PERF_SAMPLE_STREAM_ID != 0 {
            b.extend_from_slice(&e.u64_bytes(self.stream_id));
        }
        if st & PERF_SAMPLE_CPU != 0 {
            b.extend_from_slice(&e.u32_bytes(self.cpu));
            b.extend_from_slice(&e.u32_bytes(0));
        }
        if st & PERF_SAMPLE_IDENTIFIER != 0 {
            b.extend_from_slice(&e.u64_bytes(self.id));
        }
        b
    }
}

/// A PERF_RECORD_MMAP2 to write (the inode form, as `perf inject --jit` writes them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mmap2 {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Device major number.
    pub maj: u32,
    /// Device minor number.
    pub min: u32,
    /// Inode.
    pub ino: u64,
    /// Inode generation.
    pub ino_generation: u64,
    /// `PROT_*`.
    pub prot: u32,
    /// `MAP_*`.
    pub flags: u32,
    /// The mapped file's path.
    pub path: String,
}

impl Mmap2 {
    /// The complete record: header (`misc` as given), body, the path NUL-padded to 8 bytes, and
    /// the `sample_id_all` trailer of `attr`.
    pub fn record(&self, misc: u16, attr: &Attr, id: &SampleId, e: Endian) -> Result<Vec<u8>> {
        let path = self.path.as_bytes();
        let path_len = (path.len() + 1).div_ceil(8) * 8;
        let trailer = id.bytes(attr, e);
        let size = RECORD_HEADER_SIZE + 64 + path_len + trailer.len();
        let size16 = u16::try_from(size).map_err(|_| {
            Error::header(0, format!("MMAP2 path of {} bytes is too long", path.len()))
        })?;
        let mut b = Vec::with_capacity(size);
        b.extend_from_slice(&e.u32_bytes(RecordType::MMAP2.0));
        b.extend_from_slice(&e.u16_bytes(misc));
        b.extend_from_slice(&e.u16_bytes(size16));
        b.extend_from_slice(&e.u32_bytes(self.pid));
        b.extend_from_slice(&e.u32_bytes(self.tid));
        b.extend_from_slice(&e.u64_bytes(self.start));
        b.extend_from_slice(&e.u64_bytes(self.len));
        b.extend_from_slice(&e.u64_bytes(self.pgoff));
        b.extend_from_slice(&e.u32_bytes(self.maj));
        b.extend_from_slice(&e.u32_bytes(self.min));
        b.extend_from_slice(&e.u64_bytes(self.ino));
        b.extend_from_slice(&e.u64_bytes(self.ino_generation));
        b.extend_from_slice(&e.u32_bytes(self.prot));
        b.extend_from_slice(&e.u32_bytes(self.flags));
        b.extend_from_slice(path);
        b.resize(RECORD_HEADER_SIZE + 64 + path_len, 0);
        b.extend_from_slice(&trailer);
        Ok(b)
    }
}

/// How [`write()`] lays out the records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// A FINISHED_ROUND after this many records (perf report flushes its sorting queue at each;
    /// the output is already in time order, so any spacing is valid).
    pub round_every: u64,
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions { round_every: 8192 }
    }
}

/// What [`write()`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Input records written (FINISHED_ROUND markers not counted).
    pub records: u64,
    /// Inserted records written.
    pub inserted: u64,
    /// FINISHED_ROUND markers written.
    pub rounds: u64,
    /// Input records not written, by type: header records of a pipe-mode input (their
    /// contents moved to the attrs and feature sections).
    pub dropped: BTreeMap<RecordType, u64>,
    /// Compressed blocks of the input that were written inflated (the COMPRESSED feature is
    /// then dropped).
    pub inflated_blocks: u64,
    /// Build-id entries added to the BUILD_ID feature.
    pub build_ids_added: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Where the input is cut (the records before the cut were written).
    pub truncation: Option<crate::Truncation>,
}

/// One attr of the output: its `perf_event_attr` bytes and ids.
struct OutAttr {
    bytes: Vec<u8>,
    ids: Vec<u64>,
}

/// The metadata of the output: attrs, feature sections (by bit), attr entry size.
struct OutMeta {
    attr_size: u64,
    attrs: Vec<OutAttr>,
    features: BTreeMap<u32, Vec<u8>>,
}

/// Record types that only a pipe-mode stream carries: their contents go to the attrs and
/// feature sections of a file.
fn is_pipe_header_record(t: RecordType) -> bool {
    matches!(t.0, 64..=67 | 80)
}

/// Writes `data` with `inserts` (sorted by time; equal times keep their order) merged in and
/// `build_ids` added, as a file-mode perf.data, to `out`.
///
/// Records are copied in the order [`crate::Events`] delivers them (time order). A corrupt
/// record in the input ends the copy with an error, and so does an AUXTRACE record (its
/// payload is not written); a cut input is copied up to the cut ([`WriteStats::truncation`]).
pub fn write<W: Write + Seek>(
    data: &PerfData<'_>,
    inserts: &[Insert],
    build_ids: &[BuildIdEntry],
    options: WriteOptions,
    out: W,
) -> Result<WriteStats> {
    let e = data.header().endian;
    let mut meta = match data.header().mode {
        Mode::File => file_meta(data)?,
        Mode::Pipe => pipe_meta(data)?,
    };
    let mut stats = WriteStats::default();
    let io = |err: io::Error| Error::header(0, format!("writing the output: {err}"));
    let attrs: Vec<(&[u8], &[u64])> = meta
        .attrs
        .iter()
        .map(|a| (a.bytes.as_slice(), a.ids.as_slice()))
        .collect();
    let mut w = FileWriter::start(out, e, meta.attr_size, &attrs).map_err(io)?;

    // The records, time-ordered, with the inserts merged in.
    let mut pending = inserts.iter().peekable();
    let mut since_round = 0u64;
    let mut extra_build_ids: Vec<u8> = Vec::new();
    let mut events = data.events()?;
    let mut failure = None;
    while let Some(ev) = events.next_event() {
        let ev = match ev {
            Ok(ev) => ev,
            Err(err) => {
                failure = Some(err);
                break;
            }
        };
        if ev.record_type == RecordType::AUXTRACE {
            return Err(Error::unlocated(crate::error::ErrorKind::Malformed, Some(ev.index),
                "AUXTRACE records (Intel PT, CoreSight …) are not written: their payloads follow the record",
            ));
        }
        if is_pipe_header_record(ev.record_type) {
            if let EventData::BuildId(_) = ev.data {
                extra_build_ids.extend_from_slice(&record_bytes(
                    e,
                    ev.record_type,
                    ev.misc,
                    ev.body,
                )?);
            }
            *stats.dropped.entry(ev.record_type).or_insert(0) += 1;
            continue;
        }
        if let Some(t) = ev.time {
            while let Some(ins) = pending.next_if(|i| i.time <= t) {
                w.record(&ins.record).map_err(io)?;
                stats.inserted += 1;
                since_round += 1;
            }
        }
        let rec = record_bytes(e, ev.record_type, ev.misc, ev.body)?;
        w.record(&rec).map_err(io)?;
        stats.records += 1;
        since_round += 1;
        if since_round >= options.round_every.max(1) {
            w.record(&round(e)).map_err(io)?;
            stats.rounds += 1;
            since_round = 0;
        }
    }
    if let Some(err) = failure {
        return Err(err);
    }
    stats.truncation = events.truncation();
    for ins in pending {
        w.record(&ins.record).map_err(io)?;
        stats.inserted += 1;
        since_round += 1;
    }
    if since_round > 0 {
        w.record(&round(e)).map_err(io)?;
        stats.rounds += 1;
    }
    let frames = events.frames();
    stats.inflated_blocks = frames
        .counts
        .iter()
        .filter(|(t, _)| matches!(t.0, 81 | 83))
        .map(|(_, n)| n)
        .sum();
    drop(events);

    // Feature sections: the input's, with build ids added and COMPRESSED dropped when the
    // blocks were inflated.
    if stats.inflated_blocks > 0 {
        meta.features.remove(&FEATURE_COMPRESSED);
    }
    if !build_ids.is_empty() || !extra_build_ids.is_empty() {
        let section = meta.features.entry(FEATURE_BUILD_ID).or_default();
        section.extend_from_slice(&extra_build_ids);
        for b in build_ids {
            section.extend_from_slice(&b.bytes(e)?);
            stats.build_ids_added += 1;
        }
    }
    stats.bytes = w.finish(&meta.features).map_err(io)?;
    Ok(stats)
}

/// A file-mode perf.data written as it goes: the header's place, the attrs with their ids,
/// then records appended one by one ([`FileWriter::record`]), and at [`FileWriter::finish`] the
/// feature sections and the header that points at all of them. What [`write()`] and a
/// recorder share.
pub struct FileWriter<W: Write + Seek> {
    w: CountingWriter<W>,
    e: Endian,
    attr_size: u64,
    attrs_at: u64,
    attrs_size: u64,
    data_at: u64,
}

impl<W: Write + Seek> FileWriter<W> {
    /// Starts a file in byte order `e` with `attrs` (each a `perf_event_attr` of `attr_size`
    /// bytes, shorter ones padded with zeros, and its sample ids).
    pub fn start(out: W, e: Endian, attr_size: u64, attrs: &[(&[u8], &[u64])]) -> io::Result<Self> {
        let mut w = CountingWriter::new(out);
        w.write_all(&[0u8; FILE_HEADER_SIZE as usize])?;
        let mut id_sections = Vec::with_capacity(attrs.len());
        for (_, ids) in attrs {
            let at = w.pos;
            for id in *ids {
                w.write_all(&e.u64_bytes(*id))?;
            }
            id_sections.push((at, w.pos - at));
        }
        let attrs_at = w.pos;
        let entry = usize::try_from(attr_size).unwrap_or(0);
        for ((bytes, _), (ids_at, ids_size)) in attrs.iter().zip(&id_sections) {
            let mut bytes = bytes.to_vec();
            bytes.resize(entry, 0);
            w.write_all(&bytes)?;
            w.write_all(&e.u64_bytes(*ids_at))?;
            w.write_all(&e.u64_bytes(*ids_size))?;
        }
        let attrs_size = w.pos - attrs_at;
        let data_at = w.pos;
        Ok(FileWriter {
            w,
            e,
            attr_size,
            attrs_at,
            attrs_size,
            data_at,
        })
    }

    /// Appends one complete record (header included, in the file's byte order).
    pub fn record(&mut self, record: &[u8]) -> io::Result<()> {
        self.w.write_all(record)
    }

    /// Bytes of records written so far.
    pub fn data_size(&self) -> u64 {
        self.w.pos - self.data_at
    }

    /// Writes the feature sections (by feature bit) and the header; returns the file's size.
    pub fn finish(self, features: &BTreeMap<u32, Vec<u8>>) -> io::Result<u64> {
        let FileWriter {
            mut w,
            e,
            attr_size,
            attrs_at,
            attrs_size,
            data_at,
        } = self;
        let data_size = w.pos - data_at;
        let table_at = w.pos;
        w.write_all(&vec![0u8; features.len() * 16])?;
        let mut table = Vec::with_capacity(features.len() * 16);
        let mut bits = [0u64; 4];
        for (bit, bytes) in features {
            table.extend_from_slice(&e.u64_bytes(w.pos));
            table.extend_from_slice(&e.u64_bytes(bytes.len() as u64));
            w.write_all(bytes)?;
            if let Some(word) = bits.get_mut((bit / 64) as usize) {
                *word |= 1u64 << (bit % 64);
            }
        }
        let size = w.pos;
        let mut header = Vec::with_capacity(FILE_HEADER_SIZE as usize);
        header.extend_from_slice(match e {
            Endian::Little => &MAGIC_LE,
            Endian::Big => &MAGIC_BE,
        });
        for v in [
            FILE_HEADER_SIZE,
            attr_size + 16,
            attrs_at,
            attrs_size,
            data_at,
            data_size,
            0,
            0,
        ] {
            header.extend_from_slice(&e.u64_bytes(v));
        }
        for word in bits {
            header.extend_from_slice(&e.u64_bytes(word));
        }
        let mut out = w.inner;
        out.seek(SeekFrom::Start(table_at))?;
        out.write_all(&table)?;
        out.seek(SeekFrom::Start(0))?;
        out.write_all(&header)?;
        out.seek(SeekFrom::Start(size))?;
        out.flush()?;
        Ok(size)
    }
}

/// A complete record from its type, misc and body.
fn record_bytes(e: Endian, t: RecordType, misc: u16, body: &[u8]) -> Result<Vec<u8>> {
    let size = RECORD_HEADER_SIZE + body.len();
    let size16 = u16::try_from(size).map_err(|_| {
        Error::header(
            0,
            format!("{t} record of {size} bytes does not fit a record header (AUXTRACE payloads are not written)"),
        )
    })?;
    let mut b = Vec::with_capacity(size);
    b.extend_from_slice(&e.u32_bytes(t.0));
    b.extend_from_slice(&e.u16_bytes(misc));
    b.extend_from_slice(&e.u16_bytes(size16));
    b.extend_from_slice(body);
    Ok(b)
}

/// A FINISHED_ROUND record.
fn round(e: Endian) -> Vec<u8> {
    let mut b = e.u32_bytes(RecordType::FINISHED_ROUND.0).to_vec();
    b.extend_from_slice(&e.u16_bytes(0));
    b.extend_from_slice(&e.u16_bytes(8));
    b
}

/// Attrs and feature sections of a file-mode input, as recorded.
fn file_meta(data: &PerfData<'_>) -> Result<OutMeta> {
    let h = data.header();
    let bytes = data.data();
    // The header's attr_size is the whole entry: the attr and its ids section.
    let entry = h.attr_size;
    let attr_len = entry.saturating_sub(16);
    let n = h.attrs.size / entry.max(1);
    let mut attrs = Vec::new();
    for i in 0..n {
        let at = h.attrs.offset + i * entry;
        let raw = range(bytes, at, attr_len)
            .ok_or_else(|| Error::header(at, format!("attr #{i} is past the end of the file")))?;
        let ids = data
            .attrs()
            .get(i as usize)
            .map(|a| a.ids.clone())
            .unwrap_or_default();
        attrs.push(OutAttr {
            bytes: raw.to_vec(),
            ids,
        });
    }
    let mut features = BTreeMap::new();
    for f in h.feature_sections.iter().filter(|f| f.kept) {
        if let Some(b) = range(bytes, f.section.offset, f.section.size) {
            features.insert(f.bit, b.to_vec());
        }
    }
    Ok(OutMeta {
        attr_size: attr_len,
        attrs,
        features,
    })
}

/// Attrs (HEADER_ATTR) and feature sections (HEADER_FEATURE) of a pipe-mode input; its
/// HEADER_BUILD_ID records are collected by the record walk.
fn pipe_meta(data: &PerfData<'_>) -> Result<OutMeta> {
    let e = data.header().endian;
    let bytes = data.data();
    let mut attrs = Vec::new();
    let mut features = BTreeMap::new();
    let mut off = PIPE_HEADER_SIZE as usize;
    while let (Some(ty), Some(size)) = (u32_at(bytes, off, e), u16_at(bytes, off + 6, e)) {
        let size = usize::from(size);
        if size < RECORD_HEADER_SIZE {
            break;
        }
        let Some(body) = bytes.get(off + RECORD_HEADER_SIZE..off + size) else {
            break;
        };
        match RecordType(ty) {
            RecordType::HEADER_ATTR => {
                let attr_size = match u32_at(body, 4, e) {
                    Some(0) => 64,
                    Some(s) => s as usize,
                    None => body.len(),
                };
                let Some(attr) = body.get(..attr_size) else {
                    return Err(Error::header(
                        off as u64,
                        format!(
                            "HEADER_ATTR of {} bytes is shorter than its attr size {attr_size}",
                            body.len()
                        ),
                    ));
                };
                let ids = body
                    .get(attr_size..)
                    .unwrap_or_default()
                    .chunks_exact(8)
                    .filter_map(|c| u64_at(c, 0, e))
                    .collect();
                attrs.push(OutAttr {
                    bytes: attr.to_vec(),
                    ids,
                });
            }
            RecordType::HEADER_FEATURE => {
                if let (Some(bit), Some(section)) = (u64_at(body, 0, e), body.get(8..)) {
                    if let Ok(bit) = u32::try_from(bit) {
                        if bit < 256 {
                            features.insert(bit, section.to_vec());
                        }
                    }
                }
            }
            _ => {}
        }
        off += size;
    }
    let attr_size = attrs.first().map_or(0, |a| a.bytes.len());
    if let Some(a) = attrs.iter().find(|a| a.bytes.len() != attr_size) {
        return Err(Error::header(
            0,
            format!(
                "the stream's attrs have different sizes ({attr_size} and {} bytes): a file needs one attr size",
                a.bytes.len()
            ),
        ));
    }
    if attrs.is_empty() {
        return Err(Error::header(0, "the stream has no HEADER_ATTR records"));
    }
    Ok(OutMeta {
        attr_size: attr_size as u64,
        attrs,
        features,
    })
}

/// A writer that knows how many bytes went through it.
struct CountingWriter<W> {
    inner: W,
    pos: u64,
}

impl<W: Write> CountingWriter<W> {
    fn new(inner: W) -> CountingWriter<W> {
        CountingWriter { inner, pos: 0 }
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        self.inner.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }
}
