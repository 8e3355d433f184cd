#![no_main]
//! Any bytes as an instrumented ELF object: the XRay instrumentation map, the symbolizer and
//! the map's YAML round trip (`profkit_xray::harness::check_instr_map`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profkit_xray::harness::check_instr_map(data);
});
