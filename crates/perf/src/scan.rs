//! One pass over a recording's events collecting what `info` and `validate` report.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use crate::error::{Error, Truncation};
use crate::jit::{JitScan, ProcessJit};
use crate::raw::RecordType;
use crate::read::{EventData, Events, FrameLog};

/// Counts and facts of a whole recording.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Events delivered.
    pub events: u64,
    /// Events per type (delivered).
    pub kinds: BTreeMap<RecordType, u64>,
    /// Samples per attr.
    pub samples_per_attr: BTreeMap<usize, u64>,
    /// Samples without a time.
    pub samples_without_time: u64,
    /// `(pid, tid)` → samples, in order of first appearance.
    pub threads: Vec<(i32, i32, u64)>,
    /// Thread names from COMM records (last one wins).
    pub names: HashMap<i32, String>,
    /// Smallest non-zero event time.
    pub first_time: Option<u64>,
    /// Largest event time.
    pub last_time: Option<u64>,
    /// LOST records and the events they lost.
    pub lost_records: u64,
    /// Events lost (sum of LOST counts).
    pub lost: u64,
    /// Samples lost (sum of LOST_SAMPLES counts).
    pub lost_samples: u64,
    /// The first LOST record: `(index, count)`.
    pub first_lost: Option<(u64, u64)>,
    /// Samples with a user stack copy.
    pub stack_samples: u64,
    /// Of those, how many filled the copy (`dyn_size` == copy size: the stack was cut off).
    pub stack_full: u64,
    /// Callchain frames (kernel, user) over all samples.
    pub kernel_frames: u64,
    /// User frames over all samples.
    pub user_frames: u64,
    /// Records whose body does not decode: `(index, message)` for the first 100, and the count.
    pub malformed: Vec<(u64, String)>,
    /// How many records did not decode.
    pub malformed_count: u64,
    /// Unknown record types: `(type, first index, count)`.
    pub unknown: BTreeMap<u32, (u64, u64)>,
    /// JIT facts.
    pub jit: JitScan,
    /// MMAP/MMAP2 records of user processes.
    pub user_mmaps: u64,
    /// Framing: outer records by type (FINISHED_ROUND, COMPRESSED … included).
    pub frames: FrameLog,
    /// Where the input is cut.
    pub truncation: Option<Truncation>,
    /// What stopped the walk.
    pub error: Option<Error>,
}

impl Scan {
    /// Walks every event of `events`.
    pub fn of<S: Read>(mut events: Events<S>) -> Scan {
        let mut s = Scan::default();
        let mut thread_index: HashMap<(i32, i32), usize> = HashMap::new();
        while let Some(ev) = events.next_event() {
            let ev = match ev {
                Ok(ev) => ev,
                Err(_) => break,
            };
            s.events += 1;
            *s.kinds.entry(ev.record_type).or_insert(0) += 1;
            // perf synthesizes the records of processes that existed before the recording
            // with time 0; they are not part of the span.
            if let Some(t) = ev.time.filter(|&t| t > 0) {
                s.first_time = Some(s.first_time.map_or(t, |f| f.min(t)));
                s.last_time = Some(s.last_time.map_or(t, |l| l.max(t)));
            }
            if !ev.record_type.is_known() {
                let e = s.unknown.entry(ev.record_type.0).or_insert((ev.index, 0));
                e.1 += 1;
            }
            s.jit.observe(&ev);
            match &ev.data {
                EventData::Sample(smp) => {
                    *s.samples_per_attr.entry(smp.attr_index).or_insert(0) += 1;
                    if smp.time.is_none() {
                        s.samples_without_time += 1;
                    }
                    if let (Some(pid), Some(tid)) = (smp.pid, smp.tid) {
                        let next = s.threads.len();
                        let i = *thread_index.entry((pid, tid)).or_insert(next);
                        match s.threads.get_mut(i) {
                            Some(t) => t.2 += 1,
                            None => s.threads.push((pid, tid, 1)),
                        }
                    }
                    if let Some(st) = &smp.user_stack {
                        s.stack_samples += 1;
                        if !st.bytes.is_empty() && st.dyn_size >= st.bytes.len() as u64 {
                            s.stack_full += 1;
                        }
                    }
                    if let Some(c) = &smp.callchain {
                        for f in c.frames() {
                            if f.context.is_kernel() {
                                s.kernel_frames += 1;
                            } else {
                                s.user_frames += 1;
                            }
                        }
                    }
                }
                EventData::Comm(c) => {
                    s.names
                        .insert(c.tid, String::from_utf8_lossy(c.name).into_owned());
                }
                EventData::Mmap(m) if !m.is_kernel() => s.user_mmaps += 1,
                EventData::Lost(l) => {
                    if l.samples {
                        s.lost_samples = s.lost_samples.saturating_add(l.count);
                    } else {
                        s.lost_records += 1;
                        s.lost = s.lost.saturating_add(l.count);
                    }
                    s.first_lost.get_or_insert((ev.index, l.count));
                }
                EventData::Malformed(m) => {
                    s.malformed_count += 1;
                    if s.malformed.len() < 100 {
                        s.malformed.push((ev.index, m.clone()));
                    }
                }
                _ => {}
            }
        }
        s.frames = events.frames();
        s.truncation = events.truncation();
        s.error = events.error().cloned();
        s
    }

    /// Samples in all.
    pub fn samples(&self) -> u64 {
        self.kinds.get(&RecordType::SAMPLE).copied().unwrap_or(0)
    }

    /// Processes with JIT code or a jitdump marker.
    pub fn jit_processes(&self) -> Vec<ProcessJit> {
        self.jit.processes()
    }
}
