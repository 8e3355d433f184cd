//! Sampled stacks of one thread, interned into fxprof as they stream.
//!
//! A sample costs a comparison with the previous sample's stack (most of it is shared, kept
//! with its stacks), then per frame past the shared part a lookup of the thread's frame of
//! that (function, line) and of the stack of that (prefix, frame). Samples are kept as
//! (time, stack, hits) until the end, when the thread's sampling period is known.
//!
//! A stack is kept as its index in the thread's stack table, which this module numbers as
//! fxprof does (in order of first interning: a stack new here is interned into fxprof then,
//! and nothing else interns a stack on a sampled thread before its samples are done), so that
//! the samples table can be written without fxprof ([`super::sample_table`]).

use fxprof_processed_profile::{FrameHandle, Profile, StackHandle, ThreadHandle};
use profkit_model::FuncId;
use rustc_hash::FxHashMap;

use super::synthetic::Synthetic;

/// The sampled stacks of a thread.
#[derive(Debug, Default)]
pub(super) struct SampledStacks {
    /// The thread's frame of each (function, line).
    frames: FxHashMap<(FuncId, u32), FrameHandle>,
    /// The thread's stack of each (prefix + 1 or 0, frame): its index in the stack table.
    stacks: FxHashMap<(u32, FrameHandle), u32>,
    /// fxprof's handle of each stack, by index.
    pub(super) handles: Vec<StackHandle>,
    /// (time, stack index, hits).
    pub(super) samples: Vec<(u64, Option<u32>, u64)>,
    /// The last sample's frames and their stacks, outermost first: the next sample usually
    /// shares most of them.
    last: Vec<(FuncId, u32, u32)>,
}

impl SampledStacks {
    /// Adds a sample of `stack` (outermost first) at `lines` (parallel; missing = 0) on fxprof
    /// thread `thread`. `Err(func)`: `func` is not declared to `synthetic`; declare it and
    /// push the sample again (the part already done is kept).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &mut self,
        time: u64,
        stack: &[FuncId],
        lines: &[u32],
        hits: u64,
        profile: &mut Profile,
        thread: ThreadHandle,
        synthetic: &mut Synthetic,
    ) -> Result<(), FuncId> {
        let line = |i: usize| lines.get(i).copied().unwrap_or(0);
        let common = self
            .last
            .iter()
            .zip(stack.iter().enumerate())
            .take_while(|((f, l, _), (i, g))| f == *g && *l == line(*i))
            .count();
        self.last.truncate(common);
        let mut parent = self.last.last().map(|&(_, _, h)| h);
        for (i, &func) in stack.iter().enumerate().skip(common) {
            let l = line(i);
            let frame = match self.frames.get(&(func, l)) {
                Some(&h) => h,
                None => {
                    let info = synthetic.frame(func, l).ok_or(func)?;
                    let h = profile.intern_frame(thread, info);
                    self.frames.insert((func, l), h);
                    h
                }
            };
            let key = (parent.map_or(0, |p| p.saturating_add(1)), frame);
            let stack = match self.stacks.get(&key) {
                Some(&s) => s,
                None => {
                    let prefix = parent.and_then(|p| self.handles.get(p as usize).copied());
                    let h = profile.intern_stack(thread, prefix, frame);
                    // (More stacks than `u32` holds cannot be in memory: 4 G entries.)
                    let s = u32::try_from(self.handles.len()).unwrap_or(u32::MAX);
                    self.handles.push(h);
                    self.stacks.insert(key, s);
                    s
                }
            };
            self.last.push((func, l, stack));
            parent = Some(stack);
        }
        self.samples.push((time, parent, hits));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::synthetic::SampledFunc;
    use super::*;
    use fxprof_processed_profile::{CategoryHandle, FrameFlags};

    fn setup() -> (Profile, ThreadHandle, Synthetic) {
        let (p, th) = super::super::one_thread_profile();
        (p, th, Synthetic::default())
    }

    fn declare(p: &mut Profile, s: &mut Synthetic, id: u32) {
        let f = SampledFunc {
            name: p.intern_string("f"),
            category: CategoryHandle::OTHER.into(),
            flags: FrameFlags::empty(),
            display: format!("f{id}"),
            module: "m".to_string(),
            file: None,
            start_line: 0,
        };
        s.declare(p, FuncId(id), f);
    }

    #[test]
    fn a_stack_per_function_and_line_path() {
        let (mut p, th, mut syn) = setup();
        declare(&mut p, &mut syn, 1);
        declare(&mut p, &mut syn, 2);
        let mut s = SampledStacks::default();
        let (a, b) = (FuncId(1), FuncId(2));
        for (t, lines) in [(0, [1, 5]), (1, [1, 6]), (2, [1, 5]), (3, [2, 5])] {
            s.push(t, &[a, b], &lines, 1, &mut p, th, &mut syn).unwrap();
        }
        s.push(4, &[], &[], 1, &mut p, th, &mut syn).unwrap();
        let stacks: Vec<_> = s.samples.iter().map(|x| x.1).collect();
        assert_eq!(stacks[0], stacks[2]);
        assert_ne!(stacks[0], stacks[1]);
        assert_ne!(stacks[0], stacks[3], "a caller at another line");
        assert_eq!(stacks[4], None);
        assert_eq!(s.frames.len(), 4);
    }

    #[test]
    fn an_undeclared_function_stops_the_sample_where_it_is() {
        let (mut p, th, mut syn) = setup();
        declare(&mut p, &mut syn, 1);
        declare(&mut p, &mut syn, 2);
        let mut s = SampledStacks::default();
        let stack = [FuncId(1), FuncId(9), FuncId(2)];
        assert_eq!(
            s.push(0, &stack, &[], 1, &mut p, th, &mut syn),
            Err(FuncId(9))
        );
        assert!(s.samples.is_empty());
        assert_eq!(s.last.len(), 1, "the part done is kept");
        declare(&mut p, &mut syn, 9);
        s.push(0, &stack, &[], 1, &mut p, th, &mut syn).unwrap();
        assert_eq!(s.samples.len(), 1);
        assert_eq!(s.last.len(), 3);
    }
}
