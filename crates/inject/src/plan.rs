//! When to map which part of which ELF: the MMAP2 records to inject.
//!
//! perf report resolves an address through the most recent mapping that covers it, so
//! `perf inject --jit` maps each function at its load time. Here a whole run is mapped at the
//! load time of its first function (later functions of the run are then already mapped) —
//! unless that would cover code of another run that is still live (address reuse, moved
//! code): then only the part of the run around the loading function that hides nothing live
//! is mapped, and the rest of the run follows when its functions load. So at every sample time
//! each address resolves to the function live there, as after `perf inject`, with about one
//! MMAP2 per run instead of one per function.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::layout::{Layout, Span};

/// An MMAP2 to inject: `[start, start + len)` of ELF `elf` at file offset `pgoff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// When (the load time of the function that needs it).
    pub time: u64,
    /// The loading thread.
    pub tid: u32,
    /// Index into [`Layout::elfs`].
    pub elf: usize,
    /// Run-time start.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// File offset of `start` in the ELF.
    pub pgoff: u64,
}

/// The mappings that make every function of `regions` resolve through its ELF while it is
/// live. `run_offsets[elf][run]` is the file offset of each run.
pub fn plan(regions: &[Span], layout: &Layout, run_offsets: &[Vec<u64>]) -> Vec<Mapping> {
    let key = |i: usize| layout.placement.get(i).copied().flatten();
    let mut order: Vec<usize> = (0..regions.len()).filter(|&i| key(i).is_some()).collect();
    order.sort_by_key(|&i| regions.get(i).map(|r| (r.load_time, r.order)));

    // Live regions by start (live regions never overlap), and when they end.
    let mut live: BTreeMap<u64, usize> = BTreeMap::new();
    let mut ends: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    // What our mappings so far map: start -> (end, (elf, run)).
    let mut mapped: BTreeMap<u64, (u64, (usize, usize))> = BTreeMap::new();
    let mut out = Vec::new();

    for i in order {
        let (Some(r), Some(k)) = (regions.get(i), key(i)) else {
            continue;
        };
        let t = r.load_time;
        while let Some(&Reverse((end, j))) = ends.peek() {
            if end > t {
                break;
            }
            ends.pop();
            if let Some(rj) = regions.get(j) {
                if live.get(&rj.start) == Some(&j) {
                    live.remove(&rj.start);
                }
            }
        }
        // Whatever this load overlaps ends now (the code map ended it at this time).
        let (s, e) = (r.start, r.end());
        let overlapped: Vec<u64> = intersecting(&live, regions, s, e)
            .into_iter()
            .map(|(start, _)| start)
            .collect();
        for start in overlapped {
            live.remove(&start);
        }

        if !covered(&mapped, s, e, k) {
            let (elf, run) = k;
            let Some(run_range) = layout.elfs.get(elf).and_then(|l| l.runs.get(run)) else {
                continue;
            };
            let Some(&run_off) = run_offsets.get(elf).and_then(|o| o.get(run)) else {
                continue;
            };
            // The run, shrunk so that it hides no live code of another run.
            let (mut a, mut b) = (run_range.start, run_range.end);
            for (_, j) in intersecting(&live, regions, a, b) {
                if key(j) == Some(k) {
                    continue;
                }
                let Some(w) = regions.get(j) else { continue };
                if w.end() <= s {
                    a = a.max(w.end());
                } else if w.start >= e {
                    b = b.min(w.start);
                }
            }
            out.push(Mapping {
                time: t,
                tid: r.tid,
                elf,
                start: a,
                len: b - a,
                pgoff: run_off + (a - run_range.start),
            });
            set(&mut mapped, a, b, k);
        }
        live.insert(s, i);
        if let Some(end) = r.end_time {
            ends.push(Reverse((end, i)));
        }
    }
    out
}

/// Live regions intersecting `[a, b)`: `(start, region)`.
fn intersecting(
    live: &BTreeMap<u64, usize>,
    regions: &[Span],
    a: u64,
    b: u64,
) -> Vec<(u64, usize)> {
    let mut v = Vec::new();
    if let Some((&start, &j)) = live.range(..a).next_back() {
        if regions.get(j).is_some_and(|r| r.end() > a) {
            v.push((start, j));
        }
    }
    v.extend(live.range(a..b).map(|(&s, &j)| (s, j)));
    v
}

/// Whether `mapped` maps all of `[a, b)` with key `k`.
fn covered(
    mapped: &BTreeMap<u64, (u64, (usize, usize))>,
    a: u64,
    b: u64,
    k: (usize, usize),
) -> bool {
    let mut at = a;
    // The interval containing `a`, then the following ones.
    let first = mapped.range(..=a).next_back();
    let rest = mapped.range(a.saturating_add(1)..b);
    for (&s, &(e, key)) in first.into_iter().chain(rest) {
        if e <= at {
            continue;
        }
        if s > at || key != k {
            return false;
        }
        at = e;
        if at >= b {
            return true;
        }
    }
    at >= b
}

/// Records that `[a, b)` is now mapped with key `k` (cutting what it overlaps).
fn set(mapped: &mut BTreeMap<u64, (u64, (usize, usize))>, a: u64, b: u64, k: (usize, usize)) {
    if a >= b {
        return;
    }
    let mut cut: Vec<u64> = Vec::new();
    if let Some((&s, _)) = mapped.range(..a).next_back() {
        cut.push(s);
    }
    cut.extend(mapped.range(a..b).map(|(&s, _)| s));
    for s in cut {
        let Some((e, key)) = mapped.remove(&s) else {
            continue;
        };
        if e <= a {
            mapped.insert(s, (e, key));
            continue;
        }
        if s < a {
            mapped.insert(s, (a, key));
        }
        if e > b {
            mapped.insert(b, (e, key));
        }
    }
    mapped.insert(a, (b, k));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::layout;

    fn region(start: u64, size: u64, t: u64, end: Option<u64>) -> Span {
        Span {
            start,
            size,
            load_time: t,
            end_time: end,
            order: t as usize,
            tid: 7,
        }
    }

    /// The function each address resolves to at time `t` through `maps` (the latest mapping
    /// at or before `t` that covers it), as perf does.
    fn resolve(
        maps: &[Mapping],
        l: &Layout,
        offs: &[Vec<u64>],
        regions: &[Span],
        addr: u64,
        t: u64,
    ) -> Option<usize> {
        let m = maps
            .iter()
            .rfind(|m| m.time <= t && m.start <= addr && addr < m.start + m.len)?;
        let file_off = m.pgoff + (addr - m.start);
        (0..regions.len()).find(|&i| {
            let Some((elf, run)) = l.placement[i] else {
                return false;
            };
            let run_r = &l.elfs[elf].runs[run];
            let f_off = offs[elf][run] + (regions[i].start - run_r.start);
            elf == m.elf && f_off <= file_off && file_off < f_off + regions[i].size
        })
    }

    #[test]
    fn every_live_address_resolves_to_its_function() {
        // A run of three functions; the middle one's range is reused at t=5 by new code
        // (layer 1) while its neighbours stay live; at t=9 the neighbour on the right is
        // replaced too; t=12 brings a late function into a gap of the first run.
        let regions = vec![
            region(0x1000, 0x100, 1, None),
            region(0x1100, 0x100, 1, Some(5)),
            region(0x1200, 0x100, 2, Some(9)),
            region(0x1100, 0x80, 5, None),
            region(0x1200, 0x100, 9, None),
            region(0x1380, 0x20, 12, None),
        ];
        let l = layout(&regions, &[]);
        let offs: Vec<Vec<u64>> = l
            .elfs
            .iter()
            .map(|e| (0..e.runs.len() as u64).map(|k| 0x1000 * (k + 1)).collect())
            .collect();
        let maps = plan(&regions, &l, &offs);
        for t in 0..15 {
            for addr in (0x1000..0x1400).step_by(8) {
                let want = (0..regions.len()).rev().find(|&i| {
                    let r = &regions[i];
                    r.live_at(t) && r.start <= addr && addr < r.end()
                });
                let got = resolve(&maps, &l, &offs, &regions, addr, t);
                if want.is_some() {
                    assert_eq!(got, want, "addr {addr:#x} at {t}: {maps:?}");
                }
            }
        }
        // Fewer mappings than functions.
        assert!(maps.len() < regions.len(), "{maps:?}");
    }

    #[test]
    fn interval_bookkeeping() {
        let mut m = BTreeMap::new();
        set(&mut m, 10, 20, (0, 0));
        assert!(covered(&m, 10, 20, (0, 0)));
        assert!(covered(&m, 12, 15, (0, 0)));
        assert!(!covered(&m, 5, 15, (0, 0)));
        set(&mut m, 14, 16, (1, 0));
        assert!(!covered(&m, 10, 20, (0, 0)));
        assert!(covered(&m, 10, 14, (0, 0)));
        assert!(covered(&m, 16, 20, (0, 0)));
        assert!(covered(&m, 14, 16, (1, 0)));
        set(&mut m, 0, 30, (2, 0));
        assert_eq!(m.len(), 1);
    }
}
