//! Which ELF and which run of it each JIT function goes to.
//!
//! * **Layers**: a function goes to the lowest layer where it overlaps no function already
//!   there (in load order), so a layer never holds two functions at the same address. Only
//!   code that reuses the addresses of earlier code needs a second layer (V8 frees and reuses
//!   code space); one ELF per layer keeps every symbol, line table and unwind table of an ELF
//!   unambiguous.
//! * **Clusters**: a layer is split where its functions span more than [`CLUSTER_SPAN`] of
//!   address space, so the `.eh_frame_hdr` table's 32-bit offsets reach all of an ELF's code
//!   (V8's embedded builtins live in the node binary, gigabytes below its JIT code space).
//! * **Runs**: an ELF's functions, by address, are cut into runs of functions at most
//!   [`GAP_MAX`] bytes apart that lie in one recorded mapping. A run is one contiguous file
//!   range (the gaps zero-filled), one `PT_LOAD` and, usually, one MMAP2.
//!
//! ELF = (process, layer, cluster). A pathological dump that reuses one address more than
//! [`LAYER_MAX`] times gets no more layers: the last one then takes overlapping functions too
//! ([`ElfLayout::overlapping`]), which [`crate::inject`] writes without unwind tables.

use std::collections::BTreeMap;
use std::ops::Range;

use profkit_jit::codemap::Region;

/// Functions further apart than this start a new run.
pub const GAP_MAX: u64 = 4096;
/// The most address space one ELF's functions may span.
pub const CLUSTER_SPAN: u64 = 1 << 30;
/// The most layers (ELFs per address range) a process gets.
pub const LAYER_MAX: usize = 64;

/// What the layout and the MMAP2 plan need of a code-map region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start address.
    pub start: u64,
    /// Size in bytes (0: not placed).
    pub size: u64,
    /// Load time.
    pub load_time: u64,
    /// When it stopped being live (`None`: never).
    pub end_time: Option<u64>,
    /// Order among loads at the same time (the record index).
    pub order: usize,
    /// The loading thread.
    pub tid: u32,
}

impl Span {
    /// The span of `r` with size `size`.
    pub fn of(r: &Region, size: u64) -> Span {
        Span {
            start: r.start,
            size,
            load_time: r.load_time,
            end_time: r.end_time,
            order: r.record,
            tid: r.tid,
        }
    }

    /// One past the last address.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }

    /// Whether it is live at `t`.
    pub fn live_at(&self, t: u64) -> bool {
        self.load_time <= t && self.end_time.is_none_or(|e| t < e)
    }
}

/// A run: functions close together, one file range, one `PT_LOAD`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// First address (the first function's start).
    pub start: u64,
    /// One past the last address (the last function's end).
    pub end: u64,
    /// Its functions: a range of [`ElfLayout::funcs`].
    pub funcs: Range<usize>,
}

impl Run {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether it covers no bytes.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// The functions of one ELF.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElfLayout {
    /// Its layer (0: code at addresses not used before).
    pub layer: usize,
    /// Whether its functions may overlap (the last layer of a dump with more than
    /// [`LAYER_MAX`] of them).
    pub overlapping: bool,
    /// Region indices (into the code map), by address.
    pub funcs: Vec<usize>,
    /// Its runs, by address.
    pub runs: Vec<Run>,
}

/// Where every function goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// The ELFs, by layer then address.
    pub elfs: Vec<ElfLayout>,
    /// For each region of the code map: `(elf, run)`, or `None` (an empty region).
    pub placement: Vec<Option<(usize, usize)>>,
}

/// Lays out `regions` (a code map's, in load order). `boundaries` are the start and end
/// addresses of the process's recorded mappings, sorted: a run never spans one.
pub fn layout(regions: &[Span], boundaries: &[u64]) -> Layout {
    // Layers, in load order.
    let mut order: Vec<usize> = (0..regions.len()).collect();
    order.sort_by_key(|&i| regions.get(i).map(|r| (r.load_time, r.order)));
    let mut layers: Vec<BTreeMap<u64, u64>> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for &i in &order {
        let Some(r) = regions.get(i) else { continue };
        if r.size == 0 {
            continue;
        }
        let (s, e) = (r.start, r.end());
        let free = |l: &BTreeMap<u64, u64>| {
            l.range(..e)
                .next_back()
                .is_none_or(|(_, &prev_end)| prev_end <= s)
        };
        let k = match layers.iter().position(free) {
            Some(k) => k,
            None if layers.len() < LAYER_MAX => {
                layers.push(BTreeMap::new());
                members.push(Vec::new());
                layers.len() - 1
            }
            None => {
                // Past the cap: the last layer takes it, overlapping or not.
                if let Some(m) = members.last_mut() {
                    m.push(i);
                }
                continue;
            }
        };
        if let (Some(l), Some(m)) = (layers.get_mut(k), members.get_mut(k)) {
            l.insert(s, e);
            m.push(i);
        }
    }

    let mut out = Layout {
        elfs: Vec::new(),
        placement: vec![None; regions.len()],
    };
    let full = members.len() == LAYER_MAX;
    let last = members.len().saturating_sub(1);
    for (layer, mut funcs) in members.into_iter().enumerate() {
        let overlapping = full && layer == last;
        funcs.sort_by_key(|&i| regions.get(i).map_or(0, |r| r.start));
        // Clusters of at most CLUSTER_SPAN.
        let mut cluster: Vec<usize> = Vec::new();
        let mut first = 0u64;
        for i in funcs {
            let start = regions.get(i).map_or(0, |r| r.start);
            if !cluster.is_empty() && start.saturating_sub(first) > CLUSTER_SPAN {
                push_elf(
                    &mut out,
                    (layer, overlapping),
                    std::mem::take(&mut cluster),
                    regions,
                    boundaries,
                );
            }
            if cluster.is_empty() {
                first = start;
            }
            cluster.push(i);
        }
        if !cluster.is_empty() {
            push_elf(&mut out, (layer, overlapping), cluster, regions, boundaries);
        }
    }
    out
}

/// Cuts the functions of one ELF (by address) into runs and records their placement.
fn push_elf(
    out: &mut Layout,
    (layer, overlapping): (usize, bool),
    funcs: Vec<usize>,
    regions: &[Span],
    boundaries: &[u64],
) {
    let elf = out.elfs.len();
    let mut runs: Vec<Run> = Vec::new();
    for (k, &i) in funcs.iter().enumerate() {
        let Some(r) = regions.get(i) else { continue };
        let (s, e) = (r.start, r.end());
        let joins = runs.last().is_some_and(|run| {
            s >= run.end && s - run.end <= GAP_MAX && !crosses(boundaries, run.end, s)
        });
        match runs.last_mut() {
            Some(run) if joins => {
                run.end = run.end.max(e);
                run.funcs.end = k + 1;
            }
            _ => runs.push(Run {
                start: s,
                end: e,
                funcs: k..k + 1,
            }),
        }
        if let Some(p) = out.placement.get_mut(i) {
            *p = Some((elf, runs.len() - 1));
        }
    }
    out.elfs.push(ElfLayout {
        layer,
        overlapping,
        funcs,
        runs,
    });
}

/// Whether a recorded mapping starts or ends strictly inside `(a, b)`.
fn crosses(boundaries: &[u64], a: u64, b: u64) -> bool {
    let k = boundaries.partition_point(|&x| x <= a);
    boundaries.get(k).is_some_and(|&x| x < b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(start: u64, size: u64, t: u64) -> Span {
        Span {
            start,
            size,
            load_time: t,
            end_time: None,
            order: t as usize,
            tid: 1,
        }
    }

    #[test]
    fn layers_clusters_runs() {
        let regions = vec![
            region(0x1000, 0x100, 1),
            region(0x1180, 0x80, 2),        // same run (gap 0x80)
            region(0x4000, 0x10, 3),        // gap > GAP_MAX: new run
            region(0x1080, 0x40, 4),        // reuses f1000's range: layer 1
            region(0x1_0000_0000, 0x10, 5), // > 1 GiB away: new cluster (ELF)
            region(0x2000, 0, 6),           // empty: not placed
        ];
        let l = layout(&regions, &[]);
        assert_eq!(l.elfs.len(), 3);
        assert_eq!(l.elfs[0].layer, 0);
        assert_eq!(l.elfs[0].funcs, vec![0, 1, 2]);
        assert_eq!(
            l.elfs[0].runs,
            vec![
                Run {
                    start: 0x1000,
                    end: 0x1200,
                    funcs: 0..2
                },
                Run {
                    start: 0x4000,
                    end: 0x4010,
                    funcs: 2..3
                }
            ]
        );
        assert_eq!(l.elfs[1].funcs, vec![4]);
        assert_eq!(l.elfs[2].layer, 1);
        assert_eq!(l.elfs[2].funcs, vec![3]);
        assert_eq!(
            l.placement,
            vec![
                Some((0, 0)),
                Some((0, 0)),
                Some((0, 1)),
                Some((2, 0)),
                Some((1, 0)),
                None
            ]
        );
        // A recorded mapping boundary inside the gap splits the run.
        let l = layout(&regions[..2], &[0x1150]);
        assert_eq!(l.elfs[0].runs.len(), 2);
    }

    #[test]
    fn layers_are_capped() {
        let regions: Vec<Span> = (0..LAYER_MAX as u64 + 10)
            .map(|t| region(0x1000, 0x10, t))
            .collect();
        let l = layout(&regions, &[]);
        assert_eq!(l.elfs.len(), LAYER_MAX);
        let last = l.elfs.last().unwrap();
        assert!(last.overlapping && !l.elfs[0].overlapping);
        assert_eq!(last.funcs.len(), 11);
        assert_eq!(last.runs.len(), 11);
        assert!(l.placement.iter().all(Option::is_some));
    }
}
