#![no_main]
//! Fuzz the XRay readers: header parse, buffer scan, full event decode (parallel and
//! sequential must agree), the closure-driven buffer decoder (must agree with the iterator),
//! the sequential record walk, the verifier and the instrumentation-map YAML reader. The checks
//! live in `profkit_xray::harness`, which the regression test replays too.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profkit_xray::harness::check_read(data);
});
