//! A jitdump read for injection: its [`CodeMap`] (regions with load and end times, line
//! tables, unwinding info) and the code bytes of every region, kept in the file's bytes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use profkit_jitdump::{JitDump, Record};
use profkit_model::codemap::CodeMap;

/// `JITDUMP_FLAGS_ARCH_TIMESTAMP`: timestamps are TSC ticks, not CLOCK_MONOTONIC ns.
const FLAG_ARCH_TIMESTAMP: u64 = 1;

/// A jitdump with its code.
#[derive(Debug)]
pub struct JitImage {
    /// Where it was read.
    pub path: PathBuf,
    /// The pid its header names.
    pub pid: u32,
    /// The ELF machine of the code (`e_machine`).
    pub elf_mach: u32,
    /// Whether the dump is big-endian.
    pub big_endian: bool,
    /// Whether its timestamps are TSC ticks (`JITDUMP_FLAGS_ARCH_TIMESTAMP`).
    pub arch_timestamp: bool,
    /// The code map: regions in load order.
    pub map: CodeMap,
    /// The earliest and latest record time.
    pub time_range: Option<(u64, u64)>,
    /// Problems met while reading (records that did not decode, a cut tail).
    pub problems: Vec<String>,
    bytes: Vec<u8>,
    /// `(offset, len)` in `bytes` of each region's code (`None`: the load carried none).
    code: Vec<Option<(usize, usize)>>,
}

impl JitImage {
    /// The dump's size in bytes.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The code bytes of region `index` (an index into [`CodeMap::regions`]).
    pub fn code(&self, index: usize) -> Option<&[u8]> {
        let (off, len) = (*self.code.get(index)?)?;
        self.bytes.get(off..off.checked_add(len)?)
    }
}

/// A perf map as an image to inject: its functions (the code live at the end, as perf reads
/// a map) without code bytes — their `.text` is zeros — each live from `time(start, end)`
/// (after the anonymous mapping it is in was recorded, so that the ELF's MMAP2 is not
/// replaced by it). Perf maps say nothing of the machine: `elf_mach` is the recording's.
pub fn from_perf_map(
    loaded: &profkit_model::feed::perf::jit::LoadedMap,
    pid: u32,
    elf_mach: u32,
    time: impl Fn(u64, u64) -> u64,
) -> JitImage {
    let map = CodeMap::from_entries(
        pid,
        loaded.map.iter().map(|(start, e)| {
            let end = start.saturating_add(e.size);
            (
                start,
                e.size,
                String::from_utf8_lossy(&e.name).into_owned(),
                time(start, end),
            )
        }),
    );
    let n = map.regions().len();
    JitImage {
        path: loaded.path.clone(),
        pid,
        elf_mach,
        big_endian: false,
        arch_timestamp: false,
        time_range: map.time_range(),
        map,
        problems: Vec::new(),
        bytes: Vec::new(),
        code: vec![None; n],
    }
}

/// Reads the jitdump at `path`.
pub fn load(path: &Path) -> Result<JitImage, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (map, header, records) = {
        let dump = JitDump::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let h = dump.header();
        let header = (h.pid, h.elf_mach, h.flags, h.endian);
        let map = CodeMap::from_jitdump(&dump);
        let base = bytes.as_ptr() as usize;
        // Code of each LOAD (by record index) and of each MOVE (the code of its code_index then).
        let mut by_record: HashMap<usize, (usize, usize)> = HashMap::new();
        let mut by_index: HashMap<u64, (usize, usize)> = HashMap::new();
        let mut range: Option<(u64, u64)> = None;
        let mut problems = Vec::new();
        let mut recs = dump.records();
        for raw in recs.by_ref() {
            let Ok(raw) = raw else { continue };
            let rh = raw.header();
            let t = rh.timestamp;
            range = Some(range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            match raw.parse() {
                Ok(Record::CodeLoad(l)) => {
                    if let Some(code) = l.code {
                        let at = (code.as_ptr() as usize).wrapping_sub(base);
                        by_record.insert(rh.index, (at, code.len()));
                        by_index.insert(l.code_index, (at, code.len()));
                    } else {
                        by_index.remove(&l.code_index);
                    }
                }
                Ok(Record::CodeMove(m)) => {
                    if let Some(&c) = by_index.get(&m.code_index) {
                        by_record.insert(rh.index, c);
                    }
                }
                _ => {}
            }
        }
        if let Some(cut) = recs.truncation() {
            problems.push(format!("{}: {cut}", path.display()));
        }
        problems.extend(
            map.problems
                .iter()
                .map(|p| format!("{}: {p}", path.display())),
        );
        let code = map
            .regions()
            .iter()
            .map(|r| {
                by_record
                    .get(&r.record)
                    .copied()
                    .filter(|&(_, len)| len as u64 >= r.size)
            })
            .collect::<Vec<_>>();
        (map, header, (range, problems, code))
    };
    let (pid, elf_mach, flags, endian) = header;
    let (time_range, problems, code) = records;
    Ok(JitImage {
        path: path.to_path_buf(),
        pid,
        elf_mach,
        big_endian: endian == profkit_jitdump::Endian::Big,
        arch_timestamp: flags & FLAG_ARCH_TIMESTAMP != 0,
        map,
        time_range,
        problems,
        bytes,
        code,
    })
}
