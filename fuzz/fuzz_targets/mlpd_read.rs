//! profkit-mlpd's reader on arbitrary bytes: header, buffers, every event and every lazy list,
//! then the report. Must never panic or allocate from unchecked counts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profkit_mlpd::report::{self, Options};
use profkit_mlpd::{EventKind, File};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = File::parse(data) else { return };
    for b in file.buffers().flatten() {
        for ev in b.events().flatten() {
            match ev.kind {
                EventKind::Alloc { backtrace, .. }
                | EventKind::Throw { backtrace, .. }
                | EventKind::Monitor { backtrace, .. } => {
                    backtrace.count();
                }
                EventKind::GcMove { objects } => {
                    objects.count();
                }
                EventKind::HeapObject { refs, .. } => {
                    refs.count();
                }
                EventKind::HeapRoots { roots, .. } => {
                    roots.count();
                }
                EventKind::SampleHit { ips, frames, .. } => {
                    ips.count();
                    frames.count();
                }
                EventKind::CountersDesc { descs } => {
                    descs.count();
                }
                EventKind::Counters { values, .. } => {
                    values.count();
                }
                _ => {}
            }
        }
    }
    let r = report::compute(&file, &Options::default());
    let mut out = Vec::new();
    let _ = report::write_text(&mut out, &r, &report::SECTIONS, true);
    let _ = report::to_json(&r);
});
