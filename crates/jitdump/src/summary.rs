//! [`Summary`]: one pass over a dump collecting what `profkit info` shows.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::{Error, Truncation};
use crate::raw::RecordType;
use crate::read::{JitDump, Record};

/// Counts and ranges of a whole dump.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records per id.
    pub records: BTreeMap<RecordType, u64>,
    /// Process ids seen in LOAD and MOVE records.
    pub pids: BTreeSet<u32>,
    /// Distinct thread ids seen in LOAD and MOVE records.
    pub threads: usize,
    /// Smallest and largest record timestamp.
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
    /// Where the file is cut, if it is.
    pub truncation: Option<Truncation>,
    /// The corrupt record that stopped the scan, if any.
    pub error: Option<Error>,
}

impl Summary {
    /// Scans every record of `dump`.
    pub fn scan(dump: &JitDump<'_>) -> Summary {
        let mut s = Summary::default();
        let mut threads = BTreeSet::new();
        let mut addr_uses: HashMap<u64, u32> = HashMap::new();
        let mut records = dump.records();
        for raw in &mut records {
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
            match raw.parse() {
                Ok(Record::CodeLoad(load)) => {
                    s.pids.insert(load.pid);
                    threads.insert(load.tid);
                    s.code_bytes = s.code_bytes.saturating_add(load.code_size);
                    match load.code {
                        Some(code) => s.code_bytes_stored += code.len() as u64,
                        None => s.loads_without_code += 1,
                    }
                    let uses = addr_uses.entry(load.code_addr).or_insert(0);
                    *uses += 1;
                    if *uses == 2 {
                        s.reused_addresses += 1;
                    }
                    if *uses >= 2 {
                        s.loads_at_reused_address += 1;
                    }
                }
                Ok(Record::CodeMove(m)) => {
                    s.pids.insert(m.pid);
                    threads.insert(m.tid);
                }
                Ok(Record::DebugInfo(d)) => s.debug_entries += d.nr_entry,
                Ok(_) => {}
                Err(_) => s.malformed_records += 1,
            }
        }
        s.threads = threads.len();
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
