//! What `profkit info` shows of a profiling-mode file: [`summary`].

use std::collections::{BTreeMap, HashMap, HashSet};

use profkit_common::{Summary, ThreadSummary, Value};

use crate::profile::{Profile, ProfileEntry};
use crate::raw::Endian;

/// What `profkit info` shows of `profile`: the header; records (call paths) and blocks;
/// threads (their records; a thread with several blocks once); no time span (the file has no
/// event times, only per-path totals in TSC ticks); details: `mode` `profiling`, `blocks`,
/// `calls` (returned calls over all paths), `functions` (distinct function ids), `max_depth`
/// (the longest path), `time_unit` and, for `-fxray-shared` programs, the instrumented
/// `objects` that have calls; undecodable parts; the cut of a truncated file.
pub fn summary(profile: &Profile<'_>) -> Summary {
    let h = profile.header;
    let mut s = Summary {
        format: "xray-profile",
        kind: format!(
            "LLVM XRay profiling mode version {:#x}, {}-endian",
            h.version,
            match h.endian {
                Endian::Little => "little",
                Endian::Big => "big",
            }
        ),
        header: vec![
            ("magic", Value::Hex(super::PROFILE_MAGIC)),
            ("version", Value::Hex(h.version)),
            ("timestamp_ns", h.timestamp_ns.into()),
            ("pid", h.pid.into()),
        ],
        ..Summary::default()
    };
    let pid = u32::try_from(h.pid).ok();
    let mut calls = 0u64;
    let mut functions: HashSet<u32> = HashSet::new();
    let mut objects: BTreeMap<u8, u64> = BTreeMap::new();
    let mut max_depth = 0usize;
    let mut problems = Vec::new();
    // The thread of the block being read (an index into `s.threads`).
    let mut current = 0usize;
    let mut thread_index: HashMap<u64, usize> = HashMap::new();
    let mut it = profile.entries();
    for entry in it.by_ref() {
        match entry {
            ProfileEntry::Block(b) => {
                let threads = &mut s.threads;
                current = *thread_index.entry(b.tid).or_insert_with(|| {
                    threads.push(ThreadSummary {
                        pid,
                        tid: b.tid,
                        name: None,
                        records: 0,
                    });
                    threads.len() - 1
                });
            }
            ProfileEntry::Record(r) => {
                s.records += 1;
                s.count_kind("call path");
                calls = calls.saturating_add(r.call_count);
                max_depth = max_depth.max(r.path.len());
                for id in r.path.leaf_first() {
                    functions.insert(id);
                }
                if let Some(leaf) = r.path.leaf() {
                    *objects.entry((leaf >> 24) as u8).or_insert(0) += r.call_count;
                }
                if let Some(t) = s.threads.get_mut(current) {
                    t.records += 1;
                }
            }
            ProfileEntry::Problem(e) => problems.push(e),
        }
    }
    s.details = vec![
        ("mode", "profiling".into()),
        ("blocks", it.blocks().into()),
        ("calls", calls.into()),
        ("functions", functions.len().into()),
        ("max_depth", max_depth.into()),
        (
            "time_unit",
            "TSC ticks (inclusive per path; the file records no frequency)".into(),
        ),
    ];
    if objects.keys().any(|&o| o != 0) {
        let list: Vec<String> = objects
            .iter()
            .map(|(o, n)| format!("{o} ({n} calls)"))
            .collect();
        s.details.push(("objects", list.join(", ").into()));
    }
    s.problems = problems.len() as u64;
    s.first_problem = problems.first().map(|p| p.to_string());
    s.truncation = it.truncation().cloned();
    s
}
