//! What `profkit info` shows of a trace: [`summary`].

use std::collections::HashMap;
use std::ops::ControlFlow;

use profkit_common::{Summary, ThreadSummary, TimeSpan, Value};

use crate::error::Error;
use crate::raw::{Endian, TraceType};
use crate::read::events::{BufRun, BufferItem, EventKind, ThreadKey, ThreadState, Trace};
use crate::read::fdr::{Segment, SkipKind};

/// Counts of one FDR buffer (or of a whole basic trace).
#[derive(Debug, Default)]
struct Counts {
    /// Events per thread, in order of first appearance.
    threads: Vec<(ThreadKey, u64)>,
    /// Each thread's place in `threads`.
    thread_index: HashMap<ThreadKey, usize>,
    /// Events per kind, indexed by `kind as usize`.
    kinds: [u64; 6],
    /// Kinds in order of first appearance.
    kind_order: Vec<EventKind>,
    /// Smallest and largest TSC.
    tsc: Option<(u64, u64)>,
    /// Function events per instrumented object (`-fxray-shared`: the id's top 8 bits; 0 is the
    /// executable).
    objects: std::collections::BTreeMap<u8, u64>,
    problems: Vec<Error>,
}

impl Counts {
    #[inline]
    fn event(&mut self, key: ThreadKey, kind: EventKind, tsc: u64, func_id: u32) {
        if func_id != 0 {
            *self.objects.entry((func_id >> 24) as u8).or_insert(0) += 1;
        }
        match self.threads.last_mut() {
            Some((k, n)) if *k == key => *n += 1,
            _ => self.add_events(key, 1),
        }
        if let Some(n) = self.kinds.get_mut(kind as usize) {
            if *n == 0 {
                self.kind_order.push(kind);
            }
            *n += 1;
        }
        self.tsc = Some(match self.tsc {
            Some((lo, hi)) => (lo.min(tsc), hi.max(tsc)),
            None => (tsc, tsc),
        });
    }

    /// Adds `n` events of thread `key` (a new thread goes last).
    fn add_events(&mut self, key: ThreadKey, n: u64) {
        let threads = &mut self.threads;
        let i = *self.thread_index.entry(key).or_insert_with(|| {
            threads.push((key, 0));
            threads.len() - 1
        });
        if let Some((_, m)) = self.threads.get_mut(i) {
            *m += n;
        }
    }

    /// Adds `other` (which comes after `self` in the file).
    fn merge(&mut self, other: Counts) {
        for (key, n) in other.threads {
            self.add_events(key, n);
        }
        for k in other.kind_order {
            let i = k as usize;
            if self.kinds.get(i) == Some(&0) {
                self.kind_order.push(k);
            }
            if let (Some(a), Some(b)) = (self.kinds.get_mut(i), other.kinds.get(i)) {
                *a += b;
            }
        }
        if let Some((lo, hi)) = other.tsc {
            self.tsc = Some(match self.tsc {
                Some((a, b)) => (a.min(lo), b.max(hi)),
                None => (lo, hi),
            });
        }
        for (object, n) in other.objects {
            *self.objects.entry(object).or_insert(0) += n;
        }
        self.problems.extend(other.problems);
    }
}

/// Counts the events of FDR buffer `i` decoded from `state`, without building them.
fn count_buffer(trace: &Trace<'_>, i: usize, state: ThreadState) -> BufRun<Counts> {
    let mut it = trace.buffer_events(i, state);
    let mut c = Counts::default();
    let mut first_tid = None;
    loop {
        let item = it.visit_calls(&mut |call| {
            first_tid.get_or_insert(call.tid);
            let key = ThreadKey {
                pid: call.pid,
                tid: call.tid,
            };
            c.event(key, call.kind, call.tsc, call.func_id);
            ControlFlow::Continue(())
        });
        match item {
            None => break,
            Some(BufferItem::Call(call)) => {
                first_tid.get_or_insert(call.tid);
                let key = ThreadKey {
                    pid: call.pid,
                    tid: call.tid,
                };
                c.event(key, call.kind, call.tsc, call.func_id);
            }
            Some(BufferItem::Event(ev)) => {
                first_tid.get_or_insert(ev.tid);
                let key = ThreadKey {
                    pid: ev.pid,
                    tid: ev.tid,
                };
                c.event(key, ev.kind, ev.tsc, ev.func_id);
            }
            Some(BufferItem::Problem(e)) => c.problems.push(e),
        }
    }
    BufRun::finish(c, &it, state, first_tid)
}

/// What `profkit info` shows of `trace`: mode, version and byte order; the header fields;
/// records (FDR: BufferExtents included) and events per kind (llvm-xray's kind names);
/// threads (pid when known, tid, events); the first and last TSC and the time between them;
/// details (`mode`, FDR `buffers` and `junk_bytes`); undecodable records; the cut of a
/// truncated file.
///
/// FDR buffers are counted in parallel without materialising their events, with the same
/// stitching rules as [`Trace::decode`], so the numbers are the same as a decode's.
pub fn summary(trace: &Trace<'_>) -> Summary {
    let h = trace.header;
    let fdr = h.trace_type == TraceType::FDR;
    let mut counts = Counts::default();
    let mut records = 0u64;
    let truncation;
    if fdr {
        let runs = trace.run_buffers(true, &|i, st| count_buffer(trace, i, st));
        for (bi, r) in runs.into_iter().enumerate() {
            let extents = trace
                .layout()
                .buffers
                .get(bi)
                .is_some_and(|b| b.extents_offset.is_some());
            records += u64::from(extents);
            let mut c = r.out;
            for p in &mut c.problems {
                p.record = p.record.map(|i| records + i);
            }
            records += r.records;
            counts.merge(c);
        }
        truncation = trace.truncation().cloned().map(|mut t| {
            t.record = Some(records);
            t
        });
    } else {
        // Counted per thread as the events stream by, then merged thread after thread: the
        // numbers and first-appearance orders of a decode's `events()`, without keeping them.
        let mut per_thread: Vec<(ThreadKey, Counts)> = Vec::new();
        let mut index: HashMap<ThreadKey, usize> = HashMap::new();
        let mut problems = Vec::new();
        let mut last = 0usize;
        let (n, cut) = trace.visit_basic(&mut problems, &mut |ev| {
            let key = ThreadKey {
                pid: ev.pid,
                tid: ev.tid,
            };
            if per_thread.get(last).is_none_or(|(k, _)| *k != key) {
                last = *index.entry(key).or_insert_with(|| {
                    per_thread.push((key, Counts::default()));
                    per_thread.len() - 1
                });
            }
            if let Some((_, c)) = per_thread.get_mut(last) {
                c.event(key, ev.kind, ev.tsc, ev.func_id);
            }
        });
        for (_, c) in per_thread {
            counts.merge(c);
        }
        counts.problems = problems;
        records = n;
        truncation = cut;
    }
    let mut details = vec![("mode", Value::from(if fdr { "fdr" } else { "basic" }))];
    // Shared objects (ids past 2^24): which objects' functions the trace has events of, for
    // `-m` (the executable first, then each object in registration order, or `-m ID=PATH`).
    if counts.objects.keys().any(|&o| o != 0) {
        let list: Vec<String> = counts
            .objects
            .iter()
            .map(|(o, n)| format!("{o} ({n} events)"))
            .collect();
        details.push(("objects", list.join(", ").into()));
    }
    if fdr {
        details.push(("buffers", trace.layout().buffers.len().into()));
        let junk: u64 = trace
            .layout()
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Skip(s) if s.kind == SkipKind::Junk => Some(s.len),
                _ => None,
            })
            .sum();
        if junk > 0 {
            details.push(("junk_bytes", junk.into()));
        }
    }
    Summary {
        format: "xray",
        kind: format!(
            "LLVM XRay {} mode version {}, {}-endian",
            if fdr { "FDR" } else { "basic" },
            h.version,
            match h.endian {
                Endian::Little => "little",
                Endian::Big => "big",
            }
        ),
        header: vec![
            ("version", h.version.into()),
            ("type", h.trace_type.0.into()),
            ("constant_tsc", h.constant_tsc().into()),
            ("nonstop_tsc", h.nonstop_tsc().into()),
            ("cycle_frequency", h.cycle_frequency.into()),
            ("buffer_size", h.buffer_size.into()),
        ],
        records,
        kinds: counts
            .kind_order
            .iter()
            .filter_map(|&k| {
                let n = counts.kinds.get(k as usize).copied()?;
                Some((k.llvm_name().to_string(), n))
            })
            .collect(),
        threads: counts
            .threads
            .iter()
            .map(|(k, n)| ThreadSummary {
                pid: (k.pid != 0).then_some(k.pid),
                tid: u64::from(k.tid),
                name: None,
                records: *n,
            })
            .collect(),
        time: counts.tsc.map(|(first, last)| TimeSpan {
            first,
            last,
            duration_ns: h.ticks_to_ns(last - first),
        }),
        details,
        problems: counts.problems.len() as u64,
        first_problem: counts.problems.first().map(|p| p.to_string()),
        truncation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_indices_fit_the_counts() {
        let kinds = [
            EventKind::Enter,
            EventKind::Exit,
            EventKind::TailExit,
            EventKind::EnterArg,
            EventKind::CustomEvent,
            EventKind::TypedEvent,
        ];
        assert_eq!(kinds.len(), Counts::default().kinds.len());
        for (i, k) in kinds.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
