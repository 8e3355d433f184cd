//! Conversions inside this crate's formats: jitdump → perf map, jitdump → jitdump in another
//! byte order, perf map → jitdump, perf map → perf map.
//!
//! Conversions are lenient: what cannot be carried over is skipped and counted in
//! [`ConvertStats`], never silently dropped.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::perfmap;
use crate::raw::{Endian, RecordType};
use crate::read::{DebugWalkEnd, JitDump, RawRecord, Record};
use crate::write::{CodeLoadData, DebugInfo2Data, HeaderOptions, JitDumpWriter, Tier, Unwinding};

/// A jitdump or a perf map, ready to be written in the other encoding (or re-encoded).
pub enum Encoded<'a> {
    /// A parsed jitdump.
    Jitdump(JitDump<'a>),
    /// A perf map's text, and the pid a jitdump made of it records (its file name's, see
    /// [`pid_from_file_name`]; 0 when the name has none).
    PerfMap {
        /// The map's text.
        text: &'a [u8],
        /// The pid for the jitdump's header and CODE_LOADs.
        pid: u32,
    },
}

/// What [`convert`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// A jitdump (`endian`: the byte order; `None` keeps a jitdump's and takes the host's for a
    /// perf map).
    Jitdump {
        /// The byte order to write.
        endian: Option<Endian>,
    },
    /// A perf map (the code live at the end, [`perfmap::MapBuilder`]'s meaning).
    PerfMap,
}

/// The one table of jitdump ↔ perf-map conversions: a jitdump to a perf map or re-encoded, a
/// perf map to a jitdump or cleaned up as a perf map.
pub fn convert(
    input: &Encoded<'_>,
    to: Encoding,
    mut out: &mut dyn Write,
) -> io::Result<ConvertStats> {
    match (input, to) {
        (Encoded::Jitdump(dump), Encoding::Jitdump { endian }) => {
            let header = header_like(dump, endian.unwrap_or(dump.endian()));
            let mut w = JitDumpWriter::new(out, &header)?;
            reencode(dump, &mut w)
        }
        (Encoded::Jitdump(dump), Encoding::PerfMap) => jitdump_to_perf_map(dump, &mut out),
        (Encoded::PerfMap { text, pid }, Encoding::Jitdump { endian }) => {
            let header = HeaderOptions {
                endian: endian.unwrap_or(Endian::NATIVE),
                pid: *pid,
                timestamp: 0,
                ..HeaderOptions::default()
            };
            let mut w = JitDumpWriter::new(out, &header)?;
            perf_map_to_jitdump(text, *pid, &mut w)
        }
        (Encoded::PerfMap { text, .. }, Encoding::PerfMap) => perf_map_to_perf_map(text, &mut out),
    }
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertStats {
    /// Records or entries written.
    pub written: u64,
    /// Records or lines skipped, with the reason for the first few.
    pub skipped: u64,
    /// Reasons for skipped items (at most 20).
    pub notes: Vec<String>,
}

impl ConvertStats {
    fn skip(&mut self, why: String) {
        self.skipped += 1;
        if self.notes.len() < 20 {
            self.notes.push(why);
        }
    }
}

/// Hands `f` every record of `dump` up to a corrupt one, where the walk stops; the stop and a
/// cut at the end are noted in `stats`.
fn each_record<'d>(
    dump: &JitDump<'d>,
    stats: &mut ConvertStats,
    mut f: impl FnMut(&mut ConvertStats, RawRecord<'d>) -> io::Result<()>,
) -> io::Result<()> {
    let mut records = dump.records();
    for raw in &mut records {
        match raw {
            Ok(raw) => f(stats, raw)?,
            Err(e) => {
                stats.skip(format!("stopped: {e}"));
                break;
            }
        }
    }
    if let Some(t) = records.truncation() {
        stats.skip(t.to_string());
    }
    Ok(())
}

/// Writes the perf map of `dump`: its loads and moves applied in file order by a
/// [`MapBuilder`](perfmap::MapBuilder) (the last writer wins per address range, so the map
/// holds the code live at the end), one line per entry sorted by address. A MOVE keeps the
/// name its code_index was loaded with. CLOSE is ignored (the map of a finished process would
/// be empty), and every process of the dump goes into the one map.
pub fn jitdump_to_perf_map<W: Write>(dump: &JitDump<'_>, out: &mut W) -> io::Result<ConvertStats> {
    let mut stats = ConvertStats::default();
    let mut map = perfmap::MapBuilder::new();
    // code_index → name, for MOVEs.
    let mut names: HashMap<u64, Vec<u8>> = HashMap::new();
    each_record(dump, &mut stats, |stats, raw| {
        if raw.record_type != RecordType::CODE_LOAD && raw.record_type != RecordType::CODE_MOVE {
            return Ok(());
        }
        match raw.parse() {
            Ok(Record::CodeLoad(l)) => {
                map.load(l.code_addr, l.code_size, l.name);
                names.insert(l.code_index, l.name.to_vec());
            }
            Ok(Record::CodeMove(m)) => {
                let name = names.get(&m.code_index).map(Vec::as_slice);
                if !map.move_code(m.old_code_addr, m.new_code_addr, m.code_size, name) {
                    stats.skip(format!(
                        "record #{} at offset {:#x}: JIT_CODE_MOVE of code_index {} that no LOAD named",
                        raw.index, raw.offset, m.code_index
                    ));
                }
            }
            Ok(_) => {}
            Err(e) => stats.skip(e.to_string()),
        }
        Ok(())
    })?;
    stats.written = map.write(out)?;
    Ok(stats)
}

/// Writes the perf map `text` normalised: its lines applied in order by a
/// [`MapBuilder`](perfmap::MapBuilder) (the last line wins per address range), sorted, bare
/// hex. The same map as `text` → [`perf_map_to_jitdump`] → [`jitdump_to_perf_map`].
/// Malformed lines are skipped and counted.
pub fn perf_map_to_perf_map<W: Write>(text: &[u8], out: &mut W) -> io::Result<ConvertStats> {
    let mut stats = ConvertStats::default();
    let (map, bad) = perfmap::map_of(text);
    for e in bad {
        stats.skip(e.to_string());
    }
    stats.written = map.write(out)?;
    Ok(stats)
}

/// Re-encodes every record of `dump` into `out` (which may use another byte order).
///
/// Known records are decoded and written again by the writer. Records that do not parse and
/// unknown ids are copied byte for byte when the byte order is unchanged and skipped
/// otherwise (their layout is unknown, so they cannot be byte-swapped). Corrupt DEBUG_INFO
/// records (V8 in Node 20) are carried over entry by entry when their fixed stride can be
/// recovered.
pub fn reencode<W: Write>(
    dump: &JitDump<'_>,
    out: &mut JitDumpWriter<W>,
) -> io::Result<ConvertStats> {
    let same_endian = out.endian() == dump.endian();
    let mut stats = ConvertStats::default();
    each_record(dump, &mut stats, |stats, raw| {
        let ts = raw.timestamp;
        let parsed = match raw.parse() {
            Ok(p) => p,
            Err(e) => {
                if same_endian {
                    out.write_raw_record(raw.record_type, ts, raw.body)?;
                    stats.written += 1;
                } else {
                    stats.skip(format!("{e} (cannot byte-swap a malformed record)"));
                }
                return Ok(());
            }
        };
        match parsed {
            Record::CodeLoad(l) => out.write_code_load_record(&CodeLoadData {
                timestamp: ts,
                pid: l.pid,
                tid: l.tid,
                vma: l.vma,
                code_addr: l.code_addr,
                code_size: l.code_size,
                code: l.code,
                code_index: l.code_index,
                name: l.name,
                debug_info: None,
                debug_info2: None,
                tier: None,
                unwinding: None,
            })?,
            Record::CodeMove(m) => out.write_code_move_record(ts, &m)?,
            Record::CodeClose => out.write_code_close_record(ts)?,
            Record::DebugInfo(d) => match d.walk_end() {
                DebugWalkEnd::Exact { .. } => {
                    let entries: Vec<_> = d.entries().collect();
                    out.write_debug_info_record(ts, d.code_addr, &entries)?;
                }
                _ if same_endian => out.write_raw_record(raw.record_type, ts, raw.body)?,
                _ => match d.fixed_stride() {
                    Some(stride) => {
                        // Keep the (corrupt) name bytes as they are; swap the numbers.
                        let e = out.endian();
                        let mut body = Vec::with_capacity(raw.body.len());
                        body.extend_from_slice(&e.u64_bytes(d.code_addr));
                        body.extend_from_slice(&e.u64_bytes(d.nr_entry));
                        for i in 0..d.nr_entry as usize {
                            if let Some(entry) = d.entry_at_stride(stride, i) {
                                body.extend_from_slice(&e.u64_bytes(entry.addr));
                                body.extend_from_slice(&e.u32_bytes(entry.line));
                                body.extend_from_slice(&e.u32_bytes(entry.discrim));
                                body.extend_from_slice(entry.file);
                                body.push(0);
                            }
                        }
                        body.resize(raw.body.len(), 0);
                        out.write_raw_record(raw.record_type, ts, &body)?;
                    }
                    None => {
                        stats.skip(format!(
                            "record #{} at offset {:#x}: corrupt JIT_CODE_DEBUG_INFO cannot be byte-swapped",
                            raw.index, raw.offset
                        ));
                        return Ok(());
                    }
                },
            },
            Record::UnwindingInfo(u) => out.write_unwinding_info_record(
                ts,
                &Unwinding {
                    eh_frame: u.eh_frame(),
                    eh_frame_hdr: u.eh_frame_hdr(),
                    mapped_size: u.mapped_size,
                },
            )?,
            Record::DebugInfo2(d) => {
                out.write_debug_info2_record(ts, &DebugInfo2Data::from_record(&d))?
            }
            Record::JitTier(t) => {
                let name = String::from_utf8_lossy(t.name);
                out.write_jit_tier_record(
                    ts,
                    t.code_addr,
                    &Tier {
                        color: t.color,
                        flags: t.flags,
                        name: &name,
                    },
                )?
            }
            Record::EmbeddedSourceFile(s) => {
                let path = String::from_utf8_lossy(s.path);
                out.write_embedded_source_record(ts, &path, s.content)?
            }
            _ => {
                if same_endian {
                    out.write_raw_record(raw.record_type, ts, raw.body)?;
                } else {
                    stats.skip(format!(
                        "record #{} at offset {:#x}: unknown record id {} cannot be byte-swapped",
                        raw.index, raw.offset, raw.record_type.0
                    ));
                    return Ok(());
                }
            }
        }
        stats.written += 1;
        Ok(())
    })?;
    Ok(stats)
}

/// Header options that reproduce `dump`'s header in byte order `endian`.
pub fn header_like(dump: &JitDump<'_>, endian: Endian) -> HeaderOptions {
    let h = dump.header();
    HeaderOptions {
        endian,
        version: h.version,
        elf_mach: h.elf_mach,
        pad1: h.pad1,
        pid: h.pid,
        timestamp: h.timestamp,
        flags: h.flags,
        extra: h.extra.to_vec(),
    }
}

/// Writes one JIT_CODE_LOAD without code bytes per perf map line (code_index = line order,
/// timestamp 0: a perf map has no times). Malformed lines are skipped and counted.
pub fn perf_map_to_jitdump<W: Write>(
    text: &[u8],
    pid: u32,
    out: &mut JitDumpWriter<W>,
) -> io::Result<ConvertStats> {
    let mut stats = ConvertStats::default();
    for (index, e) in perfmap::entries(text).enumerate() {
        match e {
            Ok(e) => {
                let name: Vec<u8> = e
                    .name
                    .iter()
                    .map(|&b| if b == 0 { b' ' } else { b })
                    .collect();
                out.write_code_load_record(&CodeLoadData {
                    timestamp: 0,
                    pid,
                    tid: pid,
                    vma: e.start,
                    code_addr: e.start,
                    code_size: e.size,
                    code: None,
                    code_index: index as u64,
                    name: &name,
                    debug_info: None,
                    debug_info2: None,
                    tier: None,
                    unwinding: None,
                })?;
                stats.written += 1;
            }
            Err(e) => stats.skip(e.to_string()),
        }
    }
    Ok(stats)
}

/// The pid in a `perf-<pid>.map` or `jit-<pid>.dump` file name.
pub fn pid_from_file_name(name: &str) -> Option<u32> {
    let base = name.rsplit('/').next()?;
    let digits = base
        .strip_prefix("perf-")
        .or_else(|| base.strip_prefix("jit-"))?
        .split('.')
        .next()?;
    digits.parse().ok()
}
