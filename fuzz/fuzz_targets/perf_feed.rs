#![no_main]
//! Fuzz the perf.data driver of profkit-model (`feed::perf::feed`): any bytes, through the
//! reader, the process state (mappings cut and copied, forks, markers), address extraction,
//! dwarf unwinding and symbolization, into a recording sink. JIT metadata is looked for in a
//! directory that does not exist, so only the input's bytes matter (recorded binary paths
//! may still name files of this machine, which are read like any recording's).
//!
//! Inputs of odd length go through the writer's thread with the naming split between two
//! threads (a helper on the writer's thread names the processes it is given, and the writer
//! numbers both sides' functions again); even ones are named on one thread into the sink.
//!
//! The driver must never panic; every function a sample uses must have been declared first,
//! and once.

use std::collections::HashSet;
use std::io;
use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
use profkit_model::events::{EventSink, Sample, Threaded, TraceInfo};
use profkit_model::feed::perf::{feed, PerfOptions};
use profkit_model::{FuncId, FuncInfo};

#[derive(Default)]
struct Check {
    declared: HashSet<FuncId>,
    samples: u64,
    /// What broke the rules (kept, not asserted: on the writer's thread a panic would only
    /// end that thread).
    broken: Vec<String>,
}

impl Check {
    fn function(&mut self, id: FuncId) {
        if !self.declared.insert(id) {
            self.broken.push(format!("{id:?} declared twice"));
        }
    }
    fn sample(&mut self, s: &Sample<'_>) {
        if !(s.lines.is_empty() || s.lines.len() == s.stack.len()) {
            self.broken.push("lines and frames differ in number".into());
        }
        for id in s.stack {
            if !self.declared.contains(id) {
                self.broken.push(format!("{id:?} used before it was declared"));
            }
        }
        self.samples += 1;
    }
}

/// The check, shared with the test (the writer's thread frees its sink when it finishes).
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Check>>);

impl EventSink for Shared {
    fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
        Ok(())
    }
    fn function(&mut self, id: FuncId, _: &FuncInfo) -> io::Result<()> {
        self.0.lock().unwrap().function(id);
        Ok(())
    }
    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        self.0.lock().unwrap().sample(s);
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let mut opts = PerfOptions::isolated();
    let check = Shared::default();
    let fed = if data.len() % 2 == 1 {
        opts.helper = Some(true);
        let Ok(mut sink) = Threaded::new(check.clone()) else {
            return;
        };
        feed(data, "fuzz", &opts, None, &mut sink)
    } else {
        let mut sink = check.clone();
        feed(data, "fuzz", &opts, None, &mut sink)
    };
    let check = check.0.lock().unwrap();
    assert!(check.broken.is_empty(), "{:?}", check.broken);
    match fed {
        Ok((_, report)) => {
            let _ = report.warnings();
            let _ = report.to_string();
            assert!(check.samples <= report.samples);
        }
        Err(e) => assert!(!e.to_string().contains("panicked"), "{e}"),
    }
});
