#![no_main]
//! Fuzz the perf.data driver of profkit-model (`feed::perf::feed`): any bytes, through the
//! reader, the process state (mappings cut and copied, forks, markers), address extraction,
//! dwarf unwinding and symbolization, into a recording sink. JIT metadata is looked for in a
//! directory that does not exist, so only the input's bytes matter (recorded binary paths
//! may still name files of this machine, which are read like any recording's).
//!
//! The driver must never panic; every function a sample uses must have been declared first.

use std::collections::HashSet;
use std::io;

use libfuzzer_sys::fuzz_target;
use profkit_model::events::{EventSink, Sample, TraceInfo};
use profkit_model::feed::perf::{feed, PerfOptions};
use profkit_model::{FuncId, FuncInfo};

#[derive(Default)]
struct Check {
    declared: HashSet<FuncId>,
    samples: u64,
}

impl EventSink for Check {
    fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
        Ok(())
    }
    fn function(&mut self, id: FuncId, _: &FuncInfo) -> io::Result<()> {
        assert!(self.declared.insert(id), "{id:?} declared twice");
        Ok(())
    }
    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        assert!(s.lines.is_empty() || s.lines.len() == s.stack.len());
        for id in s.stack {
            assert!(
                self.declared.contains(id),
                "{id:?} used before it was declared"
            );
        }
        self.samples += 1;
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let opts = PerfOptions::isolated();
    let mut sink = Check::default();
    if let Ok((_, report)) = feed(data, "fuzz", &opts, None, &mut sink) {
        let _ = report.warnings();
        let _ = report.to_string();
        assert!(sink.samples <= report.samples);
    }
});
