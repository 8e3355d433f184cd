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
    /// The entry as recorded.
    raw: u64,
    /// `None`: a context marker.
    frame: Option<Frame>,
    start: Option<Start>,
    /// The lookup address asked about, and whether something holds it.
    held: Option<(u64, bool)>,
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
    /// The new chain's own inner entries, innermost first (scratch).
    inner: Vec<Checked>,
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
    /// Pushes the addresses of `chain` onto `addrs` (innermost first: lookup address, is
    /// kernel): every kernel frame, and with `user` the user frames up to the first caller
    /// nothing holds. Returns how many user frames were cut there, if any.
    pub(super) fn addresses(
        &mut self,
        chain: &Callchain<'_>,
        layout: &Layout<'_>,
        user: bool,
        addrs: &mut Vec<(u64, bool)>,
    ) -> Option<u64> {
        if !user {
            addrs.extend(
                chain
                    .frames()
                    .filter(|f| f.context.is_kernel())
                    .map(|f| (f.lookup_addr(), true)),
            );
            return None;
        }
        let version = layout.process.map_or(0, |p| p.layout);
        if (layout.pid, version) != (self.pid, self.layout) {
            self.checked.clear();
            (self.pid, self.layout) = (layout.pid, version);
        }
        // The outer entries both chains share keep their answers: compared raw, then the
        // context they are in (set by the markers before them).
        let n = chain.len();
        let shared = self
            .checked
            .iter()
            .zip((0..n).rev())
            .take_while(|&(old, i)| chain.get(i) == Some(old.raw))
            .count();
        self.checked.truncate(shared);
        self.inner.clear();
        let mut context = (Context::Unknown, true);
        decode(chain.raw().take(n - shared), &mut context, &mut self.inner);
        if let Some(Some(f)) = self.checked.last().map(|c| c.frame) {
            if (f.context, f.first_in_context) != context {
                // The shared frames are in another context here: ask about them again.
                self.checked.clear();
                self.inner.clear();
                context = (Context::Unknown, true);
                decode(chain.raw(), &mut context, &mut self.inner);
            }
        }
        self.checked.extend(self.inner.iter().rev());
        let mut callers = 0u64;
        let mut cut: Option<u64> = None;
        for c in self.checked.iter_mut().rev() {
            let Some(mut f) = c.frame else {
                continue;
            };
            if f.context.is_kernel() {
                addrs.push((f.lookup_addr(), true));
                continue;
            }
            if let Some(n) = cut.as_mut() {
                *n += 1;
                continue;
            }
            if !f.first_in_context {
                let start = *c.start.get_or_insert_with(|| layout.start(f.addr));
                f.first_in_context = match start {
                    Start::No => false,
                    Start::Always => true,
                    Start::AtSomeTime => {
                        starts_jit_function(layout.dump, None, f.addr, layout.jit_time)
                    }
                };
            }
            let a = f.lookup_addr();
            if callers > 0 {
                let held = match c.held {
                    Some((asked, held)) if asked == a => held,
                    _ => {
                        let held = layout.holds(a);
                        c.held = Some((a, held));
                        held
                    }
                };
                if !held {
                    cut = Some(1);
                    continue;
                }
            }
            callers += 1;
            addrs.push((a, false));
        }
        if self.checked.len() > MEMO_ENTRIES {
            self.checked = Vec::new();
            self.inner = Vec::new();
        }
        cut
    }
}

/// Appends the entries of `raw` to `out`, unasked, tracking the context (and whether the next
/// frame is its first) as the markers set it.
fn decode(raw: impl Iterator<Item = u64>, context: &mut (Context, bool), out: &mut Vec<Checked>) {
    for v in raw {
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
        out.push(Checked {
            raw: v,
            frame,
            start: None,
            held: None,
        });
    }
}
