#![no_main]
//! `diff` across kinds: the input cut in two (at a point its first two bytes give), each half
//! detected and read into stacks as `profkit diff` does, the rows written for every key as
//! text, CSV and JSON, and the differential folded lines; outputs bounded by the input's size
//! (`profkit_export::harness::check_diff`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profkit_export::harness::check_diff(data);
});
