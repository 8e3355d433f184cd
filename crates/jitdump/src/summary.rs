//! What `profkit info` shows of a jitdump or a perf map.
//!
//! [`Scan`] is one pass over a dump collecting counts and ranges; [`summary`] turns it into
//! profkit-common's [`Summary`], the shape `info` prints for every format.
//! [`perfmap::summary`](crate::perfmap::summary) does the same for a perf map.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use profkit_common::{Summary, ThreadSummary, TimeSpan, Value};

use crate::error::{Error, Truncation};
use crate::raw::{elf_machine_name, RecordType, FLAG_ARCH_TIMESTAMP};
use crate::read::{JitDump, Record, RecordSource};

/// Counts and ranges of a whole dump.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Records per id.
    pub records: BTreeMap<RecordType, u64>,
    /// Process ids seen in LOAD and MOVE records.
    pub pids: BTreeSet<u32>,
    /// Distinct thread ids seen in LOAD and MOVE records.
    pub threads: usize,
    /// `(pid, tid, LOAD and MOVE records)` per thread, in order of first appearance.
    pub thread_records: Vec<(u32, u32, u64)>,
    /// Smallest record timestamp.
    pub first_timestamp: Option<u64>,
    /// Largest record timestamp.
    pub last_timestamp: Option<u64>,
    /// Sum of LOAD `code_size`.
    pub code_bytes: u64,
    /// Sum of code bytes actually stored in LOAD records.
    pub code_bytes_stored: u64,
    /// LOADs whose code bytes are missing.
    pub loads_without_code: u64,
    /// Distinct code addresses that more than one LOAD used (V8 reuses addresses after GC
    /// without any unload record).
    pub reused_addresses: u64,
    /// LOADs at an address an earlier LOAD already used.
    pub loads_at_reused_address: u64,
    /// DEBUG_INFO entries (declared).
    pub debug_entries: u64,
    /// Records whose body did not parse.
    pub malformed_records: u64,
    /// The first record whose body did not parse.
    pub first_malformed: Option<Error>,
    /// Where the file is cut, if it is.
    pub truncation: Option<Truncation>,
    /// The corrupt record that stopped the scan, if any.
    pub error: Option<Error>,
}

impl Scan {
    /// Scans every record of `dump`.
    pub fn of(dump: &JitDump<'_>) -> Scan {
        Scan::of_source(&mut dump.source())
    }

    /// Scans every record of `records` (a dump in memory or a stream).
    pub fn of_source(records: &mut dyn RecordSource) -> Scan {
        let mut s = Scan::default();
        let mut threads: HashMap<(u32, u32), usize> = HashMap::new();
        let mut addr_uses: HashMap<u64, u32> = HashMap::new();
        while let Some(raw) = records.next() {
            let raw = match raw {
                Ok(r) => r,
                Err(e) => {
                    s.error = Some(e);
                    break;
                }
            };
            *s.records.entry(raw.record_type).or_insert(0) += 1;
            s.first_timestamp = Some(
                s.first_timestamp
                    .map_or(raw.timestamp, |t| t.min(raw.timestamp)),
            );
            s.last_timestamp = Some(
                s.last_timestamp
                    .map_or(raw.timestamp, |t| t.max(raw.timestamp)),
            );
            let (pid, tid) = match raw.parse() {
                Ok(Record::CodeLoad(load)) => {
                    s.code_bytes = s.code_bytes.saturating_add(load.code_size);
                    match load.code {
                        Some(code) => s.code_bytes_stored += code.len() as u64,
                        None => s.loads_without_code += 1,
                    }
                    let uses = addr_uses.entry(load.code_addr).or_insert(0);
                    *uses = uses.saturating_add(1);
                    if *uses == 2 {
                        s.reused_addresses += 1;
                    }
                    if *uses >= 2 {
                        s.loads_at_reused_address += 1;
                    }
                    (load.pid, load.tid)
                }
                Ok(Record::CodeMove(m)) => (m.pid, m.tid),
                Ok(Record::DebugInfo(d)) => {
                    s.debug_entries = s.debug_entries.saturating_add(d.nr_entry);
                    continue;
                }
                Ok(_) => continue,
                Err(e) => {
                    s.malformed_records += 1;
                    s.first_malformed.get_or_insert(e);
                    continue;
                }
            };
            s.pids.insert(pid);
            let next = s.thread_records.len();
            let i = *threads.entry((pid, tid)).or_insert(next);
            match s.thread_records.get_mut(i) {
                Some(t) => t.2 += 1,
                None => s.thread_records.push((pid, tid, 1)),
            }
        }
        s.threads = s
            .thread_records
            .iter()
            .map(|t| t.1)
            .collect::<BTreeSet<_>>()
            .len();
        s.truncation = records.truncation().cloned();
        s
    }

    /// Total number of complete records.
    pub fn total_records(&self) -> u64 {
        self.records.values().sum()
    }

    /// Records of one kind.
    pub fn count(&self, t: RecordType) -> u64 {
        self.records.get(&t).copied().unwrap_or(0)
    }
}

/// What `profkit info` shows of a jitdump, in profkit-common's shape.
///
/// * header: `version`, `total_size`, `elf_mach`, `elf_mach_name` (`EM_X86_64`, or null),
///   `pad1`, `pid`, `timestamp`, `flags`, in the spec's order;
/// * kinds: every record kind the spec and the extension records define (zero counts
///   included), then unknown ids in numeric order;
/// * threads: `(pid, tid)` of LOAD and MOVE records, with their record counts;
/// * time: smallest and largest record timestamp (with ARCH_TIMESTAMP the timestamps are
///   ticks, so `duration_ns` is 0 and the detail `clock` says so);
/// * details: `pids`, `code_bytes` (declared), `code_bytes_stored`, `loads_without_code`,
///   `reused_addresses`, `loads_at_reused_address`, `debug_entries`, then `clock` (only with
///   ARCH_TIMESTAMP) and `stopped_at` (only when a corrupt record stopped the scan);
/// * problems: records that do not parse, plus the corrupt record that stopped the scan;
///   `first_problem` is the first of them in file order.
pub fn summary(dump: &JitDump<'_>) -> Summary {
    summary_of(&mut dump.source())
}

/// [`summary`] of a dump in memory or of a stream.
pub fn summary_of(records: &mut dyn RecordSource) -> Summary {
    let s = Scan::of_source(records);
    let h = records.header();
    let mut kinds: Vec<(String, u64)> = RecordType::KNOWN
        .iter()
        .map(|&t| (t.to_string(), s.count(t)))
        .collect();
    kinds.extend(
        s.records
            .iter()
            .filter(|(t, _)| !t.is_known())
            .map(|(t, &n)| (t.to_string(), n)),
    );
    let arch_ticks = h.flags & FLAG_ARCH_TIMESTAMP != 0;
    let time = match (s.first_timestamp, s.last_timestamp) {
        (Some(first), Some(last)) => Some(TimeSpan {
            first,
            last,
            duration_ns: if arch_ticks {
                0
            } else {
                last.saturating_sub(first)
            },
        }),
        _ => None,
    };
    let mut details: Vec<(&'static str, Value)> = vec![
        (
            "pids",
            Value::List(s.pids.iter().map(|&p| Value::from(p)).collect()),
        ),
        ("code_bytes", s.code_bytes.into()),
        ("code_bytes_stored", s.code_bytes_stored.into()),
        ("loads_without_code", s.loads_without_code.into()),
        ("reused_addresses", s.reused_addresses.into()),
        ("loads_at_reused_address", s.loads_at_reused_address.into()),
        ("debug_entries", s.debug_entries.into()),
    ];
    if arch_ticks {
        details.push(("clock", "architecture ticks (ARCH_TIMESTAMP)".into()));
    }
    if let Some(e) = &s.error {
        details.push(("stopped_at", e.to_string().into()));
    }
    let first_problem = match (&s.first_malformed, &s.error) {
        (Some(m), Some(e)) if e.offset < m.offset => Some(e),
        (Some(m), _) => Some(m),
        (None, e) => e.as_ref(),
    };
    Summary {
        format: "jitdump",
        kind: format!("jitdump version {}, {}-endian", h.version, h.endian.name()),
        header: vec![
            ("version", h.version.into()),
            ("total_size", h.total_size.into()),
            ("elf_mach", h.elf_mach.into()),
            ("elf_mach_name", elf_machine_name(h.elf_mach).into()),
            ("pad1", Value::Hex(u64::from(h.pad1))),
            ("pid", h.pid.into()),
            ("timestamp", h.timestamp.into()),
            ("flags", Value::Hex(h.flags)),
        ],
        records: s.total_records(),
        kinds,
        threads: s
            .thread_records
            .iter()
            .map(|&(pid, tid, records)| ThreadSummary {
                pid: Some(pid),
                tid: u64::from(tid),
                name: None,
                records,
            })
            .collect(),
        time,
        details,
        problems: s.malformed_records + u64::from(s.error.is_some()),
        first_problem: first_problem.map(Error::to_string),
        truncation: s.truncation,
    }
}
