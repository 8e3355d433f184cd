//! A spinner on a terminal for long conversions: an [`EventSink`] adapter that counts the
//! events going to a writer.

use std::time::{Duration, Instant as Clock};

use profkit_model::events::{
    CallPath, CodeRegion, Counter, Enter, EventSink, Instant, MappingInfo, ProcessInfo, Sample,
    ThreadInfo, TraceInfo,
};
use profkit_model::{FuncId, FuncInfo, Span};

use crate::output;

/// Counts events and shows a spinner with the rate on a terminal.
pub struct Progress<S> {
    inner: S,
    bar: Option<indicatif::ProgressBar>,
    events: u64,
    started: Clock,
}

impl<S: EventSink> Progress<S> {
    /// Wraps `inner`; the spinner shows when `show`.
    pub fn new(inner: S, show: bool) -> Self {
        let bar = show.then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {elapsed} {human_pos} events ({per_sec}) {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Progress {
            inner,
            bar,
            events: 0,
            started: Clock::now(),
        }
    }

    #[inline]
    fn tick(&mut self) {
        self.events += 1;
        if self.events & 0xffff == 0 {
            if let Some(b) = &self.bar {
                b.set_position(self.events);
            }
        }
    }
}

impl<S: EventSink> EventSink for Progress<S> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> std::io::Result<()> {
        self.started = Clock::now();
        self.inner.begin(trace)
    }
    fn process(&mut self, p: &ProcessInfo<'_>) -> std::io::Result<()> {
        self.inner.process(p)
    }
    fn function(&mut self, id: FuncId, info: &FuncInfo) -> std::io::Result<()> {
        self.inner.function(id, info)
    }
    fn thread(&mut self, t: &ThreadInfo<'_>) -> std::io::Result<()> {
        if let Some(b) = &self.bar {
            b.set_message(t.name.to_string());
        }
        self.inner.thread(t)
    }
    fn enter(&mut self, call: &Enter<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.enter(call)
    }
    fn exit(&mut self, span: &Span) -> std::io::Result<()> {
        self.tick();
        self.inner.exit(span)
    }
    fn instant(&mut self, i: &Instant<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.instant(i)
    }
    fn counter(&mut self, c: &Counter<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.counter(c)
    }
    fn sample(&mut self, s: &Sample<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.sample(s)
    }
    fn code(&mut self, c: &CodeRegion<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.code(c)
    }
    fn call_path(&mut self, p: &CallPath<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.call_path(p)
    }
    fn mapping(&mut self, m: &MappingInfo<'_>) -> std::io::Result<()> {
        self.inner.mapping(m)
    }
    fn finish(&mut self) -> std::io::Result<()> {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
            output::print_note(&format!(
                "{} events in {:.1} s",
                self.events,
                self.started.elapsed().as_secs_f64()
            ));
        }
        self.inner.finish()
    }
}
