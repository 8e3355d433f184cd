//! A frame-pointer callchain's addresses: its kernel frames, then its user frames up to the
//! first return address that nothing holds (see the module docs of `perf`), each return
//! address looked up at `addr - 1` unless it starts a JIT function.
//!
//! Two questions are asked of every user return address — does it start a JIT function,
//! and does a mapping, jitdump region or perf map entry hold it — and they cost a hash probe
//! and a search of the process's mappings each. A thread's samples mostly share their outer
//! frames with its previous sample, so each thread keeps its last chain with the answers
//! ([`ChainMemo`]): only the frames below the part both chains share are asked again, as long
//! as the process's layout (its mappings and JIT metadata, [`Process::layout`]) did not
//! change. What depends on the sample's time (whether JIT code that starts at the address is
//! live) is asked every time.

use profkit_perf::{Callchain, Context, Frame};

use super::jit::{LoadedDump, LoadedMap};
use super::process::Process;
use super::{plausible_user_address, starts_jit_function};

/// Whether a return address starts a JIT function, as far as it does not depend on time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// No JIT function starts there.
    No,
    /// A perf map entry starts there.
    Always,
    /// A jitdump region starts there: whether it is live is asked at each sample.
    AtSomeTime,
}

/// One entry of a thread's last chain (a frame, or a context marker) and what was found out
/// about it.
#[derive(Clone, Copy)]
struct Checked {
    /// `None`: a context marker.
    frame: Option<Frame>,
    start: Option<Start>,
    /// What the walk did from this entry outward, the last time it came here (`None`: it has
    /// not).
    outward: Option<Outward>,
}

/// What walking a chain from one entry to its outermost did: the walk's state on coming to
/// the entry, and what it pushed and cut from there on. The outer part of a thread's chain
/// is mostly its last chain's, with the same answers: when the walk comes to the shared part
/// in the state the last walk did, and nothing there depended on the sample's time, the rest
/// of the walk is the last one's, and its addresses are the tail of the last output.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Outward {
    /// Whether a user frame was pushed before (the next is a caller, asked whether it is
    /// held), and whether the chain was cut before.
    entered: (bool, bool),
    /// Addresses pushed by this entry and the entries outer to it (a record of at most 64 KiB
    /// holds at most 8,192 entries).
    pushed: u32,
    /// User frames cut among them.
    cut: u32,
    /// Whether one of them starts JIT code only at some times (asked at every sample).
    timed: bool,
}

/// Memos at most: threads share them beyond (a memo is only where the comparison starts), so
/// that a recording of many threads with long chains costs at most `MEMO_SLOTS` ×
/// [`MEMO_ENTRIES`] entries.
pub(super) const MEMO_SLOTS: usize = 256;
/// Entries a memo keeps at most: a longer chain is checked whole and not kept.
const MEMO_ENTRIES: usize = 2048;

/// A thread's last frame-pointer chain, outermost entry first (so that the part the next
/// chain shares stays in place): its raw entries and the answers about them.
#[derive(Default)]
pub(super) struct ChainMemo {
    /// The process and its layout the answers hold for.
    pid: u32,
    layout: u64,
    checked: Vec<Checked>,
    /// The addresses the last chain gave, outermost first: a chain that reuses the outer part
    /// of the last one keeps those in place and replaces the rest.
    out: Vec<(u64, bool)>,
    /// The addresses a walk finds before it reaches what it reuses, innermost first (scratch).
    fresh: Vec<(u64, bool)>,
    /// The last chain was longer than a memo keeps: only `out` is left of it (the walk reads
    /// it), and it goes at the next call.
    oversize: bool,
    /// The last chain's entries as recorded (the chain's bytes: `checked`, innermost first).
    raw: Vec<u8>,
    /// Walks of user frames so far (a stamp: which output `out` is).
    calls: u64,
    /// How many of the last walk's addresses, the outermost, are the tail of the walk's before.
    reused: usize,
    /// What the process's layout says about the addresses this thread's chains had.
    facts: Facts,
}

/// Slots of a thread's [`Facts`] (16 bytes each).
const FACT_SLOTS: usize = 2048;

/// The two questions about a user address that depend on the process's layout alone —
/// whether a JIT function starts at it (asked of return addresses) and whether something
/// holds it (asked of lookup addresses) — answered once per address while the layout is the
/// same. A thread's chains mostly differ from its last one in their innermost frames, and
/// those are the same few return addresses again and again (the leaves of the hot code):
/// each new frame asked a search of the process's mappings, of the perf map and a probe of the
/// jitdump's starts. A direct-mapped table: a clash replaces the slot.
#[derive(Default)]
struct Facts {
    slots: Vec<Fact>,
}

#[derive(Clone, Copy, Default)]
struct Fact {
    addr: u64,
    /// `None`: not asked of this address.
    start: Option<Start>,
    held: Option<bool>,
}

impl Facts {
    /// Forgets every answer (the layout changed).
    fn clear(&mut self) {
        self.slots.clear();
    }

    fn slot(&mut self, addr: u64) -> Option<&mut Fact> {
        if self.slots.is_empty() {
            self.slots.resize(FACT_SLOTS, Fact::default());
        }
        // Fibonacci hashing: the top bits of the product spread nearby return addresses.
        let i = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - FACT_SLOTS.trailing_zeros()))
            as usize;
        let slot = self.slots.get_mut(i)?;
        if slot.addr != addr {
            *slot = Fact {
                addr,
                start: None,
                held: None,
            };
        }
        Some(slot)
    }

    fn start(&mut self, ra: u64, layout: &Layout<'_>) -> Start {
        match self.slot(ra) {
            Some(f) => *f.start.get_or_insert_with(|| layout.start(ra)),
            None => layout.start(ra),
        }
    }

    fn held(&mut self, a: u64, layout: &Layout<'_>) -> bool {
        match self.slot(a) {
            Some(f) => *f.held.get_or_insert_with(|| layout.holds(a)),
            None => layout.holds(a),
        }
    }
}

/// What a walk of user frames reused: its addresses' outermost `reused` are the outermost of
/// the output of walk `previous` of the same memo; this walk is `this`.
#[derive(Clone, Copy)]
pub(super) struct Reuse {
    pub previous: u64,
    pub this: u64,
    pub reused: usize,
}

/// What the questions are asked of: the sample's process and its JIT metadata.
pub(super) struct Layout<'p> {
    pub pid: u32,
    pub process: Option<&'p Process>,
    pub dump: Option<&'p LoadedDump>,
    pub map: Option<&'p LoadedMap>,
    /// The time JIT code is looked up at.
    pub jit_time: Option<u64>,
}

impl Layout<'_> {
    fn start(&self, ra: u64) -> Start {
        if self
            .map
            .and_then(|m| m.map.covering(ra))
            .is_some_and(|(start, _)| start == ra)
        {
            Start::Always
        } else if self.dump.is_some_and(|d| d.map.starts_region(ra)) {
            Start::AtSomeTime
        } else {
            Start::No
        }
    }

    /// Whether a mapping, jitdump region or perf map entry holds `a`. Without JIT metadata,
    /// JIT code perf saw no executable mmap for (V8 code space is not always mmapped
    /// executable) is held by nothing yet real: then only an address no user code can have
    /// ends the chain.
    fn holds(&self, a: u64) -> bool {
        let jit_known = self.dump.is_some() || self.map.is_some();
        self.process.is_some_and(|p| p.find(a).is_some())
            || self
                .dump
                .is_some_and(|d| d.map.region_at(a, None).is_some())
            || self.map.is_some_and(|m| m.map.covering(a).is_some())
            || (!jit_known && plausible_user_address(a))
    }
}

impl ChainMemo {
    /// Pushes the kernel frames of `chain` onto `addrs` (innermost first: lookup address, is
    /// kernel), for a sample whose user frames are unwound from its stack.
    pub(super) fn kernel_addresses(chain: &Callchain<'_>, addrs: &mut Vec<(u64, bool)>) {
        addrs.extend(
            chain
                .frames()
                .filter(|f| f.context.is_kernel())
                .map(|f| (f.lookup_addr(), true)),
        );
    }

    /// The addresses of `chain` (lookup address, is kernel), left in [`ChainMemo::out`]: every
    /// kernel frame and the user frames up to the first caller nothing holds. Returns how many
    /// user frames were cut there, if any.
    pub(super) fn addresses(&mut self, chain: &Callchain<'_>, layout: &Layout<'_>) -> Option<u64> {
        if std::mem::take(&mut self.oversize) {
            self.out = Vec::new();
        }
        let version = layout.process.map_or(0, |p| p.layout);
        if (layout.pid, version) != (self.pid, self.layout) {
            self.checked.clear();
            self.facts.clear();
            (self.pid, self.layout) = (layout.pid, version);
        }
        // The outer entries both chains share keep their answers: compared raw, then the
        // context they are in (set by the markers before them).
        let n = chain.len();
        let shared = shared_entries(chain.as_bytes(), &self.raw).min(self.checked.len());
        self.checked.truncate(shared);
        let mut context = (Context::Unknown, true);
        decode(chain.raw(), n - shared, &mut context, &mut self.checked);
        // Entries before `kept` are the last chain's; the walk may stop at the first of them.
        let mut kept = shared;
        let innermost_kept = kept.checked_sub(1).and_then(|i| self.checked.get(i));
        if let Some(Some(f)) = innermost_kept.map(|c| c.frame) {
            if (f.context, f.first_in_context) != context {
                // The shared frames are in another context here: ask about them again.
                self.checked.clear();
                context = (Context::Unknown, true);
                decode(chain.raw(), n, &mut context, &mut self.checked);
                kept = 0;
            }
        }
        self.reused = 0;
        self.calls += 1;
        self.fresh.clear();
        // How many of the last output's outer addresses this one keeps.
        let mut reused = 0;
        let mut callers = 0u64;
        let mut cut: Option<u64> = None;
        // Innermost first; `walked`: the first entry walked here (outer ones were reused).
        let mut walked = 0;
        for (i, c) in self.checked.iter_mut().enumerate().rev() {
            let entered = (callers > 0, cut.is_some());
            if i + 1 == kept {
                if let Some(o) = c.outward.filter(|o| o.entered == entered && !o.timed) {
                    if o.pushed as usize <= self.out.len() {
                        reused = o.pushed as usize;
                        self.reused = reused;
                        if o.cut > 0 {
                            cut = Some(cut.unwrap_or(0) + u64::from(o.cut));
                        }
                        walked = kept;
                        break;
                    }
                }
            }
            // Until the fix-up below: where the output and the cut count were.
            c.outward = Some(Outward {
                entered,
                pushed: count(self.fresh.len()),
                cut: count(cut.unwrap_or(0)),
                timed: false,
            });
            let Some(mut f) = c.frame else {
                continue;
            };
            if f.context.is_kernel() {
                self.fresh.push((f.lookup_addr(), true));
                continue;
            }
            if let Some(n) = cut.as_mut() {
                *n += 1;
                continue;
            }
            if !f.first_in_context {
                let start = match c.start {
                    Some(start) => start,
                    None => *c.start.insert(self.facts.start(f.addr, layout)),
                };
                f.first_in_context = match start {
                    Start::No => false,
                    Start::Always => true,
                    Start::AtSomeTime => {
                        starts_jit_function(layout.dump, None, f.addr, layout.jit_time)
                    }
                };
            }
            let a = f.lookup_addr();
            if callers > 0 && !self.facts.held(a, layout) {
                cut = Some(1);
                continue;
            }
            callers += 1;
            self.fresh.push((a, false));
        }
        // The entries walked: what they pushed and cut from them outward, now that the walk
        // is over; whether time mattered there, from the outermost in.
        let (total, total_cut) = (count(self.fresh.len() + reused), count(cut.unwrap_or(0)));
        let mut timed = walked
            .checked_sub(1)
            .and_then(|i| self.checked.get(i))
            .and_then(|c| c.outward)
            .is_some_and(|o| o.timed);
        for c in self.checked.iter_mut().skip(walked) {
            timed |= c.start == Some(Start::AtSomeTime);
            if let Some(o) = c.outward.as_mut() {
                o.pushed = total - o.pushed;
                o.cut = total_cut - o.cut;
                o.timed = timed;
            }
        }
        // The outer addresses reused stay where they are; the new ones follow, outermost first.
        self.out.truncate(reused);
        self.out.extend(self.fresh.iter().rev());
        self.raw.clear();
        self.raw.extend_from_slice(chain.as_bytes());
        if self.checked.len() > MEMO_ENTRIES {
            // Not kept (a memo holds at most MEMO_ENTRIES), but for `out`, until the walk has
            // read it.
            self.checked = Vec::new();
            self.fresh = Vec::new();
            self.raw = Vec::new();
            self.oversize = true;
        }
        cut
    }

    /// The addresses the last [`ChainMemo::addresses`] found, outermost first.
    pub(super) fn out(&self) -> &[(u64, bool)] {
        &self.out
    }
}

/// A count of a chain's entries as an [`Outward`] keeps it (a chain has at most 8,192).
fn count(n: impl TryInto<u32>) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

/// How many entries, from the outermost (the end), two chains' bytes share: compared as
/// recorded, 8 bytes an entry, four entries at a time (most of a chain is its thread's last
/// one: one 32-byte comparison per four entries, where each entry was a loop step).
fn shared_entries(new: &[u8], old: &[u8]) -> usize {
    let len = new.len().min(old.len()) & !7;
    let (Some(new), Some(old)) = (new.get(new.len() - len..), old.get(old.len() - len..)) else {
        return 0;
    };
    let (new_head, new_blocks) = new.as_rchunks::<32>();
    let (old_head, old_blocks) = old.as_rchunks::<32>();
    let blocks = new_blocks
        .iter()
        .rev()
        .zip(old_blocks.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    // Entry by entry in the first block that differs, or in the entries before the blocks.
    let (a, b): (&[u8], &[u8]) = match new_blocks.len().checked_sub(blocks + 1) {
        Some(i) => match (new_blocks.get(i), old_blocks.get(i)) {
            (Some(a), Some(b)) => (a, b),
            _ => (&[], &[]),
        },
        None => (new_head, old_head),
    };
    blocks * 4
        + a.as_rchunks::<8>()
            .1
            .iter()
            .rev()
            .zip(b.as_rchunks::<8>().1.iter().rev())
            .take_while(|(a, b)| a == b)
            .count()
}

impl ChainMemo {
    /// What the last walk of user frames reused (see [`Reuse`]).
    pub(super) fn reuse(&self) -> Reuse {
        Reuse {
            previous: self.calls.wrapping_sub(1),
            this: self.calls,
            reused: self.reused,
        }
    }
}

/// Appends the innermost `count` entries of `raw` (innermost first) to `out` (outermost
/// first: the last of them first), unasked, tracking the context (and whether the next frame is
/// its first) as the markers set it.
fn decode(
    raw: impl Iterator<Item = u64>,
    count: usize,
    context: &mut (Context, bool),
    out: &mut Vec<Checked>,
) {
    let at = out.len();
    let unasked = Checked {
        frame: None,
        start: None,
        outward: None,
    };
    out.resize(at + count, unasked);
    let slots = out.get_mut(at..).unwrap_or_default();
    for (slot, v) in slots.iter_mut().rev().zip(raw) {
        let frame = match Context::of_marker(v) {
            Some(c) => {
                *context = (c, true);
                None
            }
            None => Some(Frame {
                addr: v,
                context: context.0,
                first_in_context: std::mem::replace(&mut context.1, false),
            }),
        };
        *slot = Checked {
            frame,
            start: None,
            outward: None,
        };
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use profkit_common::Endian;
    use profkit_jit::codemap::CodeMap;
    use profkit_jitdump::perfmap::MapBuilder;

    use super::*;
    use crate::feed::perf::process::{Map, MapKind};

    const KERNEL: u64 = (-128i64) as u64;
    const USER: u64 = (-512i64) as u64;

    /// Four entries at a time gives what entry by entry gives: every length of either chain
    /// up to 11 entries (and a ragged byte count), every place the first difference can be.
    #[test]
    fn shared_entries_counts_what_an_entry_by_entry_comparison_counts() {
        let naive = |new: &[u8], old: &[u8]| {
            new.rchunks_exact(8)
                .zip(old.rchunks_exact(8))
                .take_while(|(a, b)| a == b)
                .count()
        };
        let entries = |n: usize, extra: usize| -> Vec<u8> {
            let mut v = vec![0xee; extra];
            for i in (0..n as u64).rev() {
                v.extend_from_slice(&(0x1000 + i).to_le_bytes());
            }
            v
        };
        for n in 0..12 {
            for m in 0..12 {
                for extra in [0, 3] {
                    let new = entries(n, extra);
                    for differ in 0..=m {
                        let mut old = entries(m, 0);
                        // Entry `differ` from the end differs (none when it is `m`).
                        if differ < m {
                            let at = old.len() - 8 * (differ + 1);
                            old[at] ^= 0x55;
                        }
                        assert_eq!(
                            shared_entries(&new, &old),
                            naive(&new, &old),
                            "{n} and {m} entries (+{extra} bytes), differing at {differ}"
                        );
                    }
                }
            }
        }
    }

    /// Chains that share outer parts, in random contexts, through code that is mapped or not,
    /// JIT regions that start at some times and perf map entries: a thread's memo gives what
    /// a memo new to each chain gives (addresses and cut frames), whatever the last chains
    /// were and whatever the sample's time.
    #[test]
    fn a_memo_gives_what_a_fresh_walk_gives() {
        let mut process = Process::default();
        let file = |end, kind| Map {
            end,
            pgoff: 0,
            path: Arc::from("/bin/x"),
            build_id: None,
            kind,
            executable: true,
            binary: None,
        };
        process.map(0x1000, file(0x2000, MapKind::File));
        process.map(0x5000, file(0x6000, MapKind::Anon));
        // Regions at 0x5000, 0x5010 …, each live from its load time on.
        let regions = (0..8u64).map(|k| (0x5000 + 16 * k, 16, format!("j{k}"), 100 * k));
        let dump = LoadedDump::without_code(
            PathBuf::from("jit-1.dump"),
            1,
            62,
            CodeMap::from_entries(1, regions),
        );
        let mut perf_map = MapBuilder::new();
        perf_map.load(0x7000, 16, b"p0");
        perf_map.load(0x7010, 16, b"p1");
        let map = LoadedMap {
            path: PathBuf::from("/tmp/perf-1.map"),
            map: perf_map,
            bad_lines: 0,
        };
        // Addresses: starts of regions and entries, inside them, in the file, unmapped.
        let pool = [
            0x1100,
            0x1101,
            0x1200,
            0x5000,
            0x5001,
            0x5010,
            0x5020,
            0x5031,
            0x5070,
            0x7000,
            0x7001,
            0x7010,
            0x9000,
            0x10,
            KERNEL,
            USER,
            0xffff_ffff_8100_0000,
        ];
        let mut rng = profkit_testkit::Xorshift::new(0x2545_f491_4f6c_dd1du64);
        let mut next = |n: u64| rng.below(n);
        let (mut reused, mut cuts) = (0, 0);
        for with_jit in [false, true] {
            let mut memo = ChainMemo::default();
            let mut chain: Vec<u64> = Vec::new();
            for _ in 0..20_000 {
                // Keep an outer part of the last chain (the last entries), new inner ones.
                let keep = next(chain.len() as u64 + 1) as usize;
                chain.drain(..chain.len() - keep);
                let fresh: Vec<u64> = (0..next(6))
                    .map(|_| pool[next(pool.len() as u64) as usize])
                    .collect();
                chain.splice(0..0, fresh);
                if next(4) == 0 {
                    chain.insert(0, KERNEL);
                }
                let bytes: Vec<u8> = chain.iter().flat_map(|v| v.to_le_bytes()).collect();
                let callchain = Callchain::new(&bytes, Endian::Little);
                let layout = Layout {
                    pid: 1,
                    process: Some(&process),
                    dump: with_jit.then_some(&dump),
                    map: with_jit.then_some(&map),
                    jit_time: Some(next(1000)),
                };
                let got = memo.addresses(&callchain, &layout);
                let ours = memo.out().to_vec();
                let mut fresh = ChainMemo::default();
                let expected = fresh.addresses(&callchain, &layout);
                let want = fresh.out().to_vec();
                assert_eq!((got, &ours), (expected, &want), "chain {chain:x?}");
                reused += usize::from(memo.checked.len() > 2 && keep > 2);
                cuts += usize::from(got.is_some());
            }
        }
        assert!(
            reused > 10_000 && cuts > 1_000,
            "{reused} reused, {cuts} cut"
        );
    }

    /// A chain longer than a memo keeps is answered whole, and so are the chains after it.
    #[test]
    fn a_chain_longer_than_a_memo_keeps_is_answered_whole() {
        let mut process = Process::default();
        process.map(
            0x1000,
            Map {
                end: 0x9000,
                pgoff: 0,
                path: Arc::from("/bin/x"),
                build_id: None,
                kind: MapKind::File,
                executable: true,
                binary: None,
            },
        );
        let layout = Layout {
            pid: 1,
            process: Some(&process),
            dump: None,
            map: None,
            jit_time: None,
        };
        let outer: Vec<u64> = (0..8).map(|i| 0x2000 + 16 * i).collect();
        let long: Vec<u64> = (0..MEMO_ENTRIES as u64 + 100)
            .map(|i| 0x3000 + i)
            .chain(outer.iter().copied())
            .collect();
        let short: Vec<u64> = [0x1100, 0x1200]
            .into_iter()
            .chain(outer.iter().copied())
            .collect();
        let mut memo = ChainMemo::default();
        for chain in [&short, &long, &short, &long, &long, &short, &short] {
            let bytes: Vec<u8> = chain.iter().flat_map(|v| v.to_le_bytes()).collect();
            let callchain = Callchain::new(&bytes, Endian::Little);
            let got = memo.addresses(&callchain, &layout);
            let ours = memo.out().to_vec();
            let mut fresh = ChainMemo::default();
            let want = (fresh.addresses(&callchain, &layout), fresh.out().to_vec());
            assert_eq!((got, ours), want, "a chain of {} entries", chain.len());
            assert!(memo.checked.len() <= MEMO_ENTRIES);
        }
    }
}
