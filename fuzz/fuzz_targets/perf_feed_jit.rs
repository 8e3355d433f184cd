#![no_main]
//! The perf.data driver *with* a jitdump (`perf_feed` looks for none): the input is a
//! perf.data and a jitdump (cut at a point its first four bytes give); the dump is written as
//! `jit-<pid>.dump` for the first jitdump marker of the recording, in the directory the driver
//! searches, so CodeMap lookups and UNWINDING_INFO inside framehop run on hostile pairs.

use std::collections::HashSet;
use std::io;

use libfuzzer_sys::fuzz_target;
use profkit_model::events::{EventSink, Sample, TraceInfo};
use profkit_model::feed::perf::{feed, PerfOptions};
use profkit_model::{FuncId, FuncInfo};

#[derive(Default)]
struct Check {
    declared: HashSet<FuncId>,
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
            assert!(self.declared.contains(id), "{id:?} used before it was declared");
        }
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let cut = (u32::from_le_bytes(*head) as usize).min(rest.len());
    let (perf, dump) = rest.split_at(cut);
    let Ok(pd) = profkit_perf::PerfData::parse(perf) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pid = pd.jitdump_markers().first().map_or(1, |m| m.0);
    std::fs::write(dir.path().join(format!("jit-{pid}.dump")), dump).unwrap();
    let mut opts = PerfOptions::isolated();
    opts.jit.dirs = vec![dir.path().to_path_buf()];
    let mut sink = Check::default();
    let _ = feed(perf, "fuzz", &opts, None, &mut sink);
});
