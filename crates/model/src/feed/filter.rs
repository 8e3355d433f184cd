//! `convert --time` and `--thread`: an [`EventSink`] adapter that keeps the events of some
//! threads inside a time window, clipping calls that cross its edges so that enters and exits
//! stay balanced.

use std::io;

use crate::events::{
    CallPath, CodeRegion, Counter, Enter, EventSink, Instant, MappingInfo, ProcessInfo, Sample,
    ThreadInfo, TraceInfo,
};
use crate::func::{FuncId, FuncInfo};
use crate::span::Span;

/// Which part of a trace to keep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Keep events in `[from, to]`, ns since the origin (`None` = everything).
    pub time: Option<(u64, u64)>,
    /// Keep these thread ids (as the format numbers them; empty = all).
    pub threads: Vec<u64>,
    /// Keep the threads of these processes (empty = all).
    pub pids: Vec<u32>,
}

impl Selection {
    /// Whether the selection keeps everything.
    pub fn is_all(&self) -> bool {
        self.time.is_none() && self.threads.is_empty() && self.pids.is_empty()
    }
}

#[derive(Clone, Debug)]
struct OpenCall {
    func: FuncId,
    time: u64,
    emitted: bool,
    /// Clipped time of the callees passed on so far.
    child: u64,
    /// Its logged arguments, kept until it is passed on.
    args: Vec<u64>,
}

#[derive(Debug, Default)]
struct FilterThread {
    keep: bool,
    open: Vec<OpenCall>,
    /// How many of `open` were not passed on yet (they started before the window).
    held: usize,
}

/// An [`EventSink`] adapter that passes on only the threads and the time window of a
/// [`Selection`]. A call that starts before the window and ends inside it starts at the
/// window's start; one that ends after it ends at the window's end; self times are those of the
/// clipped calls. Calls entirely outside the window are dropped.
pub struct Filter<S> {
    inner: S,
    sel: Selection,
    /// By thread index.
    threads: Vec<FilterThread>,
}

impl<S: EventSink> Filter<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, sel: Selection) -> Self {
        Filter {
            inner,
            sel,
            threads: Vec::new(),
        }
    }

    /// The wrapped sink.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn in_window(&self, t: u64) -> bool {
        self.sel.time.is_none_or(|(a, b)| a <= t && t <= b)
    }

    fn kept(&self, thread: u32) -> bool {
        self.threads.get(thread as usize).is_some_and(|t| t.keep)
    }

    /// Emits the enters of `thread`'s open calls that were held back (they started before the
    /// window) at the window's start.
    fn flush_open(&mut self, thread: u32) -> io::Result<()> {
        let from = self.sel.time.map_or(0, |w| w.0);
        let Some(t) = self.threads.get_mut(thread as usize) else {
            return Ok(());
        };
        if t.held == 0 {
            return Ok(());
        }
        t.held = 0;
        for (depth, c) in t.open.iter_mut().enumerate() {
            if !c.emitted {
                c.emitted = true;
                let args = std::mem::take(&mut c.args);
                self.inner.enter(&Enter {
                    thread,
                    func: c.func,
                    time: c.time.max(from),
                    depth: depth as u32,
                    args: &args,
                })?;
            }
        }
        Ok(())
    }
}

impl<S: EventSink> EventSink for Filter<S> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.inner.begin(trace)
    }
    fn process(&mut self, p: &ProcessInfo<'_>) -> io::Result<()> {
        self.inner.process(p)
    }
    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.inner.function(id, info)
    }
    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        let keep = (self.sel.threads.is_empty() || self.sel.threads.contains(&t.tid))
            && (self.sel.pids.is_empty() || self.sel.pids.contains(&t.pid));
        let i = t.index as usize;
        if self.threads.len() <= i {
            self.threads.resize_with(i + 1, FilterThread::default);
        }
        if let Some(slot) = self.threads.get_mut(i) {
            *slot = FilterThread {
                keep,
                ..FilterThread::default()
            };
        }
        if keep {
            self.inner.thread(t)
        } else {
            Ok(())
        }
    }
    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        let (thread, func, time, args) = (call.thread, call.func, call.time, call.args);
        if !self.kept(thread) {
            return Ok(());
        }
        let inside = self.in_window(time);
        if inside {
            self.flush_open(thread)?;
        }
        let Some(t) = self.threads.get_mut(thread as usize) else {
            return Ok(());
        };
        let depth = t.open.len() as u32;
        t.open.push(OpenCall {
            func,
            time,
            emitted: inside,
            child: 0,
            args: if inside { Vec::new() } else { args.to_vec() },
        });
        t.held += usize::from(!inside);
        if inside {
            self.inner.enter(&Enter { depth, ..*call })?;
        }
        Ok(())
    }
    fn exit(&mut self, span: &Span) -> io::Result<()> {
        if !self.kept(span.thread) {
            return Ok(());
        }
        let (from, to) = self.sel.time.unwrap_or((0, u64::MAX));
        // A call that covers the window's start is shown from there.
        if span.end >= from && span.start <= to {
            self.flush_open(span.thread)?;
        }
        let Some(t) = self.threads.get_mut(span.thread as usize) else {
            return Ok(());
        };
        let Some(open) = t.open.pop() else {
            return Ok(());
        };
        if !open.emitted {
            t.held = t.held.saturating_sub(1);
            return Ok(());
        }
        let start = span.start.max(from);
        let end = span.end.min(to).max(start);
        let dur = end - start;
        if let Some(parent) = t.open.last_mut() {
            parent.child = parent.child.saturating_add(dur);
        }
        let clipped = Span {
            start,
            end,
            depth: t.open.len() as u32,
            self_time: dur.saturating_sub(open.child),
            ..*span
        };
        self.inner.exit(&clipped)
    }
    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        if self.kept(i.thread) && self.in_window(i.time) {
            self.inner.instant(i)
        } else {
            Ok(())
        }
    }
    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        if self.in_window(c.time) {
            self.inner.counter(c)
        } else {
            Ok(())
        }
    }
    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        if self.kept(s.thread) && self.in_window(s.time) {
            self.inner.sample(s)
        } else {
            Ok(())
        }
    }
    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        // Call paths have no time: only the thread selection applies (`convert` refuses a
        // time window on an input that has only call paths).
        if self.kept(p.thread) {
            self.inner.call_path(p)
        } else {
            Ok(())
        }
    }
    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        // Code stays whatever the window: a later address needs the load that made it.
        if c.thread.is_none_or(|t| self.kept(t)) {
            self.inner.code(c)
        } else {
            Ok(())
        }
    }
    fn mapping(&mut self, m: &MappingInfo<'_>) -> io::Result<()> {
        // Mappings stay whatever the window, as code does.
        self.inner.mapping(m)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.inner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Recorded, RecordedEvent};
    use crate::func::FunctionTable;

    fn run(sel: Selection) -> Vec<RecordedEvent> {
        let mut f = Filter::new(Recorded::default(), sel);
        let table = FunctionTable::new();
        f.begin(&TraceInfo {
            format: "test",
            functions: &table,
            clock: crate::Clock::NANOSECONDS,
            origin_ns: 0,
            name: "t",
            samples: None,
            origin_unix_ns: None,
        })
        .unwrap();
        for (index, tid) in [(0u32, 7u64), (1, 8)] {
            f.thread(&ThreadInfo {
                index,
                pid: 1,
                tid,
                name: "t",
            })
            .unwrap();
            // a(0..100) { b(10..20) c(50..150?) } — c ends at 90
            f.enter(&Enter::new(index, FuncId(1), 0, 0)).unwrap();
            f.enter(&Enter::new(index, FuncId(2), 10, 1)).unwrap();
            let sp = |func, start, end, depth, self_time| Span {
                func: FuncId(func),
                thread: index,
                start,
                end,
                depth,
                self_time,
            };
            f.exit(&sp(2, 10, 20, 1, 10)).unwrap();
            f.enter(&Enter::new(index, FuncId(3), 50, 1)).unwrap();
            f.exit(&sp(3, 50, 90, 1, 40)).unwrap();
            f.exit(&sp(1, 0, 100, 0, 50)).unwrap();
        }
        f.finish().unwrap();
        f.into_inner().events
    }

    #[test]
    fn everything_passes_without_selection() {
        assert_eq!(run(Selection::default()).len(), 2 * 7);
    }

    #[test]
    fn threads_and_window() {
        let ev = run(Selection {
            time: Some((15, 60)),
            threads: vec![8],
            ..Selection::default()
        });
        let exits: Vec<_> = ev
            .iter()
            .filter_map(|e| match e {
                RecordedEvent::Exit(s) => Some((s.func.0, s.thread, s.start, s.end, s.depth)),
                _ => None,
            })
            .collect();
        assert_eq!(
            exits,
            vec![(2, 1, 15, 20, 1), (3, 1, 50, 60, 1), (1, 1, 15, 60, 0)]
        );
        let enters = ev
            .iter()
            .filter(|e| matches!(e, RecordedEvent::Enter { .. }))
            .count();
        assert_eq!(enters, 3);
    }
}
