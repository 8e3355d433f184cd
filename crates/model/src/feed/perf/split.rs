//! Naming on two threads: the walk reads every event, keeps every process's mappings for the
//! sink, declares the processes and threads, and names the samples of the processes it
//! keeps; the samples of the processes it gives away are named by a second [`Walk`] that runs
//! as the sink's [`Helper`] on the writer's thread (which waits for work most of the time),
//! with caches and function ids of its own over the same binaries and kernel names
//! ([`Symbols::sibling`](super::symbols::Symbols::sibling)).
//!
//! A process is given away at its first sample when the helper has named fewer samples than
//! the walk (so two busy processes go one to each), with everything known of it (its
//! mappings, its jitdump loading). From then on the walk hands the helper what changes it
//! ([`Change`]: mappings, forks, jitdump markers) and, for each of its samples, the thread
//! index and a copy of the sample ([`EventSink::helpers_sample`]), in the events' order; the
//! writer ([`crate::events::Threaded`]) has the helper name each where it comes and numbers
//! both walks' functions as one walk would have: the output is the same as from one walk, by
//! construction.
//!
//! Only recordings without user stacks are split (a `--call-graph dwarf` sample carries
//! kilobytes of stack the hand-over would copy). With fewer than three CPUs the split is off
//! unless asked for ([`PerfOptions::helper`](super::PerfOptions::helper), `PROFKIT_HELPER=1`):
//! the reader and the writer already keep the second CPU ~60% busy during the walk, so
//! although the walk's thread does a quarter less, the two CPUs are then the bound; on two
//! it measured no faster, for ~7% more CPU (docs/BENCHMARKS.md).

use std::any::Any;
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};

use profkit_perf::Sample as PerfSample;

use super::process::{Map, Process};
use super::Walk;
use crate::events::{EventSink, Helper};

/// What changes a process the helper names.
pub(super) enum Change {
    /// Process `pid` is named by the helper from now on: all that is known of it, and the
    /// samples' time origin.
    Adopt(u32, Box<Process>, Option<u64>),
    /// A mapping of one of its processes, at `start`.
    Map(u32, u64, Map),
    /// One of its processes forked `child`.
    Fork { parent: u32, child: u32 },
    /// One of its processes mapped its jitdump.
    JitMarker(u32, PathBuf),
}

/// The walk's side of a split.
pub(super) struct Split {
    /// Samples the walk named itself, and samples it handed to the helper.
    pub named: [u64; 2],
    /// Where the helper's walk comes back when the sink finishes.
    back: Receiver<Walk>,
    /// Changes not yet handed over (they go before the next sample handed over).
    changes: Vec<Change>,
}

impl Split {
    /// Gives `sink` a helper over `helper`; `None` if it takes none.
    pub fn start(sink: &mut dyn EventSink, helper: Walk) -> Option<Split> {
        let (tx, back) = channel();
        sink.helper(Box::new(SecondWalk {
            walk: helper,
            back: tx,
        }))
        .ok()?;
        Some(Split {
            named: [0, 0],
            back,
            changes: Vec::new(),
        })
    }

    /// Hands `change` over (with the next sample).
    pub fn change(&mut self, change: Change) {
        self.changes.push(change);
    }

    /// Hands over sample `s` of thread index `thread`.
    pub fn sample(
        &mut self,
        thread: u32,
        s: &PerfSample<'_>,
        sink: &mut dyn EventSink,
    ) -> io::Result<()> {
        self.named[1] += 1;
        self.hand_over_changes(sink)?;
        sink.helpers_sample(&mut |work| {
            work.extend_from_slice(&thread.to_le_bytes());
            s.write_copy(work);
        })
    }

    /// Hands over the changes not yet handed over: before each sample handed over, and at the
    /// end (a jitdump marker after the last one still shows in the report).
    pub fn hand_over_changes(&mut self, sink: &mut dyn EventSink) -> io::Result<()> {
        for change in self.changes.drain(..) {
            sink.hand_over(Box::new(change))?;
        }
        Ok(())
    }

    /// The helper's walk, once the sink finished (`None` if it never ended: the writer
    /// failed).
    pub fn finished(&self) -> Option<Walk> {
        self.back.try_recv().ok()
    }
}

/// The helper: a walk of its own, and where it goes when the sink finishes.
struct SecondWalk {
    walk: Walk,
    back: Sender<Walk>,
}

impl Helper for SecondWalk {
    fn change(&mut self, change: Box<dyn Any + Send>) {
        let Ok(change) = change.downcast::<Change>() else {
            return;
        };
        let walk = &mut self.walk;
        match *change {
            Change::Adopt(pid, process, origin) => {
                walk.origin = origin;
                walk.processes.insert(pid, *process);
            }
            Change::Map(pid, start, map) => walk.processes.entry(pid).or_default().map(start, map),
            Change::Fork { parent, child } => walk.fork(parent, child),
            Change::JitMarker(pid, path) => walk.jit_marker(pid, path),
        }
    }

    fn sample(&mut self, work: &[u8], sink: &mut dyn EventSink) -> io::Result<()> {
        let parsed = work
            .split_first_chunk::<4>()
            .and_then(|(thread, rest)| Some((*thread, PerfSample::read_copy(rest)?.0)));
        let Some((thread, sample)) = parsed else {
            return Err(io::Error::other("a sample handed over did not read back"));
        };
        self.walk.name(u32::from_le_bytes(thread), &sample, sink)
    }

    fn end(self: Box<Self>) {
        let SecondWalk { walk, back } = *self;
        let _ = back.send(walk);
    }
}
