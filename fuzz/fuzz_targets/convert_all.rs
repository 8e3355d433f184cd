#![no_main]
//! Any bytes (gzip unwrapped) through format detection, the format's driver in profkit-model
//! and every writer of profkit-export into a byte-counting sink: nothing may panic, and no
//! output may outgrow its input (`profkit_export::harness`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profkit_export::harness::check_convert(data);
});
